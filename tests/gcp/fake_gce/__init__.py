"""A fake Google Compute Engine v1 REST endpoint that boots real Squids (a test helper).

The real `google-cloud-compute` client talks to it over its REST transport: build any
compute_v1 client with `**fake.client_kwargs()` (AnonymousCredentials and
`ClientOptions(api_endpoint="http://127.0.0.1:PORT")`; the REST transport keeps an explicit
`http://` scheme, `rest_base.py`: `host = f"{url_scheme}://{host}" if not scheme`).
Never call an ExtendedOperation's `.result()`: it polls through a ZoneOperationsClient
built with the default endpoint, i.e. real Google. Wait with a ZoneOperationsClient of
your own, built with the same kwargs.
"""

from .fake import DEFAULT_ZONES, FakeGce
from .state import Settings

__all__ = ["DEFAULT_ZONES", "FakeGce", "Settings"]

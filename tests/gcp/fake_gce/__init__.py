"""A fake Google Compute Engine v1 REST endpoint that boots real Squids (a test helper).

Clients: build any compute_v1 client with `**fake.client_kwargs()`: AnonymousCredentials,
`ClientOptions(api_endpoint="http://127.0.0.1:PORT")`, transport "rest". The installed
transport keeps an explicit `http://` scheme (`rest_base.py`: `host = f"{url_scheme}://{host}"
if not url_match_items["scheme"] else host`). Never call an ExtendedOperation's `.result()`
or `.done()`: it polls through a ZoneOperationsClient built with the DEFAULT endpoint
(`transports/base.py`, `_zone_operations_client`), i.e. real Google. Use `*_unary` calls
and wait with operations clients of your own built from the same kwargs.

Methods (the keys of `fake.calls` and of `fake.inject`):
instances.insert/get/delete/list/aggregatedList; zoneOperations.get/wait/list;
globalOperations.get/wait; regionOperations.get/wait; firewalls.insert/get/patch/update/
delete/list; disks.list/get/delete/aggregatedList; addresses.insert/get/delete/list/
aggregatedList; images.get/getFromFamily. Mutating calls return an operation that goes
PENDING (`settings.pending_s`) → RUNNING (`settings.running_s`, plus the boot) → DONE;
the same `requestId` returns the same operation and changes nothing; `wait` answers at
DONE or after `settings.wait_timeout_s`. List `filter`s: see filters.py.

Booting: when an insert's operation runs out, the `user-data` metadata item
(`#cloud-config` write_files) is written into a folder of the instance's own, its
squid.conf rewritten to listen on a loopback address of the instance's own (127.R.x.y),
a real `squid -N` started; then the instance is RUNNING with that address as
networkInterfaces[0].accessConfigs[0].natIP. Delete (or preemption) stops it by pid;
`close()` stops all. No squid installed: the instance runs with `boot_error` set and no
proxy (proxy.py cannot check the bcrypt hashes the user-data carries).

Faults (`fake.inject(method, fault, times=1, zone=None, **params)`, see faults.py):
rateLimitExceeded (403), RESOURCE_EXHAUSTED (429), UNAVAILABLE (503), forbidden (403,
permission=), quotaExceeded (403 at once, quota=, limit=); operation errors
ZONE_RESOURCE_POOL_EXHAUSTED(_WITH_DETAILS), QUOTA_EXCEEDED (quota=, limit=),
CONCURRENT_OPERATIONS_QUOTA_EXCEEDED; slow (seconds=), delay (seconds=), dropped (the
call lands, the connection closes unanswered); `fake.hold(method)` holds the next call
before it is carried out until the test releases it. `fake.preempt(name)` reclaims a spot VM.
"""

from .fake import DEFAULT_ZONES, FakeGce
from .state import Settings

__all__ = ["DEFAULT_ZONES", "FakeGce", "Settings"]

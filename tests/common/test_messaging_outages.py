"""Which NATS errors are an outage (MessagingUnavailable, retried) rather than a bug."""

from __future__ import annotations

import nats.errors
import nats.js.errors
import pytest

from proxyfleet.common.core.errors import MessagingUnavailable
from proxyfleet.common.messaging.jetstream import messaging_outage


@pytest.mark.parametrize(
    "error",
    [nats.errors.NoRespondersError(), nats.js.errors.NoStreamResponseError()],
)
def test_a_stream_without_a_leader_is_an_outage(error: Exception) -> None:
    with pytest.raises(MessagingUnavailable), messaging_outage("JetStream"):
        raise error


def test_a_message_id_still_in_process_is_an_outage_and_other_api_errors_are_not() -> None:
    in_process = nats.js.errors.APIError(
        code=409, err_code=10158, description="duplicate message id is in process"
    )
    with pytest.raises(MessagingUnavailable, match="in process"), messaging_outage("JetStream"):
        raise in_process
    refused = nats.js.errors.APIError(code=400, err_code=10060, description="expected stream")
    with pytest.raises(nats.js.errors.APIError), messaging_outage("JetStream"):
        raise refused

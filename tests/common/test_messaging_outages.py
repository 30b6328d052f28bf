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

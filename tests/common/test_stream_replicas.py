"""The stream_replicas setting: JetStream's replica counts only (1 to 5), 1 by default.
What three copies survive on a real three-server cluster: tests/messaging."""

from __future__ import annotations

import pytest

from proxyfleet.common.core.errors import ConfigError
from proxyfleet.common.core.settings import CommonSettings


def test_the_setting_takes_jetstream_replica_counts_only() -> None:
    assert CommonSettings().stream_replicas == 1
    assert CommonSettings(stream_replicas=3).stream_replicas == 3
    for bad in (0, 6):
        with pytest.raises(ConfigError, match="--stream-replicas"):
            CommonSettings(stream_replicas=bad)

"""The KVM provisioner's settings: the runner's (its 5 s ack-wait included: heartbeats hold
a create while the guest boots), with its own concurrency and tracing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from proxyfleet.common.core.settings import option
from proxyfleet.common.runner import RunnerSettings


@dataclass(frozen=True, slots=True)
class KvmProvisionerSettings(RunnerSettings):
    concurrency: int = option(4, env_aliases=("PROXYFLEET_CONCURRENCY",))
    """Intents one replica handles at once."""
    libvirt_trace: Literal["calls", "full"] = option(
        "calls", env_aliases=("PROXYFLEET_LIBVIRT_TRACE",)
    )
    """At log level debug: calls = one line per libvirt call (call, ids, duration, error);
    full = also domain XML, metadata and addresses. cloud-init user-data is never logged."""

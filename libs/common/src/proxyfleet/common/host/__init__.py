"""The service host: one way to run a service.

A service declares a `Service` (name, settings dataclass, build step); `main(service)` is
its console script. The host generates the command line from the settings
(`options`), then runs the service (`runtime`): signals, logging, the providers config,
NATS and Redis, the health/metrics server (`http`), one task group, an orderly close."""

from proxyfleet.common.host.command import main
from proxyfleet.common.host.options import env_name
from proxyfleet.common.host.spec import Check, Context, LoopRunner, Parts, Service, outbox_check

__all__ = [
    "Check",
    "Context",
    "LoopRunner",
    "Parts",
    "Service",
    "env_name",
    "main",
    "outbox_check",
]

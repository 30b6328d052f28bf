"""The AsyncAPI document of every subject and body, generated from the code.

The provisioner's subscribers are declared by the same functions the runner uses
(`subscribe_intents`, `subscribe_resources`). What services publish with nats-py (intents,
events, probe results, GC's request) is declared here as FastStream publishers with the
msgspec models' JSON Schema, so FastStream documents them without publishing anything.

`python -m proxyfleet.common.asyncapi docs/asyncapi.yaml` (`make asyncapi`) writes it;
tests/common/test_asyncapi.py fails when the checked-in file is stale.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Collection
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote

import yaml
from faststream.nats import JStream, NatsBroker
from faststream.nats.annotations import NatsMessage
from faststream.specification import AsyncAPI
from pydantic import WithJsonSchema

from proxyfleet.common.runner.consumer import IntentBody, subscribe_intents
from proxyfleet.common.runner.resources import ResourcesReply, subscribe_resources
from proxyfleet.common.runner.settings import RunnerSettings
from proxyfleet.common.wire import subjects
from proxyfleet.common.wire.events import Event, EventType
from proxyfleet.common.wire.models import (
    CreateIntent,
    DeleteIntent,
    Phase,
    ProbeResult,
    ResourceList,
)
from proxyfleet.common.wire.schema import json_schema

COMMAND = "make asyncapi"
DOCUMENT = Path("docs/asyncapi.yaml")

PROVIDER = "{provider}"
"""Placeholder of a provider instance's name in the documented subjects."""


def _body(model: Any) -> Any:
    return Annotated[dict[str, Any], WithJsonSchema(json_schema(model))]


_EMPTY_BODY = Annotated[bytes, WithJsonSchema({"type": "string", "maxLength": 0})]

_INTENTS = JStream(subjects.INTENT_STREAM, declare=False)
_EVENTS = JStream(subjects.EVENT_STREAM, declare=False)

_PARAMETERS = {
    "provider": "Name of the provider instance (a key of the providers config).",
    "phase": "The phase the proxy entered (adopted: registered again after a store reset).",
    "action": "granted, renewed, reported, released, expired or revoked.",
    "proxy_id": "Id of the probed proxy.",
    "rotation": "drained, quarantined or unquarantined.",
    "change": "applied, scaled, recycling, condition, deleting or deleted.",
    "problem": "entry_rejected or load_failed.",
}
_PHASES = [str(phase) for phase in Phase]


def _kinds(family: str, leave_out: Collection[str] = ()) -> list[str]:
    """The event types of one family (`pool`: applied, scaled, ...), from EventType."""
    kinds = [t.value.split(".", 1)[1] for t in EventType if t.value.startswith(f"{family}.")]
    return sorted(k for k in kinds if k not in leave_out)


_ENUMS = {
    "phase": [*_PHASES, "adopted"],
    "rotation": _kinds("proxy", [*_PHASES, "adopted"]),
    "change": _kinds("pool"),
    "action": _kinds("lease"),
    "problem": _kinds("source"),
}
_PLACEHOLDER = re.compile(r"\{(\w+)\}")


_PUBLISHED: list[tuple[str, Any, JStream | None, str, str]] = [
    (
        subjects.intent_create(PROVIDER),
        _body(CreateIntent),
        _INTENTS,
        "publish",
        "Create a proxy (work queue). Written to the outbox with the new proxy and published "
        "by the api's outbox relay (`Nats-Msg-Id` `<proxy_id>:create`), and by the "
        "provisioner's reconciler for a stuck proxy.",
    ),
    (
        subjects.intent_delete(PROVIDER),
        _body(DeleteIntent),
        _INTENTS,
        "publish",
        "Delete a proxy's resources (work queue). Written to the outbox by the transition to "
        "failed or deleting and published by that service's relay (`Nats-Msg-Id` "
        "`<proxy_id>:delete:<gen>`), and by gc for an orphaned resource (`gc:<resource_id>`, "
        "no registry entry).",
    ),
    (
        subjects.event_subject("proxy.{phase}"),
        _body(Event),
        _EVENTS,
        "publish",
        "A proxy's lifecycle transition, kept 7 days, published by the outbox relay of the "
        "service that made it (`Nats-Msg-Id` is the event id; `data` holds `from` and `gen`, "
        "and `reason` for failed/unhealthy). api: pending, deleting; provisioner: "
        "provisioning, booting, failed, deleted; health: ready, unhealthy, failed.",
    ),
    (
        subjects.event_subject("proxy.{rotation}"),
        _body(Event),
        _EVENTS,
        "publish",
        "A proxy taken out of rotation or put back (`pool` set for a pool's member; `data`: "
        "`reason`, and `by` when an admin acted): drained by its pool's controller "
        "(recycled, scaled down, pool deleted), quarantined by an admin or by its pool's "
        "rule, unquarantined by an admin.",
    ),
    (
        subjects.event_subject("pool.{change}"),
        _body(Event),
        _EVENTS,
        "publish",
        "A pool's change (`pool` set, `proxy_id` empty), kept 7 days: applied (`gen`, "
        "`owner`), scaled (`size`, `from_size`, `reason`), recycling (`reason`), condition "
        "(`condition`, `status`, `reason`, `message`), deleting, deleted (`keep_proxies`); "
        "published by the outbox relay of the api, the pool controller or the pool operator.",
    ),
    (
        subjects.event_subject("lease.{action}"),
        _body(Event),
        _EVENTS,
        "publish",
        "A lease event (`lease_id` and `provider` set), kept 7 days, published by the api's "
        "outbox relay.",
    ),
    (
        subjects.event_subject("source.{problem}"),
        _body(Event),
        _EVENTS,
        "publish",
        "A static provider's source (`provider` set, `proxy_id` empty), kept 7 days, published "
        "by its provisioner's outbox relay: entry_rejected, one per bad line of a load "
        "(`source`, `line`, `reason`; never the line's text), load_failed (`source`, "
        "`reason`: unreachable, HTML, held by the empty guard).",
    ),
    (
        subjects.probe_subject("{proxy_id}"),
        _body(ProbeResult),
        None,
        "publish",
        "Every probe result of one proxy, by health (core NATS, not persisted).",
    ),
    (
        subjects.resources_request(PROVIDER),
        _EMPTY_BODY,
        None,
        "request",
        "gc asks a provider for its managed resources (request/reply, empty body).",
    ),
]
"""What services send with nats-py, declared for the document only (subject, body,
stream, operation, description)."""


async def _intent_handler(body: IntentBody, msg: NatsMessage) -> None:
    """Stands in for `IntentConsumer._on_intent` (same signature), which needs a runner."""


async def _resources_handler() -> ResourcesReply:
    """Stands in for `ResourcesResponder._answer` (same signature)."""
    return b""


def build_broker() -> NatsBroker:
    """A broker (never connected) holding every documented subscriber and publisher."""
    broker = NatsBroker(
        specification_url="nats://localhost:4222",
        description="NATS with JetStream: streams PROXYFLEET_INTENTS and PROXYFLEET_EVENTS.",
    )
    runner = RunnerSettings(provider=PROVIDER, concurrency=1)
    subscribe_intents(broker, runner, _intent_handler)
    subscribe_resources(broker, PROVIDER, _resources_handler)

    for subject, body, stream, op, description in _PUBLISHED:
        broker.publisher(
            subject, stream=stream, schema=body, title=f"{subject}:{op}", description=description
        )
    return broker


def build_document() -> dict[str, Any]:
    spec = AsyncAPI(
        build_broker(),
        title="Proxyfleet",
        version="1",
        description=(
            "Every NATS subject Proxyfleet uses and its body. Generated by "
            f"proxyfleet.common.asyncapi (`{COMMAND}`); do not edit by hand."
        ),
    ).to_specification()
    document: dict[str, Any] = spec.to_jsonable()
    _describe_parameters(document)
    _add_resources_reply(document)
    return _sorted(document)


def _describe_parameters(document: dict[str, Any]) -> None:
    """AsyncAPI 3 channel parameters for the `{name}` parts of each address (FastStream
    leaves them out for NATS)."""
    for channel in document["channels"].values():
        names = _PLACEHOLDER.findall(channel.get("address") or "")
        if names:
            channel["parameters"] = {name: _parameter(name) for name in names}


def _parameter(name: str) -> dict[str, Any]:
    parameter: dict[str, Any] = {"description": _PARAMETERS[name]}
    if name in _ENUMS:
        parameter["enum"] = _ENUMS[name]
    return parameter


def _sorted(document: dict[str, Any]) -> dict[str, Any]:
    """Channels, operations and components by name: FastStream lists them in set order,
    which changes from run to run, and the checked-in file must not."""
    for key in ("channels", "operations"):
        document[key] = dict(sorted(document[key].items()))
    for key, value in document["components"].items():
        document["components"][key] = dict(sorted(value.items()))
    return document


def _add_resources_reply(document: dict[str, Any]) -> None:
    """FastStream does not document a reply: add AsyncAPI 3's operation `reply`, on a
    channel of its own whose address is null (the asker's inbox, unknown in advance)."""
    subject = subjects.resources_request(PROVIDER)
    key = f"{subject}:provisioner"
    channels, operations = document["channels"], document["operations"]
    reply_key = f"{key}:reply"
    channels[reply_key] = {
        "address": None,
        "description": "The asker's inbox (NATS reply subject).",
        "messages": {"ResourceList": {"$ref": "#/components/messages/ResourceList"}},
    }
    document["components"]["messages"]["ResourceList"] = {
        "title": "ResourceList",
        "payload": {"$ref": "#/components/schemas/ResourceList"},
    }
    document["components"]["schemas"]["ResourceList"] = json_schema(ResourceList)
    channel_ref = f"#/channels/{quote(reply_key)}"
    for operation in operations.values():
        if operation["channel"]["$ref"] == f"#/channels/{quote(key)}":
            operation["reply"] = {
                "channel": {"$ref": channel_ref},
                "messages": [{"$ref": f"{channel_ref}/messages/ResourceList"}],
            }


def render() -> str:
    return yaml.safe_dump(build_document(), sort_keys=False, allow_unicode=True, width=100)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m proxyfleet.common.asyncapi",
        description="Write the AsyncAPI document of every subject and body.",
    )
    parser.add_argument("target", nargs="?", type=Path, default=DOCUMENT, help="output file")
    target: Path = parser.parse_args(argv).target
    target.write_text(render())
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

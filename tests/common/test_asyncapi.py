"""docs/asyncapi.yaml is generated from the code: a change of a subject, a body or a
description without regenerating it fails here."""

from __future__ import annotations

from pathlib import Path

import yaml

from proxyfleet.common import asyncapi
from proxyfleet.common.wire import subjects
from proxyfleet.common.wire.events import EventType

ROOT = Path(__file__).resolve().parents[2]


def test_the_checked_in_asyncapi_document_is_current() -> None:
    checked_in = (ROOT / asyncapi.DOCUMENT).read_text()
    assert checked_in == asyncapi.render(), (
        f"{asyncapi.DOCUMENT} is stale: run `{asyncapi.COMMAND}` and commit the result"
    )


def test_every_subject_family_is_documented() -> None:
    document = yaml.safe_load(asyncapi.render())
    addresses = {channel["address"] for channel in document["channels"].values()}
    provider = asyncapi.PROVIDER
    assert {
        subjects.intents_of(provider),
        subjects.intent_create(provider),
        subjects.intent_delete(provider),
        subjects.event_subject("proxy.{phase}"),
        subjects.event_subject("proxy.{rotation}"),
        subjects.event_subject("pool.{change}"),
        subjects.event_subject("lease.{action}"),
        subjects.event_subject("source.{problem}"),
        subjects.probe_subject("{proxy_id}"),
        subjects.resources_request(provider),
        None,  # the reply to a resources request goes to the asker's inbox
    } == addresses


def test_bodies_carry_the_msgspec_schemas() -> None:
    schemas = yaml.safe_load(asyncapi.render())["components"]["schemas"]
    intents = schemas[f"{subjects.intents_of(asyncapi.PROVIDER)}:provisioner:Message:Payload"]
    assert [variant["title"] for variant in intents["anyOf"]] == ["CreateIntent", "DeleteIntent"]
    probe = schemas[f"{subjects.probe_subject('{proxy_id}')}:publish:Message:Payload"]
    assert probe["required"] == ["proxy_id", "time", "ok", "latency_ms"]
    assert schemas["ResourceList"]["required"] == ["provider", "resources"]


def test_every_event_type_has_a_documented_subject() -> None:
    document = yaml.safe_load(asyncapi.render())
    channels = {c["address"]: c for c in document["channels"].values() if c.get("address")}
    documented = set()
    for address, channel in channels.items():
        family = address.removeprefix(f"{subjects.EVENT_PREFIX}.")
        for name, parameter in (channel.get("parameters") or {}).items():
            documented |= {family.replace(f"{{{name}}}", v) for v in parameter.get("enum", [])}
    missing = {t.value for t in EventType} - documented
    assert not missing, missing

"""GC test fixtures: a pull consumer on the `local` delete intents and a fake provisioner
answering the resources request (`nc`, `clock` and `registry` are in tests/conftest.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import msgspec
import pytest
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import ConsumerConfig

from proxyfleet.common.wire import subjects
from proxyfleet.common.wire.models import ResourceList

PROVIDER = "local"

Answer = Callable[[ResourceList | bytes | None], None]


@pytest.fixture
async def delete_intents(nc: NatsClient) -> AsyncIterator[JetStreamContext.PullSubscription]:
    """An ephemeral pull consumer on proxyfleet.intents.local.delete, from a clean slate
    (like `redis_client`): the subject is purged, and consumers left over by earlier tests
    whose filter covers it are removed (a work-queue stream refuses overlapping filters)."""
    js = nc.jetstream()
    subject = subjects.intent_delete(PROVIDER)
    await js.purge_stream(subjects.INTENT_STREAM, subject=subject)
    for info in await js.consumers_info(subjects.INTENT_STREAM):
        cfg = info.config
        filters = [
            *(cfg.filter_subjects or []),
            *([cfg.filter_subject] if cfg.filter_subject else []),
        ]
        if not filters or any(_matches(f, subject) for f in filters):
            await js.delete_consumer(subjects.INTENT_STREAM, info.name)
    # An ephemeral consumer nobody pulls from goes after 5 s by default: longer than a GC
    # process takes to start on a busy machine.
    config = ConsumerConfig(inactive_threshold=600.0)
    psub = await js.pull_subscribe(subject, stream=subjects.INTENT_STREAM, config=config)
    yield psub
    name = (await psub.consumer_info()).name
    await psub.unsubscribe()
    await js.delete_consumer(subjects.INTENT_STREAM, name)


def _matches(pattern: str, subject: str) -> bool:
    """NATS subject matching: `*` is one token, a final `>` the rest."""
    pat, sub = pattern.split("."), subject.split(".")
    for i, token in enumerate(pat):
        if token == ">":
            return len(sub) > i
        if i >= len(sub) or token not in ("*", sub[i]):
            return False
    return len(pat) == len(sub)


@pytest.fixture
async def answer(nc: NatsClient) -> AsyncIterator[Answer]:
    """A fake provisioner on the `local` resources request. Call it with what to answer:
    a ResourceList, raw bytes, or None to stay silent like a hung provisioner."""
    reply: list[bytes | None] = [None]

    async def respond(msg: Msg) -> None:
        if reply[0] is not None:
            await msg.respond(reply[0])

    def set_reply(what: ResourceList | bytes | None) -> None:
        reply[0] = msgspec.json.encode(what) if isinstance(what, ResourceList) else what

    sub = await nc.subscribe(subjects.resources_request(PROVIDER), cb=respond)
    await nc.flush()
    yield set_reply
    await sub.unsubscribe()


@pytest.fixture
def providers_yaml(tmp_path: Path) -> Path:
    path = tmp_path / "providers.yaml"
    path.write_text(
        f"providers:\n  - name: {PROVIDER}\n    type: local\n    zones: [z1]\n    local: {{}}\n"
    )
    return path

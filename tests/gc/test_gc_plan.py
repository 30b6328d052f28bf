"""plan_deletions: which resources are orphans, as a table."""

from __future__ import annotations

import pytest

from proxyfleet.common.wire.models import ManagedResource, Phase, Proxy
from proxyfleet.gc.plan import Deletion, Why, plan_deletions

NOW = 1_700_000_000.0
MIN_AGE = 300.0
ME = "inst-a"
ABSENT = "absent"  # marker: the registry has no such proxy


def resource(
    proxy_id: str = "p1", *, age: float = 3600.0, installation: str = ME, rid: str = ""
) -> ManagedResource:
    return ManagedResource(
        resource_id=rid or f"pf-{proxy_id}",
        proxy_id=proxy_id,
        installation_id=installation,
        created_at=NOW - age,
    )


def proxy(proxy_id: str, phase: Phase) -> Proxy:
    return Proxy(
        id=proxy_id,
        provider="local",
        zone="z1",
        phase=phase,
        gen=1,
        username="u",
        password="secret",
        created_at=NOW - 7200,
        updated_at=NOW - 7200,
    )


LIVE = [p for p in Phase if p not in {Phase.DELETED, Phase.FAILED}]

CASES: list[tuple[str, ManagedResource, Phase | str, Why | None]] = [
    ("absent and old", resource(), ABSENT, Why.ABSENT),
    ("deleted and old", resource(), Phase.DELETED, Why.DELETED),
    ("failed and old", resource(), Phase.FAILED, Why.FAILED),
    ("absent, exactly min_age old", resource(age=MIN_AGE), ABSENT, Why.ABSENT),
    ("absent but younger than min_age", resource(age=MIN_AGE - 1), ABSENT, None),
    ("deleted but younger than min_age", resource(age=10), Phase.DELETED, None),
    ("created in the future (clock skew)", resource(age=-60), ABSENT, None),
    ("another installation, absent", resource(installation="inst-b"), ABSENT, None),
    ("another installation, deleted", resource(installation="inst-b"), Phase.DELETED, None),
    ("no installation label", resource(installation=""), ABSENT, None),
    *[(f"live proxy ({p})", resource(), p, None) for p in LIVE],
]


@pytest.mark.parametrize(
    ("res", "state", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_one_resource(res: ManagedResource, state: Phase | str, expected: Why | None) -> None:
    view = {res.proxy_id: None if state == ABSENT else proxy(res.proxy_id, Phase(state))}
    plan = plan_deletions(ME, NOW, MIN_AGE, [res], view)
    assert [d.why for d in plan] == ([expected] if expected else [])
    assert all(d.resource is res for d in plan)


def test_a_proxy_not_looked_up_is_not_taken_for_absent() -> None:
    assert plan_deletions(ME, NOW, MIN_AGE, [resource("p1")], {}) == []


def test_mixed_listing_keeps_order_ages_and_drops_duplicates() -> None:
    listed = [
        resource("p1", age=400),
        resource("p2"),
        resource("p3", installation="inst-b"),
        resource("p4", age=1000),
        resource("p1", age=400),  # listed twice
        resource("p4", rid="pf-p4-disk", age=900),  # second resource of the same proxy
    ]
    view: dict[str, Proxy | None] = {
        "p1": None,
        "p2": proxy("p2", Phase.READY),
        "p3": None,
        "p4": proxy("p4", Phase.FAILED),
    }
    plan = plan_deletions(ME, NOW, MIN_AGE, listed, view)
    assert plan == [
        Deletion(resource=listed[0], why=Why.ABSENT, age=400),
        Deletion(resource=listed[3], why=Why.FAILED, age=1000),
        Deletion(resource=listed[5], why=Why.FAILED, age=900),
    ]


def test_nothing_listed_nothing_planned() -> None:
    assert plan_deletions(ME, NOW, MIN_AGE, [], {}) == []


def test_why_describes_itself_for_the_intent_reason() -> None:
    assert [w.describe() for w in Why] == ["proxy absent", "proxy deleted", "proxy failed"]


def test_a_failed_external_proxy_is_kept() -> None:
    """An external proxy (a static provider's source lists it) stays failed, re-probed by
    health, until its source drops it: GC never deletes outside Proxyfleet."""
    failed = proxy("p1", Phase.FAILED)
    failed.external = True
    assert plan_deletions(ME, NOW, MIN_AGE, [resource()], {"p1": failed}) == []

"""A ProxyPool's status from the pool in the store, and a resource's spec read as a pool:
pure, no server."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from proxyfleet.common.domain.pool_spec import (
    Condition,
    Decision,
    Owner,
    PoolRecord,
    PoolSpec,
    PoolStatus,
    SpecProblem,
)
from proxyfleet.common.providers import parse_providers_config
from proxyfleet.pool_operator.spec import read_spec
from proxyfleet.pool_operator.status import Verdict, as_json, build_status, merge_patch, rfc3339

CONFIG = parse_providers_config(
    """
providers:
  - name: local
    type: local
    zones: [local-a, local-b]
    max_proxies: 20
    local: {}
""",
    "providers.yaml",
)
NOW = 1_800_000_000.0
REF = "team-a/eu"


def record(status: PoolStatus | None = None, **kw: Any) -> PoolRecord:
    base: dict[str, Any] = {
        "name": "eu", "spec": PoolSpec(provider="local", size=3), "owner": Owner.KUBERNETES,
        "owner_ref": REF, "gen": 2, "desired": 3, "status": status,
    }  # fmt: skip
    return PoolRecord(**(base | kw))


def build(rec: PoolRecord | None, verdict: Verdict | None = None, previous: Any = None,
          caught_up: bool = False, generation: int = 4) -> dict[str, Any]:  # fmt: skip
    status = build_status("eu", REF, generation, rec, verdict, previous or {}, NOW,
                          caught_up=caught_up)  # fmt: skip
    return as_json(status)


def test_the_controllers_counts_and_conditions_as_kubernetes_writes_them() -> None:
    controller = PoolStatus(
        desired=3, ready=2, leased=1, free=1, starting=1, surge=1, observed_gen=2,
        last_decision=Decision(time=NOW - 60, action="scale_up", from_size=2, to_size=3,
                               reason="free 0 < target 1 for 5 s"),
        conditions=[Condition(type="Ready", status=False, reason="Scaling", since=NOW - 30),
                    Condition(type="Progressing", status=True, reason="Creating")],
    )  # fmt: skip
    got = build(record(controller), caught_up=True)
    assert got == {
        "desired": 3, "ready": 2, "leased": 1, "free": 1, "starting": 1, "unhealthy": 0,
        "draining": 0, "quarantined": 0, "surge": 1, "owner": "kubernetes", "ownerRef": REF,
        "observedGeneration": 4, "poolGeneration": 2, "selector": "proxyfleet-pool=eu",
        "lastDecision": {"time": rfc3339(NOW - 60), "action": "scale_up", "fromSize": 2,
                         "toSize": 3, "reason": "free 0 < target 1 for 5 s"},
        "conditions": [
            {"type": "Ready", "status": "False", "reason": "Scaling",
             "lastTransitionTime": rfc3339(NOW - 30)},
            {"type": "Progressing", "status": "True", "reason": "Creating",
             "lastTransitionTime": rfc3339(NOW)},
        ],
    }  # fmt: skip


def test_a_transition_time_stays_while_the_condition_holds() -> None:
    first = build(record(PoolStatus(desired=3, conditions=[Condition(type="Ready", status=True)])))
    ready = record(PoolStatus(desired=3, conditions=[Condition(type="Ready", status=True)]))
    again = build_status("eu", REF, 4, ready, None, first, NOW + 50, caught_up=True)
    assert as_json(again)["conditions"][0]["lastTransitionTime"] == rfc3339(NOW)
    not_ready = record(PoolStatus(desired=3, conditions=[Condition(type="Ready", status=False)]))
    flipped = build_status("eu", REF, 4, not_ready, None, first, NOW + 50, caught_up=True)
    assert as_json(flipped)["conditions"][0]["lastTransitionTime"] == rfc3339(NOW + 50)


def test_observed_generation_waits_for_the_controller_unless_the_operator_judged_it() -> None:
    assert build(record(PoolStatus(desired=3)), previous={"observedGeneration": 3})[
        "observedGeneration"] == 3  # fmt: skip
    assert build(record(None), caught_up=True)["observedGeneration"] == 4
    refused = build(record(PoolStatus(desired=3, ready=3)), Verdict("InvalidSpec", "spec.size: x"),
                    previous={"observedGeneration": 3})  # fmt: skip
    assert refused["observedGeneration"] == 4


def test_the_operators_verdict_takes_the_ready_condition_over() -> None:
    controller = PoolStatus(desired=3, ready=3, conditions=[
        Condition(type="Ready", status=True, since=NOW - 99),
        Condition(type="CapacityExceeded", status=False)])  # fmt: skip
    got = build(record(controller), Verdict("InvalidSpec", "spec.size: too big"))
    assert got["ready"] == 3  # the pool keeps its last good spec meanwhile
    assert [(c["type"], c["status"], c.get("reason")) for c in got["conditions"]] == [
        ("Ready", "False", "InvalidSpec"), ("CapacityExceeded", "False", None),
    ]  # fmt: skip
    assert got["conditions"][0]["message"] == "spec.size: too big"


def test_another_owners_pool_shows_its_owner_and_none_of_its_counts() -> None:
    theirs = record(PoolStatus(desired=9, ready=9), owner=Owner.API, owner_ref="")
    got = build(theirs, Verdict("OwnerConflict", "pool eu is declared by the API", counts=False))
    assert (got["owner"], got["ownerRef"], got["ready"], got["desired"]) == ("api", "", 0, 0)
    assert got["conditions"][0]["reason"] == "OwnerConflict"


def test_no_pool_and_no_controller_status_say_so() -> None:
    assert build(None)["conditions"][0]["reason"] == "NotDeclared"
    waiting = build(record(None))
    assert (waiting["desired"], waiting["conditions"][0]["reason"]) == (3, "AwaitingController")


def test_a_malformed_previous_status_is_replaced_not_trusted() -> None:
    got = build(record(PoolStatus(desired=3)), previous={"observedGeneration": "x"})
    assert got["observedGeneration"] == 0


def test_merge_patch_sets_what_changed_and_drops_what_went() -> None:
    current = {"ready": 1, "leased": 0, "lastDecision": {"action": "scale_up"}}
    assert merge_patch(current, {"ready": 2, "leased": 0}) == {"ready": 2, "lastDecision": None}
    assert merge_patch(current, current) == {}


def test_read_spec_gives_the_pool_spec() -> None:
    spec = read_spec("eu", {"provider": "local", "size": 3, "zones": ["local-b"]}, CONFIG)
    assert spec == msgspec.convert({"provider": "local", "size": 3, "zones": ["local-b"]}, PoolSpec)


@pytest.mark.parametrize(
    ("name", "raw", "field", "words"),
    [
        ("Eu", {"provider": "local", "size": 1}, "metadata.name", "cannot name a pool"),
        ("a" * 64, {"provider": "local", "size": 1}, "metadata.name", "1-63 lowercase"),
        ("eu", {"provider": "local", "size": "3"}, "spec.size", "Expected `int | null`"),
        ("eu", {"provider": "local", "autoscale": {"min": 1}}, "spec.autoscale",
         "missing required field `max`"),
        ("eu", {"provider": "local", "size": 1, "sise": 2}, "spec", "unknown field `sise`"),
        ("eu", {"provider": "nowhere", "size": 1}, "spec.provider", "unknown provider"),
        ("eu", {"provider": "local", "size": 21}, "spec.size", "max_proxies (20)"),
        ("eu", {"provider": "local", "size": 2, "zones": ["local-z"]}, "spec.zones[0]",
         "served by none"),
        ("eu", None, "spec.provider", "either provider or providers"),
    ],
)  # fmt: skip
def test_read_spec_names_the_field_it_refuses(
    name: str, raw: dict[str, Any] | None, field: str, words: str
) -> None:
    with pytest.raises(SpecProblem) as exc:
        read_spec(name, raw, CONFIG)
    assert exc.value.field == field
    assert words in exc.value.message

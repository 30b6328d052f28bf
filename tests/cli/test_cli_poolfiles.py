"""Pool files (`proxyfleet pools apply -f`), read without the API, and a pool's table rows."""

from __future__ import annotations

import re
from pathlib import Path

import msgspec
import pytest

from proxyfleet.cli.poolfiles import PoolFileError, pool_documents
from proxyfleet.cli.pools import details, row
from proxyfleet.client import Pool, PoolDecision, PoolStatus
from proxyfleet.common.domain.pool_spec import PoolSpec, spec_problem


def test_every_document_is_a_pool_and_empty_ones_are_skipped() -> None:
    text = """
name: eu
provider: gcp-spot
size: 20
labels: {since: 2025-01-01, tier: "1"}
---
# comments only
---
name: us
providers: [{name: a, weight: 3}, {name: b, weight: 0}]
autoscale: {min: 2, max: 40}
---
"""
    labels = {"since": "2025-01-01", "tier": "1"}  # a date stays text
    assert pool_documents(text, "pools.yaml") == [
        ("eu", {"provider": "gcp-spot", "size": 20, "labels": labels}),
        ("us", {"providers": [{"name": "a", "weight": 3}, {"name": "b", "weight": 0}],
                "autoscale": {"min": 2, "max": 40}}),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "pools.yaml: no pool in it"),
        ("[1, 2]", "pools.yaml: document 1: expected a mapping"),
        ("size: 3", "pools.yaml: document 1: expected `name:"),
        ("name: 3\nsize: 3", "document 1: expected `name:"),
        ("name: a\n---\nname: a\n", "document 2: pool a is in the file twice"),
        (
            "name: a\nsize: 1\nsize: 2\n",
            "pools.yaml: line 3: not valid YAML: key 'size' given twice",
        ),
        ("name: [a\n", "pools.yaml: line 2: not valid YAML"),
        ("name: !!python/object:os.system x\n", "not valid YAML"),
    ],
)
def test_a_file_that_is_not_pools_is_refused_by_document(text: str, message: str) -> None:
    with pytest.raises(PoolFileError) as refused:
        pool_documents(text, "pools.yaml")
    assert message in str(refused.value)
    assert "\n" not in str(refused.value)


def test_a_pool_row_before_and_after_its_controller_looked() -> None:
    fresh = Pool(name="eu", spec={"provider": "x", "size": 2}, owner="config", desired=2)
    assert row(fresh) == ["eu", "config", "2", "-", "-", "-", "-", "-", "-"]
    assert details(fresh)[-1] == ["status", "none yet (no controller has looked at it)"]
    seen = Pool(
        name="eu", spec={}, owner="api", desired=3, deleting=True,
        status=PoolStatus(desired=3, ready=3, leased=2, free=1, draining=1, oldest_age=7200,
                          last_decision=PoolDecision(time=1.0, action="scale_up", from_size=2,
                                                     to_size=3, reason="free below 1")),
    )  # fmt: skip
    assert row(seen) == ["eu (deleting)", "api", "3", "3", "2", "1", "1", "0", "2h00m"]
    decision = dict((k, v) for k, v in details(seen))["last decision"]
    assert decision.startswith("scale_up 2 -> 3, ")
    assert decision.endswith(": free below 1")


def test_the_pool_files_docs_show_are_pools() -> None:
    """Every ```yaml block of docs/pools.md that starts with `name:` is a pool file whose
    specs are pools (checked on their own: the docs' providers are not configured here)."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "pools.md").read_text()
    blocks = [b for b in re.findall(r"```yaml\n(.*?)```", doc, re.DOTALL) if b.startswith("name:")]
    assert blocks
    for block in blocks:
        for name, spec in pool_documents(block, "docs/pools.md"):
            assert spec_problem(msgspec.convert(spec, PoolSpec)) is None, name

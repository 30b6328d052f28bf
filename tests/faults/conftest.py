"""The fault suite runs the whole system as processes: never in `make test-fast`."""

from __future__ import annotations

import pytest


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # tests/conftest.py marks a test without server fixtures `pure`; the suite starts its
    # own servers (it must restart them), so it is `e2e` like the journey.
    for item in items:
        if item.path.name == "test_faults.py":
            item.own_markers = [m for m in item.own_markers if m.name != "pure"]
            item.add_marker("e2e")

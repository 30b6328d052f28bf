"""The lease listing's cursor: exact round trip of an expiry, malformed ones refused."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from proxyfleet.common.core.errors import InvalidInput
from proxyfleet.common.store.lease_pages import cursor_of, parse_cursor


@given(
    st.floats(min_value=0, max_value=1e11, allow_nan=False, allow_infinity=False),
    st.from_regex(r"\Al[0-9a-f]{35}\Z"),
)
def test_a_cursor_gives_back_the_exact_expiry_and_id(expires_at: float, lease_id: str) -> None:
    assert parse_cursor(cursor_of(expires_at, lease_id)) == (expires_at, lease_id)


@pytest.mark.parametrize("bad", ["x", "12_", "_l1", "1e_l1", "-1_l1", "1.5_l 1", "1_" + "a" * 65])
def test_a_malformed_cursor_is_invalid_input(bad: str) -> None:
    with pytest.raises(InvalidInput):
        parse_cursor(bad)


def test_the_empty_cursor_is_the_first_page() -> None:
    assert parse_cursor("") is None

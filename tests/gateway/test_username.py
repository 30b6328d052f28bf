"""The proxy username grammar, directly: what parses, what is refused and which parameter
an error names (the gateway's 400 says it)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from proxyfleet.gateway.username import (
    KEYS,
    MAX_SESSTIME_MINUTES,
    Selector,
    UsernameError,
    parse_username,
)


def test_a_bare_name_rotates() -> None:
    assert parse_username("crawler") == Selector("crawler")


def test_every_parameter() -> None:
    sel = parse_username(
        "crawler-session-abc123-sesstime-30-zone-us-east1-b-provider-my-gcp-label-tier=gold"
    )
    assert sel == Selector("crawler", "abc123", 30, "us-east1-b", "my-gcp", {"tier": "gold"})


def test_a_pool_spans_dashes_up_to_the_next_parameter() -> None:
    sel = parse_username("crawler-pool-eu-west-2-zone-z1-session-S1")
    assert sel == Selector("crawler", "S1", 0, "z1", pool="eu-west-2")
    assert sel.format() == "crawler-session-S1-zone-z1-pool-eu-west-2"


def test_parameters_in_any_order_and_labels_repeat() -> None:
    sel = parse_username("c-label-a=1-zone-z1-label-team-x=blue-green-session-S1")
    assert sel == Selector("c", "S1", 0, "z1", "", {"a": "1", "team-x": "blue-green"})


def test_a_label_value_may_be_empty() -> None:
    assert parse_username("c-label-k=").labels == {"k": ""}


@pytest.mark.parametrize(
    ("username", "param"),
    [
        ("", "name"),
        ("-session-x", "name"),
        ("bad name", "name"),
        ("c-sesion-abc", "sesion"),
        ("c-", "(empty)"),
        ("c--session-a", "(empty)"),
        ("c-session", "session"),
        ("c-session-", "session"),
        ("c-session-a_b", "session"),
        ("c-session-" + "a" * 65, "session"),
        ("c-session-a-session-b", "session"),
        ("c-sesstime-10", "sesstime"),
        ("c-session-a-sesstime-0", "sesstime"),
        ("c-session-a-sesstime-abc", "sesstime"),
        (f"c-session-a-sesstime-{MAX_SESSTIME_MINUTES + 1}", "sesstime"),
        ("c-zone", "zone"),
        ("c-zone-session-a", "zone"),
        ("c-zone-US", "zone"),
        ("c-zone-", "zone"),
        ("c-provider-", "provider"),
        ("c-zone-a-zone-b", "zone"),
        ("c-provider-9x", "provider"),
        ("c-pool", "pool"),
        ("c-pool-", "pool"),
        ("c-pool-EU", "pool"),
        ("c-pool-9x", "pool"),
        ("c-pool-eu-", "pool"),
        ("c-pool-" + "a" * 64, "pool"),
        ("c-pool-a-pool-b", "pool"),
        ("c-label-novalue", "label"),
        ("c-label-=v", "label"),
        ("c-label-k=v!", "label k"),
        ("c-label-k=1-label-k=2", "label k"),
        ("c" * 600, "username"),
    ],
)
def test_errors_name_the_parameter(username: str, param: str) -> None:
    with pytest.raises(UsernameError) as caught:
        parse_username(username)
    assert caught.value.param == param
    assert str(caught.value).startswith(f"{param}: ")


def test_an_error_never_echoes_control_characters() -> None:
    with pytest.raises(UsernameError) as caught:
        parse_username("c-\r\nX-Injected: 1")
    assert "\r" not in str(caught.value)
    assert "\n" not in str(caught.value)


_alnum = st.text("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=1)
_lower_seg = st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=8).filter(
    lambda s: s not in KEYS
)
_spanning = st.lists(_lower_seg, min_size=1, max_size=4).map("-".join)


@st.composite
def selectors(draw: st.DrawFn) -> Selector:
    session = draw(st.one_of(st.just(""), _alnum.filter(lambda s: len(s) <= 64)))
    sesstime = draw(st.integers(1, MAX_SESSTIME_MINUTES)) if session and draw(st.booleans()) else 0
    zone = draw(st.one_of(st.just(""), _spanning.filter(lambda s: len(s) <= 63)))
    provider = draw(
        st.one_of(st.just(""), _spanning.filter(lambda s: s[0].isalpha() and len(s) <= 31))
    )
    keys = st.lists(_spanning.filter(lambda s: len(s) <= 63), max_size=3, unique=True)
    labels = {k: draw(st.one_of(st.just(""), _spanning)) for k in draw(keys)}
    name = draw(st.text("abcXYZ019_.", min_size=1, max_size=64))
    pool = draw(st.one_of(st.just(""), _spanning.filter(lambda s: s[0].isalpha())))
    return Selector(name, session, sesstime, zone, provider, labels, pool)


@given(selectors())
def test_a_formatted_selector_parses_back(sel: Selector) -> None:
    assert parse_username(sel.format()) == sel


@given(st.text(max_size=200))
def test_any_text_parses_or_is_a_username_error(text: str) -> None:
    try:
        sel: Selector | UsernameError = parse_username(text)
    except UsernameError as exc:
        sel = exc
    if isinstance(sel, UsernameError):
        assert sel.param
        assert all(c.isprintable() for c in str(sel))
    else:
        assert parse_username(sel.format()) == sel


def test_the_documented_examples_parse() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "gateway.md").read_text()
    paragraph = doc[doc.index("Examples: ") :].split("\n\n", 1)[0]
    line = paragraph.replace("\n", " ")
    examples = re.findall(r"`([^`]+)`", line)
    assert len(examples) == 5
    for username in examples:
        parse_username(username)
    assert parse_username("crawler-session-abc-sesstime-30").sesstime == 30

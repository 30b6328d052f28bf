"""The usernames docs/gateway.md and the README show are ones the gateway takes, and the
typo it shows is one it refuses (naming the parameter)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from proxyfleet.gateway.username import UsernameError, parse_username

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "docs" / "gateway.md", ROOT / "README.md"]
_IN_URL = re.compile(r"(?:http|socks5h?)://([A-Za-z0-9_.{}=/-]+):[^@\s\"]+@")
_PLAYWRIGHT = re.compile(r'"username": "([^"]+)"')
_LISTED = re.compile(r"^Examples: (.+?)\.\n", re.MULTILINE | re.DOTALL)


def _usernames() -> list[str]:
    found: list[str] = []
    for doc in DOCS:
        text = doc.read_text()
        found += _IN_URL.findall(text) + _PLAYWRIGHT.findall(text)
        for line in _LISTED.findall(text):
            found += re.findall(r"`([^`]+)`", line)
    # An f-string's placeholder stands for a session id.
    return sorted({name.replace("{session_id}", "cart42") for name in found})


def test_the_docs_show_every_kind_of_parameter() -> None:
    names = "-".join(_usernames())
    for param in ("session", "sesstime", "zone", "provider", "pool", "label"):
        assert f"-{param}-" in names


@pytest.mark.parametrize("username", _usernames())
def test_a_documented_username_parses(username: str) -> None:
    assert parse_username(username).name == username.split("-", 1)[0]


def test_the_documented_typo_is_refused_by_name() -> None:
    with pytest.raises(UsernameError) as refused:
        parse_username("crawler-sesion-x")
    assert refused.value.param == "sesion"

"""The providers configs shown in the docs are valid configs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from proxyfleet.common.providers import parse_providers_config

ROOT = Path(__file__).resolve().parents[2]
_YAML = re.compile(r"```yaml\n(.*?)```", re.DOTALL)


def _examples() -> list[tuple[str, str]]:
    found = []
    docs = ("configuration", "kvm-provider", "gcp-provider", "static-provider")
    for doc in (f"docs/{name}.md" for name in docs):
        for block in _YAML.findall((ROOT / doc).read_text()):
            if block.startswith("providers:"):
                found.append((doc, block))
    return found


@pytest.mark.parametrize(("doc", "text"), _examples())
def test_documented_providers_config_parses(doc: str, text: str) -> None:
    cfg = parse_providers_config(text, doc)
    assert cfg.providers


def test_each_doc_has_an_example() -> None:
    assert {doc for doc, _ in _examples()} == {
        "docs/configuration.md",
        "docs/kvm-provider.md",
        "docs/gcp-provider.md",
        "docs/static-provider.md",
    }

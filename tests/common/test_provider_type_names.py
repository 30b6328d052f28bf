"""Only the registry knows which provider types exist: libs/, the services other than the
provisioners, and tools/ neither name a type (as a string, or `type: <name>` in text) nor
import a provisioner package, but for the places allowed below, each with its reason."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from proxyfleet.common.providers import provider_types

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ["libs", "services", "tools"]
PROVISIONERS = "services/provisioner-"
"""Each provisioner package defines its own type: it may name it."""

ALLOWED: dict[tuple[str, str], str] = {
    ("libs/common/src/proxyfleet/common/domain/pool_spec.py", "kubernetes"): (
        "Owner.KUBERNETES: a pool declared by a Kubernetes resource, not a provider type"
    ),
    ("services/api/src/proxyfleet/api/http/docs_ui.py", "static"): (
        "the API's folder of static assets (Redoc's script), not a provider type"
    ),
    ("tools/devstack/src/proxyfleet/devstack/commands.py", "local"): (
        "the dev stack runs the local provisioner for its provider instance named local"
    ),
    ("tools/devstack/src/proxyfleet/devstack/providers.py", "type: local"): (
        "the dev stack's providers file: it runs proxies as local processes by design"
    ),
}
"""(file, what is named) -> why it may be named there."""


def _sources() -> Iterator[Path]:
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if not relative.startswith(PROVISIONERS) and "/.venv/" not in relative:
                yield path


def _named(tree: ast.AST, types: set[str]) -> Iterator[tuple[int, str]]:
    """(line, what) for each string naming a type, and each import of a provisioner."""
    in_text = re.compile(rf"\btype:\s*({'|'.join(map(re.escape, types))})\b")
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if node.value in types:
                yield node.lineno, node.value
            yield from ((node.lineno, m.group(0)) for m in in_text.finditer(node.value))
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
            yield from ((node.lineno, n) for n in names if n.startswith("proxyfleet.provisioner_"))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
            "proxyfleet.provisioner_"
        ):
            yield node.lineno, str(node.module)


def _places() -> dict[tuple[str, str], list[int]]:
    types = set(provider_types())
    found: dict[tuple[str, str], list[int]] = {}
    for path in _sources():
        relative = path.relative_to(ROOT).as_posix()
        for line, what in _named(ast.parse(path.read_text(), str(path)), types):
            found.setdefault((relative, what), []).append(line)
    return found


def test_only_the_registry_names_provider_types() -> None:
    found = _places()
    unexpected = {f"{file}:{lines[0]}: {what}" for (file, what), lines in found.items()
                  if (file, what) not in ALLOWED}  # fmt: skip
    assert not unexpected, "name a provider type outside its package: " + ", ".join(unexpected)


def test_every_allowed_place_still_names_its_type() -> None:
    stale = set(ALLOWED) - set(_places())
    assert not stale, f"allowed but no longer found (remove them): {sorted(stale)}"


def test_the_scan_sees_a_type_named_in_code_text_and_imports() -> None:
    code = 'import proxyfleet.provisioner_gcp.main\nkind = "gcp"\nYAML = "  type: kvm\\n"\n'
    named = sorted(_named(ast.parse(code), {"gcp", "kvm"}))
    assert named == [(1, "proxyfleet.provisioner_gcp.main"), (2, "gcp"), (3, "type: kvm")]

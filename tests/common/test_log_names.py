"""Every structlog event name is `<area>.<event>` in lower snake case.

The scan reads source, not logs: it finds the loggers a module makes with get_logger (or
binds from one) and checks the first argument of their level calls, and of forwarding
helpers' calls in any module. stdlib `logging` loggers and third-party clients with an
`info` method (redis, libvirt) are not made by get_logger, so they are not checked."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("libs", "services", "tools", "bench")
LEVELS = frozenset({"debug", "info", "warning", "error", "exception", "critical"})
EVENT_NAME = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$")
FORWARDERS = frozenset({"detail"})
"""Methods that pass their first argument on as the event name (LibvirtCalls.detail): their
callers must give a literal name, and inside them the name may be a variable."""


@dataclass(frozen=True)
class Problem:
    where: str
    what: str


def _terminal_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _makes_logger(value: ast.expr, loggers: set[str]) -> bool:
    for node in ast.walk(value):
        if not isinstance(node, ast.Call):
            continue
        if _terminal_name(node.func) == "get_logger":
            return True
        func = node.func
        binds = isinstance(func, ast.Attribute) and func.attr in {"bind", "new"}
        if binds and isinstance(func, ast.Attribute) and _terminal_name(func.value) in loggers:
            return True
    return False


def logger_names(tree: ast.Module) -> set[str]:
    """Names (or attribute names, e.g. `self._log`) assigned a structlog logger."""
    loggers: set[str] = set()
    changed = True
    while changed:  # a bound logger may be made from one found on an earlier pass
        changed = False
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if not _makes_logger(node.value, loggers):
                    continue
                for target in targets:
                    name = _terminal_name(target)
                    if name is not None and name not in loggers:
                        loggers.add(name)
                        changed = True
    return loggers


def _enclosing_functions(tree: ast.Module) -> dict[ast.AST, str]:
    owner: dict[ast.AST, str] = {}
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            for node in ast.walk(fn):
                owner[node] = fn.name  # inner functions are walked later and win
    return owner


def check_source(source: str, where: str) -> tuple[int, list[Problem]]:
    """(log calls checked, problems) for one module's source."""
    tree = ast.parse(source)
    loggers = logger_names(tree)
    owner = _enclosing_functions(tree)
    checked, problems = 0, list[tuple[int, Problem]]()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        method = node.func.attr
        is_log = method in LEVELS and _terminal_name(node.func.value) in loggers
        if not (is_log or method in FORWARDERS):
            continue
        checked += 1
        at = f"{where}:{node.lineno}"
        first = node.args[0] if node.args else None
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            if not EVENT_NAME.match(first.value):
                problems.append((node.lineno, Problem(at, f"event name {first.value!r}")))
        elif not (is_log and owner.get(node) in FORWARDERS):
            problems.append((node.lineno, Problem(at, "event name is not a string literal")))
    return checked, [problem for _, problem in sorted(problems, key=lambda p: p[0])]


def _modules() -> list[Path]:
    paths = (p for top in SCANNED for p in (ROOT / top).rglob("*.py"))
    return sorted(p for p in paths if ".venv" not in p.parts)


def test_every_event_name_is_area_dot_event() -> None:
    checked, problems = 0, list[Problem]()
    for path in _modules():
        n, found = check_source(path.read_text(), str(path.relative_to(ROOT)))
        checked += n
        problems += found
    assert problems == []
    assert checked > 50  # the scan found the services' loggers at all


def test_the_check_flags_sentences_and_bare_words_on_structlog_loggers_only() -> None:
    source = """
import logging
from proxyfleet.common.observability.logging import get_logger
log = get_logger("x")
std = logging.getLogger("third.party")

class C:
    def __init__(self):
        self._log = get_logger("y")
        self._bound = self._log.bind(k=1)

    def run(self, name, client):
        log.info("runner.intent_republished", proxy_id="p")
        log.warning("proxy booting")
        self._log.error("lease_granted")
        self._bound.debug(name)
        std.info("Anything Goes %s", 1)
        client.info("memory")
"""
    checked, problems = check_source(source, "m.py")
    assert checked == 4
    assert [p.what for p in problems] == [
        "event name 'proxy booting'",
        "event name 'lease_granted'",
        "event name is not a string literal",
    ]


def test_a_forwarding_helper_may_pass_a_variable_but_its_callers_give_literals() -> None:
    source = """
from proxyfleet.common.observability.logging import get_logger
log = get_logger("x")

class Calls:
    def detail(self, what, **fields):
        log.debug(what, **fields)

def use(calls):
    calls.detail("libvirt.domain_xml", xml="<x/>")
    calls.detail("domain xml")
"""
    checked, problems = check_source(source, "m.py")
    assert checked == 3
    assert [p.what for p in problems] == ["event name 'domain xml'"]

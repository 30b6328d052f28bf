"""Writes the blocking client (clients/python/.../sync.py) from the async one (aio.py), the
way httpcore's scripts/unasync.py does: `async`/`await` taken out, async names renamed.

    python tools/unasync.py           # rewrite sync.py (`make generate`)
    python tools/unasync.py --check   # exit 1 when sync.py is not what aio.py gives

`unasync` is pure: ordered regex substitutions, each of which must apply at least once, so
a rule aio.py stopped needing is an error rather than dead weight. Where the two clients
really differ (a task or a thread renewing a lease), aio.py calls `aio_background` by name
and the rewrite swaps in `sync_background`. The result's imports are then sorted and the
file formatted by the project's ruff (what `make lint` checks): joining a line that lost
its `await` is ruff's business, not a rule's.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLIENT = ROOT / "clients/python/src/proxyfleet/client"
SOURCE = CLIENT / "aio.py"
TARGET = CLIENT / "sync.py"
COMMAND = "make generate"
HEADER = f"# Generated from aio.py by tools/unasync.py (`{COMMAND}`); do not edit.\n"

RULES: tuple[tuple[str, str], ...] = (
    # Prose first (a docstring may wrap between the words): the code rules below would
    # leave "an `with`".
    (r"\ban(\s+)`async with`", r"a\1`with`"),
    (r"\basyncio(\s+)client\b", r"blocking\1client"),
    (r"\bbackground(\s+)task\b", r"background\1thread"),
    # An async generator has a send type only; a generator a send and a return type.
    (r"\bAsyncGenerator\[(.+), None\]", r"Generator[\1, None, None]"),
    (r"\bAsync([A-Z]\w*)", r"\1"),
    (r"\bAwaitable\[([^\[\]]*)\]", r"\1"),
    (r"\bAwaitable, ", ""),
    (r"\basync def\b", "def"),
    (r"\basync with\b", "with"),
    (r"\basync for\b", "for"),
    (r"\bawait ", ""),
    (r"\b__aenter__\b", "__enter__"),
    (r"\b__aexit__\b", "__exit__"),
    (r"\baclose\b", "close"),
    (r"\baread\b", "read"),
    (r"\baiter_lines\b", "iter_lines"),
    (r"\basyncio\.sleep\b", "time.sleep"),
    (r"\basyncio\.Lock\b", "threading.Lock"),
    (r"^import asyncio$", "import threading"),
    (r"\baio_background\b", "sync_background"),
    # An async generator cannot `yield from`; ruff wants a generator to (UP028).
    (r"^( *)for (\w+) in (.+):\n +yield \2$", r"\1yield from \3"),
)
"""(pattern, replacement) in the order applied, over the whole text, `^`/`$` per line."""


class UnusedRulesError(ValueError):
    """Rules that changed nothing: the source no longer needs them (or a rule is wrong)."""


def rewrite(source: str, rules: tuple[tuple[str, str], ...] = RULES) -> tuple[str, list[str]]:
    """`source` with every rule applied in order, and the patterns that matched nothing."""
    unused = []
    for pattern, replacement in rules:
        source, count = re.subn(pattern, replacement, source, flags=re.MULTILINE)
        if count == 0:
            unused.append(pattern)
    return source, unused


def unasync(source: str, rules: tuple[tuple[str, str], ...] = RULES) -> str:
    """`source` rewritten by every rule; UnusedRulesError if one matched nothing."""
    text, unused = rewrite(source, rules)
    if unused:
        raise UnusedRulesError(f"rules that matched nothing: {unused}")
    return text


def ruff(args: list[str], source: str, path: Path) -> str:
    """What `ruff ARGS` makes of `source` read as `path` (the project's configuration)."""
    done = subprocess.run(
        [sys.executable, "-m", "ruff", *args, "--stdin-filename", str(path), "-"],
        input=source,
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"ruff {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


def generate(source: str) -> str:
    """sync.py as it must be for aio.py's text `source`."""
    text = HEADER + unasync(source)
    text = ruff(["check", "--fix-only", "--select", "I"], text, TARGET)
    return ruff(["format"], text, TARGET)


def main(argv: list[str]) -> int:
    expected = generate(SOURCE.read_text())
    if "--check" in argv:
        if TARGET.read_text() != expected:
            print(f"{TARGET} is not what aio.py gives: run `{COMMAND}`")
            return 1
        return 0
    TARGET.write_text(expected)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Writes the blocking client (clients/python/.../sync.py, sync_held_lease.py) from the
async one (aio.py, aio_held_lease.py), the way httpcore's scripts/unasync.py does:
`async`/`await` taken out, async names renamed.

    python tools/unasync.py           # rewrite the sync modules (`make generate`)
    python tools/unasync.py --check   # exit 1 when one is not what its aio module gives

`unasync` is pure: ordered regex substitutions, each of which must apply at least once
(in one of the sources), so a rule the async client stopped needing is an error rather
than dead weight. An `aio_x` module's blocking twin is `sync_x`: where the two clients
really differ (a task or a thread renewing a lease), the async client calls
`aio_background` by name and the rewrite swaps in `sync_background`. The result's imports
are then sorted (unused ones dropped) and the file formatted by the project's ruff (what
`make lint` checks): joining a line that lost its `await` is ruff's business, not a rule's.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLIENT = ROOT / "clients/python/src/proxyfleet/client"
PAIRS: tuple[tuple[Path, Path], ...] = (
    (CLIENT / "aio.py", CLIENT / "sync.py"),
    (CLIENT / "aio_held_lease.py", CLIENT / "sync_held_lease.py"),
)
"""(async source, blocking target) of each generated module."""
COMMAND = "make generate"


def header(source: Path) -> str:
    return f"# Generated from {source.name} by tools/unasync.py (`{COMMAND}`); do not edit.\n"


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
    (r"\bclient\.aio\b", "client.sync"),
    (r"\baio_(\w+)\b", r"sync_\1"),
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
    return unasync_all([source], rules)[0]


def unasync_all(sources: list[str], rules: tuple[tuple[str, str], ...] = RULES) -> list[str]:
    """Each source rewritten by every rule; UnusedRulesError if one matched in none."""
    texts, unused = [], {pattern for pattern, _ in rules}
    for source in sources:
        text, unmatched = rewrite(source, rules)
        texts.append(text)
        unused &= set(unmatched)
    if unused:
        raise UnusedRulesError(f"rules that matched nothing: {sorted(unused)}")
    return texts


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


def generate(sources: dict[Path, str]) -> dict[Path, str]:
    """The text each target must have for its source's text in `sources` (keyed by the
    sources of PAIRS), keyed by target."""
    targets = dict(PAIRS)
    texts = unasync_all(list(sources.values()))
    generated = {}
    for (source, _), text in zip(sources.items(), texts, strict=True):
        target = targets[source]
        tidy = ruff(["check", "--fix-only", "--select", "I,F401"], header(source) + text, target)
        generated[target] = ruff(["format"], tidy, target)
    return generated


def main(argv: list[str]) -> int:
    expected = generate({source: source.read_text() for source, _ in PAIRS})
    if "--check" in argv:
        stale = [target for target, text in expected.items() if target.read_text() != text]
        for target in stale:
            print(f"{target} is not what its aio module gives: run `{COMMAND}`")
        return 1 if stale else 0
    for target, text in expected.items():
        target.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The keys the store's scripts build, read from the Lua sources, and Redis Cluster's slots.

From store/lua/*.lua (`_lib.lua` prepended to each): the key templates each script builds
with `k(...)`, directly or through the `_lib.lua` helpers it calls (transitively). The
slots are Redis Cluster's: CRC16/XMODEM of the key (or of its hash tag) mod 16384.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources

SLOTS = 16384
NAMESPACE = "pf"


def crc16_xmodem(data: bytes) -> int:
    """CRC16/XMODEM (poly 0x1021, init 0): the CRC Redis Cluster hashes keys with."""
    crc = 0
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def hash_tag(key: str) -> str:
    """What Redis Cluster hashes: between the first `{` and the next `}` when that is not
    empty, else the whole key."""
    start = key.find("{")
    if start >= 0:
        end = key.find("}", start + 1)
        if end > start + 1:
            return key[start + 1 : end]
    return key


def key_slot(key: str) -> int:
    return crc16_xmodem(hash_tag(key).encode()) % SLOTS


# ---- the key templates the scripts build ---------------------------------------------------


@dataclass(frozen=True, slots=True)
class KeyTemplate:
    parts: tuple[str, ...]
    """Each argument of the k(...) call: a literal ('avail') or a Lua expression (`<zone>`)."""
    context: str
    """The _lib.lua helper it is built in, or `script` for the script's own text."""

    @property
    def family(self) -> str:
        return self.parts[0]

    def render(self, values: Mapping[str, str]) -> str:
        """The key's name after the namespace, expressions replaced by their sample value
        (or their own text)."""
        return ":".join(_value(p, values) for p in self.parts)


def _value(part: str, values: Mapping[str, str]) -> str:
    if part.startswith("<"):
        return values.get(part[1:-1], part[1:-1])
    return part


def strip_comments(source: str) -> str:
    """The source without `--` comments (quoted strings are kept whole)."""
    out: list[str] = []
    for line in source.splitlines():
        quote, i, end = "", 0, len(line)
        while i < len(line):
            ch = line[i]
            if quote:
                if ch == "\\":
                    i += 1
                elif ch == quote:
                    quote = ""
            elif ch in "'\"":
                quote = ch
            elif line.startswith("--", i):
                end = i
                break
            i += 1
        out.append(line[:end].rstrip())
    return "\n".join(out)


def _split_args(text: str) -> list[str]:
    """Top-level comma-separated arguments (nested brackets and strings kept whole)."""
    args, depth, quote, cur = [], 0, "", ""
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            args.append(cur.strip())
            cur = ""
            continue
        cur += ch
    if cur.strip():
        args.append(cur.strip())
    return args


_CALL = re.compile(r"(?<![\w.:])k\(")


def key_calls(code: str) -> list[tuple[str, ...]]:
    """The arguments of every k(...) call in `code`: literals bare, expressions in <>."""
    found: list[tuple[str, ...]] = []
    for match in _CALL.finditer(code):
        depth, i = 1, match.end()
        while depth and i < len(code):
            depth += {"(": 1, ")": -1}.get(code[i], 0)
            i += 1
        args = _split_args(code[match.end() : i - 1])
        if args == ["..."]:
            continue  # k's own definition
        found.append(tuple(a[1:-1] if re.fullmatch(r"'[^']*'", a) else f"<{a}>" for a in args))
    return found


def lib_functions(lib: str) -> dict[str, str]:
    """_lib.lua's top-level `local function`s: name -> body (everything up to the next
    statement at column 0 that is not its `end`)."""
    functions: dict[str, str] = {}
    name, body = "", list[str]()
    for line in [*strip_comments(lib).splitlines(), "local __end"]:
        if line[:1] not in ("", " ") and not line.startswith("end"):
            if name:
                functions[name] = "\n".join(body)
            m = re.match(r"local function (\w+)", line)
            name, body = (m.group(1) if m else ""), []
        body.append(line)
    return functions


def _calls(code: str, names: Iterable[str]) -> set[str]:
    return {n for n in names if re.search(rf"(?<![\w.:]){n}\(", code)}


@dataclass(frozen=True, slots=True)
class Script:
    name: str
    keys: frozenset[KeyTemplate]
    helpers: frozenset[str] = field(default_factory=frozenset)
    """The _lib.lua helpers it calls, directly or through another."""

    @property
    def families(self) -> frozenset[str]:
        return frozenset(t.family for t in self.keys)


def load_scripts() -> dict[str, Script]:
    """Every script of the store, as shipped in the package (name -> its key templates)."""
    folder = resources.files("proxyfleet.common.store") / "lua"
    lib = lib_functions((folder / "_lib.lua").read_text())
    scripts: dict[str, Script] = {}
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".lua") or entry.name == "_lib.lua":
            continue
        code = strip_comments(entry.read_text())
        used, todo = set(), _calls(code, lib)
        while todo:
            name = todo.pop()
            used.add(name)
            todo |= _calls(lib[name], lib) - used - {name}
        keys = {KeyTemplate(parts, "script") for parts in key_calls(code)}
        for name in used:
            keys |= {KeyTemplate(parts, name) for parts in key_calls(lib[name])}
        scripts[entry.name.removesuffix(".lua")] = Script(
            entry.name.removesuffix(".lua"), frozenset(keys), frozenset(used - {"k"})
        )
    return scripts

"""YAML that refuses a key given twice in one mapping (PyYAML keeps the last, silently).

Pure: `load(text)` returns plain Python data or raises `DuplicateKey` / `yaml.YAMLError`;
`line_of(text, key)` finds where a key (a msgspec location) is written.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_MERGE = "tag:yaml.org,2002:merge"


_STEP = re.compile(r"\.?(?P<key>[^.\[\]]+)|\[(?P<index>\d+)\]")
_LOC = re.compile(r" - at `\$(?P<loc>[^`]*)`$")


def located(message: str) -> tuple[str, str]:
    """A msgspec validation message (`Expected int, got str - at `$.providers[0].zones``)
    split into where (`providers[0].zones`; "" at the top) and what."""
    m = _LOC.search(message)
    if not m:
        return "", message
    return m.group("loc").lstrip("."), message[: m.start()]


class DuplicateKey(ValueError):
    """`key` is the full path, as msgspec names locations: providers[0].local.bind_host."""

    def __init__(self, key: str, first_line: int, line: int) -> None:
        self.key, self.first_line, self.line = key, first_line, line
        super().__init__(f"key {key}: given twice (lines {first_line} and {line})")


def load(text: str | bytes) -> Any:
    """The document's data; an empty document is None."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check(node, "", set())
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _check(node: yaml.Node, path: str, seen: set[int]) -> None:
    if id(node) in seen:  # an alias met again: checked once is enough, and no loop
        return
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        first: dict[tuple[str, str], int] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE:  # a merged key overridden here is YAML's meaning
                continue
            if isinstance(key_node, yaml.ScalarNode):
                key, line = str(key_node.value), key_node.start_mark.line + 1
                child = f"{path}.{key}" if path else key
                if (ident := (key_node.tag, key)) in first:
                    raise DuplicateKey(child, first[ident], line)
                first[ident] = line
            else:
                child = path
            _check(value_node, child, seen)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _check(item, f"{path}[{i}]", seen)


def line_of(text: str | bytes, key: str) -> int | None:
    """The 1-based line where `key` (`providers[0].static.proxies[2].url`) is written, or
    of its nearest enclosing key that is; None when the text does not parse."""
    try:
        node = _Loader(text).get_single_node()
    except yaml.YAMLError:
        return None
    line = None
    for step in _STEP.finditer(key):
        if node is None:
            break
        line = node.start_mark.line + 1
        node = _child(node, step["key"], step["index"])
    return node.start_mark.line + 1 if node is not None else line


def _child(node: yaml.Node, key: str | None, index: str | None) -> yaml.Node | None:
    if index is not None and isinstance(node, yaml.SequenceNode):
        i = int(index)
        return node.value[i] if i < len(node.value) else None
    if key is not None and isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.value == key:
                return value_node  # type: ignore[no-any-return]
    return None

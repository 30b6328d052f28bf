"""Pool files for `proxyfleet pools apply -f`: YAML documents, each a pool's `name:` and
its spec (what PUT /v1/pools/{name} takes; docs/pools.md). Pure: no I/O."""

from __future__ import annotations

from typing import Any

import yaml


class PoolFileError(ValueError):
    """A file that holds no pool, or a document that is not one; names the document."""


class _Loader(yaml.SafeLoader):
    """YAML's safe subset; a key given twice is an error (not the last one silently), and
    a date stays a string (a label value `2025-01-01` is text, as JSON carries it)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} given twice", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def pool_documents(text: str, source: str) -> list[tuple[str, dict[str, Any]]]:
    """(name, spec) of every pool in `text`, in order; empty documents are skipped.
    PoolFileError naming `source` and the document at fault."""
    try:
        documents = list(yaml.load_all(text, Loader=_Loader))
    except yaml.MarkedYAMLError as e:
        line = f" line {e.problem_mark.line + 1}:" if e.problem_mark else ""
        raise PoolFileError(f"{source}:{line} not valid YAML: {e.problem}") from None
    except yaml.YAMLError as e:
        raise PoolFileError(f"{source}: not valid YAML: {e}") from None
    pools: list[tuple[str, dict[str, Any]]] = []
    for number, document in enumerate(documents, 1):
        if document is None:
            continue  # `---` at the end, or a document of comments only
        where = f"{source}: document {number}"
        if not isinstance(document, dict):
            raise PoolFileError(f"{where}: expected a mapping: name: and the pool's spec")
        spec = {str(k): v for k, v in document.items()}
        name = spec.pop("name", None)
        if not isinstance(name, str) or not name:
            raise PoolFileError(f"{where}: expected `name: <the pool's name>`")
        if any(name == seen for seen, _ in pools):
            raise PoolFileError(f"{where}: pool {name} is in the file twice")
        pools.append((name, spec))
    if not pools:
        raise PoolFileError(f"{source}: no pool in it (expected name: and a spec)")
    return pools

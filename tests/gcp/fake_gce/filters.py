"""Compute list `filter` expressions, as the API documents and the client passes them
through untouched. Pure: no I/O.

    labels.env = "prod"                     exact match ("!=" negates)
    (labels.a = "x") AND (labels.b = "y")   AND / OR, parentheses; juxtaposition is AND
    labels.env:*                            the key is present
    name : "web"                            substring
    name eq 'web-.*'                        the older regex form (eq / ne, full match)
    NOT labels.env = "dev"

Anything else is a 400 `invalid` like Google's ("Invalid list filter expression"), so an
adapter that builds a filter the real API would refuse fails here too.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from .errors import GceError

Predicate = Callable[[Mapping[str, Any]], bool]

_TOKEN = re.compile(
    r"""\s*(?:
      (?P<lp>\()|(?P<rp>\))
    | (?P<op>!=|>=|<=|=|:|>|<)
    | "(?P<dq>(?:[^"\\]|\\.)*)"
    | '(?P<sq>(?:[^'\\]|\\.)*)'
    | (?P<word>[^\s()=!:<>"']+)
    )""",
    re.VERBOSE,
)
_WORD_OPS = {"eq", "ne"}


def parse_filter(text: str) -> Predicate:
    """A predicate over a resource's JSON; an empty filter matches everything."""
    tokens = _tokenize(text)
    if not tokens:
        return lambda _resource: True
    parser = _Parser(tokens, text)
    predicate = parser.expression()
    if parser.pos != len(tokens):
        raise _invalid(text)
    return predicate


def _tokenize(text: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise _invalid(text)
        pos = m.end()
        kind = m.lastgroup or ""
        value = m.group(kind)
        if kind in ("dq", "sq"):
            tokens.append(("str", re.sub(r"\\(.)", r"\1", value)))
        else:
            tokens.append((kind, value))
    return tokens


class _Parser:
    def __init__(self, tokens: list[tuple[str, str]], text: str) -> None:
        self.tokens = tokens
        self.text = text
        self.pos = 0

    def _peek(self) -> tuple[str, str] | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def _take(self) -> tuple[str, str]:
        token = self._peek()
        if token is None:
            raise _invalid(self.text)
        self.pos += 1
        return token

    def expression(self) -> Predicate:
        terms = [self._conjunction()]
        while self._peek() == ("word", "OR"):
            self.pos += 1
            terms.append(self._conjunction())
        if len(terms) == 1:
            return terms[0]
        return lambda r: any(t(r) for t in terms)

    def _conjunction(self) -> Predicate:
        terms = [self._unary()]
        while (token := self._peek()) is not None and token[0] != "rp" and token[1] != "OR":
            if token == ("word", "AND"):
                self.pos += 1
            terms.append(self._unary())
        if len(terms) == 1:
            return terms[0]
        return lambda r: all(t(r) for t in terms)

    def _unary(self) -> Predicate:
        if self._peek() == ("word", "NOT"):
            self.pos += 1
            inner = self._unary()
            return lambda r: not inner(r)
        if self._peek() == ("lp", "("):
            self.pos += 1
            inner = self.expression()
            if self._take()[0] != "rp":
                raise _invalid(self.text)
            return inner
        return self._comparison()

    def _comparison(self) -> Predicate:
        kind, field = self._take()
        if kind != "word" or field in ("AND", "OR", "NOT"):
            raise _invalid(self.text)
        op_kind, op = self._take()
        if op_kind != "op" and not (op_kind == "word" and op in _WORD_OPS):
            raise _invalid(self.text)
        value_kind, value = self._take()
        if value_kind not in ("word", "str"):
            raise _invalid(self.text)
        return _compare(field, op, value, self.text)


def _compare(field: str, op: str, value: str, text: str) -> Predicate:
    path = field.split(".")
    if op == ":" and value == "*":
        return lambda r: _lookup(r, path) is not None
    if op in ("eq", "ne"):
        try:
            pattern = re.compile(value)
        except re.error as exc:
            raise _invalid(text) from exc
        want = op == "eq"
        return lambda r: (
            ((v := _lookup(r, path)) is not None and pattern.fullmatch(v) is not None) == want
        )
    if op == "=":
        return lambda r: _lookup(r, path) == value
    if op == "!=":
        return lambda r: _lookup(r, path) != value
    if op == ":":
        return lambda r: (v := _lookup(r, path)) is not None and value in v
    # Ordering comparisons on numbers (e.g. `id > 5`); strings compare lexically.
    return lambda r: _ordered(_lookup(r, path), op, value)


def _ordered(actual: str | None, op: str, value: str) -> bool:
    if actual is None:
        return False
    try:
        a: float | str = float(actual)
        b: float | str = float(value)
    except ValueError:
        a, b = actual, value
    return {">": a > b, "<": a < b, ">=": a >= b, "<=": a <= b}[op]  # type: ignore[operator]


def _lookup(resource: Mapping[str, Any], path: list[str]) -> str | None:
    node: Any = resource
    for part in path:
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    if isinstance(node, bool):
        return "true" if node else "false"
    if isinstance(node, (str, int, float)):
        return str(node)
    return None


def _invalid(text: str) -> GceError:
    return GceError(400, "invalid", f"Invalid list filter expression '{text}'.")

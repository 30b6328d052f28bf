"""Command-line options generated from settings dataclasses (pure: no I/O but reading the
classes' own source for their field docstrings).

One rule names every environment variable: a field of `CommonSettings` is
`PROXYFLEET_<FIELD>`, a field of a service's settings is `PROXYFLEET_<SERVICE>_<FIELD>`
(upper case, `-` as `_`: `PROXYFLEET_PROVISIONER_LOCAL_ACK_WAIT`). Earlier names a field
lists in `env_aliases` are still read, after the derived one. The flag is `--<field>`
with `_` as `-`, unless the field names another; a bool is `--x/--no-x`."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import textwrap
import typing
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from proxyfleet.common.core.settings import OPTION, CommonSettings, OptionMeta

ENV_PREFIX = "PROXYFLEET_"


def env_name(service: str, field_name: str, *, common: bool) -> str:
    """The environment variable of one field (the rule in the module docstring)."""
    parts = [field_name] if common else [service, field_name]
    return ENV_PREFIX + "_".join(p.upper().replace("-", "_") for p in parts)


@dataclass(frozen=True, slots=True)
class OptionSpec:
    """One generated option: everything click needs, and the README table shows."""

    owner: type[Any]
    """The settings class the field belongs to."""
    field: str
    flag: str
    envvars: tuple[str, ...]
    """The derived name first, then the earlier names still read."""
    help: str
    kind: type[Any]
    """str, int, float, bool or tuple (a list of str)."""
    default: Any
    required: bool
    choices: tuple[str, ...] = ()

    @property
    def env(self) -> str:
        return self.envvars[0]


def options_for(cls: type[Any], service: str) -> list[OptionSpec]:
    """The options of every exposed field of `cls`, in field order. A field typed
    CommonSettings is not an option: the host fills it with the common settings."""
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls.__name__}: settings must be a dataclass")
    common = cls is CommonSettings
    docs = field_docs(cls)
    hints = typing.get_type_hints(cls)
    specs: list[OptionSpec] = []
    for f in dataclasses.fields(cls):
        meta: OptionMeta = f.metadata.get(OPTION, OptionMeta())
        hint = hints[f.name]
        if hint is CommonSettings or not meta.exposed:
            continue
        if f.name not in docs:
            raise TypeError(f"{cls.__name__}.{f.name}: a settings field needs a docstring")
        kind, choices = _kind(hint, f"{cls.__name__}.{f.name}")
        default, required = _default(f)
        specs.append(
            OptionSpec(
                owner=cls,
                field=f.name,
                flag=meta.flag or "--" + f.name.replace("_", "-"),
                envvars=(env_name(service, f.name, common=common), *meta.env_aliases),
                help=docs[f.name],
                kind=kind,
                default=default,
                required=required,
                choices=choices,
            )
        )
    return specs


def _kind(hint: Any, where: str) -> tuple[type[Any], tuple[str, ...]]:
    if hint in (str, int, float, bool):
        return hint, ()
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Literal and all(isinstance(a, str) for a in args):
        return str, tuple(args)
    if origin is tuple and args == (str, Ellipsis):
        return tuple, ()
    raise TypeError(f"{where}: no option type for {hint!r} (str, int, float, bool, ...)")


def _default(f: dataclasses.Field[Any]) -> tuple[Any, bool]:
    if f.default is not dataclasses.MISSING:
        return f.default, False
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory(), False
    return None, True


@cache
def field_docs(cls: type[Any]) -> dict[str, str]:
    """Each field's docstring (the string right below it), one paragraph; a subclass's
    docstring wins over its base's."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if klass is object or not dataclasses.is_dataclass(klass):
            continue
        tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        node = tree.body[0]
        assert isinstance(node, ast.ClassDef)
        for stmt, after in zip(node.body, node.body[1:], strict=False):
            if (
                isinstance(stmt, ast.AnnAssign)
                and isinstance(stmt.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                docs[stmt.target.id] = " ".join(inspect.cleandoc(after.value.value).split())
    return docs


def split_list(values: typing.Iterable[str]) -> tuple[str, ...]:
    """A list option's values: each may itself be comma-separated; blanks are dropped."""
    return tuple(t.strip() for v in values for t in v.split(",") if t.strip())


def default_text(spec: OptionSpec) -> str:
    """The default as help and the README show it ('' for none)."""
    if spec.required:
        return "required"
    if spec.kind is bool:
        return "on" if spec.default else "off"
    if spec.kind is tuple:
        return ", ".join(spec.default)
    if isinstance(spec.default, float) and spec.default.is_integer():
        return str(int(spec.default))
    return str(spec.default)

"""Constrained field types shared by the request schemas: bad values are a 400 at the edge."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Annotated, Any, TypeVar, Union

import msgspec
from litestar.params import JSONBody, SkipValidation

from proxyfleet.common.core.errors import InvalidInput

T = TypeVar("T")

if TYPE_CHECKING:
    JSONInput = Union[T, object]  # noqa: UP007  (a generic alias: mypy sees `object`)
else:
    JSONInput = JSONBody[SkipValidation[T]]
"""A JSON request body documented as T but handed over as decoded JSON, unconverted:
Litestar converts bodies laxly ("3" becomes 3), so handlers pass it to `strict(...)`."""

ProviderName = Annotated[
    str,
    msgspec.Meta(pattern=r"^[a-z][a-z0-9-]{0,30}$", description="A provider instance name."),
]
ZoneName = Annotated[
    str, msgspec.Meta(pattern=r"^[a-z0-9][a-z0-9-]{0,62}$", description="A zone of the provider.")
]
LabelKey = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9]([A-Za-z0-9._/-]{0,61}[A-Za-z0-9])?$")]
LabelValue = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9._-]{0,63}$")]
Labels = Annotated[
    dict[LabelKey, LabelValue],
    msgspec.Meta(max_length=32, description="Up to 32 labels, key -> value."),
]
PlacementKey = Annotated[str, msgspec.Meta(pattern=r"^[a-z][a-z0-9_]{0,31}$")]
PlacementValue = Annotated[str, msgspec.Meta(max_length=2048)]
Placement = Annotated[
    dict[PlacementKey, PlacementValue],
    msgspec.Meta(
        max_length=16,
        description="Provider-specific placement, e.g. KVM: image (a key of the provider's "
        "images) or image_url (+ image_sha256, image_firmware).",
    ),
]
ProxyId = Annotated[str, msgspec.Meta(pattern=r"^[a-z0-9][a-z0-9-]{0,62}$")]
Target = Annotated[
    str,
    msgspec.Meta(
        pattern=r"^([A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?)?$",
        description="A destination domain (bans from `blocked` reports apply to it).",
    ),
]
Holder = Annotated[
    str, msgspec.Meta(max_length=200, description="Who holds the lease (free text).")
]
Seconds = Annotated[float, msgspec.Meta(gt=0, le=31_536_000)]
LeaseTtl = Annotated[
    float,
    msgspec.Meta(
        gt=0,
        le=31_536_000,
        description="Seconds the lease lasts from now. The server caps it at its "
        "--max-lease-ttl (default 3600 s), below this schema's bound: the response's `ttl` "
        "is what was granted and `ttl_capped` says whether it was cut.",
    ),
]
Epoch = Annotated[
    int, msgspec.Meta(ge=1, le=2**53, description="The fencing epoch the grant returned.")
]


def parse_label_filters(raw: list[str] | None) -> dict[str, str]:
    """`?label=k=v&label=k2=v2` -> {"k": "v", "k2": "v2"}; anything else is a 400."""
    labels: dict[str, str] = {}
    for item in raw or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InvalidInput(f"label filter {item!r}: expected key=value")
        if labels.get(key, value) != value:
            raise InvalidInput(f"label filter: key {key!r} given twice")
        labels[key] = value
    return labels


_AT = re.compile(r" - at `\$(?P<loc>[^`]*)`$")


def integral_floats_as_ints(data: object) -> object:
    """1.0 -> 1 anywhere in decoded JSON. JSON Schema's `integer` is any number without a
    fraction, so a documented integer field takes 1.0 as the schema says; a float field
    takes the int as it would."""
    top: list[object] = [data]
    todo: list[list[object] | dict[str, object]] = [top]
    while todo:  # iterative: a body nested 1,000 deep must not exhaust the stack here
        node = todo.pop()
        keys: Iterable[Any] = node.keys() if isinstance(node, dict) else range(len(node))
        for key in keys:
            value = node[key]
            if isinstance(value, float) and value.is_integer():
                node[key] = int(value)
            elif isinstance(value, dict | list):
                node[key] = copy = type(value)(value)  # the caller's data stays as it was
                todo.append(copy)
    return top[0]


def strict(data: object, type_: type[T]) -> T:
    """Validate a decoded JSON body with no type coercion ("3" is not 3, but 1.0 is the
    integer 1: see integral_floats_as_ints); a 400 naming the field if bad."""
    try:
        return msgspec.convert(integral_floats_as_ints(data), type_, strict=True)
    except msgspec.ValidationError as exc:
        message = str(exc)
        m = _AT.search(message)
        if m:
            where = m.group("loc").lstrip(".") or "request body"
            message = f"field {where}: {message[: m.start()]}"
        else:
            message = f"request body: {message}"
        raise InvalidInput(message) from None

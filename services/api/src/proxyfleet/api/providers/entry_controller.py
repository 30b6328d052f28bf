"""/v1/providers/{name}/proxies (admin scope): proxies added to a provider at run time."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Controller, Request, Response, delete, get, post
from litestar.di import NamedDependency
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import Parameter
from litestar.status_codes import HTTP_200_OK, HTTP_201_CREATED, HTTP_204_NO_CONTENT

from proxyfleet.api.http.auth import Principal, Scope
from proxyfleet.api.http.errors import error_responses
from proxyfleet.api.http.fields import JSONInput, strict
from proxyfleet.api.providers.entries import ProviderEntryService, ShownEntry
from proxyfleet.api.providers.entry_schemas import (
    AddProviderEntry,
    ProviderEntryList,
    ProviderEntryOut,
)
from proxyfleet.common.core.errors import InvalidInput

Caller = Request[Principal, Any, Any]
ProviderNameParam = Annotated[
    str,
    Parameter(
        pattern=r"^[a-z][a-z0-9-]{0,30}$",
        description="The provider instance (a name from the providers config).",
    ),
]
EntryIdParam = Annotated[
    str,
    Parameter(
        pattern=r"^[a-z0-9][a-z0-9-]{0,62}$",
        description="The entry's id (the id of its proxy).",
    ),
]


def _out(shown: ShownEntry) -> ProviderEntryOut:
    e = shown.entry
    return ProviderEntryOut(
        id=shown.id, url=shown.masked, zone=e.zone, labels=e.labels, name=e.name
    )


def _line(body: AddProviderEntry) -> tuple[str, str]:
    """(field, line): exactly one of url and line."""
    if (body.url is None) == (body.line is None):
        raise InvalidInput("request body: give the proxy as `url` or as `line` (one of them)")
    return ("url", body.url) if body.url is not None else ("line", body.line or "")


class ProviderEntryController(Controller):
    path = "/providers/{name:str}/proxies"
    tags = ["providers"]
    opt = {"scope": Scope.ADMIN}

    @post(
        "/",
        status_code=HTTP_201_CREATED,
        response_description="The entry, stored; its proxy comes as pending (then booting, "
        "ready after its first good probe)",
        responses={
            HTTP_200_OK: ResponseSpec(
                data_container=ProviderEntryOut,
                description="The same entry was there already: nothing changed",
                generate_examples=False,
            ),
            **error_responses(400, 401, 403, 404, 409, 413, 503),
        },
    )
    async def add_provider_entry(
        self,
        name: ProviderNameParam,
        data: JSONInput[AddProviderEntry],
        provider_entry_service: NamedDependency[ProviderEntryService],
        request: Caller,
    ) -> Response[ProviderEntryOut]:
        """Add a proxy to a provider whose type takes proxies at run time (a list of
        proxies Proxyfleet did not create). The line is read as the provider's source files
        are: 400 `invalid_entry` naming what is wrong (never the password); 404
        `unknown_provider`; 409 `provider_takes_no_entries` for a type that takes none.
        Idempotent without a key: the same body again answers 200 and changes nothing; an
        entry with the same id (scheme, host, port and user) but another password, zone,
        labels or name is a 409 `entry_exists`."""
        body = strict(data, AddProviderEntry)
        field, line = _line(body)
        added = await provider_entry_service.add(
            name,
            line,
            field=field,
            zone=body.zone,
            labels=body.labels,
            entry_name=body.name,
            caller=request.user.name,
        )
        status = HTTP_201_CREATED if added.created else HTTP_200_OK
        return Response(_out(added.shown), status_code=status)

    @get("/", responses=error_responses(400, 401, 403, 404, 409, 503))
    async def list_provider_entries(
        self,
        name: ProviderNameParam,
        provider_entry_service: NamedDependency[ProviderEntryService],
    ) -> ProviderEntryList:
        """The proxies added to this provider through the API (not those of its config or
        source files), by id, passwords masked."""
        shown = await provider_entry_service.list(name)
        return ProviderEntryList(items=[_out(s) for s in shown])

    @delete(
        "/{entry_id:str}",
        status_code=HTTP_204_NO_CONTENT,
        responses=error_responses(400, 401, 403, 404, 409, 503),
    )
    async def remove_provider_entry(
        self,
        name: ProviderNameParam,
        entry_id: EntryIdParam,
        provider_entry_service: NamedDependency[ProviderEntryService],
        request: Caller,
    ) -> None:
        """Remove an entry added through the API: its proxy is drained (a lease runs to
        its end, no new grants), then forgotten; nothing outside Proxyfleet is touched.
        404 `entry_not_found` when there is none with this id."""
        await provider_entry_service.remove(name, entry_id, caller=request.user.name)

"""Loading the Lua scripts (once per process)."""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.client import Pipeline
from redis.commands.core import AsyncScript

from proxyfleet.common.store.mux import LuaScript, ScriptMux
from proxyfleet.common.store.prelude import lua_prelude


@cache
def _source(name: str) -> str:
    lua = resources.files("proxyfleet.common.store") / "lua"
    parts = (lua_prelude(), (lua / "_lib.lua").read_text(), (lua / f"{name}.lua").read_text())
    return "\n".join(parts)


class Scripts:
    """The store's scripts registered on one client (EVALSHA, EVAL on a cold cache).
    With a ScriptMux, single calls go through it (pipelined with every concurrent call);
    pipelines stay on the client."""

    def __init__(
        self, client: aioredis.Redis, namespace: str, mux: ScriptMux | None = None
    ) -> None:
        self.namespace = namespace
        self._client = client
        self._mux = mux
        self._scripts: dict[str, AsyncScript] = {}
        self._lua: dict[str, LuaScript] = {}

    def _script(self, name: str) -> AsyncScript:
        script = self._scripts.get(name)
        if script is None:
            script = self._client.register_script(_source(name))
            self._scripts[name] = script
        return script

    async def call(self, name: str, *args: Any) -> Any:
        if self._mux is not None:
            lua = self._lua.get(name)
            if lua is None:
                lua = self._lua[name] = LuaScript(_source(name))
            return await self._mux.run(lua, (), (self.namespace, *args))
        return await self._script(name)(keys=[], args=[self.namespace, *args])

    async def queue(self, pipe: Pipeline, name: str, *args: Any) -> None:
        """Queue a call on a pipeline; the pipeline loads the script if Redis lacks it."""
        await self._script(name)(keys=[], args=[self.namespace, *args], client=pipe)

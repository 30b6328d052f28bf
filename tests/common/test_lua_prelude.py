"""Rules the Lua scripts share with Python come from their one Python definition: the
probed phases (`lifecycle.PROBED`) and those that count towards max_proxies
(`lifecycle.COUNTED`), given to every script in a generated prelude."""

from __future__ import annotations

import re
from importlib import resources

from proxyfleet.common.lifecycle import COUNTED, PROBED
from proxyfleet.common.store.prelude import lua_prelude

SPELLED_OUT = re.compile(r"'booting'.{0,60}'ready'.{0,60}'unhealthy'", re.DOTALL)


def test_the_prelude_declares_the_probed_phases_of_lifecycle() -> None:
    [line] = [ln for ln in lua_prelude().splitlines() if ln.startswith("local PROBED")]
    declared = set(re.findall(r"(\w+) = true", line))
    assert declared == {p.value for p in PROBED}
    [line] = [ln for ln in lua_prelude().splitlines() if ln.startswith("local COUNTED")]
    assert set(re.findall(r"'(\w+)'", line)) == {p.value for p in COUNTED}


def test_no_script_spells_the_probed_phases_out_again() -> None:
    lua = resources.files("proxyfleet.common.store") / "lua"
    offenders = [
        f.name
        for f in lua.iterdir()
        if f.name.endswith(".lua") and SPELLED_OUT.search(f.read_text())
    ]
    assert offenders == []

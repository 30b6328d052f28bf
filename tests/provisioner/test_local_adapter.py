"""The local adapter against real proxy processes, with both engines."""

from __future__ import annotations

import asyncio
import os
import secrets
import signal
import socket
from collections.abc import Callable
from pathlib import Path

import pytest

from proxyfleet.common.core.errors import (
    ConfigError,
    PermanentProviderError,
    TemporaryProviderError,
)
from proxyfleet.common.wire.models import ProxySpec
from proxyfleet.provisioner_local import commands
from proxyfleet.provisioner_local.adapter import LocalProvider, start_unregistered_proxy
from proxyfleet.provisioner_local.files import read_marker
from proxyfleet.provisioner_local.layout import ProxyFolder
from proxyfleet.provisioner_local.processes import find_session_leader, is_running

from .helpers import ENGINES, INSTALLATION, connect_status

MakeProvider = Callable[..., LocalProvider]


def spec(proxy_id: str = "", installation_id: str = INSTALLATION) -> ProxySpec:
    return ProxySpec(
        proxy_id=proxy_id or f"p{secrets.token_hex(6)}",
        installation_id=installation_id,
        zone="local",
        username="alice",
        password=secrets.token_urlsafe(18),
    )


def folder_of(state_dir: Path, proxy_id: str, installation_id: str = INSTALLATION) -> ProxyFolder:
    return ProxyFolder(state_dir / installation_id / proxy_id, proxy_id)


def engine_pids(state_dir: Path, proxy_id: str) -> list[int]:
    return find_session_leader(commands.engine_signatures(folder_of(state_dir, proxy_id)))


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_proxy_listens_and_requires_its_credentials(
    engine: str, make_local_provider: MakeProvider, proxy_state_dir: Path, tcp_target: int
) -> None:
    provider = make_local_provider(engine, connect_ports=(443, tcp_target))
    assert provider.engine == engine
    wanted = spec()
    done = await provider.create(wanted)
    assert done.host == "127.0.0.1"
    assert done.resource_id == f"pf-{wanted.proxy_id}"
    target = f"127.0.0.1:{tcp_target}"
    assert await asyncio.to_thread(connect_status, done.port, "example.com:443") == 407
    assert await asyncio.to_thread(connect_status, done.port, target, "alice:wrong") == 407
    creds = f"alice:{wanted.password}"
    assert await asyncio.to_thread(connect_status, done.port, target, creds) == 200

    folder = folder_of(proxy_state_dir, wanted.proxy_id)
    marker = read_marker(folder.marker)
    assert marker is not None
    assert (marker.proxy_id, marker.port, marker.engine) == (wanted.proxy_id, done.port, engine)
    assert engine_pids(proxy_state_dir, wanted.proxy_id) == [marker.pid]
    secret_files = [folder.proxypy_args] if engine == "proxy.py" else [folder.htpasswd]
    for path in secret_files:
        assert path.stat().st_mode & 0o777 in (0o600, 0o640)
    assert wanted.password not in " ".join(
        (Path("/proc") / str(marker.pid) / "cmdline").read_text().split("\0")
    )


@pytest.mark.parametrize("engine", ENGINES)
async def test_create_twice_adopts_the_running_process(
    engine: str, make_local_provider: MakeProvider, proxy_state_dir: Path
) -> None:
    provider = make_local_provider(engine)
    wanted = spec()
    first = await provider.create(wanted)
    pids = engine_pids(proxy_state_dir, wanted.proxy_id)
    again = await asyncio.gather(*(provider.create(wanted) for _ in range(3)))
    assert all(result == first for result in again)
    assert engine_pids(proxy_state_dir, wanted.proxy_id) == pids
    assert len(pids) == 1


@pytest.mark.parametrize("engine", ENGINES)
async def test_list_managed_then_delete_leaves_nothing(
    engine: str, make_local_provider: MakeProvider, proxy_state_dir: Path
) -> None:
    provider = make_local_provider(engine)
    wanted = spec()
    done = await provider.create(wanted)
    [listed] = await provider.list_managed()
    assert (listed.proxy_id, listed.resource_id) == (wanted.proxy_id, done.resource_id)
    assert listed.installation_id == INSTALLATION
    assert listed.zone == "local"
    assert listed.created_at > 0
    [pid] = engine_pids(proxy_state_dir, wanted.proxy_id)

    await provider.delete(wanted.proxy_id, done.resource_id)
    assert not is_running(pid)
    assert not folder_of(proxy_state_dir, wanted.proxy_id).path.exists()
    assert await provider.list_managed() == []
    await provider.delete(wanted.proxy_id, done.resource_id)  # gone already: success
    await provider.delete("never-created", "")


async def test_a_dead_process_is_restarted_on_the_same_port(
    make_local_provider: MakeProvider, proxy_state_dir: Path
) -> None:
    provider = make_local_provider("squid")
    wanted = spec()
    first = await provider.create(wanted)
    [old] = engine_pids(proxy_state_dir, wanted.proxy_id)
    os.killpg(old, signal.SIGKILL)
    await asyncio.sleep(0.1)
    second = await provider.create(wanted)
    assert second == first
    [new] = engine_pids(proxy_state_dir, wanted.proxy_id)
    assert new != old
    assert await asyncio.to_thread(connect_status, second.port, "example.com:443") == 407


async def test_a_restarted_proxy_moves_when_its_port_was_taken(
    make_local_provider: MakeProvider, proxy_state_dir: Path
) -> None:
    provider = make_local_provider("squid")
    wanted = spec()
    first = await provider.create(wanted)
    [old] = engine_pids(proxy_state_dir, wanted.proxy_id)
    os.killpg(old, signal.SIGKILL)
    await asyncio.sleep(0.1)
    with socket.create_server(("127.0.0.1", first.port)):
        second = await provider.create(wanted)
    assert second.port != first.port
    marker = read_marker(folder_of(proxy_state_dir, wanted.proxy_id).marker)
    assert marker is not None
    assert marker.port == second.port


async def test_only_this_installations_proxies_are_listed(
    make_local_provider: MakeProvider, proxy_state_dir: Path
) -> None:
    ours = make_local_provider("proxy.py")
    theirs = make_local_provider("proxy.py", installation_id="other-inst")
    mine = spec()
    await ours.create(mine)
    await theirs.create(spec(installation_id="other-inst"))
    assert [r.proxy_id for r in await ours.list_managed()] == [mine.proxy_id]
    # A marker of another installation copied into our folder is not ours either.
    stray = proxy_state_dir / INSTALLATION / "stray"
    stray.mkdir()
    foreign = read_marker(next((proxy_state_dir / "other-inst").glob("*/managed.json")))
    assert foreign is not None
    (stray / "managed.json").write_text(
        f'{{"proxy_id":"stray","installation_id":"other-inst","created_at":1,'
        f'"port":{foreign.port},"engine":"proxy.py"}}'
    )
    assert [r.proxy_id for r in await ours.list_managed()] == [mine.proxy_id]
    with pytest.raises(PermanentProviderError, match="installation"):
        await ours.create(spec(installation_id="other-inst"))


async def test_an_orphan_is_a_listed_live_process_nobody_registered(
    make_local_provider: MakeProvider, proxy_state_dir: Path
) -> None:
    provider = make_local_provider("proxy.py")
    proxy_id, done = await start_unregistered_proxy(provider, INSTALLATION)
    assert [r.proxy_id for r in await provider.list_managed()] == [proxy_id]
    assert await asyncio.to_thread(connect_status, done.port, "example.com:443") == 407
    assert len(engine_pids(proxy_state_dir, proxy_id)) == 1


async def test_a_process_that_exits_at_once_is_a_permanent_error(
    make_local_provider: MakeProvider, proxy_state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    provider = make_local_provider("proxy.py")
    wanted = spec()

    def failing(python: str, folder: ProxyFolder) -> list[str]:
        # The secret reaching the log must not reach the error message.
        script = f"cat {folder.proxypy_args}; echo; echo cannot bind; exit 3"
        return ["/bin/sh", "-c", script, str(folder.proxypy_args)]

    monkeypatch.setattr(commands, "proxypy_argv", failing)
    with pytest.raises(PermanentProviderError, match="exited at once") as caught:
        await provider.create(wanted)
    assert "cannot bind" in str(caught.value)
    assert wanted.password not in str(caught.value)


@pytest.mark.parametrize("bad_id", ["../escape", "UPPER", "a/b", "-x"])
async def test_an_unsafe_proxy_id_is_refused(
    bad_id: str, make_local_provider: MakeProvider
) -> None:
    provider = make_local_provider("proxy.py")
    with pytest.raises(PermanentProviderError, match="proxy id"):
        await provider.create(spec(proxy_id=bad_id))
    with pytest.raises(PermanentProviderError, match="proxy id"):
        await provider.delete(bad_id, "")


async def test_squid_that_cannot_reach_its_files_is_a_config_error(
    make_local_provider: MakeProvider, proxy_state_dir: Path
) -> None:
    os.chmod(proxy_state_dir, 0o700)
    if os.geteuid() != 0:
        # Squid keeps our own user, which owns the folder: nothing to refuse.
        assert make_local_provider("squid").engine == "squid"
        return
    # Started as root, Squid switches to user proxy, which cannot enter a 0700 folder.
    with pytest.raises(ConfigError, match="cannot traverse"):
        make_local_provider("squid")
    assert make_local_provider("auto").engine == "proxy.py"


async def test_a_call_after_close_is_a_temporary_provider_error(
    make_local_provider: Callable[..., LocalProvider],
) -> None:
    """An adopter pass still running while the service stops gets an error it handles."""
    provider = make_local_provider()
    await provider.close()
    with pytest.raises(TemporaryProviderError, match="closed"):
        await provider.list_managed()

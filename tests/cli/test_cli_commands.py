"""`proxyfleet` one call at a time against a real API: tables, `-o json`, exit codes,
login, --version, -h."""

from __future__ import annotations

import json
import stat
import tomllib

from tests.api.helpers import PROVIDER
from tests.cli.conftest import Cli, LiveApi

from proxyfleet.cli import __version__
from proxyfleet.client import Client
from proxyfleet.devstack.servers import free_port


def test_version_and_short_help(cli: Cli) -> None:
    done = cli.run("--version")
    assert (done.returncode, done.stdout.strip()) == (0, f"proxyfleet {__version__}")
    short = cli.run("-h")
    assert short.returncode == 0
    assert "lease" in short.stdout
    assert "events" in short.stdout
    assert cli.run("leases", "-h").stdout == cli.run("leases", "--help").stdout


def test_a_usage_error_is_2(cli: Cli) -> None:
    done = cli.run("proxies", "ls", "--no-such-flag")
    assert done.returncode == 2
    assert "No such option" in done.stderr


def test_status_shows_providers_zones_and_leases(cli: Cli, live_api: LiveApi) -> None:
    live_api.ready_proxy("p1", zone="z1")
    live_api.ready_proxy("p2", zone="z2")
    with Client(live_api.url, live_api.client_token) as client:
        client.grant_lease(ttl=60, zone="z1")
    table = cli.run("status", token=live_api.admin_token)
    assert table.returncode == 0, table.stderr
    assert PROVIDER in table.stdout
    assert "1 active" in table.stdout
    done = cli.run("status", "-o", "json", token=live_api.admin_token)
    assert done.returncode == 0, done.stderr
    status = json.loads(done.stdout)
    zones = {(z["provider"], z["zone"]): z["counts"] for z in status["zones"]}
    assert zones[(PROVIDER, "z1")] == {"ready": 1}
    assert zones[(PROVIDER, "z2")] == {"ready": 1}
    assert status["leases"]["active"] == 1
    assert PROVIDER in {p["name"] for p in status["providers"]}

    as_client = json.loads(cli.run("status", "-o", "json").stdout)  # no proxy listing
    assert as_client["zones"] is None
    assert as_client["leases"]["active"] == 1


def test_proxies_create_ls_get_rm(cli: Cli, live_api: LiveApi) -> None:
    admin = live_api.admin_token
    made = cli.run(
        "proxies",
        "create",
        "--provider",
        PROVIDER,
        "-n",
        "2",
        "-l",
        "team=qa",
        "-o",
        "json",
        token=admin,
    )
    assert made.returncode == 0, made.stderr
    ids = [p["id"] for p in json.loads(made.stdout)]
    assert len(ids) == 2

    listed = json.loads(cli.run("proxies", "ls", "-l", "team=qa", "-o", "json", token=admin).stdout)
    assert sorted(p["id"] for p in listed) == sorted(ids)
    table = cli.run("proxies", "ls", token=admin)
    assert all(i in table.stdout for i in ids)
    one = json.loads(cli.run("proxies", "get", ids[0], "-o", "json", token=admin).stdout)
    assert (one["id"], one["labels"]) == (ids[0], {"team": "qa"})

    gone = cli.run("proxies", "rm", ids[0], "-o", "json", token=admin)
    assert gone.returncode == 0, gone.stderr
    assert json.loads(gone.stdout)[0]["phase"] in {"deleting", "deleted"}


def test_proxies_ls_flags_a_shared_exit_address(cli: Cli, live_api: LiveApi) -> None:
    for pid in ("p1", "p2", "p3"):
        live_api.ready_proxy(pid)
    for pid, ip in (("p1", "127.0.0.5"), ("p2", "127.0.0.5"), ("p3", "127.0.0.6")):
        live_api.run(live_api.egress.confirm(pid, ip))
    table = cli.run("proxies", "ls", token=live_api.admin_token)
    assert table.returncode == 0, table.stderr
    rows = {line.split()[0]: line for line in table.stdout.splitlines() if line.strip()}
    assert "127.0.0.5 (x2)" in rows["p1"]
    assert "127.0.0.5 (x2)" in rows["p2"]
    assert "127.0.0.6" in rows["p3"]
    assert "(x" not in rows["p3"]
    assert "EGRESS" in rows["ID"]


def test_proxies_rm_deletes_the_rest_past_one_it_cannot(cli: Cli, live_api: LiveApi) -> None:
    live_api.ready_proxy("p1")
    live_api.ready_proxy("p2")
    done = cli.run(
        "proxies", "rm", "p1", "nosuchproxy", "p2", "-o", "json", token=live_api.admin_token
    )
    assert done.returncode == 4, done.stderr  # the first failure's code: not found
    assert [p["id"] for p in json.loads(done.stdout)] == ["p1", "p2"]
    assert "nosuchproxy: " in done.stderr
    assert "p1" not in done.stderr


def test_lease_calls_one_by_one_with_json(cli: Cli, live_api: LiveApi) -> None:
    live_api.ready_proxy("p1")
    granted = cli.run("leases", "grant", "--ttl", "60", "--target", "example.com")
    assert granted.returncode == 0, granted.stderr
    lease = json.loads(granted.stdout)
    lid, epoch = lease["lease_id"], lease["epoch"]
    assert lease["proxy"]["url"].startswith("http://user:")

    listed = json.loads(cli.run("leases", "ls", "-o", "json").stdout)
    assert [x["lease_id"] for x in listed] == [lid]
    assert "example.com" in cli.run("leases", "ls").stdout
    got = json.loads(cli.run("leases", "get", lid, "-o", "json").stdout)
    assert (got["state"], got["target"]) == ("active", "example.com")

    renewed = cli.run("leases", "renew", lid, "--epoch", str(epoch), "--ttl", "90", "-o", "json")
    assert renewed.returncode == 0, renewed.stderr
    assert json.loads(renewed.stdout)["expires_at"] > lease["expires_at"]
    reported = cli.run("leases", "report", lid, "blocked")  # epoch read from the API
    assert reported.returncode == 0, reported.stderr
    assert "blocked" in reported.stdout
    released = cli.run("leases", "release", lid, "-o", "json")
    assert json.loads(released.stdout)["state"] == "released"
    assert json.loads(cli.run("leases", "ls", "-o", "json").stdout) == []


def test_exit_codes_name_what_went_wrong(cli: Cli, live_api: LiveApi, tmp_path: object) -> None:
    missing = cli.run("leases", "get", "no-such-lease")
    assert missing.returncode == 4
    assert "proxyfleet:" in missing.stderr
    assert "404" in missing.stderr

    assert cli.run("status", token="not-a-token-at-all").returncode == 3
    assert cli.run("proxies", "ls").returncode == 3  # a client token: admin only

    none_free = cli.run("leases", "grant", "--wait", "0")
    assert none_free.returncode == 6, none_free.stderr

    live_api.ready_proxy("p1")
    lease = json.loads(cli.run("leases", "grant", "--ttl", "60").stdout)
    stale = cli.run("leases", "release", lease["lease_id"], "--epoch", str(lease["epoch"] + 5))
    assert stale.returncode == 5, stale.stderr

    env = cli.env()
    env["PROXYFLEET_URL"] = f"http://127.0.0.1:{free_port()}"
    assert cli.run("status", env=env).returncode == 7
    del env["PROXYFLEET_URL"]
    no_url = cli.run("status", env=env)
    assert no_url.returncode == 2
    assert "no API URL" in no_url.stderr


def test_login_writes_a_private_config_the_other_commands_use(cli: Cli, live_api: LiveApi) -> None:
    env = cli.env()
    del env["PROXYFLEET_URL"], env["PROXYFLEET_TOKEN"]
    done = cli.run(
        "login", "--no-check", input=f"{live_api.url}\n{live_api.admin_token}\n", env=env
    )
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(cli.config.stat().st_mode) == 0o600
    saved = tomllib.loads(cli.config.read_text())
    assert saved == {"url": live_api.url, "token": live_api.admin_token}
    assert cli.run("proxies", "ls", env=env).returncode == 0  # admin, from the file

    wrong = cli.run("--url", live_api.url, "--token", "wrong-token-123456", "login", env=env)
    assert wrong.returncode == 3  # checked before writing: the file is unchanged
    assert tomllib.loads(cli.config.read_text())["token"] == live_api.admin_token


def test_shell_completion_is_typers(cli: Cli) -> None:
    # Typer guesses the shell from the process's ancestors unless told not to; a test run
    # whose launching shell has exited has none ("Shell  not supported."): name it.
    shown = cli.env()
    shown["_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION"] = "1"
    script = cli.run("--show-completion", "bash", env=shown)
    assert script.returncode == 0
    assert "_proxyfleet_completion" in script.stdout
    env = cli.env()
    env.update(_PROXYFLEET_COMPLETE="complete_bash", COMP_WORDS="proxyfleet lea", COMP_CWORD="1")
    words = cli.run(env=env)
    assert words.stdout.split() == ["lease", "leases"]

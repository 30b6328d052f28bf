"""apify's `proxy-chain` (npm, 3.x), the Node gateway under Crawlee, as the gateway
benchmark's peer (issue 24): installed from npm into the run's scratch folder (never into
the repository), started with the bench's own script (node/proxy_chain_server.mjs), a
random upstream per CONNECT. Where Node or npm is missing, too old or the registry cannot
be reached, `install` says why instead of raising, so the benchmark runs without the row."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from urllib.parse import quote

PACKAGE = "proxy-chain@3"
NODE_MIN = (20, 11)
"""proxy-chain 3's `engines.node` (>= 20.11)."""
SCRIPT = "proxy_chain_server.mjs"
INSTALL_TIMEOUT = 180.0
_VERSION = re.compile(r"v?(\d+)\.(\d+)\.(\d+)")
_NPM_ERROR = re.compile(r"^npm (error|ERR!) ?")
_NPM_DETAIL = ("code ", "syscall ", "errno ", "at ", "A complete log")


@dataclass(frozen=True, slots=True)
class Installed:
    folder: Path
    """Holds node_modules/proxy-chain and the server script."""
    node: str
    """The node binary."""
    version: str
    """proxy-chain's version, as installed."""
    node_version: str


@dataclass(frozen=True, slots=True)
class Missing:
    reason: str
    """Why the peer was not measured (no credentials: npm's error code and summary)."""


def node_version(text: str) -> tuple[int, int, int] | None:
    """`v20.20.2` -> (20, 20, 2); None when the text is not a version."""
    m = _VERSION.match(text.strip())
    return (int(m[1]), int(m[2]), int(m[3])) if m else None


def npm_failure(stderr: str) -> str:
    """What npm's error output says went wrong: its error code and first message line
    (not the stack, the errno fields or the pointer to its debug log)."""
    said = [_NPM_ERROR.sub("", ln).strip() for ln in stderr.splitlines() if _NPM_ERROR.match(ln)]
    code = next((ln.split()[1] for ln in said if ln.startswith("code ")), "")
    message = next(
        (ln.removeprefix("network ") for ln in said
         if ln and not ln.startswith(_NPM_DETAIL) and ln[0] not in "{}"),
        "",
    )  # fmt: skip
    if not said:
        return (stderr.strip().splitlines() or ["no error output"])[-1]
    return ": ".join(part for part in (code, message) if part) or said[0]


def upstream_url(host: str, port: int, username: str, password: str) -> str:
    return f"http://{quote(username, safe='')}:{quote(password, safe='')}@{host}:{port}"


def install(
    folder: Path, *, node: str = "node", npm: str = "npm", timeout: float = INSTALL_TIMEOUT
) -> Installed | Missing:
    """`npm install proxy-chain@3` into `folder` (npm's usual cache; the registry from npm's
    own configuration, e.g. npm_config_registry) and the server script beside it."""
    node_path, npm_path = shutil.which(node), shutil.which(npm)
    if node_path is None:
        return Missing(f"{node} not found (proxy-chain needs Node >= 20.11)")
    if npm_path is None:
        return Missing(f"{npm} not found: cannot install {PACKAGE}")
    try:
        out = subprocess.run(
            [node_path, "--version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Missing(f"{node} --version failed: {exc}")
    found = node_version(out.stdout)
    if found is None or found[:2] < NODE_MIN:
        return Missing(f"Node {out.stdout.strip() or '?'}: {PACKAGE} needs >= 20.11")
    folder.mkdir(parents=True, exist_ok=True)
    argv = [npm_path, "install", "--prefix", str(folder), "--no-audit", "--no-fund",
            "--loglevel=error", "--fetch-retries=1", "--fetch-timeout=60000", PACKAGE]  # fmt: skip
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout, cwd=folder, check=False
        )
    except subprocess.TimeoutExpired:
        return Missing(f"npm install {PACKAGE} did not finish in {timeout:g} s")
    if done.returncode != 0:
        return Missing(f"npm install {PACKAGE} failed: {npm_failure(done.stderr)}")
    manifest = folder / "node_modules" / "proxy-chain" / "package.json"
    try:
        version = str(json.loads(manifest.read_text())["version"])
    except (OSError, ValueError, KeyError) as exc:
        return Missing(f"npm install {PACKAGE} left no readable {manifest.name}: {exc}")
    script = resources.files("proxyfleet.bench") / "node" / SCRIPT
    (folder / SCRIPT).write_text(script.read_text())
    return Installed(folder, node_path, version, out.stdout.strip())


@dataclass
class ProxyChain:
    """A running proxy-chain server on 127.0.0.1."""

    proc: subprocess.Popen[str]
    port: int

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()  # the script closes its server and every connection
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start(installed: Installed, upstreams: list[str], log: Path) -> ProxyChain:
    """The server on a free port, choosing among `upstreams` (URLs with credentials, given
    on stdin: never on a command line others can read)."""
    with open(log, "ab") as err:
        proc = subprocess.Popen(
            [installed.node, str(installed.folder / SCRIPT)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
            cwd=installed.folder, text=True, start_new_session=True,
        )  # fmt: skip
    assert proc.stdin is not None
    assert proc.stdout is not None
    proc.stdin.write(json.dumps({"upstreams": upstreams}))
    proc.stdin.close()
    line = proc.stdout.readline()  # the script prints nothing more
    m = re.fullmatch(r"listening on (\d+)\n", line)
    if m is None:
        proc.kill()
        proc.wait()
        raise RuntimeError(f"proxy-chain did not start (said {line!r}; see {log})")
    return ProxyChain(proc, int(m[1]))

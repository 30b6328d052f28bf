"""tools/unasync.py's rewrite of async source into blocking source (pure: text in, text
out). That sync.py is what it makes of aio.py: test_client_generated.py."""

from __future__ import annotations

import pytest
from tools.unasync import UnusedRulesError, rewrite, unasync, unasync_all


def rewritten(source: str) -> str:
    return rewrite(source)[0]


@pytest.mark.parametrize(
    ("async_source", "sync_source"),
    [
        ("async def get(self) -> Proxy:", "def get(self) -> Proxy:"),
        ("return await self.call(c)", "return self.call(c)"),
        ("print(await stuff(), await more())", "print(stuff(), more())"),
        ("async with self._lock:", "with self._lock:"),
        ("async for line in response.aiter_lines():", "for line in response.iter_lines():"),
        ("await response.aread()", "response.read()"),
        ("await self._http.aclose()", "self._http.close()"),
        ("async def __aenter__(self) -> AsyncClient:", "def __enter__(self) -> Client:"),
        (
            "async def __aexit__(self, *exc: object) -> None:",
            "def __exit__(self, *exc: object) -> None:",
        ),
        ("self._http = httpx.AsyncClient(", "self._http = httpx.Client("),
        ("transport: httpx.AsyncBaseTransport | None", "transport: httpx.BaseTransport | None"),
        ("-> AsyncIterator[Proxy]:", "-> Iterator[Proxy]:"),
        ("-> AsyncGenerator[Event | Gap, None]:", "-> Generator[Event | Gap, None, None]:"),
        ("list_page: Callable[..., Awaitable[Any]]", "list_page: Callable[..., Any]"),
        ("await asyncio.sleep(delay)", "time.sleep(delay)"),
        ("self._lock = asyncio.Lock()", "self._lock = threading.Lock()"),
        ("import asyncio", "import threading"),
        (
            "from proxyfleet.client import aio_background as background",
            "from proxyfleet.client import sync_background as background",
        ),
        (
            "from proxyfleet.client.aio_held_lease import AsyncHeldLease",
            "from proxyfleet.client.sync_held_lease import HeldLease",
        ),
        (
            "from proxyfleet.client.aio import AsyncClient",
            "from proxyfleet.client.sync import Client",
        ),
        ("for item in page.items:\n    yield item\n", "yield from page.items\n"),
    ],
)
def test_a_line_of_async_code_becomes_its_blocking_twin(
    async_source: str, sync_source: str
) -> None:
    assert rewritten(async_source) == sync_source


@pytest.mark.parametrize(
    ("async_prose", "sync_prose"),
    [
        ("for an `async with` block", "for a `with` block"),
        ("The asyncio client: `AsyncClient(url)`", "The blocking client: `Client(url)`"),
        (
            "renewed by a background\n    task, reported",
            "renewed by a background\n    thread, reported",
        ),
        ("`aclose()` the generator", "`close()` the generator"),
    ],
)
def test_docstrings_are_rewritten_too_across_line_breaks(async_prose: str, sync_prose: str) -> None:
    assert rewritten(async_prose) == sync_prose


@pytest.mark.parametrize(
    "untouched",
    [
        "already read",  # aread, but not as a word
        "an asyncio.Event()",  # only the names a rule lists are replaced
        "AsyncioThing and asynchronous",
        "for item in page.items:\n    yield other\n",  # not a pass-through loop
        "x = Awaitable[dict[str, Any]]",  # nested: left for mypy to refuse, never half-rewritten
    ],
)
def test_what_no_rule_names_is_left_alone(untouched: str) -> None:
    assert rewritten(untouched) == untouched


def test_a_rule_that_matches_nothing_is_an_error() -> None:
    with pytest.raises(UnusedRulesError, match="aiter_lines"):
        unasync(
            "async def f() -> None:\n    await g()\n",
            rules=((r"\bawait ", ""), (r"\baiter_lines\b", "iter_lines")),
        )


def test_a_rule_needs_to_match_in_one_source_only() -> None:
    rules = ((r"\bawait ", ""), (r"\baiter_lines\b", "iter_lines"))
    sources = ["await g()\n", "r.aiter_lines()\n"]
    assert unasync_all(sources, rules) == ["g()\n", "r.iter_lines()\n"]
    with pytest.raises(UnusedRulesError, match="aiter_lines"):
        unasync_all(sources[:1], rules)


def test_every_rule_applies_to_a_source_that_needs_them_all() -> None:
    source = "\n".join(
        [
            "import asyncio",
            "from x import aio_background, AsyncGenerator, Awaitable, Callable",
            "from proxyfleet.client.aio import AsyncClient",
            '"""The asyncio client, an `async with` block, a background task."""',
            "async def __aenter__(self) -> AsyncClient: ...",
            "async def __aexit__(self) -> None:",
            "    await self.aclose()",
            "async def g(f: Callable[..., Awaitable[int]]) -> AsyncGenerator[int, None]:",
            "    for item in await f():",
            "        yield item",
            "    async with asyncio.Lock():",
            "        await asyncio.sleep(1)",
            "    async for line in r.aiter_lines():",
            "        await r.aread()",
            "",
        ]
    )
    assert unasync(source) == "\n".join(
        [
            "import threading",
            "from x import sync_background, Generator, Callable",
            "from proxyfleet.client.sync import Client",
            '"""The blocking client, a `with` block, a background thread."""',
            "def __enter__(self) -> Client: ...",
            "def __exit__(self) -> None:",
            "    self.close()",
            "def g(f: Callable[..., int]) -> Generator[int, None, None]:",
            "    yield from f()",
            "    with threading.Lock():",
            "        time.sleep(1)",
            "    for line in r.iter_lines():",
            "        r.read()",
            "",
        ]
    )

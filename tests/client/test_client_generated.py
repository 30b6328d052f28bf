"""sync.py and sync_held_lease.py are generated from aio.py and aio_held_lease.py
(tools/unasync.py, `make generate`): an edit of either that is not regenerated fails here, so
the two clients cannot drift apart."""

from __future__ import annotations

from pathlib import Path

import pytest
from tools import unasync


def test_the_sync_modules_are_what_the_generator_makes_of_the_aio_ones() -> None:
    expected = unasync.generate({source: source.read_text() for source, _ in unasync.PAIRS})
    for source, target in unasync.PAIRS:
        checked_in = target.read_text()
        assert checked_in.startswith(unasync.header(source))
        assert checked_in == expected[target], (
            f"{target.name} is not what {source.name} gives: run `{unasync.COMMAND}` and "
            "commit the result"
        )


def test_check_mode_fails_on_a_stale_sync_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (source, target), held = unasync.PAIRS
    stale = tmp_path / "sync.py"
    stale.write_text(target.read_text().replace("def close(", "def shut("))
    monkeypatch.setattr(unasync, "PAIRS", ((source, stale), held))
    assert unasync.main(["--check"]) == 1
    assert "make generate" in capsys.readouterr().out
    assert unasync.main([]) == 0  # regenerates it
    assert unasync.main(["--check"]) == 0

"""sync.py is generated from aio.py (tools/unasync.py, `make generate`): an edit of either
that is not regenerated fails here, so the two clients cannot drift apart."""

from __future__ import annotations

from pathlib import Path

import pytest
from tools import unasync


def test_sync_py_is_what_the_generator_makes_of_aio_py() -> None:
    checked_in = unasync.TARGET.read_text()
    assert checked_in.startswith(unasync.HEADER)
    assert checked_in == unasync.generate(unasync.SOURCE.read_text()), (
        f"sync.py is not what aio.py gives: run `{unasync.COMMAND}` and commit the result"
    )


def test_check_mode_fails_on_a_stale_sync_py(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stale = tmp_path / "sync.py"
    stale.write_text(unasync.TARGET.read_text().replace("def close(", "def shut("))
    monkeypatch.setattr(unasync, "TARGET", stale)
    assert unasync.main(["--check"]) == 1
    assert "make generate" in capsys.readouterr().out
    assert unasync.main([]) == 0  # regenerates it
    assert unasync.main(["--check"]) == 0

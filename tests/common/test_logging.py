from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from proxyfleet.common.observability.logging import configure_logging, get_logger, redact_value


def test_redacts_credentials_in_urls_and_auth_headers() -> None:
    assert redact_value("http://bob:hunter2@10.0.0.1:3128") == "http://***:***@10.0.0.1:3128"
    assert "hunter2" not in redact_value("Proxy-Authorization: Basic Ym9iOmh1bnRlcjI=")
    assert "tok" not in redact_value("Authorization: Bearer tok123")
    sentinel = "redis+sentinel://:pw1@h:26379/m?sentinel_password=pw2&sentinel_username=u"
    assert redact_value(sentinel) == (
        "redis+sentinel://***:***@h:26379/m?sentinel_password=***&sentinel_username=u"
    )


def test_secret_keys_never_printed(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("test", "debug", "json")
    get_logger("t").info(
        "created", password="hunter2", user_data="#cloud-config secret", url="http://a:b@h:1"
    )
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert line["password"] == "***"
    assert line["user_data"] == "***"
    assert line["url"] == "http://***:***@h:1"
    assert line["service"] == "test"


def test_a_stdout_pipe_without_reader_turns_the_output_off_instead_of_raising(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A SIGKILLed dev launcher leaves its services' pipe without a reader: their logging
    must go on (quietly) so that they still stop on the SIGTERM that follows."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    with os.fdopen(write_end, "w", buffering=1) as orphaned:
        monkeypatch.setattr(sys, "stdout", orphaned)
        configure_logging("test", "info", "json")
        log = get_logger("t")
        log.info("first")  # EPIPE: from here on the descriptor is /dev/null
        log.info("second")
        assert Path(f"/proc/self/fd/{write_end}").resolve() == Path(os.devnull)

from __future__ import annotations

import json

import pytest

from proxyfleet.common.logging import configure_logging, get_logger, redact_value


def test_redacts_credentials_in_urls_and_auth_headers() -> None:
    assert redact_value("http://bob:hunter2@10.0.0.1:3128") == "http://***:***@10.0.0.1:3128"
    assert "hunter2" not in redact_value("Proxy-Authorization: Basic Ym9iOmh1bnRlcjI=")
    assert "tok" not in redact_value("Authorization: Bearer tok123")


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

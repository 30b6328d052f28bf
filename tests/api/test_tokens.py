"""Named tokens (`name:secret`): parsed strictly, errors name the flag and never the secret."""

from __future__ import annotations

import pytest

from proxyfleet.common.core.errors import ConfigError
from proxyfleet.common.domain.tokens import NamedToken, Principal, Scope, parse_tokens

S1, S2 = "s1-0123456789abcdef", "s2-0123456789abcdef"


def test_names_and_secrets() -> None:
    tokens = parse_tokens((f"ops:{S1}",), (f"crawler.eu-1:{S2}:with-colon",))
    assert tokens == (
        NamedToken("ops", Scope.ADMIN, S1),
        NamedToken("crawler.eu-1", Scope.CLIENT, f"{S2}:with-colon"),
    )
    assert S1 not in repr(tokens)


@pytest.mark.parametrize(
    ("admin", "client", "message"),
    [
        (("x",), (), r"--admin-token \(value 1\): expected name:secret"),
        ((f"ops:{S1}",), ("c:x",), r"--client-token \(value 1\): the secret of token 'c' must be"),
        ((), (f"c:{S1}", "d:short-secret"), r"--client-token \(value 2\).*at least 16.*got 12"),
        ((f"bad name:{S1}",), (), r"--admin-token \(value 1\): the token name must be"),
        ((f":{S1}",), (), "the token name must be"),
        ((f"-x:{S1}",), (), "the token name must be"),
        ((f"a:{S1}",), (f"a:{S2}",), r"--client-token: the token name 'a' is used twice"),
        ((f"a:{S1}",), (f"b:{S1}",), "tokens 'a' and 'b' have the same secret"),
    ],
)
def test_refusals_name_the_flag_not_the_secret(
    admin: tuple[str, ...], client: tuple[str, ...], message: str
) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        parse_tokens(admin, client)
    for secret in (S1, S2, "short-secret"):
        assert secret not in str(caught.value)


def test_an_admin_acts_on_any_lease_a_client_on_its_own() -> None:
    assert Principal("ops", Scope.ADMIN).lease_owner == ""
    assert Principal("crawler", Scope.CLIENT).lease_owner == "crawler"

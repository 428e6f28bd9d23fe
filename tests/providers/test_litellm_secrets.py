"""No secret escapes through the exceptions loopkit raises from a provider.

A fake server answers 401/429 with bodies that echo the client's key (in the text and in a URL),
or other credential shapes. The ``ProviderError`` is then rendered every way a user or a tool
would: ``str``, ``repr``, ``traceback.format_exception`` (chained), its attributes, and its
``__cause__``/``__context__`` chain. What loopkit guarantees: the error carries no litellm exception
at all (both links are ``None`` when the call is not made inside an ``except`` block), and its
message keeps the facts (status, provider, the original type name, the redacted text).
"""

from __future__ import annotations

import logging
import traceback
from typing import Any

import pytest

from loopkit.abstractions import ChatMessage, ChatRole
from loopkit.errors import ProviderError
from loopkit.middleware.retry import RetryingChatClient, RetryPolicy
from loopkit.providers.litellm import LiteLLMChatClient
from loopkit.providers.litellm_errors import redact
from tests.fakes.fake_llm_server import FakeLLMServer, Turn
from tests.providers.conftest import DUMMY_KEY, MODELS, Wire

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

#: A key with no recognisable shape: only knowing it (api_key= or the environment) redacts it.
PLAIN_KEY = "Zq7vKp2LmN9xRt4WbY6cHd8FjS3gAe5U"

#: Credential shapes a provider (or a proxy in front of it) might echo; none is the client's key.
#: (label, text the server sends, the secret part that must not come back)
SHAPES: list[tuple[str, str, str]] = [
    (
        "anthropic-key",
        "key sk-ant-api03-AbCdEf0123456789GhIjKl0123456789MnOp",
        "AbCdEf0123456789GhIj",
    ),
    (
        "openai-project-key",
        "key sk-proj-0123456789abcdefABCDEF0123456789",
        "0123456789abcdefABCDEF",
    ),
    ("github-token", "token ghp_0123456789abcdefghijABCDEFGHIJ012345", "ghp_0123456789abcdefghij"),
    (
        "github-pat",
        "pat github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123",
        "11ABCDEFG0123456789_abcdef",
    ),
    ("aws-access-key-id", "id AKIAIOSFODNN7EXAMPLE here", "AKIAIOSFODNN7EXAMPLE"),
    (
        "aws-secret-key",
        "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    ("slack-token", "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOp", "1234567890123-AbCdEf"),
    ("google-api-key", "AIzaSyA-1234567890abcdefghijklmnopqrstu", "SyA-1234567890abcdefghij"),
    (
        "jwt",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0",
        "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0",
    ),
    (
        "basic-auth",
        "Authorization: Basic dXNlcjpzM2NyZXRwYXNzd29yZA==",
        "dXNlcjpzM2NyZXRwYXNzd29yZA",
    ),
    (
        "bearer-with-tabs",
        "Authorization: Bearer\t \tabcDEF123456ghiJKL789",
        "abcDEF123456ghiJKL789",
    ),
    (
        "password-in-url",
        "could not use postgres://admin:Hunter2Passw0rd@db.example:5432/x",
        "Hunter2Passw0rd",
    ),
    (
        "token-in-query",
        "see https://api.example/v1?access_token=QwErTy123456UiOp",
        "QwErTy123456UiOp",
    ),
]


def ask() -> list[ChatMessage]:
    return [ChatMessage.from_text(ChatRole.USER, "hello")]


def renderings(error: BaseException) -> dict[str, str]:
    """Every way the error reaches a person or a log."""
    return {
        "str": str(error),
        "repr": repr(error),
        "traceback": "".join(traceback.format_exception(error)),
        "attributes": repr(vars(error)),
    }


def assert_clean(error: ProviderError, *secrets: str) -> None:
    # No raw provider exception rides along: nothing a debugger, a logging handler or an error
    # reporter could walk to.
    assert error.__cause__ is None
    assert error.__context__ is None
    for where, text in renderings(error).items():
        for secret in secrets:
            assert secret not in text, f"secret leaked through {where}: {text}"


async def fail(client: LiteLLMChatClient, stream: bool) -> ProviderError:
    try:
        if stream:
            async for _ in client.get_streaming_response(ask()):
                pass
        else:
            await client.get_response(ask())
    except ProviderError as e:
        return e
    raise AssertionError("the request was expected to fail")


def echo_401(secret: str) -> Turn:
    return Turn.error(
        401,
        "authentication_error",
        f"invalid x-api-key {secret}; manage it at https://console.example/keys?key={secret}",
    )


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_401_echoing_the_given_key_leaks_nothing(wire: Wire, stream: bool) -> None:
    wire.server.enqueue(echo_401(PLAIN_KEY))
    error = await fail(wire.client(api_key=PLAIN_KEY), stream)
    assert error.status_code == 401 and error.retryable is False
    assert error.provider == wire.model.split("/")[0]
    assert "AuthenticationError" in str(error)  # the original type, by name
    assert "invalid x-api-key [redacted]" in str(error)  # what the provider said, redacted
    assert_clean(error, PLAIN_KEY)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_401_echoing_a_key_taken_from_the_environment_leaks_nothing(
    wire: Wire, stream: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    variable = "OPENAI_API_KEY" if wire.format == "openai" else "ANTHROPIC_API_KEY"
    monkeypatch.setenv(variable, PLAIN_KEY)
    wire.server.enqueue(echo_401(PLAIN_KEY))
    client = LiteLLMChatClient(wire.model, api_base=wire.server.api_base)  # no api_key=
    error = await fail(client, stream)
    assert error.status_code == 401
    assert_clean(error, PLAIN_KEY)


@pytest.mark.parametrize(("label", "text", "secret"), SHAPES, ids=[s[0] for s in SHAPES])
async def test_echoed_credential_shapes_are_redacted(
    wire: Wire, label: str, text: str, secret: str
) -> None:
    wire.server.enqueue(Turn.error(403, "permission_error", f"denied: {text}"))
    error = await fail(wire.client(), stream=False)
    assert error.status_code == 403
    assert "denied: " in str(error)
    assert_clean(error, secret, DUMMY_KEY)


@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
async def test_password_in_api_base_does_not_leak_from_the_request_error(fmt: str) -> None:
    with FakeLLMServer(fmt) as server:  # type: ignore[arg-type]
        port = server.port
    # Credentials in the URL beside an API key: the HTTP client refuses the request, naming it.
    base = f"http://admin:Hunter2Passw0rd@127.0.0.1:{port}" + ("/v1" if fmt == "openai" else "")
    client = LiteLLMChatClient(MODELS[fmt], api_base=base, api_key=PLAIN_KEY, timeout=5)  # type: ignore[index]
    error = await fail(client, stream=False)
    assert_clean(error, "Hunter2Passw0rd", PLAIN_KEY)


async def test_retry_warning_and_hook_carry_no_key(
    wire: Wire, caplog: pytest.LogCaptureFixture, recorded_sleep: tuple[list[float], Any]
) -> None:
    _, sleep = recorded_sleep
    wire.server.enqueue(
        Turn.error(
            429, "rate_limit_error", f"slow down, {PLAIN_KEY}", headers={"retry-after": "0"}
        ),
        Turn.reply("ok"),
    )
    reasons: list[str] = []
    client = RetryingChatClient(
        wire.client(api_key=PLAIN_KEY),
        RetryPolicy(initial_delay=0),
        sleep=sleep,
        on_retry=lambda attempt, error, delay: reasons.append(str(error)),
    )
    with caplog.at_level(logging.WARNING, logger="loopkit.retry"):
        assert (await client.get_response(ask())).text == "ok"
    assert len(reasons) == 1 and "rate limited" in reasons[0]
    assert "slow down" in caplog.text
    assert PLAIN_KEY not in caplog.text
    assert PLAIN_KEY not in reasons[0]


def test_redact_covers_json_escaped_whitespace_and_keeps_labels() -> None:
    # The Anthropic path quotes the provider's raw JSON body, where a tab is the two characters \t.
    text = 'body {"message": "Authorization: Bearer\\t\\tabcDEF123456ghiJKL789"}'
    assert "abcDEF123456ghiJKL789" not in redact(text)
    assert "Bearer" in redact(text)
    assert redact("nothing secret here, 12345678") == "nothing secret here, 12345678"
    # An auth scheme followed by a word is prose, not a credential.
    assert redact("Basic authentication failed") == "Basic authentication failed"
    assert "AbCdEfGhIjKl" not in redact("Authorization: Basic AbCdEfGhIjKl")


async def test_secret_named_extra_arguments_are_redacted_too(openai_wire: Wire) -> None:
    """Keys passed as extra litellm arguments (``aws_secret_access_key=``, a proxy's token) are
    known secrets as well, and so are header values named like secrets or ``Authorization``."""
    token = "plain-words-but-secret-1"  # no credential shape: only its name marks it
    header = "plain-header-secret-22"
    auth = "plain-authorization-333"
    openai_wire.server.enqueue(
        Turn.error(401, "authentication_error", f"bad token {token} {header} {auth}")
    )
    client = openai_wire.client(
        extra_headers={"x-proxy": "1", "x-proxy-key": header, "Proxy-Authorization": auth},
        litellm_params={"proxy_auth_token": token},
    )
    error = await fail(client, stream=False)
    assert error.status_code == 401
    for secret in (token, header, auth):
        assert_clean(error, secret)


def test_client_repr_shows_no_key_nor_url_password() -> None:
    client = LiteLLMChatClient(
        "openai/x", api_base="http://admin:Hunter2Passw0rd@127.0.0.1:9/v1", api_key=PLAIN_KEY
    )
    assert "Hunter2Passw0rd" not in repr(client) and PLAIN_KEY not in repr(client)
    assert "127.0.0.1:9/v1" in repr(client)

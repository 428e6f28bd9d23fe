"""Classify litellm's exceptions as :class:`~loopkit.errors.ProviderError` (retryable or not).

litellm wraps the provider's failure in its own exception types, and not always faithfully: an
Anthropic 529 ``overloaded_error`` arrives as ``InternalServerError`` with status 500, a body that
is not JSON arrives as ``InternalServerError`` (OpenAI) or ``APIConnectionError`` (Anthropic), and a
timeout carries a made-up 408. So the classification looks through the whole exception chain for
what really happened (the HTTP response, a JSON decode error, a timeout, a refused or broken
connection) rather than trusting the outer type. Nothing here imports litellm.

The :class:`ProviderError` built here never carries litellm's exception (no ``__cause__``): that
exception's message, attributes and request may hold the API key. What it said is kept, redacted,
in the message, with its type name.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import os
import re
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from loopkit.errors import ProviderError
from loopkit.redaction import REDACTED, Redactor, is_secret_name

#: Shorter values are too likely to occur by chance ("1", "true") to be replaced everywhere.
_MIN_SECRET_LENGTH = 8

#: Statuses worth retrying: request timeout, too early, rate limit, server errors, Anthropic's 529.
RETRYABLE_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504, 529})
_MAX_DETAIL = 600


def _chain(error: BaseException) -> Iterator[BaseException]:
    """``error``, then what caused it: ``__cause__``/``__context__``, or the
    ``original_exception`` litellm's stream errors keep as an attribute."""
    seen: set[int] = set()
    pending: list[BaseException] = [error]
    while pending and len(seen) < 16:
        current = pending.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        original = getattr(current, "original_exception", None)
        for following in (original, current.__cause__, current.__context__):
            if isinstance(following, BaseException):
                pending.append(following)


def _is_http_status_error(e: BaseException) -> bool:
    # httpx.HTTPStatusError (and litellm's MaskedHTTPStatusError subclass) carry the real response.
    return any(c.__name__ == "HTTPStatusError" for c in type(e).__mro__)


def _names(e: BaseException) -> set[str]:
    return {c.__name__ for c in type(e).__mro__}


def _real_response(chain: Iterable[BaseException]) -> Any:
    """The provider's HTTP response, when one was received (not one litellm made up)."""
    for e in chain:
        if _is_http_status_error(e):
            response = getattr(e, "response", None)
            if response is not None:
                return response
    return None


def _headers(error: BaseException, chain: list[BaseException]) -> dict[str, str]:
    found: dict[str, str] = {}
    candidates: list[Any] = []
    for e in chain:
        candidates.append(getattr(e, "litellm_response_headers", None))
        candidates.append(getattr(getattr(e, "response", None), "headers", None))
    for headers in candidates:
        if headers is None:
            continue
        try:
            items = headers.items() if hasattr(headers, "items") else []
            for k, v in items:
                found.setdefault(str(k).lower(), str(v))
        except Exception:  # a made-up response object without real headers
            continue
    return found


def parse_retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms``, or ``retry-after`` in seconds or as an HTTP date.

    litellm also forwards the provider's headers with an ``llm_provider-`` prefix; both spellings
    are read. Returns None when no usable hint is present.
    """
    lowered = {k.lower(): v for k, v in headers.items()}
    for key in ("retry-after-ms", "llm_provider-retry-after-ms"):
        if key in lowered:
            try:
                return max(0.0, float(lowered[key]) / 1000.0)
            except ValueError:
                pass
    for key in ("retry-after", "llm_provider-retry-after"):
        value = lowered.get(key)
        if value is None:
            continue
        value = value.strip()
        try:
            return max(0.0, float(value))
        except ValueError:
            pass
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            continue
        if when is None:
            continue
        return max(0.0, when.timestamp() - (time.time() if now is None else now))
    return None


def secret_env_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """Values of environment variables whose names say they hold a secret
    (:func:`loopkit.redaction.is_secret_name`), read now: litellm takes provider keys from such
    variables when no ``api_key`` is given."""
    return secret_values(os.environ if environ is None else environ)


def secret_values(named: Mapping[str, object]) -> list[str]:
    """The string values in ``named`` whose names say they hold a secret, e.g. the extra
    arguments of a client (``aws_secret_access_key``), longest first."""
    found = {
        v
        for k, v in named.items()
        if isinstance(v, str) and is_secret_name(k) and len(v) >= _MIN_SECRET_LENGTH
    }
    return sorted(found, key=len, reverse=True)


def redact(text: str, secrets: Iterable[str | None] = (), *, environ: bool = True) -> str:
    """``text`` with the given secrets, the values of secret-named environment variables (unless
    ``environ`` is False) and anything shaped like a credential replaced by ``[redacted]``
    (one pattern set for everything loopkit writes: :class:`loopkit.redaction.Redactor`)."""
    given = [s for s in secrets if s]
    redactor = Redactor(
        environ=None if environ else {}, secrets=given, min_secret_chars=_MIN_SECRET_LENGTH
    )
    # A given key shorter than the environment's minimum is still the caller's secret.
    for secret in sorted({s for s in given if 4 <= len(s) < _MIN_SECRET_LENGTH}, key=len)[::-1]:
        text = text.replace(secret, REDACTED)
    return redactor.redact(text)


def describe(error: BaseException, secrets: Iterable[str | None] = ()) -> str:
    """What ``error`` said, redacted, without litellm's help banner, cut at 600 characters, and
    starting with the exception's type name when the text does not already say it."""
    name = type(error).__name__
    text = str(error).strip() or name
    # litellm appends help links and debug hints; they do not help the reader of a run log.
    for tail in ("\n\nGive Feedback", "LiteLLM Retried:", " Original exception:"):
        text = text.split(tail, 1)[0].strip()
    text = redact(text, secrets)
    if name not in text[: len(name) + 40]:
        text = f"{name}: {text}"
    if len(text) > _MAX_DETAIL:
        text = text[:_MAX_DETAIL] + "..."
    return text


_TIMEOUT_TYPES = frozenset(
    {"APITimeoutError", "TimeoutException", "Timeout", "TimeoutError", "ServerTimeoutError"}
)
#: The connection could not be made at all.
_CONNECT_TYPES = frozenset({"ConnectError", "ClientConnectorError", "ConnectionRefusedError"})
#: The connection was made and then broke: reset, closed early, body shorter than announced.
_BROKEN_TYPES = frozenset(
    {
        "TransportError",
        "NetworkError",
        "ReadError",
        "WriteError",
        "RemoteProtocolError",
        "ConnectionError",
        "ConnectionResetError",
        "BrokenPipeError",
        "ClientOSError",
        "ServerDisconnectedError",
        "ClientPayloadError",
        "ContentLengthError",
        "IncompleteRead",
    }
)


def is_timeout(error: BaseException) -> bool:
    """True when ``error`` (or anything in its chain) is a timeout and no HTTP answer came."""
    chain = list(_chain(error))
    if _real_response(chain) is not None:
        return False
    names = set().union(*(_names(e) for e in chain))
    return bool(names & _TIMEOUT_TYPES) or any(isinstance(e, asyncio.TimeoutError) for e in chain)


def _json_ends_early(error: BaseException) -> bool:
    """True for a JSON decode error at the end of its input: the body was cut, not garbage."""
    doc = getattr(error, "doc", None)
    pos = getattr(error, "pos", None)
    msg = getattr(error, "msg", "")
    if not isinstance(doc, str) or not isinstance(pos, int):
        return False
    if isinstance(msg, str) and msg.startswith("Unterminated string"):
        return True  # the scanner ran out of input inside a string
    rest = doc[pos:].strip()
    return not rest or any(word.startswith(rest) for word in ("true", "false", "null"))


def _error_body_type(response: Any) -> str | None:
    """The ``error.type`` of a provider's JSON error body (e.g. ``overloaded_error``)."""
    try:
        body = json.loads(response.text)
    except Exception:
        return None
    err = body.get("error") if isinstance(body, dict) else None
    kind = err.get("type") if isinstance(err, dict) else None
    return kind if isinstance(kind, str) else None


#: What a client library says when it was given no API key at all.
_MISSING_KEY = re.compile(r"missing credentials|api_key client option must be set", re.IGNORECASE)


def classify(
    error: BaseException,
    *,
    model: str,
    provider: str | None = None,
    timeout: float | None = None,
    secrets: Iterable[str | None] = (),
) -> ProviderError:
    """Turn any exception raised by a litellm call into a :class:`ProviderError`.

    Retryable: rate limits (429), overload (529), 5xx, 408, timeouts, refused connections, and
    connections that broke before the answer was complete (reset, closed early, a body shorter
    than announced, JSON that ends before it is complete). Not retryable: other 4xx (bad request,
    auth, permission, not found, unprocessable), bodies that are not JSON at all (a server that
    answers with something else usually keeps doing so, e.g. a wrong ``api_base``), and anything
    unrecognised.

    The result has no ``__cause__``; its message names ``error``'s type and says what it said,
    with ``secrets``, secret-named environment variables and credential-shaped strings redacted.
    """
    secrets = list(secrets)
    chain = list(_chain(error))
    names = set().union(*(_names(e) for e in chain))
    detail = describe(error, secrets)
    where = f"{provider or 'provider'} model {model!r}"
    response = _real_response(chain)
    status: int | None = getattr(response, "status_code", None) if response is not None else None
    headers = _headers(error, chain)
    retry_after = parse_retry_after(headers)

    def make(message: str, retryable: bool, code: int | None) -> ProviderError:
        return ProviderError(
            message,
            retryable=retryable,
            status_code=code,
            retry_after=retry_after,
            provider=provider,
        )

    if "UnsupportedParamsError" in names:
        return make(
            f"litellm refused the request for {where} before sending it: {detail}", False, None
        )
    decode_errors = [e for e in chain if "JSONDecodeError" in _names(e)]
    if status is None and decode_errors:
        if any(_json_ends_early(e) for e in decode_errors):
            return make(
                f"{where}: the response body was cut off (its JSON ends before it is complete; "
                f"retryable): {detail}",
                True,
                None,
            )
        return make(
            f"{where} returned a malformed response body (not the JSON the API promises): {detail}",
            False,
            None,
        )
    if is_timeout(error):
        limit = f" after {timeout:g} s" if timeout else ""
        return make(f"{where} timed out{limit} (retryable): {detail}", True, None)
    if status is None and names & _CONNECT_TYPES:
        return make(
            f"{where} could not be reached (connection failed, retryable): {detail}", True, None
        )
    if status is None and names & _BROKEN_TYPES:
        return make(
            f"{where}: the connection was cut off before the answer was complete (reset, closed "
            f"or truncated; retryable): {detail}",
            True,
            None,
        )

    if status is None:
        code = getattr(error, "status_code", None)
        # litellm's own wrappers without a real response: trust only clear statuses.
        status = code if isinstance(code, int) and code not in (408, 500) else None
        if status is None and "RateLimitError" in names:
            status = 429
    if (
        status is not None
        and status in (500, 503)
        and (
            "overloaded_error" in detail
            or (response is not None and _error_body_type(response) == "overloaded_error")
        )
    ):
        status = 529  # litellm reports Anthropic's 529 as 500
    if status is None and _MISSING_KEY.search(detail):
        # The OpenAI SDK refuses to send without a key; litellm wraps that as a server error.
        return make(f"{where} has no API key (not retryable): {detail}", False, None)
    if status is None:
        return make(f"{where} failed unexpectedly ({type(error).__name__}): {detail}", False, None)

    retryable = status in RETRYABLE_STATUSES or status >= 500
    kind = {
        400: "rejected the request as invalid",
        401: "rejected the API key (authentication failed)",
        403: "refused access (permission denied)",
        404: "does not exist or the endpoint was not found",
        413: "rejected the request as too large",
        422: "could not process the request",
        429: "is rate limited",
        529: "is overloaded",
    }.get(status, "failed with a server error" if status >= 500 else "rejected the request")
    hint = f", retry after {retry_after:g} s" if retry_after is not None else ""
    label = "retryable" if retryable else "not retryable"
    return make(f"{where} {kind} (HTTP {status}, {label}{hint}): {detail}", retryable, status)

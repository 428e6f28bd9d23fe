"""Classify litellm's exceptions as :class:`~loopkit.errors.ProviderError` (retryable or not).

litellm wraps the provider's failure in its own exception types, and not always faithfully: an
Anthropic 529 ``overloaded_error`` arrives as ``InternalServerError`` with status 500, a body that
is not JSON arrives as ``InternalServerError`` (OpenAI) or ``APIConnectionError`` (Anthropic), and a
timeout carries a made-up 408. So the classification looks through the whole exception chain for
what really happened (the HTTP response, a JSON decode error, a timeout, a refused connection)
rather than trusting the outer type. Nothing here imports litellm.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import re
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from loopkit.errors import ProviderError

#: Statuses worth retrying: request timeout, too early, rate limit, server errors, Anthropic's 529.
RETRYABLE_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504, 529})
_MAX_DETAIL = 600
#: Things shaped like credentials; group 1 (the label in front) is kept, the rest is replaced.
_KEY_PATTERNS = (
    re.compile(r"()\b(?:sk|pk|rk)-[A-Za-z0-9_\-]{8,}"),
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._\-]{8,}"),
    re.compile(r"(?i)((?:x-)?api[-_]?key['\"]?\s*[:=]\s*['\"]?)[^\s'\",}]{4,}"),
)


def _chain(error: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen and len(seen) < 12:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


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


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with the given secrets and anything shaped like an API key replaced by ``***``."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    for pattern in _KEY_PATTERNS:
        text = pattern.sub(lambda m: m.group(1) + "***", text)
    return text


def _detail(error: BaseException, secrets: Iterable[str | None]) -> str:
    text = str(error).strip() or type(error).__name__
    # litellm appends help links and debug hints; they do not help the reader of a run log.
    text = text.split("\n\nGive Feedback", 1)[0].split("LiteLLM Retried:", 1)[0].strip()
    text = redact(text, secrets)
    if len(text) > _MAX_DETAIL:
        text = text[:_MAX_DETAIL] + "..."
    return text


def _error_body_type(response: Any) -> str | None:
    """The ``error.type`` of a provider's JSON error body (e.g. ``overloaded_error``)."""
    try:
        body = json.loads(response.text)
    except Exception:
        return None
    err = body.get("error") if isinstance(body, dict) else None
    kind = err.get("type") if isinstance(err, dict) else None
    return kind if isinstance(kind, str) else None


def classify(
    error: BaseException,
    *,
    model: str,
    provider: str | None = None,
    timeout: float | None = None,
    secrets: Iterable[str | None] = (),
) -> ProviderError:
    """Turn any exception raised by a litellm call into a :class:`ProviderError`.

    Retryable: rate limits (429), overload (529), 5xx, 408, timeouts and connection failures.
    Not retryable: other 4xx (bad request, auth, permission, not found, unprocessable), malformed
    response bodies (a server that answers with broken JSON usually keeps doing so, e.g. a wrong
    ``api_base``), and anything unrecognised.
    """
    secrets = list(secrets)
    chain = list(_chain(error))
    names = set().union(*(_names(e) for e in chain))
    detail = _detail(error, secrets)
    where = f"{provider or 'provider'} model {model!r}"
    response = _real_response(chain)
    status: int | None = getattr(response, "status_code", None) if response is not None else None
    headers = _headers(error, chain)
    retry_after = parse_retry_after(headers)

    def make(message: str, retryable: bool, code: int | None) -> ProviderError:
        e = ProviderError(
            message,
            retryable=retryable,
            status_code=code,
            retry_after=retry_after,
            provider=provider,
        )
        e.__cause__ = error
        return e

    if "UnsupportedParamsError" in names:
        return make(
            f"litellm refused the request for {where} before sending it: {detail}", False, None
        )
    if status is None and "JSONDecodeError" in names:
        return make(
            f"{where} returned a malformed response body (not the JSON the API promises): {detail}",
            False,
            None,
        )
    timeout_types = {"APITimeoutError", "TimeoutException", "Timeout", "TimeoutError"}
    if status is None and (
        names & timeout_types or any(isinstance(e, asyncio.TimeoutError) for e in chain)
    ):
        limit = f" after {timeout:g} s" if timeout else ""
        return make(f"{where} timed out{limit} (retryable): {detail}", True, None)
    transport = {
        "ConnectError",
        "TransportError",
        "NetworkError",
        "RemoteProtocolError",
        "ConnectionError",
        "ClientConnectorError",
        "ClientOSError",
        "ServerDisconnectedError",
        "ClientPayloadError",
    }
    if status is None and names & transport:
        return make(
            f"{where} could not be reached (connection failed, retryable): {detail}", True, None
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

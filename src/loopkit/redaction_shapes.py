"""Secret *shapes*: text that is a secret wherever it appears (provider keys, tokens, ``Bearer``
credentials, a URL's password, private key blocks, ...; the list is in :mod:`loopkit.redaction`),
and :func:`redact_shapes`, which replaces them by ``[redacted]``.

Why a hand-written pattern set and not detect-secrets (Yelp, 1.5.0), which was evaluated: its
plugins are made to *flag* lines of source code for review, not to cut a secret out of text.
``PrivateKeyDetector`` matches only the ``BEGIN … PRIVATE KEY`` header (the key body would stay),
the AWS secret-key rule needs the value in quotes (``AWS_SECRET_ACCESS_KEY=…`` in a log is
missed), ``OpenAIDetector`` knows only keys carrying the ``T3BlbkFJ`` marker, Stripe keys are cut
at 24 characters (longer keys would leave their tail), and there is no Anthropic, Google,
Bearer-with-whitespace or ``github_pat_`` rule. Its plugin modules also import ``requests``
(about 250 ms) for their online verification, on every import of the run log. The shapes above
borrow its prefixes (AWS ``A3T/ABIA/ACCA``, GitHub's five ``gh?_`` kinds, Slack's ``xox``
letters, the private-key block names) and add what it lacks. Its entropy and keyword detectors
were never candidates: they flag commit ids and hashes.

Speed: the run log redacts every line on the hot path. A text is first checked for the literal
anchors every shape needs (``sk-``, ``AKIA``, ``eyJ``, ``://``, ``bearer``, …; plain substring
searches in C); only a text holding one goes through the one combined regular expression. The
patterns compile on first use, not at import.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["REDACTED", "might_hold_a_shape", "redact_shapes"]

REDACTED = "[redacted]"
"""What a secret is replaced by."""


_WS = r"(?:\s|\\[nrt])+"  # any whitespace, raw or JSON-escaped
_B64 = r"[A-Za-z0-9+/]"
_IDENTIFIER_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


@dataclass(frozen=True)
class _Shape:
    """One secret shape: its pattern, and what a text must contain for it to be worth a search.

    Patterns start with a literal where they can: the regex engine then jumps from one
    occurrence of it to the next instead of trying every position (100 times faster).
    """

    name: str
    pattern: str
    anchors: tuple[str, ...] = ()  # one must occur in the text (case-sensitive) ...
    anchors_any_case: tuple[str, ...] = ()  # ... or one of these in the lower-cased text
    # not when the match continues a word made of these characters (``task-sk-...``)
    word_chars: frozenset[str] = frozenset()

    @functools.cached_property
    def regex(self) -> re.Pattern[str]:
        """The compiled pattern, compiled on first use (compiling every shape at import cost
        the import of every program that redacts anything several milliseconds)."""
        return re.compile(self.pattern)

    def replace(self, match: re.Match[str]) -> str:
        """What a match becomes: its ``keep`` group (if any) and ``[redacted]``, or itself when
        it continues a word. A method, not a closure built at import: it runs (and is tested)
        at each redaction."""
        if self.word_chars and _inside_word(match.string, match.start(), self.word_chars):
            return match.group(0)
        if "keep" in self.regex.groupindex:
            return match.group("keep") + REDACTED
        return REDACTED


def _shape(name: str, pattern: str, *anchors: str, any_case: tuple[str, ...] = (),
           word_start: bool = False, word_chars: str = "") -> _Shape:  # fmt: skip
    chars = frozenset(word_chars) if word_chars else _IDENTIFIER_CHARS if word_start else None
    return _Shape(name, pattern, anchors, any_case, chars or frozenset())


#: The ``...token`` words of ``credential_assignment``: its anchors (each match holds one).
_TOKEN_WORDS = tuple(
    f"{word}{sep}token"
    for word in ("access", "auth", "refresh", "session", "bot")
    for sep in ("", "-", "_")
)

# A named group ``keep`` is written back before the replacement.
_SHAPES: tuple[_Shape, ...] = (
    _shape(
        "provider_key",
        r"sk-(?:ant-|proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{10,}",
        "sk-",
        word_start=True,
    ),
    _shape("stripe_key", r"k_(?:live|test)_[A-Za-z0-9]{16,}", "k_live_", "k_test_"),
    _shape(
        "aws_access_key_id",
        r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Z0-9])",
        "A3T",
        "AKIA",
        "ASIA",
        "ABIA",
        "ACCA",
        word_chars="ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
    ),
    _shape(
        "aws_secret_key",
        r"(?P<keep>(?i:aws[A-Za-z0-9_.\-]{0,30}?(?:secret|key|token)|secret_?access_?key)"
        r"[A-Za-z0-9_.\-]{0,20}?[\s\"':=\\]{1,8})"
        r"[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])",
        any_case=("aws", "secret_access", "secretaccess"),
    ),
    _shape(
        "github_token",
        r"gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,}",
        "ghp_",
        "gho_",
        "ghu_",
        "ghs_",
        "ghr_",
        "github_pat_",
    ),
    _shape("gitlab_token", r"glpat-[A-Za-z0-9_\-]{20,}", "glpat-"),
    _shape("slack_token", r"xox[abposr]-[A-Za-z0-9\-]{10,}", "xox"),
    _shape(
        "slack_webhook",
        r"(?P<keep>hooks\.slack\.com/(?:services|workflows)/)[A-Za-z0-9_/\-]{8,}",
        "hooks.slack.com",
    ),
    _shape("google_api_key", r"AIza[0-9A-Za-z_\-]{30,}", "AIza"),
    _shape("npm_token", r"npm_[A-Za-z0-9]{36,}", "npm_"),
    _shape("pypi_token", r"pypi-AgE[A-Za-z0-9_\-]{40,}", "pypi-AgE"),
    _shape("sendgrid_key", r"SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}", "SG."),
    _shape("huggingface_token", r"hf_[A-Za-z0-9]{30,}", "hf_"),
    _shape("jwt", r"eyJ[A-Za-z0-9_\-]{6,}\.[A-Za-z0-9_\-]{6,}\.[A-Za-z0-9_\-]*", "eyJ"),
    _shape(
        "bearer",
        r"(?P<keep>(?i:bearer)" + _WS + r")"
        # a token: 8+ characters with a digit or a symbol, or 20+ ("Bearer authentication" stays)
        r"(?:(?=[A-Za-z0-9._~+/=\-]*[0-9._~+/=\-])[A-Za-z0-9._~+/=\-]{8,}"
        r"|[A-Za-z0-9._~+/=\-]{20,})",
        any_case=("bearer",),
        word_start=True,
    ),
    _shape(
        "basic",
        r"(?P<keep>(?i:basic)" + _WS + r")"
        # base64 of user:password: 8+ characters with a digit, + / =, or a lower-upper change
        r"(?=" + _B64 + r"*(?:[0-9+/=]|[a-z][A-Z]))" + _B64 + r"{8,}={0,2}",
        any_case=("basic",),
        word_start=True,
    ),
    _shape(
        "api_key_assignment",
        r"(?P<keep>(?i:(?:x-)?api[-_]?key)\\?[\"']?\s*[:=]\s*\\?[\"']?)"
        r"(?=[^\s'\"\\,})(]*[0-9])[^\s'\"\\,})(]{8,}",
        any_case=("api_key", "api-key", "apikey"),
    ),
    _shape(
        "credential_assignment",
        r"(?P<keep>(?i:(?:client[-_]?|app[-_]?)?secret|password|passwd|pwd"
        r"|(?:access|auth|refresh|session|bot)[-_]?token)\\?[\"']?\s*[:=]\s*\\?[\"']?)"
        r"[^\s'\"\\,})(&]{6,}",
        # "token" alone would flag every run-log line (input_tokens, max_tokens, ...)
        any_case=("secret", "password", "passwd", "pwd", *_TOKEN_WORDS),
    ),
    # credentials in a URL's query string: ?key=..., &token=..., &sig=...
    _shape(
        "url_query_credential",
        r"(?P<keep>[?&](?i:key|api[-_]?key|token|access[-_]?token|secret|password|sig|signature"
        r"|auth)=)[^&\s#'\"<>\\]{4,}",
        any_case=("key=", "token=", "secret=", "password=", "sig=", "signature=", "auth="),
    ),
    # scheme://user:password@host: the password (up to the last @ before the host) goes.
    _shape(
        "url_password",
        r"(?P<keep>://[^\s:/?#@\"'<>\\]+:)[^\s/?#\"'<>\\]+(?=@[^\s/?#@]*)",
        "://",
    ),
    _shape(
        "private_key",
        r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
        r"(?s:.*?)(?:-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|\Z)",
        "PRIVATE KEY",
    ),
    _shape(
        "putty_key",
        r"PuTTY-User-Key-File-[0-9]+:(?s:.*?)(?:Private-MAC:\s*[0-9a-fA-F]+|\Z)",
        "PuTTY-User-Key-File",
    ),
)


def _inside_word(text: str, start: int, word_chars: frozenset[str]) -> bool:
    """Whether ``text[start]`` continues a word (not right after a JSON escape like \\n)."""
    if start == 0 or text[start - 1] not in word_chars:
        return False
    return not (start >= 2 and text[start - 2] == "\\" and text[start - 1] in "nrt")


def _prefilters(anchors: Iterable[str]) -> tuple[re.Pattern[str], ...]:
    """One regex per first character of the anchors: a literal first character lets the regex
    engine jump between its occurrences, so each costs about one substring search."""
    by_first: dict[str, list[str]] = {}
    for anchor in dict.fromkeys(anchors):
        by_first.setdefault(anchor[0], []).append(anchor[1:])
    return tuple(
        re.compile(re.escape(first) + "(?:" + "|".join(map(re.escape, rests)) + ")")
        for first, rests in by_first.items()
    )


_ANCHORS = tuple(dict.fromkeys(a for shape in _SHAPES for a in shape.anchors))
_ANCHORS_ANY_CASE = tuple(dict.fromkeys(a for shape in _SHAPES for a in shape.anchors_any_case))
_SHORT = 128  # below this many characters, substring searches beat regex calls


class _Prefilters:
    """The pre-check's regexes, each compiled on first use (not at import)."""

    @functools.cached_property
    def exact(self) -> tuple[re.Pattern[str], ...]:
        """The case-sensitive anchors."""
        return _prefilters(_ANCHORS)

    @functools.cached_property
    def any_case(self) -> tuple[re.Pattern[str], ...]:
        """The anchors searched in the lower-cased text."""
        return _prefilters(_ANCHORS_ANY_CASE)

    @functools.cached_property
    def lower(self) -> tuple[re.Pattern[str], ...]:
        """Every anchor lower-cased, one regex per first character, searched in the
        lower-cased text: a superset of the anchors (13 searches instead of 19, no case to
        respect), confirmed by the exact check only when it finds something. Almost every
        text is clean, so this is the cost."""
        return _prefilters([*(a.lower() for a in _ANCHORS), *_ANCHORS_ANY_CASE])


_PREFILTERS = _Prefilters()


def might_hold_a_shape(text: str) -> bool:
    """Whether ``text`` contains an anchor of some secret shape (a fast pre-check)."""
    lower = text.lower()
    for prefilter in _PREFILTERS.lower:
        if prefilter.search(lower):
            return _holds_an_anchor(text, lower)
    return False


def _holds_an_anchor(text: str, lower: str) -> bool:
    """The exact check: an anchor in ``text`` (case-sensitive), or an any-case one in ``lower``."""
    if len(text) < _SHORT:
        for anchor in _ANCHORS:
            if anchor in text:
                return True
        return any(anchor in lower for anchor in _ANCHORS_ANY_CASE)
    for prefilter in _PREFILTERS.exact:
        if prefilter.search(text):
            return True
    return any(prefilter.search(lower) for prefilter in _PREFILTERS.any_case)


def redact_shapes(text: str) -> str:
    """``text`` with every secret *shape* replaced (no environment values): a pure function."""
    if len(text) < 8 or not might_hold_a_shape(text):
        return text
    lower: str | None = None
    for shape in _SHAPES:
        if shape.anchors and any(anchor in text for anchor in shape.anchors):
            text = shape.regex.sub(shape.replace, text)
        elif shape.anchors_any_case:
            if lower is None:
                lower = text.lower()
            if any(anchor in lower for anchor in shape.anchors_any_case):
                text = shape.regex.sub(shape.replace, text)
                lower = None  # the text changed
    return text

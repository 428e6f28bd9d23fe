"""Secrets out of everything loopkit writes: the run log, the console, reports and findings.

A :class:`Redactor` replaces two kinds of secrets by ``[redacted]``:

1. **Shapes** that are secrets wherever they appear: provider keys (Anthropic ``sk-ant-…``,
   OpenAI ``sk-…``/``sk-proj-…``), ``Bearer``/``Basic`` credentials after any whitespace (tabs,
   several spaces, a newline, or their JSON escapes), AWS access key ids (``AKIA…``/``ASIA…``)
   and secret keys (40 base64 characters after a key-ish word such as
   ``aws_secret_access_key``), GitHub (``ghp_…``, ``gho_…``, ``ghu_…``, ``ghs_…``, ``ghr_…``,
   ``github_pat_…``), GitLab (``glpat-…``), Slack (``xox[abposr]-…`` and webhook URLs), Google
   (``AIza…``), Stripe, npm, PyPI, SendGrid and Hugging Face tokens, JWTs, ``api_key=…``
   assignments, the password of a URL (``scheme://user:password@host`` keeps user and host) and
   private key blocks (PEM, OpenSSH, PGP, PuTTY).
2. **Values of environment variables whose names look secret** (:func:`is_secret_name`: the
   name contains KEY, TOKEN, SECRET, PASSWORD, PASSWD or CREDENTIAL, or has PAT as a whole
   ``_``-separated word, so ``GITHUB_PAT`` counts and ``PATH`` does not). They are read from
   the environment each time text is redacted, not once: a key exported after the redactor was
   made is redacted too. Values shorter than ``min_secret_chars`` (8) are skipped, so ``1`` or
   ``true`` are not redacted everywhere. Each value is also searched in its JSON-escaped forms
   (a value holding a quote, a backslash or a non-ASCII character is found after escaping too).

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
Environment values are re-read cheaply: ``os.environ``'s own mapping is compared by key set and
value identity, and scanned in full only when it changed.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

__all__ = [
    "REDACTED",
    "RedactingStream",
    "Redactor",
    "is_secret_name",
]

REDACTED = "[redacted]"
"""What a secret is replaced by."""

_SECRET_NAME_PARTS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")
_SECRET_NAME_WORDS = frozenset({"PAT"})


def is_secret_name(name: str) -> bool:
    """Whether an environment variable's ``name`` looks like it holds a secret.

    True when the name (any case) contains KEY, TOKEN, SECRET, PASSWORD, PASSWD or CREDENTIAL,
    or has PAT as a whole ``_``-separated word (``GITHUB_PAT``, ``PAT_FOR_CI``; not ``PATH``).
    """
    upper = name.upper()
    if any(part in upper for part in _SECRET_NAME_PARTS):
        return True
    return not _SECRET_NAME_WORDS.isdisjoint(upper.split("_"))


# --- the shapes -------------------------------------------------------------------------------
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


def _escaped_forms(value: str) -> tuple[str, ...]:
    """``value`` and its JSON-escaped forms (non-ASCII kept and escaped), longest first."""
    forms = {value, json.dumps(value, ensure_ascii=False)[1:-1], json.dumps(value)[1:-1]}
    return tuple(sorted(forms, key=len, reverse=True))


class Redactor:
    """Replaces secret shapes and secret environment values in text by ``[redacted]``.

    ``environ``: the mapping to read secret values from (default: ``os.environ``, read at every
    call, so a variable set later counts). ``secrets``: further values to redact wherever they
    appear (e.g. a key given in a configuration file). ``min_secret_chars``: shorter values are
    not redacted (they would hit common words and numbers). ``shapes=False`` redacts only values.
    One redactor may be shared by threads.
    """

    def __init__(
        self,
        *,
        environ: Mapping[str, str] | None = None,
        secrets: Iterable[str] = (),
        min_secret_chars: int = 8,
        shapes: bool = True,
    ) -> None:
        if min_secret_chars < 1:
            raise ValueError(f"min_secret_chars must be at least 1, got {min_secret_chars!r}")
        self._environ = environ
        self.min_secret_chars = min_secret_chars
        self.shapes = shapes
        self._given = tuple(s for s in secrets if isinstance(s, str) and len(s) >= min_secret_chars)
        self._lock = threading.Lock()
        # the last scan of os.environ (see _value_forms)
        self._env_keys: tuple[Any, ...] | None = None
        self._env_raw: tuple[tuple[Any, Any], ...] = ()
        self._forms: tuple[str, ...] = self._forms_of(())
        # short texts found free of secret shapes (a pure property of the text): tool names
        self._shape_free_texts: set[str] = set()

    # -- the values --------------------------------------------------------------------------
    def _forms_of(self, env_values: Iterable[str]) -> tuple[str, ...]:
        values = {*self._given, *(v for v in env_values if len(v) >= self.min_secret_chars)}
        forms = {form for value in values for form in _escaped_forms(value)}
        return tuple(sorted(forms, key=len, reverse=True))

    def secret_values(self) -> list[str]:
        """The values redacted right now (given ones and the environment's), longest first."""
        env = os.environ if self._environ is None else self._environ
        values = {*self._given}
        values.update(
            v for k, v in env.items() if is_secret_name(k) and len(v) >= self.min_secret_chars
        )
        return sorted(values, key=len, reverse=True)

    def _value_forms(self) -> tuple[str, ...]:
        env = os.environ if self._environ is None else self._environ
        data = getattr(env, "_data", None)
        if not isinstance(data, dict):  # a plain mapping: scan it (cheap, no decoding)
            return self._forms_of(v for k, v in env.items() if is_secret_name(k))
        # os.environ keeps its entries in ``_data`` (encoded keys and values): unchanged keys
        # and the very same value objects under the secret names mean nothing to rescan.
        # (Tuples compare their items by identity first: an unchanged mapping costs one pass.)
        if self._env_keys is not None and tuple(data) == self._env_keys:
            for key, value in self._env_raw:
                if data.get(key) is not value:
                    break
            else:
                return self._forms
        with self._lock:
            raw = tuple((k, v) for k, v in data.items() if _is_secret_key(k))
            self._forms = self._forms_of(_text(v) for _, v in raw)
            self._env_raw = raw
            self._env_keys = tuple(data)
            return self._forms

    # -- redaction ---------------------------------------------------------------------------
    def redact_values(self, text: str) -> str:
        """``text`` with the secret values (and their JSON-escaped forms) replaced."""
        return _replace_forms(text, self._value_forms())

    def redact(self, text: str) -> str:
        """``text`` with secret values and secret shapes replaced by ``[redacted]``."""
        return self._redact(text, self._value_forms())

    def _redact(self, text: str, forms: tuple[str, ...]) -> str:
        text = _replace_forms(text, forms)
        return redact_shapes(text) if self.shapes else text

    def redact_data(self, value: Any, *, max_depth: int = 64) -> Any:
        """``value`` as JSON-ready data with every string redacted; never raises.

        Dicts (keys become strings), lists, tuples and sets are walked; ``bytes`` are decoded
        (undecodable bytes as ``\\xNN``); other objects become their ``str()`` (or a note when
        that raises); NaN and infinities become strings; deeper than ``max_depth`` (or cyclic)
        becomes a note. Lone surrogates are escaped (``\\udcNN`` as text), so the result always
        encodes as UTF-8.
        """
        return self._walk(value, max_depth, self._value_forms())

    def to_json(self, value: Any) -> str:
        """One compact JSON text of ``value`` (UTF-8, non-ASCII kept) with secrets redacted.

        Never raises: what ``json`` cannot encode goes through :meth:`redact_data` first. Fast
        path: the plain JSON text is checked once for the anchors of every secret shape and for
        every secret value (raw and escaped); only a text holding one is redacted string by
        string (before escaping) and then once more as a whole (escaped values).
        """
        return self._to_json(value, self._value_forms())

    def json_line(
        self, head: str, value: Any, texts: Sequence[str] | None = None, end: str = "}"
    ) -> str:
        """``head + to_json(value) + end``: a JSON object whose last field is ``value``
        (``end`` closes it, e.g. ``"}\n"`` for a line of a file).

        ``head`` is the object's text up to that field's value, already JSON (e.g.
        ``{"type":"round","data":``), made by the caller from its own names: the secret
        *values* in it are replaced, but it is not searched for secret shapes (check what you
        did not write yourself with :func:`might_hold_a_shape`). One look at the environment
        for the whole line (the run log writes its lines with it).

        ``texts``, when given, are all the strings in ``value`` that could hold a secret shape
        (the caller vouches that the rest are its own key names, numbers, booleans): only they
        are searched for shapes, not the whole JSON (a shape never spans two strings: the
        careful path redacts string by string). Short ones found clean are remembered. Secret
        values are still searched in the whole line.
        """
        forms = self._value_forms()
        if forms and _holds_a_form(head, forms):
            head = _replace_forms(head, forms)
        return head + self._to_json(value, forms, texts) + end

    def _to_json(
        self, value: Any, forms: tuple[str, ...], texts: Sequence[str] | None = None
    ) -> str:
        try:
            line = _encode(value)
            if not line.isascii():
                line.encode("utf-8")  # lone surrogates: take the careful path
        except (TypeError, ValueError, RecursionError):
            line = None
        if line is not None and not (
            (
                self.shapes
                and (might_hold_a_shape(line) if texts is None else not self._shape_free(texts))
            )
            or (forms and _holds_a_form(line, forms))
        ):
            return line
        data = self._walk(value, 64, forms)
        return _replace_forms(_encode(data), forms)

    def _shape_free(self, texts: Sequence[str]) -> bool:
        """Whether no text holds the anchor of a secret shape (one search for them all)."""
        known = self._shape_free_texts
        unknown = [text for text in texts if text not in known]
        # joined by a line break, which no anchor holds: no anchor spans two texts
        if not unknown or not might_hold_a_shape("\n".join(unknown)):
            if len(known) > 1024:
                known.clear()
            known.update(text for text in unknown if len(text) <= 64)
            return True
        return False

    def _walk(self, value: Any, depth: int, forms: tuple[str, ...]) -> Any:
        if isinstance(value, str):
            return self._redact(_valid_text(value), forms)
        if value is None or isinstance(value, bool | int):
            return value
        if isinstance(value, float):
            return value if math.isfinite(value) else str(value)
        if depth <= 0:
            return "<nested too deeply>"
        if isinstance(value, dict):
            return {self._key(k, forms): self._walk(v, depth - 1, forms) for k, v in value.items()}
        if isinstance(value, list | tuple | set | frozenset):
            return [self._walk(v, depth - 1, forms) for v in value]
        if isinstance(value, bytes | bytearray | memoryview):
            return self._redact(_bytes_text(value), forms)
        return self._redact(_valid_text(_safe_str(value)), forms)

    def _key(self, key: Any, forms: tuple[str, ...]) -> str:
        if isinstance(key, str):
            text = key
        elif isinstance(key, bytes):
            text = _bytes_text(key)
        elif key is None or isinstance(key, bool):
            text = json.dumps(key)  # null, true, false: as json writes them on the fast path
        else:
            text = _safe_str(key)
        return self._redact(_valid_text(text), forms)


def _refuse(value: Any) -> Any:
    raise TypeError(f"{type(value).__name__} is not JSON")


def _json_encoder() -> Callable[[Any], str]:
    """Compact JSON, UTF-8 kept, no NaN: one encoder made once for every line.

    ``json.dumps`` with options builds a new encoder per call, and so does
    ``JSONEncoder.encode`` (its C encoder, each time). This keeps the C encoder and calls it
    directly (``json.encoder.c_make_encoder``, the accelerator ``JSONEncoder`` itself uses; a
    Python without it, or whose accelerator takes other arguments or writes otherwise, gets
    ``JSONEncoder.encode``). No ``markers``: a cycle ends in ``RecursionError``, which
    :meth:`Redactor.to_json` catches like ``json``'s own "Circular reference" ``ValueError``,
    and takes the careful path.
    """
    plain = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
    make = getattr(json.encoder, "c_make_encoder", None)
    quote = getattr(json.encoder, "c_encode_basestring", None)
    if make is None or quote is None:
        return plain
    try:
        encoder = make(None, _refuse, quote, None, ":", ",", False, False, False)
    except TypeError:  # another signature (a later Python): the public way
        return plain
    join = "".join

    def encode(value: Any) -> str:
        return join(encoder(value, 0))

    sample = {"a": [1, 2.5, True, None], "é\n": '"x"', "7": {}}
    return encode if encode(sample) == plain(sample) else plain


_encode = _json_encoder()


def _holds_a_form(text: str, forms: tuple[str, ...]) -> bool:
    # a loop, not any(...): the generator cost more than the search on every run-log line
    for form in forms:  # noqa: SIM110
        if form in text:
            return True
    return False


def _replace_forms(text: str, forms: tuple[str, ...]) -> str:
    for form in forms:
        if form in text:
            text = text.replace(form, REDACTED)
    return text


#: ``is_secret_name`` of each raw ``os.environ`` key seen: a memo of a pure function, shared by
#: every redactor (a run log's is new with each log, and deciding some 40 names costs it about
#: 0.1 ms at its first line).
_SECRET_KEYS: dict[Any, bool] = {}


def _is_secret_key(key: Any) -> bool:
    secret = _SECRET_KEYS.get(key)
    if secret is None:
        if len(_SECRET_KEYS) >= 4096:  # environments that keep inventing names: start again
            _SECRET_KEYS.clear()
        secret = _SECRET_KEYS[key] = is_secret_name(_text(key))
    return secret


def _text(value: Any) -> str:
    """An entry of ``os.environ._data`` as text (bytes on POSIX, str on Windows)."""
    return os.fsdecode(value) if isinstance(value, bytes) else str(value)


def _bytes_text(value: bytes | bytearray | memoryview) -> str:
    return bytes(value).decode("utf-8", errors="backslashreplace")


def _safe_str(value: Any) -> str:
    try:
        return str(value)
    except Exception as e:  # an object whose __str__ raises still gets a line
        try:
            return f"<unprintable {type(value).__name__}: {type(e).__name__}>"
        except Exception:
            return "<unprintable object>"


def _valid_text(text: str) -> str:
    """``text`` with lone surrogates (e.g. undecodable file-name bytes) spelled out as text."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", errors="backslashreplace").decode("utf-8")
    return text


class RedactingStream:
    """A text stream that redacts everything written to it before passing it on.

    Use it wherever text leaves the process, e.g. ``Console(file=RedactingStream(sys.stdout))``
    for rich. Each ``write`` is redacted on its own: a secret split over two writes is not seen,
    and neither is one that rich folded over two lines of a table cell (use
    :class:`loopkit.redacting_console.RedactingConsole`, which redacts text before layout).
    """

    def __init__(self, stream: TextIO, redactor: Redactor | None = None) -> None:
        self.stream = stream
        self.redactor = redactor or Redactor()

    def write(self, text: str) -> int:
        """Write ``text`` redacted; returns ``len(text)`` as callers expect."""
        self.stream.write(self.redactor.redact(text))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        """Write each line redacted."""
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        """Flush the underlying stream."""
        self.stream.flush()

    def isatty(self) -> bool:
        """Whether the underlying stream is a terminal."""
        return self.stream.isatty()

    def fileno(self) -> int:
        """The underlying stream's file descriptor."""
        return self.stream.fileno()

    def writable(self) -> bool:
        """Always true."""
        return True

    @property
    def closed(self) -> bool:
        """Whether the underlying stream is closed."""
        return bool(getattr(self.stream, "closed", False))

    def __getattr__(self, name: str) -> Any:  # encoding, errors, name, ...
        return getattr(self.stream, name)

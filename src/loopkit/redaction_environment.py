"""Secret *values*: those of environment variables whose names look secret
(:func:`is_secret_name`) and those given to a redactor, with their JSON-escaped forms, read
afresh at every redaction (:class:`SecretValues`): a key exported after the redactor was made is
redacted too.

Environment values are re-read cheaply: ``os.environ``'s own mapping is compared by key set and
value identity, and scanned in full only when it changed.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["SecretValues", "is_secret_name"]

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


def _escaped_forms(value: str) -> tuple[str, ...]:
    """``value`` and its JSON-escaped forms (non-ASCII kept and escaped), longest first."""
    forms = {value, json.dumps(value, ensure_ascii=False)[1:-1], json.dumps(value)[1:-1]}
    return tuple(sorted(forms, key=len, reverse=True))


class SecretValues:
    """The secret values a :class:`~loopkit.redaction.Redactor` replaces right now, and the
    forms it searches for (each value raw and JSON-escaped, longest first).

    ``environ``: the mapping to read secret values from (``None``: ``os.environ``, read at every
    call, so a variable set later counts); ``secrets``: values given outright; values shorter
    than ``min_secret_chars`` are left out. One may be shared by threads.
    """

    def __init__(
        self, environ: Mapping[str, str] | None, secrets: Iterable[str], min_secret_chars: int
    ) -> None:
        self._environ = environ
        self.min_secret_chars = min_secret_chars
        self._given = tuple(s for s in secrets if isinstance(s, str) and len(s) >= min_secret_chars)
        self._lock = threading.Lock()
        # the last scan of os.environ (see forms)
        self._env_keys: tuple[Any, ...] | None = None
        self._env_raw: tuple[tuple[Any, Any], ...] = ()
        self._forms: tuple[str, ...] = self._forms_of(())

    def _forms_of(self, env_values: Iterable[str]) -> tuple[str, ...]:
        values = {*self._given, *(v for v in env_values if len(v) >= self.min_secret_chars)}
        forms = {form for value in values for form in _escaped_forms(value)}
        return tuple(sorted(forms, key=len, reverse=True))

    def values(self) -> list[str]:
        """The values redacted right now (given ones and the environment's), longest first."""
        env = os.environ if self._environ is None else self._environ
        values = {*self._given}
        values.update(
            v for k, v in env.items() if is_secret_name(k) and len(v) >= self.min_secret_chars
        )
        return sorted(values, key=len, reverse=True)

    def forms(self) -> tuple[str, ...]:
        """The forms to search for now; the environment is rescanned only when it changed."""
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

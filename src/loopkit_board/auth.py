"""Who may use the board: accounts with argon2 password hashes, or tokens; the login cookie; CSRF.

The accounts file is TOML, never holding a password in clear::

    [accounts]
    ann = "$argon2id$v=19$m=65536,t=3,p=4$..."   # python -m loopkit_board hash-password

    [tokens]
    ci = "$argon2id$v=19$..."                     # a token, hashed the same way

A person logs in on the login page (name and password, or a token); a program sends
``Authorization: Bearer <token>``. The login cookie is signed (HMAC-SHA256 with a key kept in a
0600 file in the board's data folder, so a restart keeps people logged in), ``HttpOnly``,
``SameSite=Strict``, and carries the session's CSRF token: every state-changing request with
the cookie must send the same token back (a form's ``csrf`` field or the ``X-CSRF-Token``
header), compared in constant time. A bearer request carries no ambient credential, so it needs
no CSRF token.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import json
import os
import secrets
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loopkit.errors import LoopkitError

__all__ = [
    "COOKIE",
    "Accounts",
    "AuthConfigError",
    "LoginSession",
    "Signer",
    "hash_secret",
    "load_accounts",
]

#: The login cookie's name.
COOKIE = "loopkit_board"
#: A login lasts this long (seconds).
SESSION_SECONDS = 12 * 3600


class AuthConfigError(LoopkitError):
    """The accounts file cannot be used: the message names the file and what was expected."""


def _hasher() -> Any:
    from argon2 import PasswordHasher

    return PasswordHasher()


def hash_secret(secret: str) -> str:
    """The argon2id hash of a password or token, for the accounts file."""
    return str(_hasher().hash(secret))


@dataclass(frozen=True, slots=True)
class Accounts:
    """Names with password hashes, and named token hashes."""

    passwords: dict[str, str]
    tokens: dict[str, str]

    def check_password(self, name: str, password: str) -> str | None:
        """``name`` when the password is right, else None (an unknown name costs the same)."""
        from argon2.exceptions import InvalidHashError, VerificationError

        known = self.passwords.get(name)
        try:
            # An unknown name still verifies against a hash: the answer takes the same time.
            _hasher().verify(known or _dummy_hash(), password)
        except (VerificationError, InvalidHashError):
            return None
        return name if known is not None else None

    def check_token(self, token: str) -> str | None:
        """The token's name (``token:<name>``) when it is one of the tokens, else None."""
        from argon2.exceptions import InvalidHashError, VerificationError

        for name, hashed in self.tokens.items():
            try:
                _hasher().verify(hashed, token)
            except (VerificationError, InvalidHashError):
                continue
            return f"token:{name}"
        return None


@functools.cache
def _dummy_hash() -> str:
    return hash_secret(secrets.token_hex(8))


def load_accounts(path: str | Path) -> Accounts:
    """Read the accounts file (:class:`AuthConfigError` naming the file and the problem)."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise AuthConfigError(f"accounts file not found: {p}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise AuthConfigError(f"cannot read accounts file {p}: {e}") from None
    except tomllib.TOMLDecodeError as e:
        raise AuthConfigError(f"accounts file {p} is not valid TOML: {e}") from None
    sections: dict[str, dict[str, str]] = {}
    for section in ("accounts", "tokens"):
        values = data.get(section, {})
        if not isinstance(values, dict) or not all(
            isinstance(v, str) and v.startswith("$argon2") for v in values.values()
        ):
            raise AuthConfigError(
                f'accounts file {p}: [{section}] holds name = "<argon2 hash>" lines (make a '
                "hash with: python -m loopkit_board hash-password)"
            )
        sections[section] = dict(values)
    unknown = sorted(set(data) - {"accounts", "tokens"})
    if unknown:
        raise AuthConfigError(f"accounts file {p}: unknown section(s) {', '.join(unknown)}")
    if not sections["accounts"] and not sections["tokens"]:
        raise AuthConfigError(
            f"accounts file {p}: no [accounts] and no [tokens]: nobody could log in"
        )
    return Accounts(sections["accounts"], sections["tokens"])


@dataclass(frozen=True, slots=True)
class LoginSession:
    """Who is logged in, until when, and the CSRF token of this login."""

    user: str
    expires: float
    csrf: str


class Signer:
    """Signs and reads login cookies with a key kept in ``data_dir/board-secret`` (0600).

    A logout revokes its cookie on the server: the session is written to
    ``data_dir/board-logouts`` (kept until the session would have expired anyway), so a copied
    cookie stops working at logout, also after a restart, not only when it expires."""

    def __init__(self, data_dir: str | Path) -> None:
        self.key = _secret_key(Path(data_dir) / "board-secret")
        self._logouts = _Logouts(Path(data_dir) / "board-logouts")

    def sign(self, session: LoginSession) -> str:
        payload = json.dumps(
            {"u": session.user, "e": session.expires, "c": session.csrf}, separators=(",", ":")
        ).encode()
        body = base64.urlsafe_b64encode(payload).decode().rstrip("=")
        mac = hmac.new(self.key, body.encode(), hashlib.sha256).hexdigest()
        return f"{body}.{mac}"

    def read(self, cookie: str | None) -> LoginSession | None:
        """The session in a cookie, or None when it is missing, forged or expired."""
        if not cookie or "." not in cookie:
            return None
        body, mac = cookie.rsplit(".", 1)
        good = hmac.new(self.key, body.encode(), hashlib.sha256).hexdigest()
        if not hmac.compare_digest(good, mac):
            return None
        try:
            data = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
            session = LoginSession(str(data["u"]), float(data["e"]), str(data["c"]))
        except (ValueError, KeyError, TypeError):
            return None
        if session.expires <= time.time() or session.csrf in self._logouts:
            return None
        return session

    def revoke(self, cookie: str | None) -> bool:
        """Log the cookie's session out for good; False when the cookie is no valid login."""
        session = self.read(cookie)
        if session is None:
            return False
        self._logouts.add(session)
        return True

    @staticmethod
    def new_session(user: str) -> LoginSession:
        return LoginSession(user, time.time() + SESSION_SECONDS, secrets.token_urlsafe(24))


class _Logouts:
    """Sessions logged out before they expired: one ``csrf expires`` line each, appended.

    The CSRF token is random per login, so it names the session; expired lines are dropped
    when the file is read (at start), so it stays as small as the logins of the last 12 h."""

    def __init__(self, path: Path) -> None:
        self.path = path
        now = time.time()
        self._until: dict[str, float] = {}
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            lines = []
        for line in lines:
            token, _, expires = line.partition(" ")
            try:
                until = float(expires)
            except ValueError:
                continue  # a line cut short by a crash
            if until > now:
                self._until[token] = until
        if len(self._until) < len(lines):
            self._write_all()

    def __contains__(self, token: str) -> bool:
        return token in self._until

    def add(self, session: LoginSession) -> None:
        self._until[session.csrf] = session.expires
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as f:
            f.write(f"{session.csrf} {session.expires}\n")

    def _write_all(self) -> None:
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.writelines(f"{t} {u}\n" for t, u in self._until.items())


def _secret_key(path: Path) -> bytes:
    """The signing key: read, or created once (32 random bytes, a 0600 file)."""
    try:
        key = path.read_bytes()
        if len(key) >= 32:
            return key
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    key = secrets.token_bytes(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(key)
    return key

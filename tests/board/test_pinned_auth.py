"""The board's accounts and login cookies, in process (the mutation run's `board` target): the
accounts file, password and token checks, the signed cookie, logouts that outlive a restart and
the signing key on disk."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import stat
import time
from pathlib import Path

import pytest

from tests.board.helpers import PASSWORD, TOKEN, hashed, write_accounts
from tests.installed import import_or_unavailable

import_or_unavailable("argon2", install="loopkit[board]")

from loopkit_board.auth import (  # noqa: E402  (needs the board extra)
    Accounts,
    AuthConfigError,
    LoginSession,
    Signer,
    hash_secret,
    load_accounts,
)

# -- the accounts file --------------------------------------------------------------------------


def test_the_accounts_file_gives_passwords_and_tokens(tmp_path: Path) -> None:
    accounts = load_accounts(write_accounts(tmp_path))
    assert accounts.check_password("ann", PASSWORD) == "ann"
    assert accounts.check_password("ann", PASSWORD + " ") is None
    assert accounts.check_password("bob", PASSWORD) is None  # no such account
    assert accounts.check_password("ci", TOKEN) is None  # a token is not a password
    assert accounts.check_token(TOKEN) == "token:ci"
    assert accounts.check_token(PASSWORD) is None  # a password is not a token
    assert accounts.check_token("") is None


def test_an_unknown_name_is_checked_against_a_hash_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """An unknown name costs an argon2 verification like a known one (no timing oracle)."""
    import argon2

    verified: list[str] = []
    real = argon2.PasswordHasher.verify

    def counting(self: argon2.PasswordHasher, hash: str, password: str) -> bool:
        verified.append(hash)
        return real(self, hash, password)

    monkeypatch.setattr(argon2.PasswordHasher, "verify", counting)
    accounts = Accounts({"ann": hashed(PASSWORD)}, {})
    assert accounts.check_password("nobody", PASSWORD) is None
    assert len(verified) == 1 and verified[0].startswith("$argon2id$")
    assert verified[0] != hashed(PASSWORD)


def test_a_token_with_a_broken_hash_is_skipped_not_fatal() -> None:
    accounts = Accounts({}, {"broken": "$argon2id$not-a-hash", "ci": hashed(TOKEN)})
    assert accounts.check_token(TOKEN) == "token:ci"
    assert accounts.check_token("anything") is None
    broken = Accounts({"ann": "$argon2id$not-a-hash"}, {})
    assert broken.check_password("ann", PASSWORD) is None


def test_a_hash_is_argon2id_and_never_the_secret() -> None:
    made = hash_secret("s3cret-value")
    assert made.startswith("$argon2id$") and "s3cret-value" not in made
    assert made != hash_secret("s3cret-value")  # salted


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[accounts\n", r"is not valid TOML"),
        (
            '[accounts]\nann = "plain password"\n',
            r'\[accounts\] holds name = "<argon2 hash>" lines \(make a hash with: python -m '
            r"loopkit_board hash-password\)$",
        ),
        ("[accounts]\nann = 3\n", r"\[accounts\] holds name"),
        ('accounts = "x"\n', r"\[accounts\] holds name"),
        ('[tokens]\nci = "secret"\n', r"\[tokens\] holds name"),
        ("[accounts]\n[tokens]\n", r"no \[accounts\] and no \[tokens\]: nobody could log in"),
        ("", r"no \[accounts\] and no \[tokens\]"),
        ("[accounts]\n[users]\nx = 1\n", r"unknown section\(s\) users$"),
        ("[accounts]\n[users]\n[groups]\n", r"unknown section\(s\) groups, users$"),
    ],
)
def test_a_bad_accounts_file_is_a_clear_error(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "accounts.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(AuthConfigError, match=expected) as raised:
        load_accounts(path)
    assert str(path) in str(raised.value)


def test_a_missing_or_unreadable_accounts_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(AuthConfigError, match=r"accounts file not found: .*nothing\.toml"):
        load_accounts(tmp_path / "nothing.toml")
    with pytest.raises(AuthConfigError, match=r"cannot read accounts file .*folder"):
        (tmp_path / "folder").mkdir()
        load_accounts(tmp_path / "folder")
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"\xff\xfe[accounts]")
    with pytest.raises(AuthConfigError, match="cannot read accounts file"):
        load_accounts(binary)


def test_tokens_alone_or_accounts_alone_are_enough(tmp_path: Path) -> None:
    path = tmp_path / "accounts.toml"
    path.write_text(f'[tokens]\nci = "{hashed(TOKEN)}"\n', encoding="utf-8")
    only_tokens = load_accounts(path)
    assert (only_tokens.passwords, only_tokens.check_token(TOKEN)) == ({}, "token:ci")
    path.write_text(f'[accounts]\nann = "{hashed(PASSWORD)}"\n', encoding="utf-8")
    assert load_accounts(path).tokens == {}


# -- the login cookie ---------------------------------------------------------------------------


def forged(signer: Signer, payload: object) -> str:
    """A cookie with a valid signature over any payload (as only the key's owner can make)."""
    body = base64.urlsafe_b64encode(json.dumps(payload).encode()).decode().rstrip("=")
    return f"{body}.{hmac.new(signer.key, body.encode(), hashlib.sha256).hexdigest()}"


def test_a_signed_session_reads_back_whole(tmp_path: Path) -> None:
    signer = Signer(tmp_path)
    session = Signer.new_session("ann")
    assert abs(session.expires - (time.time() + 12 * 3600)) < 5
    assert len(session.csrf) >= 32 and session.csrf != Signer.new_session("ann").csrf
    assert signer.read(signer.sign(session)) == session
    # another board (another key) does not accept it
    assert Signer(tmp_path / "other").read(signer.sign(session)) is None


@pytest.mark.parametrize(
    "cookie",
    [None, "", "no-dot", ".", "e30.", "e30.0000", "!!!.abc", "e30.e30.0000", "a.b.c.d"],
)
def test_a_missing_or_forged_cookie_is_no_login(tmp_path: Path, cookie: str | None) -> None:
    assert Signer(tmp_path).read(cookie) is None


def test_a_cookie_changed_anywhere_is_no_login(tmp_path: Path) -> None:
    signer = Signer(tmp_path)
    good = signer.sign(LoginSession("ann", time.time() + 60, "c" * 32))
    body, mac = good.rsplit(".", 1)
    other = signer.sign(LoginSession("bob", time.time() + 60, "c" * 32)).rsplit(".", 1)[0]
    flipped = mac[:-1] + ("0" if mac[-1] != "0" else "1")
    for cookie in (f"{other}.{mac}", f"{body}.{flipped}", f"{body}.{mac}0", f"{body}x.{mac}"):
        assert signer.read(cookie) is None, cookie


@pytest.mark.parametrize(
    "payload",
    [
        {"u": "ann", "e": "soon", "c": "x"},  # not a number
        {"u": "ann", "c": "x"},  # no expiry
        {"e": 9e99, "c": "x"},  # no user
        {"u": "ann", "e": 9e99},  # no CSRF token
        ["ann", 9e99, "x"],  # not an object
        "ann",
    ],
)
def test_a_signed_cookie_with_a_bad_payload_is_no_login(tmp_path: Path, payload: object) -> None:
    signer = Signer(tmp_path)
    assert signer.read(forged(signer, payload)) is None


def test_a_cookie_expires_at_its_second(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    signer = Signer(tmp_path)
    cookie = signer.sign(LoginSession("ann", 1000.0, "c" * 32))
    monkeypatch.setattr(time, "time", lambda: 999.5)
    assert signer.read(cookie) == LoginSession("ann", 1000.0, "c" * 32)
    monkeypatch.setattr(time, "time", lambda: 1000.0)
    assert signer.read(cookie) is None


# -- logouts ------------------------------------------------------------------------------------


def test_a_logout_revokes_the_cookie_also_for_a_restarted_board(tmp_path: Path) -> None:
    signer = Signer(tmp_path)
    mine, other = Signer.new_session("ann"), Signer.new_session("ann")
    cookie = signer.sign(mine)
    assert signer.revoke(cookie) is True
    assert signer.read(cookie) is None
    assert signer.read(signer.sign(other)) == other  # only that login ends
    restarted = Signer(tmp_path)
    assert restarted.read(cookie) is None
    assert restarted.read(signer.sign(other)) == other
    assert stat.S_IMODE(os.stat(tmp_path / "board-logouts").st_mode) == 0o600


def test_revoking_what_is_no_login_changes_nothing(tmp_path: Path) -> None:
    signer = Signer(tmp_path)
    assert signer.revoke(None) is False
    assert signer.revoke("forged.cookie") is False
    expired = signer.sign(LoginSession("ann", time.time() - 1, "c" * 32))
    assert signer.revoke(expired) is False
    assert not (tmp_path / "board-logouts").exists()


def test_the_logouts_file_forgets_expired_and_broken_lines(tmp_path: Path) -> None:
    now = time.time()
    path = tmp_path / "board-logouts"
    path.write_text(
        f"live {now + 3600}\nold {now - 1}\ncut-short\nhalf 12x\nlater {now + 60}\n",
        encoding="utf-8",
    )
    signer = Signer(tmp_path)
    assert path.read_text(encoding="utf-8") == f"live {now + 3600}\nlater {now + 60}\n"
    for token, revoked in (("live", True), ("later", True), ("old", False), ("half", False)):
        session = LoginSession("ann", now + 600, token)
        assert (signer.read(signer.sign(session)) is None) is revoked, token


def test_a_logouts_file_of_live_lines_only_is_left_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "board-logouts"
    text = f"live {time.time() + 3600}\n"
    path.write_text(text, encoding="utf-8")
    os.chmod(path, 0o640)
    Signer(tmp_path)
    assert path.read_text(encoding="utf-8") == text
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640  # not rewritten


# -- the signing key ----------------------------------------------------------------------------


def test_the_key_is_made_once_private_and_kept(tmp_path: Path) -> None:
    data = tmp_path / "data" / "nested"
    first = Signer(data)
    key_file = data / "board-secret"
    assert len(first.key) == 32 and key_file.read_bytes() == first.key
    assert stat.S_IMODE(os.stat(key_file).st_mode) == 0o600
    assert Signer(data).key == first.key  # a restart keeps people logged in


def test_a_short_key_file_is_replaced(tmp_path: Path) -> None:
    (tmp_path / "board-secret").write_bytes(b"x" * 31)
    signer = Signer(tmp_path)
    assert len(signer.key) == 32 and signer.key != b"x" * 31
    assert (tmp_path / "board-secret").read_bytes() == signer.key
    (tmp_path / "board-secret").write_bytes(b"y" * 40)
    assert Signer(tmp_path).key == b"y" * 40  # a longer key is used as it is

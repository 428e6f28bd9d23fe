"""Secret shapes an outside reviewer dropped from the redactor without any test noticing (issue
21): every kind of Slack token, and PGP private key blocks, in every output that redacts."""

from __future__ import annotations

import io
import json

import pytest

from loopkit.middleware.run_log import RunLog
from loopkit.redaction import REDACTED, Redactor

_BODY = "aB3dE5fG7hJ9kL2mN4pQ6rS8tU1vW3xY5"

# Slack's token kinds: bot, user, app-level/legacy workspace (a), refresh (r), the legacy
# ``xoxs-`` (session) and ``xoxo-`` (OAuth) tokens.
SLACK = [f"xox{kind}-1234567890-0987654321-{_BODY}" for kind in "abposr"]

PGP = (
    "-----BEGIN PGP PRIVATE KEY BLOCK-----\n"
    "\n"
    "lQOYBGVkZXNjcmlwdGlvbkJPRFlPRlRIRUtFWTEyMzQ1Njc4OTAK\n"
    "=pGpQ\n"
    "-----END PGP PRIVATE KEY BLOCK-----"
)
PGP_SECRET = "lQOYBGVkZXNjcmlwdGlvbkJPRFlPRlRIRUtFWTEyMzQ1Njc4OTAK"


@pytest.mark.parametrize("token", SLACK, ids=[t[:5] for t in SLACK])
def test_every_kind_of_slack_token_is_redacted(token: str) -> None:
    redactor = Redactor(environ={})
    text = f"SLACK={token} posted"
    assert redactor.redact(text) == f"SLACK={REDACTED} posted"


@pytest.mark.parametrize("token", SLACK, ids=[t[:5] for t in SLACK])
def test_a_slack_token_never_reaches_the_run_log(token: str) -> None:
    buffer = io.StringIO()
    RunLog(buffer, environ={}).write("note", text=f"the bot used {token}", nested={"t": token})
    line = buffer.getvalue()
    assert token not in line and _BODY not in line
    assert json.loads(line)["data"] == {
        "text": f"the bot used {REDACTED}",
        "nested": {"t": REDACTED},
    }


def test_a_word_that_only_starts_like_a_slack_token_stays() -> None:
    redactor = Redactor(environ={})
    for harmless in ("xoxz-1234567890-abcdefghij", "xoxb-short", "xoxo"):
        assert redactor.redact(harmless) == harmless


def test_a_pgp_private_key_block_is_redacted_whole() -> None:
    redactor = Redactor(environ={})
    out = redactor.redact(f"key:\n{PGP}\nafter")
    assert out == f"key:\n{REDACTED}\nafter"


def test_a_pgp_private_key_block_cut_short_is_redacted_to_the_end() -> None:
    redactor = Redactor(environ={})
    cut = PGP.split("=pGpQ")[0]
    out = redactor.redact(f"key:\n{cut}")
    assert PGP_SECRET not in out and out.startswith("key:\n")


def test_a_pgp_private_key_never_reaches_the_run_log() -> None:
    buffer = io.StringIO()
    RunLog(buffer, environ={}).write("tool", result=f"cat key.asc\n{PGP}")
    line = buffer.getvalue()
    assert PGP_SECRET not in line and "PGP PRIVATE KEY" not in line
    assert json.loads(line)["data"]["result"] == f"cat key.asc\n{REDACTED}"


def test_a_pgp_public_key_block_stays() -> None:
    public = PGP.replace("PRIVATE", "PUBLIC")
    assert Redactor(environ={}).redact(public) == public

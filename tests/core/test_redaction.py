"""The Redactor: every secret shape and secret environment value goes, nothing else does."""

from __future__ import annotations

import io
import json
import math
import os
from pathlib import Path

import pytest

from loopkit.redaction import REDACTED, RedactingStream, Redactor, is_secret_name, redact_shapes
from tests.secret_corpus import (
    ENVIRONMENT,
    LATE,
    SHAPES,
    all_secrets,
    leaks,
    plant_environment,
    planted_text,
)

ROOT = Path(__file__).parents[2]


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("ANTHROPIC_API_KEY", True),
        ("OPENAI_API_KEY", True),
        ("MY_SERVICE_TOKEN", True),
        ("GITHUB_PAT", True),
        ("PAT", True),
        ("pat_for_ci", True),
        ("DB_PASSWORD", True),
        ("PGPASSWD", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("GOOGLE_APPLICATION_CREDENTIALS", True),
        ("apikey", True),
        ("PATH", False),
        ("XPATH", False),
        ("PATTERN", False),
        ("PYTHONPATH", False),
        ("HOME", False),
        ("DISPLAY", False),
        ("QT_LINUX_ACCESSIBILITY_ALWAYS_ON", False),
    ],
)
def test_secret_names(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


@pytest.mark.parametrize(("what", "text", "secret"), SHAPES, ids=[s[0] for s in SHAPES])
def test_every_shape_is_redacted(what: str, text: str, secret: str) -> None:
    out = redact_shapes(text)
    assert secret not in out, out
    assert REDACTED in out
    # the same text inside a JSON string (escaped newlines, quotes) is redacted too
    escaped = json.dumps({"result": text})
    assert secret not in Redactor(environ={}).redact(escaped)


def test_all_secrets_in_one_text_tried_and_leaked(monkeypatch: pytest.MonkeyPatch) -> None:
    plant_environment(monkeypatch)
    redactor = Redactor()
    monkeypatch.setenv(*LATE)  # after the redactor was made
    out = redactor.redact(planted_text())
    leaked = leaks(out)
    print(f"redactor: secrets tried {len(all_secrets())}, leaked {len(leaked)}")
    assert leaked == []


def test_what_is_kept_around_a_secret() -> None:
    r = Redactor(environ={})
    assert (
        r.redact("postgres://admin:Pa55w0rd@db:5432/x") == f"postgres://admin:{REDACTED}@db:5432/x"
    )
    assert r.redact("Authorization: Bearer\t abcdef123456") == f"Authorization: Bearer\t {REDACTED}"
    assert r.redact("AWS_SECRET_ACCESS_KEY=" + "a1/+" * 10) == f"AWS_SECRET_ACCESS_KEY={REDACTED}"


@pytest.mark.parametrize(
    "text",
    [
        "commit 3f2a9c1e5b7d9f0a1c3e5b7d9f0a1c3e5b7d9f0a and its tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904",
        "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "uuid 123e4567-e89b-12d3-a456-426614174000",
        "ask-the-user-for-permission-first and a task-manager-service-for-invoices",
        "Bearer authentication, a bearer token, basic functionality, Basic usage",
        "PATH=/usr/local/bin:/usr/bin, see https://docs.python.org/3/library/re.html",
        "AKIA is a prefix; ASIA and A3T are words too",
        "def total(self) -> Decimal:  # api_key handling lives elsewhere",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert Redactor(environ={}).redact(text) == text


def test_source_code_is_left_alone() -> None:
    """The project's own Python sources hold no secret: redaction must not change one byte."""
    files = [  # (redaction.py describes the shapes it redacts)
        *sorted(f for f in (ROOT / "src").rglob("*.py") if f.name != "redaction.py"),
        *sorted((ROOT / "examples" / "invoice_app").rglob("*.py")),
    ]
    assert len(files) > 50
    changed = [
        str(f) for f in files if redact_shapes(text := f.read_text(encoding="utf-8")) != text
    ]
    assert changed == []


def test_environment_is_read_when_text_is_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    redactor = Redactor()
    assert redactor.redact("value rotating-token-one") == "value rotating-token-one"
    monkeypatch.setenv("ROTATING_TOKEN", "rotating-token-one")
    assert redactor.redact("value rotating-token-one") == f"value {REDACTED}"
    monkeypatch.setenv("ROTATING_TOKEN", "rotating-token-two")  # same keys, new value
    assert redactor.redact("value rotating-token-two") == f"value {REDACTED}"
    # one variable removed and another added: the same number of keys
    monkeypatch.delenv("ROTATING_TOKEN")
    monkeypatch.setenv("SWAPPED_IN_SECRET", "swapped-in-value-99")
    assert redactor.redact("swapped-in-value-99") == REDACTED


def test_short_values_are_not_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FEATURE_TOKEN", "1")
    monkeypatch.setenv("USE_KEYRING", "true")
    assert Redactor().redact("1 true 1234567") == "1 true 1234567"
    assert Redactor(min_secret_chars=1).redact("x1x") == f"x{REDACTED}x"


def test_values_with_quotes_backslashes_and_non_ascii_are_found_escaped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plant_environment(monkeypatch)
    redactor = Redactor()
    for _, value in ENVIRONMENT:
        for line in (
            json.dumps({"x": f"a {value} b"}),
            json.dumps({"x": f"a {value} b"}, ensure_ascii=False),
            redactor.to_json({"x": f"a {value} b", value: 1}),
        ):
            assert leaks(redactor.redact_values(line), [value]) == [], line


def test_given_secrets_are_redacted_too() -> None:
    r = Redactor(environ={}, secrets=["from-the-config-file-123", "short"])
    assert r.redact("a from-the-config-file-123 short") == f"a {REDACTED} short"


def test_to_json_never_raises_and_stays_valid_utf8() -> None:
    class Unprintable:
        def __str__(self) -> str:
            raise RuntimeError("no")

    cyclic: list[object] = []
    cyclic.append(cyclic)
    deep: object = "bottom"
    for _ in range(200):
        deep = [deep]
    value = {
        "file": os.fsdecode(b"caf\xe9-\xff.txt"),  # a non-UTF-8 file name
        "lone": "\ud800 and \udfff",
        "bytes": b"\x00\xff secret? no",
        "object": Unprintable(),
        "nan": math.nan,
        "inf": -math.inf,
        "cyclic": cyclic,
        "deep": deep,
        (1, 2): "a tuple key",
        3: {"set": {1}},
    }
    line = Redactor(environ={}).to_json(value)
    line.encode("utf-8")
    data = json.loads(line)
    assert data["file"] == "caf\\udce9-\\udcff.txt"
    assert data["lone"] == "\\ud800 and \\udfff"
    assert data["object"] == "<unprintable Unprintable: RuntimeError>"
    assert (data["nan"], data["inf"]) == ("nan", "-inf")
    assert data["(1, 2)"] == "a tuple key" and data["3"] == {"set": [1]}
    assert "nested too deeply" in line


def test_redacting_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    plant_environment(monkeypatch)
    inner = io.StringIO()
    stream = RedactingStream(inner)
    monkeypatch.setenv(*LATE)
    text = planted_text()
    assert stream.write(text) == len(text)
    stream.writelines(["x\n", f"{LATE[1]}\n"])
    stream.flush()
    leaked = leaks(inner.getvalue())
    print(f"RedactingStream: secrets tried {len(all_secrets())}, leaked {len(leaked)}")
    assert leaked == []
    assert stream.getvalue() == inner.getvalue()  # everything else is the inner stream's
    assert not stream.closed and stream.writable()

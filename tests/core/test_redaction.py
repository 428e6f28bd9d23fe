"""The Redactor: every secret shape and secret environment value goes, nothing else does."""

from __future__ import annotations

import io
import json
import math
import os
from pathlib import Path
from typing import Any

import pytest

from loopkit.redaction import (
    REDACTED,
    RedactingStream,
    Redactor,
    is_secret_name,
    might_hold_a_shape,
    redact_shapes,
)
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
        # sk- glued to a word ending in n, r or t is part of the word (not a JSON \\n \\r \\t)
        "offices in Gdansk-Gdynia-Sopot, Murmansk-Arkhangelsk and Tomsk-Novosibirsk",
        # a backslash ends a word only as a JSON escape: after \\X the word goes on
        "C:\\Tools\\Xsk-export-scripts\\run.bat",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert Redactor(environ={}).redact(text) == text


def test_source_code_is_left_alone() -> None:
    """The project's own Python sources hold no secret: redaction must not change one byte."""
    files = [  # (redaction.py and its parts describe the shapes they redact)
        *sorted(f for f in (ROOT / "src").rglob("*.py") if not f.name.startswith("redaction")),
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


def test_a_key_right_after_an_escaped_line_break_is_a_key() -> None:
    """``\\n`` before ``sk-`` is a JSON-escaped line break, not a word the key continues."""
    for text in ("\\nsk-abcdefghijklmnop", "x\\tsk-abcdefghijklmnop", "a\\rsk-abcdefghijklmnop"):
        assert redact_shapes(text) == text[: text.index("sk-")] + REDACTED, text


def test_the_pre_check_finds_every_anchor_in_short_and_long_texts() -> None:
    filler = "an ordinary sentence about invoices and totals. " * 4  # over 128 characters
    assert not might_hold_a_shape("plain words") and not might_hold_a_shape(filler)
    for anchor in ("sk-", "AKIA", "ghp_", "eyJ", "://", "PRIVATE KEY", "SG.", "xox"):
        assert might_hold_a_shape(f"a {anchor} b"), anchor
        assert might_hold_a_shape(filler + anchor + filler), anchor
    for word in ("Bearer", "BEARER", "bearer", "Password", "AWS"):  # any case
        assert might_hold_a_shape(f"a {word} b"), word
        assert might_hold_a_shape(filler + word + filler), word
    long_text = filler + "Authorization: BEARER abc123def456ghi\n" + filler
    assert redact_shapes(long_text) == filler + f"Authorization: BEARER {REDACTED}\n" + filler


def test_eight_characters_can_hold_a_secret() -> None:
    assert redact_shapes("://u:p@h") == f"://u:{REDACTED}@h"  # exactly 8 characters
    assert redact_shapes("://u:p@") == "://u:p@"  # shorter texts are not searched


def test_to_json_redacts_on_its_fast_path_and_stays_compact() -> None:
    r = Redactor(environ={"A_TOKEN": "plainsecret1"})
    assert r.to_json({"a": [1, 2], "b": "é", "c": None}) == '{"a":[1,2],"b":"é","c":null}'
    # a shape alone, and a secret value alone (in every form it has), are both found
    assert r.to_json({"x": "key sk-ant-abcdefghijklmnop"}) == '{"x":"key [redacted]"}'
    assert r.to_json({"x": "plainsecret1"}) == '{"x":"[redacted]"}'


def test_to_json_slow_path_keeps_numbers_non_ascii_and_compact_separators() -> None:
    value = {"a": [1, 2.5], "b": "é", "n": math.nan, "s": "sk-ant-abcdefghijklmnop"}
    assert Redactor(environ={}).to_json(value) == (
        '{"a":[1,2.5],"b":"é","n":"nan","s":"[redacted]"}'
    )


def _nested(levels: int) -> object:
    value: object = "x"
    for _ in range(levels):
        value = [value]
    return value


def test_nesting_is_cut_at_exactly_max_depth() -> None:
    r = Redactor(environ={})
    assert r.redact_data([[["x"]]], max_depth=3) == [[["x"]]]
    assert r.redact_data([[["x"]]], max_depth=2) == [["<nested too deeply>"]]
    assert r.redact_data({"a": {"b": {"c": 1}}}, max_depth=2) == {"a": {"b": "<nested too deeply>"}}
    assert r.redact_data(_nested(64)) == _nested(64)  # the default keeps 64 levels
    assert "nested too deeply" in json.dumps(r.redact_data(_nested(65)))
    # to_json takes the careful path for what json refuses (NaN here): the same 64 levels
    assert json.loads(r.to_json([_nested(63), math.nan])) == [_nested(63), "nan"]
    assert "nested too deeply" in r.to_json([_nested(64), math.nan])
    cyclic: dict[str, object] = {}
    cyclic["self"] = cyclic
    assert "nested too deeply" in r.to_json(cyclic)


def test_redact_data_returns_json_ready_data_with_every_string_redacted() -> None:
    r = Redactor(environ={"A_TOKEN": "value-secret-1"})
    data = {"k": b"sk-ant-abcdefghijklmnop", "n": math.inf, "t": ("value-secret-1", 1.5)}
    assert r.redact_data(data) == {"k": REDACTED, "n": "inf", "t": [REDACTED, 1.5]}


def test_an_object_with_no_printable_name_still_gets_a_note() -> None:
    class NamelessMeta(type):
        @property
        def __name__(cls) -> str:  # type: ignore[override]
            raise RuntimeError("no name either")

    class Nameless(metaclass=NamelessMeta):
        def __str__(self) -> str:
            raise RuntimeError("no text")

    assert Redactor(environ={}).redact_data([Nameless()]) == ["<unprintable object>"]


def test_min_secret_chars_is_checked_and_its_default_is_eight() -> None:
    with pytest.raises(ValueError, match=r"^min_secret_chars must be at least 1, got 0$"):
        Redactor(min_secret_chars=0)
    r = Redactor(environ={"A_TOKEN": "12345678", "B_TOKEN": "7654321"}, secrets=["abcdefgh"])
    assert r.redact("12345678 7654321 abcdefgh") == f"{REDACTED} 7654321 {REDACTED}"


def test_a_secret_inside_a_longer_secret_does_not_leave_the_longer_ones_ends() -> None:
    r = Redactor(environ={"A_TOKEN": "zz-secret-01", "B_TOKEN": "aa-zz-secret-01-long"})
    assert r.redact("aa-zz-secret-01-long and zz-secret-01") == f"{REDACTED} and {REDACTED}"


def test_shapes_false_redacts_only_values() -> None:
    r = Redactor(environ={"A_TOKEN": "value-secret-1"}, shapes=False)
    assert r.redact("sk-ant-abcdefghijklmnop value-secret-1") == (
        f"sk-ant-abcdefghijklmnop {REDACTED}"
    )


def test_secret_values_lists_given_and_environment_values_longest_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    environ = {
        "MY_TOKEN": "bbbbbbbbb",
        "PATH": "/usr/local/bin",
        "A_KEY": "short",
        "X_PAT": "a" * 12,
    }
    r = Redactor(environ=environ, secrets=["zzzzzzzzzz"])
    assert r.secret_values() == ["a" * 12, "zzzzzzzzzz", "bbbbbbbbb"]
    monkeypatch.setenv("ROTATING_TOKEN", "from-os-environ-1")
    assert "from-os-environ-1" in Redactor().secret_values()


def test_an_unchanged_environment_is_not_scanned_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """The run log redacts every line: os.environ is rescanned only when it changed."""
    from loopkit import redaction_environment

    monkeypatch.setenv("ROTATING_TOKEN", "rotating-token-one")
    redactor = Redactor()
    assert redactor.redact("rotating-token-one") == REDACTED
    names: list[str] = []
    real = redaction_environment.is_secret_name

    def counted(name: str) -> bool:
        names.append(name)
        return real(name)

    monkeypatch.setattr(redaction_environment, "is_secret_name", counted)
    assert redactor.redact("rotating-token-one") == REDACTED
    assert names == []
    # a name no other test used: which names look secret is remembered across redactors
    name = f"ANOTHER_TOKEN_{os.getpid()}_{id(names)}"
    monkeypatch.setenv(name, "another-token-two")
    assert redactor.redact("another-token-two") == REDACTED
    assert name in names


def test_keys_are_spelled_as_json_spells_them_on_both_paths() -> None:
    """A line with a secret (or NaN) goes the careful way: its keys must not change spelling."""
    r = Redactor(environ={})
    keys = {True: 1, False: 2, None: 3, 7: 4, 1.5: 5}
    fast = '{"true":1,"false":2,"null":3,"7":4,"1.5":5'
    assert r.to_json(keys) == fast + "}"
    assert r.to_json({**keys, "x": math.nan}) == fast + ',"x":"nan"}'
    assert r.redact_data({True: 1, None: 2}) == {"true": 1, "null": 2}


def test_each_redactor_reads_the_environment_as_it_is_at_its_first_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Redactors share what they learnt about the names (a pure function), not the values."""
    monkeypatch.setenv("LOOPKIT_TEST_TOKEN", "first-value-123")
    assert Redactor().redact("first-value-123") == REDACTED
    monkeypatch.setenv("LOOPKIT_TEST_TOKEN", "second-value-456")
    monkeypatch.setenv("LOOPKIT_TEST_PLAIN", "second-value-789")
    text = "second-value-456 first-value-123 second-value-789"
    assert Redactor().redact(text) == f"{REDACTED} first-value-123 second-value-789"


def test_the_kept_json_encoder_is_jsons_own_where_the_accelerator_is_missing_or_differs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``json.encoder.c_make_encoder`` is the accelerator behind ``JSONEncoder``; a Python
    without it, with another signature or writing otherwise gets ``JSONEncoder.encode``. The
    stand-ins below differ only for the redactor's call (no ``markers``): ``JSONEncoder``'s own
    call (with a markers dict) still reaches the real accelerator."""
    import json.encoder

    from loopkit import redaction_json

    real = getattr(json.encoder, "c_make_encoder", None)  # not in the typeshed stubs
    assert real is not None

    def other_signature(markers: Any, *args: Any) -> Any:
        if markers is None:
            raise TypeError("c_make_encoder() takes 10 arguments")
        return real(markers, *args)

    def writes_otherwise(markers: Any, *args: Any) -> Any:
        if markers is None:
            return lambda value, level: ("written otherwise",)
        return real(markers, *args)

    value = {"a": [1, 2.5, "é"], "b": None}
    expected = '{"a":[1,2.5,"é"],"b":null}'
    assert redaction_json.json_encoder()(value) == expected
    for accelerator in (None, other_signature, writes_otherwise):
        monkeypatch.setattr(json.encoder, "c_make_encoder", accelerator)
        assert redaction_json.json_encoder()(value) == expected, accelerator

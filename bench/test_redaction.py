"""Redaction cost per run-log line: the new ``Redactor`` beside the old ``redact()``.

The run log redacts every line it writes, on the loop's hot path. The old run log serialised an
event with ``json.dumps`` and passed the line through ``redact()``: the secret values read once
when the log was created, then three regular expressions over the whole line (``sk-ant-``,
``sk-``, a case-insensitive ``bearer``). The new one (``Redactor.to_json``) reads the secret
environment values at every line, checks the plain JSON text once for the literal anchors of
some twenty secret shapes and for each secret value in raw and escaped form, and redacts string
by string only when something is there.

Lines, as the demo writes them: a ``round`` with the model's text (about 340 characters), a
small ``tool`` line (the loop-overhead benchmark's tools), a ``read_file`` result of 3,500
characters of Python source, and a ``write_file`` call carrying 3,000 characters of content.
Each row: the fastest of 9 runs of many lines (the three ways interleaved, so a busy moment of
a shared machine hits them alike), in microseconds a line, for ``json.dumps`` alone, the old way
and the new way; the ratio is new / old. Checked in every run: both ways give the
same line where there is no secret, and the new way removes every planted secret (a
``tool`` line holding eight shapes and an environment key set after the redactor was made).
Run: ``.venv/bin/python -m pytest bench/test_redaction.py -s -q`` (or ``.venv/bin/nox -s bench``).
"""

from __future__ import annotations

import io
import json
import os
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from loopkit.middleware.run_log import RunLog
from loopkit.redaction import Redactor

REPEATS = 9

# --- the old run log's redaction, copied as it was (main f331400) ----------------------------
_OLD_PATTERNS = [
    re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}"),
    re.compile(r"sk-[A-Za-z0-9_\-]{16,}"),
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._\-]{16,}"),
]
_OLD_ENV = re.compile(r"(?i)(API_KEY|_TOKEN|_SECRET|PASSWORD)$")


def old_secret_values(environ: dict[str, str]) -> list[str]:
    return sorted(
        {v for k, v in environ.items() if _OLD_ENV.search(k) and len(v) >= 8},
        key=len,
        reverse=True,
    )


def old_redact(text: str, secrets: Sequence[str]) -> str:
    for s in secrets:
        if s in text:
            text = text.replace(s, "[redacted]")
    for pattern in _OLD_PATTERNS:
        text = pattern.sub(lambda m: (m.group(1) if m.re.groups else "") + "[redacted]", text)
    return text


def old_line(event: dict[str, Any], secrets: Sequence[str]) -> str:
    line = json.dumps(event, ensure_ascii=False, separators=(",", ":"), default=str)
    return old_redact(line, secrets)


# --- the lines ----------------------------------------------------------------------------------
SOURCE = (Path(__file__).parents[1] / "src" / "loopkit_tools" / "git.py").read_text()


def event(kind: str, **data: Any) -> dict[str, Any]:
    return {"time": "2026-12-01T10:00:00.000", "type": kind, "data": data}


LINES: dict[str, dict[str, Any]] = {
    "round (340 chars)": event(
        "round",
        round=3,
        ms=812,
        input_tokens=12000,
        output_tokens=300,
        cached_input_tokens=11000,
        cache_creation_input_tokens=0,
        calls=["read_file", "write_file"],
        text="I will now read the model file and then fix the total computation so that the "
        "discount is subtracted before the tax is added.",
    ),
    "small tool line": event(
        "tool", name="tool_07", arguments={"x": 5}, ms=0.1, error=False, result="tool_07:5"
    ),
    "read_file, 3,500 chars": event(
        "tool",
        name="read_file",
        arguments={"path": "invoice_app/model.py"},
        ms=1.2,
        error=False,
        result=SOURCE[:3500],
    ),
    "write_file, 3,000 chars": event(
        "tool",
        name="write_file",
        arguments={"path": "invoice_app/model.py", "content": SOURCE[:3000]},
        ms=2.0,
        error=False,
        result="Wrote invoice_app/model.py (3000 bytes).",
    ),
}

PLANTED = [
    "sk-ant-api03-" + "Ab3" * 30,
    "Bearer\t\n  ya29.a0AfH6SMBx3xKq9Zr8T1",
    "AKIAIOSFODNN7EXAMPLE",
    "ghp_" + "a1B2" * 9,
    "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOp",
    "AIza" + "SyD1x" * 7,
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "https://admin:hunter2-Pa55@db.example.com/x",
]


def per_line_us(fns: Sequence[Callable[[], object]], lines: int) -> list[float]:
    """The fastest of REPEATS interleaved runs of each function, in microseconds a call."""
    best = [float("inf")] * len(fns)
    for _ in range(REPEATS):
        for i, fn in enumerate(fns):
            started = time.perf_counter()
            for _ in range(lines):
                fn()
            best[i] = min(best[i], (time.perf_counter() - started) / lines * 1e6)
    return best


def test_redaction_cost_per_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-" + "k9" * 45)
    monkeypatch.setenv("GITHUB_PAT", "github_pat_" + "Zz09" * 20)
    redactor = Redactor()
    secrets = old_secret_values(dict(os.environ))  # once, as the old run log did

    # correctness first: a clean line is unchanged, and every planted secret goes
    for ev in LINES.values():
        plain = json.dumps(ev, ensure_ascii=False, separators=(",", ":"))
        assert redactor.to_json(ev) == plain == old_line(ev, secrets)
    monkeypatch.setenv("LATE_SERVICE_TOKEN", "late-token-value-123")  # after the redactor
    leaky = event("tool", name="x", arguments={"p": PLANTED}, result="late-token-value-123")
    line = redactor.to_json(leaky)
    leaked = [s for s in [*PLANTED, "late-token-value-123"] if s in line]
    assert not leaked, leaked

    rows = []
    for name, ev in LINES.items():
        size = len(json.dumps(ev))
        n = 2000 if size < 1000 else 400
        base, old, new = per_line_us(
            [
                lambda ev=ev: json.dumps(ev, ensure_ascii=False, separators=(",", ":")),
                lambda ev=ev: old_line(ev, secrets),
                lambda ev=ev: redactor.to_json(ev),
            ],
            n,
        )
        rows.append((name, size, base, old, new))

    print()
    print(
        "Run-log line: json.dumps alone, old redact(), new Redactor.to_json (us a line, fastest of 9)"
    )
    print(f"{'line':26s} {'chars':>6s} {'json':>8s} {'old':>8s} {'new':>8s} {'new/old':>8s}")
    for name, size, base, old, new in rows:
        print(f"{name:26s} {size:6d} {base:8.1f} {old:8.1f} {new:8.1f} {new / old:8.2f}")
    # the whole write of one small line by the run log (time stamp, redaction, write, flush)
    log = RunLog(io.StringIO())
    small = LINES["small tool line"]["data"]
    (whole,) = per_line_us([lambda: log.write("tool", **small)], 2000)
    print(f"RunLog.write of the small tool line, whole: {whole:.1f} us")
    print(f"planted secrets: {len(PLANTED) + 1}, leaked: {len(leaked)}")

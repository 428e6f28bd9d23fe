"""loopkit's public API under a user's ``mypy --strict`` (tests/typing/mypy.ini).

- ``user_code.py`` must type-check clean. Its ``# type: ignore[code]`` lines are mistakes that
  must stay errors: with ``warn_unused_ignores`` an ignore that is no longer needed is an error.
  The same file then runs, offline, so the typed lines also hold at run time.
- ``must_fail.py`` must give exactly the errors its ``# E: code`` markers name, line by line.

One mypy run checks both (a cold run takes seconds: it reads loopkit and its dependencies).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.installed import import_or_unavailable

pytestmark = [pytest.mark.integration, pytest.mark.slow]

HERE = Path(__file__).resolve().parent
ERROR = re.compile(
    r"^(?P<file>[^:]+):(?P<line>\d+): error: (?P<message>.*)  \[(?P<code>[a-z-]+)\]$"
)
MARKER = re.compile(r"#\s*E:\s*(?P<codes>[a-z-]+(?:\s*,\s*[a-z-]+)*)\s*$")


@pytest.fixture(scope="module")
def mypy_errors(tmp_path_factory: pytest.TempPathFactory) -> dict[str, set[tuple[int, str]]]:
    mypy_api = import_or_unavailable("mypy.api", install="the dev extra")
    cache = tmp_path_factory.mktemp("mypy-cache")
    stdout, stderr, _status = mypy_api.run(
        [
            "--config-file",
            str(HERE / "mypy.ini"),
            "--cache-dir",
            str(cache),
            "--show-error-codes",
            "--no-pretty",
            "--hide-error-context",
            str(HERE / "user_code.py"),
            str(HERE / "must_fail.py"),
        ]
    )
    assert not stderr, stderr
    found: dict[str, set[tuple[int, str]]] = {"user_code.py": set(), "must_fail.py": set()}
    for line in stdout.splitlines():
        match = ERROR.match(line)
        if match:
            name = Path(match["file"]).name
            found.setdefault(name, set()).add((int(match["line"]), match["code"]))
        elif ": error:" in line:
            raise AssertionError(f"unparsed mypy error: {line}")
    found["_output"] = {(0, stdout)}
    return found


def test_user_code_is_clean_under_strict(mypy_errors: dict[str, set[tuple[int, str]]]) -> None:
    [(_, output)] = mypy_errors["_output"]
    assert mypy_errors["user_code.py"] == set(), output
    others = set(mypy_errors) - {"user_code.py", "must_fail.py", "_output"}
    assert not others, f"errors in other files (loopkit itself?): {output}"


def test_mistakes_are_exactly_the_marked_errors(
    mypy_errors: dict[str, set[tuple[int, str]]],
) -> None:
    expected: set[tuple[int, str]] = set()
    for number, text in enumerate((HERE / "must_fail.py").read_text().splitlines(), start=1):
        marker = MARKER.search(text)
        if marker:
            expected |= {(number, code.strip()) for code in marker["codes"].split(",")}
    assert len(expected) >= 15
    [(_, output)] = mypy_errors["_output"]
    assert mypy_errors["must_fail.py"] == expected, output


async def test_user_code_runs_offline() -> None:
    from tests.typing import user_code

    await user_code.main()

"""Developer sessions. They run in the project's environment (``scripts/setup.sh`` makes ``.venv``):

.venv/bin/nox -s tests        # the whole suite (what CI runs, minus the install step)
.venv/bin/nox -s lint         # ruff check + ruff format --check
.venv/bin/nox -s typecheck    # mypy
.venv/bin/nox -s bench        # benchmarks, loopkit beside its peers; prints ratios
.venv/bin/nox -s demo -- examples/cards/delete-asks-for-confirmation.md
"""

from __future__ import annotations

import sys

import nox

nox.options.default_venv_backend = "none"
nox.options.sessions = ["lint", "typecheck", "tests"]

# The interpreter nox runs on: .venv/bin/nox uses the project environment.
PY = sys.executable
SOURCES = ["src", "tests", "examples", "noxfile.py"]


@nox.session
def tests(session: nox.Session) -> None:
    session.run(PY, "-m", "pytest", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    session.run(PY, "-m", "ruff", "check", *SOURCES)
    session.run(PY, "-m", "ruff", "format", "--check", *SOURCES)


@nox.session
def typecheck(session: nox.Session) -> None:
    session.run(PY, "-m", "mypy")


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks: each prints loopkit's figure beside its peer's and the ratio."""
    session.run(PY, "-m", "pytest", "bench", "-s", "-q", "-p", "no:cacheprovider", *session.posargs)


@nox.session
def demo(session: nox.Session) -> None:
    args = session.posargs or ["examples/cards/delete-asks-for-confirmation.md"]
    session.run(PY, "-m", "loopkit.demo", *args)

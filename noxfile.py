"""Developer sessions. They run in the project's environment (``scripts/setup.sh --tests`` makes
``.venv``):

.venv/bin/nox -s tests        # the whole suite in parallel (what CI runs, minus the install step)
.venv/bin/nox -s lint         # ruff check + ruff format --check
.venv/bin/nox -s typecheck    # mypy
.venv/bin/nox -s bench        # benchmarks, loopkit beside its peers; prints ratios
.venv/bin/nox -s demo -- examples/cards/delete-asks-for-confirmation.md
.venv/bin/nox -s mutate       # mutation testing (not a default session): docs/testing.md
"""

from __future__ import annotations

import configparser
import os
import shutil
import sys
from pathlib import Path

import nox

nox.options.default_venv_backend = "none"
nox.options.sessions = ["lint", "typecheck", "tests"]

# The interpreter nox runs on: .venv/bin/nox uses the project environment.
PY = sys.executable
SOURCES = ["src", "tests", "examples", "noxfile.py"]


def _test_workers(session: nox.Session) -> str:
    """How many pytest-xdist workers run the suite: ``LOOPKIT_TEST_WORKERS``, else two per
    core (the UI tests mostly wait for the desktop; docs/testing.md has the measurements)."""
    chosen = os.environ.get("LOOPKIT_TEST_WORKERS", "").strip()
    if not chosen:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        return str(2 * (cores or 1))
    if not (chosen.isascii() and chosen.isdigit()):
        session.error(f"LOOPKIT_TEST_WORKERS={chosen!r}: expected a whole number (0: serial)")
    return chosen


@nox.session
def tests(session: nox.Session) -> None:
    """The whole suite in parallel processes (scripts/test.sh runs this after the setup)."""
    # On Linux the UI tests must run, never skip for a missing desktop.
    env = {"LOOPKIT_REQUIRE_DESKTOP": "1"} if sys.platform.startswith("linux") else {}
    # loadgroup: a module whose tests share a module-scoped fixture runs on one worker
    # (tests/conftest.py marks them); the conftest's order (heavy tests first) is kept.
    parallel = ["-n", _test_workers(session), "--dist", "loadgroup", "--no-loadscope-reorder"]
    session.run(PY, "-m", "pytest", "-p", "no:cacheprovider", *parallel, *session.posargs, env=env)


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


# What `nox -s mutate` mutates, and the fast tests that must kill each module's mutants.
MUTATION_TARGETS: dict[str, tuple[list[str], list[str]]] = {
    "guard": (
        [
            "src/loopkit_tools/workspace.py",
            "src/loopkit_tools/fd_paths.py",
            "src/loopkit_tools/fd_walk.py",
            "src/loopkit_tools/fd_write.py",
            "src/loopkit_tools/paging.py",
        ],
        [
            "tests/tools/test_tools_files.py",
            "tests/tools/test_tools_paging.py",
            "tests/tools/test_tools_refusals.py",
            "tests/tools/test_tools_listing.py",
            "tests/tools/test_tools_attacks.py",
            "tests/tools/test_guard_messages.py",
            "tests/tools/test_guard_io.py",
            "tests/tools/test_guard_listing.py",
            "tests/tools/test_guard_resolve.py",
            "tests/tools/test_guard_batch.py",
        ],
    ),
    "loop": (
        ["src/loopkit/middleware/function_invocation.py"],
        [
            "tests/core/test_function_invocation.py",
            "tests/core/test_cut_boundaries.py",
            "tests/core/test_builder.py",
        ],
    ),
    "result": (
        ["src/loopkit/cards/result.py"],
        ["tests/core/test_result_contract.py", "tests/core/test_cards_and_result.py"],
    ),
    "runlog": (
        [
            "src/loopkit/middleware/run_log.py",
            "src/loopkit/redaction.py",
            "src/loopkit/redaction_environment.py",
            "src/loopkit/redaction_json.py",
            "src/loopkit/redaction_shapes.py",
        ],
        [
            "tests/core/test_run_log.py",
            "tests/core/test_run_log_lines.py",
            "tests/core/test_run_log_write_path.py",
            "tests/core/test_cut_boundaries.py",
            "tests/core/test_redaction.py",
        ],
    ),
    # The board's login and the durable runtime are tested here in process (mutmut sees only
    # code run in its own process): the board by create_app served on 127.0.0.1 in the test,
    # durable runs on a SQLite file with the run interrupted and resumed in one process.
    "board": (
        ["src/loopkit_board/auth.py", "src/loopkit_board/gate.py"],
        [
            "tests/board/test_pinned_login.py",
            "tests/board/test_pinned_auth.py",
            "tests/board/test_pinned_gate.py",
        ],
    ),
    "durable": (
        [
            "src/loopkit/durable/dbos_import.py",
            "src/loopkit/durable/errors.py",
            "src/loopkit/durable/executors.py",
            "src/loopkit/durable/records.py",
            "src/loopkit/durable/run.py",
            "src/loopkit/durable/run_log.py",
            "src/loopkit/durable/runtime.py",
            "src/loopkit/durable/steps.py",
        ],
        [
            "tests/durable/test_pinned_durable.py",
            "tests/durable/test_resume_in_process.py",
            "tests/durable/test_runtime_records.py",
        ],
    ),
    "compaction": (
        ["src/loopkit/middleware/compaction.py", "src/loopkit/middleware/compaction_summary.py"],
        [
            "tests/core/test_compaction.py",
            "tests/core/test_pinned_compaction.py",
            "tests/core/test_compaction_plan.py",
            "tests/core/test_compaction_bookkeeping.py",
            "tests/core/test_compaction_window_and_summary.py",
        ],
    ),
}


@nox.session(default=False)
def mutate(session: nox.Session) -> None:
    """Mutation testing with mutmut: ``nox -s mutate [-- guard loop ... compaction]``.

    Runs in a scratch copy under .nox/mutate (mutmut writes its mutants/ folder there, never in
    the work tree); prints every mutant that survived. See docs/testing.md.
    """
    chosen = session.posargs or list(MUTATION_TARGETS)
    unknown = sorted(set(chosen) - set(MUTATION_TARGETS))
    if unknown:
        session.error(f"unknown module(s) {unknown}; choose from {sorted(MUTATION_TARGETS)}")
    files = [f for name in chosen for f in MUTATION_TARGETS[name][0]]
    tests = sorted({t for name in chosen for t in MUTATION_TARGETS[name][1]})
    work = Path(session.create_tmp()) / "-".join(chosen)
    shutil.rmtree(work, ignore_errors=True)
    for folder in ("src", "tests", "examples"):
        shutil.copytree(folder, work / folder, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy("pyproject.toml", work)  # the pytest settings (asyncio mode, markers)
    # mutmut reads [mutmut] from setup.cfg when pyproject.toml has no [tool.mutmut].
    config = configparser.ConfigParser()
    config["mutmut"] = {
        "source_paths": "src",
        "only_mutate": "\n".join(files),
        "pytest_add_cli_args_test_selection": "\n".join(tests),
        "pytest_add_cli_args": "\n".join(["-p", "no:cacheprovider", "-q"]),
    }
    with (work / "setup.cfg").open("w", encoding="utf-8") as f:
        config.write(f)
    # mutmut runs the tests from mutants/: its mutated copy of src must win over the editable
    # install of the project.
    env = {"PYTHONPATH": str(work / "mutants" / "src")}
    # ... and it must exist before mutmut starts: Python caches a missing PYTHONPATH folder as
    # "nothing here" (sys.path_importer_cache), and the tests would then import the editable
    # install, unmutated ("could not find any test case for any mutant").
    (work / "mutants" / "src").mkdir(parents=True)
    session.chdir(work)
    session.run(PY, "-m", "mutmut", "run", env=env)
    session.run(PY, "-m", "mutmut", "results", env=env)
    session.log(f"survivors: cd {work} && {PY} -m mutmut show NAME (or mutmut browse)")

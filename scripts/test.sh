#!/usr/bin/env bash
# Installs what is missing (scripts/setup.sh --tests: the demo's needs plus PostgreSQL, ffmpeg and
# Node.js with the MCP TypeScript SDK for the outside-client test), then
# runs the whole test suite in parallel processes (nox -s tests: pytest-xdist, two workers per
# core; LOOPKIT_TEST_WORKERS=N chooses N, 0 runs it serially).
# Extra arguments go to pytest, e.g. scripts/test.sh -k run_log
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --tests
# nox -s tests sets LOOPKIT_REQUIRE_DESKTOP=1 on Linux: the UI and PostgreSQL tests must run, not
# skip, wherever this command is used (CI included).
# Exit status 5 ("no tests collected") is a failure too: pytest already exits non-zero for it.
exec .venv/bin/nox -s tests -- "$@"

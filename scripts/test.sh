#!/usr/bin/env bash
# Installs what is missing (scripts/setup.sh --tests: the demo's needs plus PostgreSQL, ffmpeg and
# Node.js with the MCP TypeScript SDK for the outside-client test), then
# runs the whole test suite.
# Extra arguments go to pytest, e.g. scripts/test.sh -k run_log
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --tests
# The UI and PostgreSQL tests must run, not skip, wherever this command is used (CI included).
if [ "$(uname -s)" = Linux ]; then export LOOPKIT_REQUIRE_DESKTOP=1; fi
# Exit status 5 ("no tests collected") is a failure too: pytest already exits non-zero for it.
exec .venv/bin/python -m pytest -p no:cacheprovider "$@"

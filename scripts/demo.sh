#!/usr/bin/env bash
# Installs what is missing (scripts/setup.sh), then runs a card end to end on the invoice app.
# Arguments go to `python -m loopkit.demo` (default: the delete card with the scripted model).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [ $# -eq 0 ]; then
  set -- examples/cards/delete-asks-for-confirmation.md
fi
exec .venv/bin/python -m loopkit.demo "$@"

#!/usr/bin/env bash
# Installs what is missing (scripts/setup.sh: loopkit[ui], plus the durable extra for a durable run),
# then runs a card end to end on the invoice app.
# Arguments go to `python -m loopkit.demo` (default: the delete card with the scripted model).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -eq 0 ]; then
  set -- examples/cards/delete-asks-for-confirmation.md
fi
# Only what this run needs: DBOS for --durable, --resume or a config that says `durable = true`.
extras=ui
previous=""
for arg in "$@"; do
  case "$arg" in
    --durable | --resume | --resume=*) extras=ui,durable ;;
    --config=*) config="${arg#--config=}" ;;
    *) [ "$previous" = --config ] && config="$arg" ;;
  esac
  previous="$arg"
done
if [ -n "${config:-}" ] && [ -f "$config" ] && grep -Eq '^[[:space:]]*durable[[:space:]]*=[[:space:]]*true' "$config"; then
  extras=ui,durable
fi
bash scripts/setup.sh --extras "$extras"
exec .venv/bin/python -m loopkit.demo "$@"

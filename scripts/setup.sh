#!/usr/bin/env bash
# Installs everything loopkit and its demo need on Debian/Ubuntu, idempotently: the Debian
# packages (headless desktop, AT-SPI, Qt's xcb libraries, build tools for PyGObject), then a
# virtual environment in .venv with loopkit and its extras. Safe to run again: it only installs
# what is missing.
#   scripts/setup.sh           what the demo needs: loopkit[ui]
#   scripts/setup.sh --extras ui,durable
#                              those extras of loopkit (scripts/demo.sh adds durable for --durable)
#   scripts/setup.sh --tests   also what only the tests need: loopkit[ui,dev] (dev: the other extras,
#                              pytest, mypy, the benchmarks' peers), PostgreSQL, for SQLAlchemySession;
#                              ffmpeg, for the UI server's video recording; the MCP TypeScript
#                              SDK from npm, the outside client of tests/ui/outside_client;
#                              the AG-UI client and MCP Inspector CLI of tests/interop/clients;
#                              Arize Phoenix in .venv-phoenix, the traces test's OTLP receiver;
#                              chromium, the board's browser tests and the UI benchmark's
#                              peer, Playwright MCP from npm, in bench/playwright_mcp)
set -euo pipefail
cd "$(dirname "$0")/.."

TESTS=0
EXTRAS=${LOOPKIT_EXTRAS:-ui}
usage="usage: scripts/setup.sh [--tests] [--extras EXTRA,...]"
while (($#)); do
  case "$1" in
    --tests) TESTS=1 ;;
    --extras)
      [ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }
      EXTRAS="$2"; shift ;;
    --extras=*) EXTRAS="${1#--extras=}" ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
  shift
done
if ((TESTS)); then EXTRAS="$EXTRAS,dev"; fi

PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}

DEBIAN_PACKAGES=(
  git procps python3-venv python3-dev gcc pkg-config
  xvfb xauth x11-utils dbus dbus-x11 at-spi2-core gir1.2-atspi-2.0 libgirepository1.0-dev libcairo2-dev
  libxkbcommon-x11-0 libxcb-cursor0 libxcb-icccm4 libxcb-image0 libxcb-keysyms1 libxcb-randr0
  libxcb-render-util0 libxcb-shape0 libxcb-xinerama0 libxcb-xkb1 libegl1 libgl1 libfontconfig1
  libdbus-1-3 fonts-dejavu-core rsyslog xclip
)
# Only the tests: a real PostgreSQL server (the suite starts a private cluster in a temp folder),
# ffmpeg (the UI server records the desktop with it; the demo never records), chromium (the
# board's browser tests drive it with Playwright: Playwright's own browser download is not used).
TEST_DEBIAN_PACKAGES=(postgresql ffmpeg chromium)
if ((TESTS)); then DEBIAN_PACKAGES+=("${TEST_DEBIAN_PACKAGES[@]}"); fi

say() { printf '\033[1m[setup]\033[0m %s\n' "$*"; }

missing=()
for p in "${DEBIAN_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if ! command -v apt-get >/dev/null; then
    say "missing Debian packages: ${missing[*]}; this script needs apt-get (Debian/Ubuntu)." >&2
    exit 1
  fi
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  say "installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Only the tests: npm packages, each folder pinned by its package-lock.json and installed again
# only when that file changes. Node.js from Debian when the machine has none.
npm_ci_once() {  # folder, what it is
  local stamp="$1/node_modules/.loopkit-installed" sum
  sum="$(sha256sum "$1/package-lock.json" | cut -d' ' -f1)"
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$sum" ]; then
    say "installing $2 into $1 (npm ci)"
    npm ci --prefix "$1" --no-audit --no-fund --ignore-scripts --loglevel=error
    echo "$sum" > "$stamp"
  fi
}
if ((TESTS)); then
  if ! command -v npm >/dev/null; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    say "installing Node.js (Debian packages nodejs npm) for the tests' outside clients"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
  fi
  # the outside client that tests/ui/test_outside_client.py drives the UI server with
  npm_ci_once tests/ui/outside_client "the MCP TypeScript SDK"
  # the interop tests' official clients
  npm_ci_once tests/interop/clients "the AG-UI client and the MCP Inspector CLI"
  # the UI benchmark's peer, driving Debian's chromium (its own browser download is not used)
  npm_ci_once bench/playwright_mcp "Playwright MCP"
  # axe-core, injected into the board's pages by its browser tests (WCAG 2.1 AA checks)
  npm_ci_once tests/board/axe "axe-core"
fi

# Only the tests: Arize Phoenix, a real OTLP trace receiver and viewer for the traces test
# (tests/interop/test_traces.py), in an environment of its own (it pins many packages of its own).
PHOENIX_VENV=${PHOENIX_VENV:-.venv-phoenix}
PHOENIX_VERSION=20.26.1
if ((TESTS)) && [ ! -x "$PHOENIX_VENV/bin/phoenix" ]; then
  say "installing Arize Phoenix $PHOENIX_VERSION into $PHOENIX_VENV (the traces test's OTLP receiver; a few minutes)"
  "$PYTHON" -m venv "$PHOENIX_VENV"
  "$PHOENIX_VENV/bin/python" -m pip install -q --upgrade pip
  "$PHOENIX_VENV/bin/python" -m pip install -q "arize-phoenix==$PHOENIX_VERSION"
fi

if [ ! -x "$VENV/bin/python" ]; then
  say "creating $VENV with $($PYTHON --version)"
  "$PYTHON" -m venv "$VENV"
fi

# Reinstall only when pyproject.toml changed or an extra is asked for that is not installed yet.
# The stamp holds pyproject's hash and the extras installed; extras are never taken away (the demo
# after the tests keeps the tests' environment), and an extra that another one includes (dev
# includes durable) counts as installed.
stamp="$VENV/.loopkit-installed"
sum="$(sha256sum pyproject.toml | cut -d' ' -f1)"
had_sum="" had_extras=""
if [ -f "$stamp" ]; then read -r had_sum had_extras < "$stamp" || true; fi
EXTRAS="$("$VENV/bin/python" - "$EXTRAS" "${had_extras:-}" "${had_sum:-}" "$sum" <<'PY'
# prints the extras to install now, or nothing when the installed ones cover the wanted ones
import sys, tomllib
wanted, had = (set(filter(None, a.split(","))) for a in sys.argv[1:3])
had_sum, now_sum = sys.argv[3:5]
extras = tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]
unknown = sorted(wanted - set(extras))
if unknown:
    sys.exit(f"scripts/setup.sh: no such extra of loopkit: {', '.join(unknown)} (known: {', '.join(sorted(extras))})")
def closure(names):  # an extra's own extras: dev = ["loopkit[otel,sql,...]", ...]
    seen, todo = set(), list(names)
    while todo:
        name = todo.pop()
        if name in seen or name not in extras:
            continue
        seen.add(name)
        for req in extras[name]:
            if req.replace(" ", "").startswith("loopkit["):
                todo += req.split("[", 1)[1].split("]", 1)[0].split(",")
    return seen
if had_sum != now_sum or not wanted <= closure(had):
    print(",".join(sorted(wanted | had)))
PY
)"
if [ -n "$EXTRAS" ]; then
  say "installing loopkit[$EXTRAS] into $VENV (first time: about a minute for the demo's, a few with --tests)"
  "$VENV/bin/python" -m pip install -q --upgrade pip
  "$VENV/bin/python" -m pip install -q -e ".[$EXTRAS]"
  echo "$sum $EXTRAS" > "$stamp"
fi
# Only the tests: the library evals' environment. pydantic-evals pins pydantic-ai-slim to its own
# version, which the dev extra's pin for the benchmarks' peer does not match (2.62 has no
# pydantic_ai.conversation_store, which bench/test_agent_overhead.py uses): loopkit[evals] gets a
# virtual environment of its own, which tests/evals/test_library_evals.py runs its check in.
EVALS_VENV=${EVALS_VENV:-.venv-evals}
if ((TESTS)); then
  if [ ! -x "$EVALS_VENV/bin/python" ]; then
    say "creating $EVALS_VENV (the library evals' tests: pydantic-evals)"
    "$PYTHON" -m venv "$EVALS_VENV"
  fi
  evals_stamp="$EVALS_VENV/.loopkit-installed"
  evals_want="$(sha256sum pyproject.toml | cut -d' ' -f1) evals"
  if [ ! -f "$evals_stamp" ] || [ "$(cat "$evals_stamp")" != "$evals_want" ]; then
    say "installing loopkit[evals] into $EVALS_VENV (first time: a few minutes)"
    "$EVALS_VENV/bin/python" -m pip install -q --upgrade pip
    "$EVALS_VENV/bin/python" -m pip install -q -e ".[evals]"
    echo "$evals_want" > "$evals_stamp"
  fi
fi
say "ready: $VENV/bin/python"

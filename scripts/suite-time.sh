#!/usr/bin/env bash
# Times the whole suite (nox -s tests) and prints the figure docs/testing.md reports, with the
# machine's load beside it (the 1-minute load average, sampled every 15 s while it runs):
#   scripts/suite-time.sh                          parallel, as scripts/test.sh runs it
#   LOOPKIT_TEST_WORKERS=0 scripts/suite-time.sh   serial
#   scripts/suite-time.sh tests/ui                 extra arguments go to pytest
# Run scripts/setup.sh --tests once before (this script installs nothing).
set -euo pipefail
cd "$(dirname "$0")/.."
samples="$(mktemp)"
cpu="$(mktemp)"
trap 'rm -f "$samples" "$cpu"' EXIT
(while :; do cut -d' ' -f1 /proc/loadavg >>"$samples"; sleep 15; done) &
sampler=$!
start=$(date +%s)
status=0
# CPU seconds of the suite's processes (those whose parents waited for them: nearly all)
/usr/bin/time -f "%U %S" -o "$cpu" .venv/bin/nox -s tests -- -q "$@" || status=$?
end=$(date +%s)
kill "$sampler" 2>/dev/null || true
wait "$sampler" 2>/dev/null || true
.venv/bin/python - "$samples" "$start" "$end" "$status" "$cpu" <<'EOF'
import os, statistics, sys

path, start, end, status = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
times = open(sys.argv[5]).read().split()[-2:]
cpu = f"{sum(map(float, times)) / 60:.1f} CPU-min" if len(times) == 2 else "CPU not measured"
loads = [float(x) for x in open(path).read().split()]
wall = end - start
workers = os.environ.get("LOOPKIT_TEST_WORKERS") or "default (2 per core)"
load = (
    f"load {min(loads):.1f}-{max(loads):.1f}, mean {statistics.mean(loads):.1f} "
    f"({len(loads)} samples of the 1-minute average)"
    if loads
    else "load not sampled"
)
cores = len(os.sched_getaffinity(0))
print(
    f"suite: {wall // 60} min {wall % 60} s wall, {cpu}, exit status {status}, "
    f"workers {workers}, {cores} cores, {load}"
)
EOF
exit "$status"

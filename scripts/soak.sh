#!/usr/bin/env bash
# A long soak: the black-box test `soak::faults_keep_every_guarantee` (real serve and
# supervise processes, seeded faults, then a checker of the guarantees) run for
# SECONDS of faults on one backend, and its figures: the run's seed, faults by kind,
# changes acknowledged, violations.
#
#   scripts/soak.sh [SECONDS] [sqlite|postgres] [SEED]
#
# SECONDS defaults to 180, the backend to sqlite, its seed to the clock's. Postgres:
# the server at $STATEOUS_TEST_POSTGRES (default
# postgresql://postgres@127.0.0.1:5432/test). The whole output is kept in
# target/soak-BACKEND-SEED.log; a failed run prints its violations and the seed
# that repeats it.
set -euo pipefail
seconds=${1:-180}; backend=${2:-sqlite}; seed=${3:-$(date +%s%N)}
case "$backend" in
  sqlite) ;;
  postgres) export STATEOUS_TEST_POSTGRES=${STATEOUS_TEST_POSTGRES:-postgresql://postgres@127.0.0.1:5432/test} ;;
  *) echo "usage: scripts/soak.sh [SECONDS] [sqlite|postgres] [SEED]" >&2; exit 2 ;;
esac
root=$(cd "$(dirname "$0")/.." && pwd)
log="$root/target/soak-$backend-$seed.log"
mkdir -p "$root/target"
cd "$root"
status=0
STATEOUS_SOAK_SECONDS=$seconds STATEOUS_SOAK_SEED=$seed \
  cargo test --test blackbox "soak::faults_keep_every_guarantee::$backend" -- --exact --nocapture \
  >"$log" 2>&1 || status=$?
echo "command: scripts/soak.sh $seconds $backend $seed"
grep -E '^soak' "$log" || true
if [ "$status" -ne 0 ]; then
  sed -n '/violations:$/,/^stack backtrace/p' "$log" | head -100
  echo "failed (exit $status); the whole output: $log" >&2
  exit "$status"
fi
echo "passed; the whole output: $log"

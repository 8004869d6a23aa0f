#!/usr/bin/env bash
# Measure how soon a real supervisor starts a step: the bundled `orders` supervisor
# (assets/orders-supervisor, shell routines), idle between tokens, against a daemon on
# a fresh database. Prints, for each claim_wait given, the time from each task's
# `task_queued` to its `task_claimed` and from each token's `started` to its
# `completed` (ledger times), as p50/p90/p99/max.
#
#   scripts/bench-latency.sh BINARY sqlite|postgres [TOKENS] [CLAIM_WAITS]
#
# CLAIM_WAITS: the supervisor's `claim_wait` values to run, one after the other, each
# on its own database (default "0 30s": 0 is the claim that does not wait, polled
# once a second as the reference's supervisor does; 30s the default). Each token is
# a "rush" order (draft, then review, then END) started once the one before it
# ended, so the supervisor is idle when it is queued. Postgres: the server at
# $STATEOUS_BENCH_POSTGRES (default postgresql://postgres@127.0.0.1:5432/test).
set -euo pipefail
bin=$(realpath "$1"); backend=$2; tokens=${3:-20}; waits=${4:-"0 30s"}
root=$(cd "$(dirname "$0")/.." && pwd)
admin=${STATEOUS_BENCH_POSTGRES:-postgresql://postgres@127.0.0.1:5432/test}
dir=$(mktemp -d); daemon=""; sup=""; db=""
stop() {
  [ -n "$sup" ] && kill "$sup" 2>/dev/null && wait "$sup" 2>/dev/null; sup=""
  [ -n "$daemon" ] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null; daemon=""
  [ -n "$db" ] && psql -q "$admin" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null; db=""
  return 0
}
trap 'stop; rm -rf "$dir"' EXIT
# The routines call `stateous ctx`: this binary, by that name.
mkdir -p "$dir/bin"; ln -s "$bin" "$dir/bin/stateous"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores, $backend, $tokens tokens"
for wait in $waits; do
  port=$((18000 + RANDOM % 1000)); run=$dir/run-$wait; mkdir -p "$run"
  case $backend in
    postgres) db=lat_$$_$RANDOM; psql -q "$admin" -c "CREATE DATABASE $db" >/dev/null
              url=${admin%/*}/$db ;;
    sqlite) url=sqlite:///$run/bench.db ;;
    *) echo "error: the backend is sqlite or postgres" >&2; exit 1 ;;
  esac
  "$bin" serve "$root/assets/orders/build/orders.json" --db "$url" \
    --listen 127.0.0.1:$port --socket "$run/s.sock" >"$run/daemon.log" 2>&1 &
  daemon=$!
  for _ in $(seq 100); do curl -sf http://127.0.0.1:$port/health >/dev/null && break; sleep 0.1; done
  cp -r "$root/assets/orders-supervisor" "$run/sup"
  printf 'url: "http://127.0.0.1:%s"\nname: bench\nclaim_wait: %s\n' "$port" "$wait" \
    >"$run/sup/stateous.yaml"
  PATH=$dir/bin:$PATH "$bin" supervise "$run/sup" >"$run/sup.log" 2>&1 &
  sup=$!
  sleep 2 # the supervisor is up and idle
  for n in $(seq "$tokens"); do
    curl -sf -X POST "http://127.0.0.1:$port/tokens" \
      -d "{\"token\":\"L-$n\",\"context\":{\"title\":\"rush $n\"}}" >/dev/null
    for _ in $(seq 1000); do
      status=$(curl -sf "http://127.0.0.1:$port/tokens/L-$n" | jq -r .status)
      [ "$status" = completed ] && break; sleep 0.05
    done
    curl -sf "http://127.0.0.1:$port/tokens/L-$n/history" >"$run/L-$n.json"
    sleep 0.3 # idle again before the next token
  done
  echo "claim_wait $wait:"
  python3 - "$run" "$tokens" <<'EOF'
import json, sys
from datetime import datetime
run, tokens = sys.argv[1], int(sys.argv[2])
def at(entry):
    return datetime.fromisoformat(entry["at"].replace("Z", "+00:00")).timestamp()
queued_claimed, start_end = [], []
for n in range(1, tokens + 1):
    entries = json.load(open(f"{run}/L-{n}.json"))
    queued = {}
    for e in entries:
        if e["kind"] == "task_queued":
            queued[e["data"]["task"]] = at(e)
        elif e["kind"] == "task_claimed" and e["data"]["task"] in queued:
            queued_claimed.append(at(e) - queued.pop(e["data"]["task"]))
    kinds = {e["kind"]: at(e) for e in entries}
    if "completed" in kinds:
        start_end.append(kinds["completed"] - kinds["started"])
def line(name, xs):
    xs = sorted(x * 1000 for x in xs)
    if not xs:
        print(f"  {name}: none"); return
    q = lambda p: xs[min(len(xs) - 1, int(p * len(xs)))]
    print(f"  {name} ({len(xs)}): p50 {q(0.5):.1f} ms  p90 {q(0.9):.1f} ms  "
          f"p99 {q(0.99):.1f} ms  max {xs[-1]:.1f} ms")
line("task_queued -> task_claimed", queued_claimed)
line("started -> completed", start_end)
EOF
  stop
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

#!/usr/bin/env bash
# What trace export costs: rounds of `stateous bench`, each on a fresh database,
# alternating a daemon without export and one with `serve --otlp-endpoint` to a
# local collector, and print each round's tokens/s, the ratio (with / without) and
# the daemon's CPU time per token.
#
#   scripts/bench-traces.sh BINARY [TOKENS] [ROUNDS] [sqlite|postgres]
#
# Defaults: 20000 tokens, 3 rounds, SQLite. Each round runs both, the order
# swapped every other round (off-on, on-off, ...), so that the load of a shared
# machine falls on both. `orders` (assets/orders/build/orders.json), 64 clients.
#
# The collector is a small Python HTTP server started here: it reads each `POST
# /v1/traces` body and answers 200 with an empty body (an empty
# ExportTraceServiceResponse); its CPU per token is printed too. (At nice 10 it
# answered late enough under load that the daemon's queue of spans overflowed.) After a bench with export the
# script waits until the daemon's exporter caught up (its
# `stateous_trace_spans_exported_total` stops moving) and prints the daemon's CPU
# both at the bench's end and after the catch-up, the exporter thread's share
# (`stateous-traces`), and the spans exported and dropped (`/metrics`).
#
# Postgres: the server at $STATEOUS_BENCH_POSTGRES (default
# postgresql://postgres@127.0.0.1:5432/test); a database of its own is made and
# dropped for each run.
set -euo pipefail
bin=$(realpath "$1"); tokens=${2:-20000}; rounds=${3:-3}; backend=${4:-sqlite}
case $backend in sqlite | postgres) ;; *) echo "error: the backend is sqlite or postgres" >&2; exit 1 ;; esac
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d)
admin=${STATEOUS_BENCH_POSTGRES:-postgresql://postgres@127.0.0.1:5432/test}
daemon=""; collector=""; db=""
stop_daemon() {
  if [ -n "$daemon" ]; then kill "$daemon" 2>/dev/null || true; wait "$daemon" 2>/dev/null || true; fi
  daemon=""
  if [ -n "$db" ]; then psql -q "$admin" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null; fi
  db=""
}
cleanup() {
  stop_daemon
  if [ -n "$collector" ]; then kill "$collector" 2>/dev/null || true; wait "$collector" 2>/dev/null || true; fi
  rm -rf "$dir"
}
trap cleanup EXIT

# The collector: OTLP/HTTP's traces route, 200 and an empty body to each POST.
cport=$((19000 + RANDOM % 1000))
python3 - "$cport" >"$dir/collector.log" 2>&1 <<'EOF' &
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class Collector(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *args):
        pass

ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Collector).serve_forever()
EOF
collector=$!
for _ in $(seq 50); do
  curl -s -o /dev/null -X POST --data x "http://127.0.0.1:$cport/v1/traces" && break; sleep 0.1
done

# The CPU ticks (user + system) of a process, or of its thread named $2.
ticks() {
  local t=0 s f
  if [ -n "${2:-}" ]; then
    for s in /proc/"$1"/task/*; do
      [ "$(cat "$s/comm" 2>/dev/null)" = "$2" ] || continue
      read -ra f < <(sed 's/^.*) //' "$s/stat"); t=$((t + f[11] + f[12]))
    done
  elif [ -r "/proc/$1/stat" ]; then
    read -ra f < <(sed 's/^.*) //' "/proc/$1/stat"); t=$((f[11] + f[12]))
  fi
  echo "$t"
}
hz=$(getconf CLK_TCK)
us() { echo $(( $1 * 1000000 / hz / tokens )); }
metric() { curl -sf "http://127.0.0.1:$port/metrics" | awk -v n="$1" '$1 == n { s += $2 } END { printf "%d", s }'; }
dropped() { curl -sf "http://127.0.0.1:$port/metrics" | awk '/^stateous_trace_spans_dropped_total/ { s += $2 } END { printf "%d", s }'; }

# One run: $1 is off or on. Sets rate, cpu (µs a token at the bench's end) and,
# for on, more (a line about the catch-up).
run() {
  local url export=() d0 d1 e0 e1 c0 last now
  port=$((18000 + RANDOM % 1000))
  if [ "$backend" = postgres ]; then
    db=bench_traces_$$_$RANDOM; psql -q "$admin" -c "CREATE DATABASE $db" >/dev/null
    url=${admin%/*}/$db
  else
    rm -f "$dir"/bench.db*; url=sqlite:///$dir/bench.db
  fi
  [ "$1" = on ] && export=(--otlp-endpoint "http://127.0.0.1:$cport")
  "$bin" serve "$root/assets/orders/build/orders.json" --db "$url" "${export[@]}" \
    --listen 127.0.0.1:$port --socket "$dir/s.sock" >"$dir/log" 2>&1 &
  daemon=$!
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.1; done
  d0=$(ticks $daemon); e0=$(ticks $daemon stateous-traces); c0=$(ticks $collector)
  "$bin" bench --url "http://127.0.0.1:$port" --tokens "$tokens" --clients 64 >"$dir/bench.out"
  d1=$(ticks $daemon); e1=$(ticks $daemon stateous-traces)
  rate=$(awk '/^tokens\/s:/ { print $2 }' "$dir/bench.out")
  cpu=$(us $((d1 - d0))); more=""
  if [ "$1" = on ]; then
    last=-1; now=$(metric stateous_trace_spans_exported_total)
    while [ "$now" != "$last" ]; do sleep 2; last=$now; now=$(metric stateous_trace_spans_exported_total); done
    more="exporter $(us $((e1 - e0))) µs a token by the bench's end, daemon $(us $(($(ticks $daemon) - d0))) and exporter $(us $(($(ticks $daemon stateous-traces) - e0))) after the catch-up, collector $(us $(($(ticks $collector) - c0))); spans: $now exported, $(dropped) dropped"
  fi
  stop_daemon
}

echo "$(date -u '+%F %T') UTC, $backend, --tokens $tokens --clients 64, $(nproc) cores; uptime:$(uptime | sed 's/.*load/ load/')"
offs=(); ons=()
for round in $(seq "$rounds"); do
  if [ $((round % 2)) = 1 ]; then order="off on"; else order="on off"; fi
  for mode in $order; do
    run "$mode"
    if [ "$mode" = off ]; then off=$rate; off_cpu=$cpu; offs+=("$rate"); else on=$rate; on_cpu=$cpu; on_more=$more; ons+=("$rate"); fi
  done
  ratio=$(awk -v a="$on" -v b="$off" 'BEGIN { printf "%.0f%%", 100 * a / b }')
  echo "round $round ($order): without $off tokens/s (daemon $off_cpu µs a token), with $on ($on_cpu µs a token): $ratio"
  echo "  with: $on_more"
done
sum() { local s=0 x; for x in "$@"; do s=$(awk -v s="$s" -v x="$x" 'BEGIN { print s + x }'); done; echo "$s"; }
so=$(sum "${offs[@]}"); sn=$(sum "${ons[@]}")
echo "mean: without $(awk -v s="$so" -v n="$rounds" 'BEGIN { printf "%.0f", s / n }') tokens/s, with $(awk -v s="$sn" -v n="$rounds" 'BEGIN { printf "%.0f", s / n }'): $(awk -v a="$sn" -v b="$so" 'BEGIN { printf "%.0f%%", 100 * a / b }'); uptime:$(uptime | sed 's/.*load/ load/')"

#!/usr/bin/env bash
# What notifications cost the write path: `stateous bench --notify` on a fresh
# database for each daemon given, in turn, for some rounds, and each pass's
# tokens/s with the CPU time per token of the daemon and (on Postgres) of the
# server's processes, read from /proc while the pass ran.
#
#   scripts/bench-notify.sh sqlite|postgres TOKENS ROUNDS DAEMON [DAEMON...]
#
# Each round runs every daemon once, in the order given on odd rounds and the
# reverse on even ones, so that the load of a shared machine falls on all. The
# bench (the client and the receivers) is the last daemon's binary, or
# $BENCH_BINARY: the same client measures every daemon. `orders`
# (assets/orders/build/orders.json), 64 clients.
#
# Postgres: the server at $STATEOUS_BENCH_POSTGRES (default
# postgresql://postgres@127.0.0.1:5432/test) on this machine; a database of its
# own is made and dropped for each run.
set -euo pipefail
backend=$1; tokens=$2; rounds=$3; shift 3
case $backend in sqlite | postgres) ;; *) echo "error: the backend is sqlite or postgres" >&2; exit 1 ;; esac
daemons=(); for b in "$@"; do daemons+=("$(realpath "$b")"); done
bench=$(realpath "${BENCH_BINARY:-${daemons[-1]}}")
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d)
admin=${STATEOUS_BENCH_POSTGRES:-postgresql://postgres@127.0.0.1:5432/test}
daemon=""; db=""
stop_daemon() {
  if [ -n "$daemon" ]; then kill "$daemon" 2>/dev/null || true; wait "$daemon" 2>/dev/null || true; fi
  daemon=""
  if [ -n "$db" ]; then psql -q "$admin" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null; fi
  db=""
}
trap 'stop_daemon; rm -rf "$dir"' EXIT

# The CPU ticks (user + system) of these processes.
ticks() { local t=0 p f; for p in "$@"; do [ -r "/proc/$p/stat" ] || continue
  read -ra f < <(sed 's/^.*) //' "/proc/$p/stat" 2>/dev/null) || continue
  t=$((t + f[11] + f[12])); done; echo "$t"; }
server() { if [ "$backend" = postgres ]; then pgrep -u postgres postgres | tr '\n' ' '; fi; }
hz=$(getconf CLK_TCK)
us() { echo $(( $1 * 1000000 / hz / tokens )); }

# One run of the daemon $1: the bench's figures, then each pass's CPU a token.
run() {
  local url port passes=0 d s cpu=()
  port=$((18000 + RANDOM % 1000))
  if [ "$backend" = postgres ]; then
    db=bench_notify_$$_$RANDOM; psql -q "$admin" -c "CREATE DATABASE $db" >/dev/null
    url=${admin%/*}/$db
  else
    rm -f "$dir"/bench.db*; url=sqlite:///$dir/bench.db
  fi
  "$1" serve "$root/assets/orders/build/orders.json" --db "$url" \
    --listen 127.0.0.1:$port --socket "$dir/s.sock" >"$dir/log" 2>&1 &
  daemon=$!
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.1; done
  "$bench" bench --url "http://127.0.0.1:$port" --tokens "$tokens" --clients 64 --notify \
    >"$dir/bench.out" 2>&1 &
  local client=$!
  # A pass runs from its line to its `tokens/s:` line; what follows it until
  # the next pass's line (the drain of pass 2) is shown apart.
  d=$(ticks $daemon); s=$(ticks $(server))
  local label="" events next done=""
  while [ -z "$done" ]; do
    kill -0 $client 2>/dev/null || done=1
    events=$(grep -c '^pass \|^notifications:\|^tokens/s:' "$dir/bench.out" || true)
    while [ "$events" -gt "$passes" ]; do
      passes=$((passes + 1))
      next=$(grep '^pass \|^notifications:\|^tokens/s:' "$dir/bench.out" | sed -n "${passes}p")
      if [ -n "$label" ]; then
        cpu+=("$label: daemon $(us $(($(ticks $daemon) - d))) µs a token, server $(us $(($(ticks $(server)) - s)))")
      fi
      case $next in
        pass*) label=${next%%:*} ;;
        tokens/s:*) label="after ${label}" ;;
        *) label="" ;;
      esac
      d=$(ticks $daemon); s=$(ticks $(server))
    done
    [ -n "$done" ] || sleep 0.05
  done
  wait $client || { cat "$dir/bench.out" "$dir/log" >&2; exit 1; }
  sed -n '/^notifications:/,$p' "$dir/bench.out"
  printf '  %s\n' "${cpu[@]}"
  stop_daemon
}

echo "$(date -u '+%F %T') UTC, $backend, --tokens $tokens --clients 64, $(nproc) cores; uptime:$(uptime | sed 's/.*load/ load/')"
for round in $(seq "$rounds"); do
  order=("${daemons[@]}")
  if [ $((round % 2)) = 0 ]; then order=(); for ((i = ${#daemons[@]} - 1; i >= 0; i--)); do order+=("${daemons[i]}"); done; fi
  for b in "${order[@]}"; do
    echo "round $round, $b; uptime:$(uptime | sed 's/.*load/ load/')"
    run "$b"
  done
done

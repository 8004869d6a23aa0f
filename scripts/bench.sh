#!/usr/bin/env bash
# Bench one build of stateous on a fresh database and print, besides `stateous bench`'s
# figures, the CPU time of the daemon and of the Postgres server's processes per token.
#
#   scripts/bench.sh BINARY sqlite|postgres [TOKENS]
#
# Postgres: the server at $STATEOUS_BENCH_POSTGRES (default
# postgresql://postgres@127.0.0.1:5432/test) on this machine (its processes' CPU is
# read from /proc); a database of its own is made and dropped. Runs `orders`
# (assets/orders/build/orders.json) with 64 clients.
set -euo pipefail
bin=$(realpath "$1"); backend=$2; tokens=${3:-3000}
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d); port=$((18000 + RANDOM % 1000))
admin=${STATEOUS_BENCH_POSTGRES:-postgresql://postgres@127.0.0.1:5432/test}
db=""
cleanup() {
  [ -n "${daemon:-}" ] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
  [ -n "$db" ] && psql -q "$admin" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
# The CPU ticks (user + system) of these processes.
ticks() { local t=0 p f; for p in "$@"; do [ -r "/proc/$p/stat" ] || continue
  read -ra f < <(sed 's/^.*) //' "/proc/$p/stat"); t=$((t + f[11] + f[12])); done; echo "$t"; }
server() { pgrep -u postgres postgres | tr '\n' ' '; }
case $backend in
  postgres) db=bench_$$_$RANDOM; psql -q "$admin" -c "CREATE DATABASE $db" >/dev/null
            url=${admin%/*}/$db ;;
  sqlite) url=sqlite:///$dir/bench.db ;;
  *) echo "error: the backend is sqlite or postgres" >&2; exit 1 ;;
esac
"$bin" serve "$root/assets/orders/build/orders.json" --db "$url" \
  --listen 127.0.0.1:$port --socket "$dir/s.sock" >"$dir/log" 2>&1 &
daemon=$!
for _ in $(seq 100); do curl -sf http://127.0.0.1:$port/health >/dev/null && break; sleep 0.1; done
s0=$(ticks $(server)); d0=$(ticks $daemon)
"$bin" bench --url http://127.0.0.1:$port --tokens "$tokens" --clients 64
s1=$(ticks $(server)); d1=$(ticks $daemon); hz=$(getconf CLK_TCK)
echo "daemon CPU: $(( (d1 - d0) * 1000000 / hz / tokens )) µs a token"
[ "$backend" = postgres ] && echo "Postgres CPU: $(( (s1 - s0) * 1000000 / hz / tokens )) µs a token"
exit 0

#!/usr/bin/env bash
# Bench `orders` on one daemon three times: without limits, with a limit of 1,000,000 on
# every state (never binding), and without again (docs/limits.md, "Speed").
#
#   scripts/bench_limits.sh BINARY sqlite|postgres [TOKENS]
set -euo pipefail
bin=$(realpath "$1"); backend=$2; tokens=${3:-2000}
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d); port=$((18000 + RANDOM % 1000))
admin=postgresql://postgres@127.0.0.1:5432/test
db=""
cleanup() {
  [ -n "${daemon:-}" ] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
  [ -n "$db" ] && psql -q "$admin" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
case $backend in
  postgres) db=bench_$$_$RANDOM; psql -q "$admin" -c "CREATE DATABASE $db" >/dev/null
            url=${admin%/*}/$db ;;
  sqlite) url=sqlite:///$dir/bench.db ;;
esac
"$bin" serve "$root/assets/orders/build/orders.json" --db "$url" \
  --listen 127.0.0.1:$port --socket "$dir/s.sock" >"$dir/log" 2>&1 &
daemon=$!
for _ in $(seq 100); do curl -sf http://127.0.0.1:$port/health >/dev/null && break; sleep 0.1; done
states=$(python3 -c "import json;d=json.load(open('$root/assets/orders/build/orders.json'));print(','.join(d['states']))")
echo "== without limits ($backend)"
"$bin" bench --url http://127.0.0.1:$port --tokens "$tokens" --clients 64
"$bin" limit set every-state --states "$states" --max 1000000 --url http://127.0.0.1:$port
echo "== with a limit of 1000000 on every state ($backend)"
"$bin" bench --url http://127.0.0.1:$port --tokens "$tokens" --clients 64
echo "== without limits again ($backend)"
"$bin" limit remove every-state --url http://127.0.0.1:$port
"$bin" bench --url http://127.0.0.1:$port --tokens "$tokens" --clients 64

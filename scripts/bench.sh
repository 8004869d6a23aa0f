#!/usr/bin/env bash
# Bench one build of stateous on a fresh database and print, besides `stateous bench`'s
# figures, the CPU time of the daemon and of the Postgres server's processes per token
# (`scripts/bench-lib.sh`).
#
#   scripts/bench.sh BINARY sqlite|postgres [TOKENS]
#
# Postgres: the server at $STATEOUS_BENCH_POSTGRES (default
# postgresql://postgres@127.0.0.1:5432/test) on this machine (its processes' CPU is
# read from /proc); a database of its own is made and dropped. Runs `orders`
# (assets/orders/build/orders.json) with 64 clients.
set -euo pipefail
. "$(dirname "$0")/bench-lib.sh"
bin=$(realpath "$1"); backend=$2; tokens=${3:-3000}
serve_fresh "$bin" "$backend" "$root/assets/orders/build/orders.json"
cpu_mark
"$bin" bench --url "$url" --tokens "$tokens" --clients 64
cpu_since "$tokens"

#!/usr/bin/env bash
# Bench `orders` on one daemon three times: without limits, with a limit of 1,000,000 on
# every state (never binding), and without again (docs/limits.md, "Speed"); after each,
# the CPU time of the daemon and of the Postgres server per token (`scripts/bench-lib.sh`).
#
#   scripts/bench_limits.sh BINARY sqlite|postgres [TOKENS]
set -euo pipefail
. "$(dirname "$0")/bench-lib.sh"
bin=$(realpath "$1"); backend=$2; tokens=${3:-2000}
graph=$root/assets/orders/build/orders.json
serve_fresh "$bin" "$backend" "$graph"
states=$(python3 -c "import json;d=json.load(open('$graph'));print(','.join(d['states']))")
bench() { cpu_mark; "$bin" bench --url "$url" --tokens "$tokens" --clients 64; cpu_since "$tokens"; }
echo "== without limits ($backend)"
bench
"$bin" limit set every-state --states "$states" --max 1000000 --url "$url"
echo "== with a limit of 1000000 on every state ($backend)"
bench
echo "== without limits again ($backend)"
"$bin" limit remove every-state --url "$url"
bench

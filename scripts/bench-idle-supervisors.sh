#!/usr/bin/env bash
# What idle supervisors cost a control plane: start a daemon on a fresh SQLite
# database and N supervisors of the bundled `orders` routines (each in a folder of
# its own, named idle-1 .. idle-N), let them settle, then print the CPU time the
# daemon and the supervisors used over SECS seconds with no task to claim.
#
#   scripts/bench-idle-supervisors.sh BINARY [N] [SECS] [YAML_LINE]
#
# YAML_LINE is added to each stateous.yaml, e.g. "claim_wait: 0s" for supervisors
# that ask again every `idle` (1 s) instead of waiting in a claim (default 30 s).
set -euo pipefail
bin=$(realpath "$1"); n=${2:-100}; secs=${3:-60}; extra=${4:-}
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d); port=$((19000 + RANDOM % 500))
pids=()
cleanup() {
  kill "${pids[@]}" "${daemon:-}" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
# The CPU ticks (user + system) of these processes.
ticks() { local t=0 p f; for p in "$@"; do [ -r "/proc/$p/stat" ] || continue
  read -ra f < <(sed 's/^.*) //' "/proc/$p/stat"); t=$((t + f[11] + f[12])); done; echo "$t"; }
"$bin" serve "$root/assets/orders/build/orders.json" --db "sqlite:///$dir/d.db" \
  --listen 127.0.0.1:$port --socket "$dir/s.sock" >"$dir/log" 2>&1 &
daemon=$!
for _ in $(seq 100); do curl -sf http://127.0.0.1:$port/health >/dev/null && break; sleep 0.1; done
for i in $(seq "$n"); do
  mkdir -p "$dir/sup$i"
  cp "$root"/assets/orders-supervisor/*.sh "$root"/assets/orders-supervisor/contract.json "$dir/sup$i/"
  printf 'url: "http://127.0.0.1:%s"\ntasks: 4\nname: idle-%s\n%s\n' "$port" "$i" "$extra" \
    >"$dir/sup$i/stateous.yaml"
  PATH="$(dirname "$bin"):$PATH" "$bin" supervise "$dir/sup$i" >"$dir/sup$i.log" 2>&1 &
  pids+=($!)
done
sleep 10
hz=$(getconf CLK_TCK)
d0=$(ticks "$daemon"); s0=$(ticks "${pids[@]}")
sleep "$secs"
d1=$(ticks "$daemon"); s1=$(ticks "${pids[@]}")
seen=$(curl -sf http://127.0.0.1:$port/supervisors | grep -o '"name"' | wc -l)
echo "$n supervisors ($seen seen by the daemon), ${extra:-claim_wait default}, over $secs s:"
echo "  daemon CPU $(( (d1 - d0) * 1000 / hz )) ms: $(awk "BEGIN {printf \"%.2f\", ($d1 - $d0) * 100 / $hz / $secs}")% of a core"
echo "  supervisors' CPU $(( (s1 - s0) * 1000 / hz )) ms in all"

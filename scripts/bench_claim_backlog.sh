#!/usr/bin/env bash
# Claim latency behind a full key (docs/limits.md, "Speed"): a per-key limit of 1
# (`per ctx['repo']`) whose key `big` holds QUEUED queued tasks of `coding` and one
# claimed, against the same limit on an empty database. Each measured claim takes
# the task of a token just started with a key of its own; prints the claims that
# got a task and the latency's median, 90th percentile and mean, in ms.
#
#   scripts/bench_claim_backlog.sh BINARY sqlite|postgres [QUEUED] [CLAIMS]
set -euo pipefail
bin=$(realpath "$1"); backend=$2; queued=${3:-100000}; claims=${4:-300}
root=$(cd "$(dirname "$0")/.." && pwd)
admin=postgresql://postgres@127.0.0.1:5432/test
dir=$(mktemp -d); dbs=()
cleanup() {
  [ -n "${daemon:-}" ] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
  for db in "${dbs[@]}"; do psql -q "$admin" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null; done
  rm -rf "$dir"
}
trap cleanup EXIT

# serve NAME: a daemon on a fresh database, with a lease long enough to hold.
serve() {
  local url
  case $backend in
    postgres) local db=bench_$$_$1; dbs+=("$db")
              psql -q "$admin" -c "CREATE DATABASE $db" >/dev/null; url=${admin%/*}/$db ;;
    sqlite) url=sqlite:///$dir/$1.db ;;
  esac
  port=$((18000 + RANDOM % 1000))
  "$bin" serve "$root/assets/sdlc/build/sdlc.json" --db "$url" --lease 1h \
    --listen 127.0.0.1:$port --socket "$dir/$1.sock" >"$dir/$1.log" 2>&1 &
  daemon=$!
  for _ in $(seq 100); do curl -sf http://127.0.0.1:$port/health >/dev/null && break; sleep 0.1; done
  "$bin" limit set per-repo --states coding --max 1 --per "ctx['repo']" \
    --url http://127.0.0.1:$port >/dev/null
}

stop() { kill "$daemon"; wait "$daemon" 2>/dev/null || true; daemon=""; }

# fill N: N tokens of key `big`, the first claimed (8 clients).
fill() {
  python3 - "$port" "$1" <<'PY'
import http.client, json, sys, threading
port, n = int(sys.argv[1]), int(sys.argv[2])
def start(ids):
    c = http.client.HTTPConnection("127.0.0.1", port)
    for i in ids:
        c.request("POST", "/tokens", json.dumps({"token": f"B-{i}", "context": {"repo": "big"}}),
                  {"Content-Type": "application/json"})
        r = c.getresponse(); r.read()
        assert r.status in (200, 201), r.status
c = http.client.HTTPConnection("127.0.0.1", port)
start([0])
c.request("POST", "/tasks/claim", json.dumps({"supervisor": "holder", "states": ["coding"]}),
          {"Content-Type": "application/json"})
r = c.getresponse(); r.read(); assert r.status == 200, r.status
threads = [threading.Thread(target=start, args=(range(1 + k, n + 1, 8),)) for k in range(8)]
for t in threads: t.start()
for t in threads: t.join()
PY
}

# measure LABEL: CLAIMS times, start a token of a new key, then time its claim.
measure() {
  python3 - "$port" "$claims" "$1" <<'PY'
import http.client, json, sys, time
port, n, label = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
c = http.client.HTTPConnection("127.0.0.1", port)
def post(path, body):
    c.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse(); r.read(); return r.status
times, granted = [], 0
for i in range(n):
    assert post("/tokens", {"token": f"K-{i}", "context": {"repo": f"k-{i}"}}) in (200, 201)
    t = time.perf_counter()
    status = post("/tasks/claim", {"supervisor": "bench", "states": ["coding"]})
    times.append((time.perf_counter() - t) * 1000)
    granted += status == 200
times.sort()
print(f"{label}: {granted} of {n} claims got a task; claim latency median "
      f"{times[n // 2]:.2f} ms, p90 {times[n * 9 // 10]:.2f} ms, mean {sum(times) / n:.2f} ms")
PY
}

echo "== $backend, $(basename "$bin"), load: $(uptime | sed 's/.*load average: //')"
serve empty
measure "empty database"
stop
serve backlog
started=$(date +%s)
fill "$queued"
echo "   ($queued queued behind the full key in $(( $(date +%s) - started )) s)"
measure "$queued queued behind a full key"
stop

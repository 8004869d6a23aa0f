# What the bench scripts share; sourced by them (`. "$(dirname "$0")/bench-lib.sh"`),
# not run. Sets `root` (the repository) and `dir` (a folder removed on exit).
#
# serve_fresh BINARY sqlite|postgres GRAPH: a daemon of BINARY serving GRAPH on a
# fresh database (Postgres: one of its own on the server at $STATEOUS_BENCH_POSTGRES,
# default postgresql://postgres@127.0.0.1:5432/test, dropped on exit); sets `url`
# (its TCP address), `daemon` (its pid) and `port`, and waits until it answers.
# cpu_mark and cpu_since TOKENS: the CPU time (user and system, read from /proc)
# of the daemon and (when `backend` is postgres) of the Postgres server's processes
# between the two, per token.
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d)
admin=${STATEOUS_BENCH_POSTGRES:-postgresql://postgres@127.0.0.1:5432/test}
dbs=()
cleanup() {
  [ -n "${daemon:-}" ] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
  for db in "${dbs[@]}"; do
    psql -q "$admin" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null
  done
  rm -rf "$dir"
}
trap cleanup EXIT

serve_fresh() {
  local bin=$1 backend=$2 graph=$3 db
  case $backend in
    postgres) db=bench_$$_$RANDOM; dbs+=("$db")
              psql -q "$admin" -c "CREATE DATABASE $db" >/dev/null
              db=${admin%/*}/$db ;;
    sqlite) db=sqlite:///$dir/bench.db ;;
    *) echo "error: the backend is sqlite or postgres" >&2; exit 1 ;;
  esac
  port=$((18000 + RANDOM % 1000))
  "$bin" serve "$graph" --db "$db" --listen 127.0.0.1:$port --socket "$dir/s.sock" \
    >"$dir/log" 2>&1 &
  daemon=$!
  url=http://127.0.0.1:$port
  for _ in $(seq 100); do curl -sf "$url/health" >/dev/null && break; sleep 0.1; done
}

# The CPU ticks (user + system) of one process; nothing when it is gone.
ticks() {
  local f
  [ -r "/proc/$1/stat" ] || return 0
  read -ra f < <(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null) || return 0
  echo $((f[11] + f[12]))
}
server() { pgrep -u postgres postgres | tr '\n' ' '; }

# Each server process's ticks at the mark, by pid: a process that ends meanwhile
# is left out, one that starts counts whole.
declare -A server_at
cpu_mark() {
  local p
  server_at=()
  for p in $(server); do server_at[$p]=$(ticks "$p"); done
  daemon_ticks=$(ticks "$daemon")
}
cpu_since() {
  local tokens=$1 hz p now s=0
  hz=$(getconf CLK_TCK)
  for p in $(server); do
    now=$(ticks "$p"); [ -n "$now" ] || continue
    s=$((s + now - ${server_at[$p]:-0}))
  done
  echo "daemon CPU: $(( ($(ticks "$daemon") - daemon_ticks) * 1000000 / hz / tokens )) µs a token"
  if [ "${backend:-}" = postgres ]; then
    echo "Postgres CPU: $(( s * 1000000 / hz / tokens )) µs a token"
  fi
}

#!/usr/bin/env bash
# iolab kv --engine cassandra on a private Cassandra 5.0: YCSB A and C per
# round (each a fresh private server with its data under DIR; load, then a
# run bounded by time), printing per round and workload the run's
# throughput, iolab's client CPU per operation (the run phase's own
# getrusage: all client threads, measured interval only) and the server's
# CPU per operation (its process group, same interval), then the medians.
# The peer (YCSB with a cassandra-cql binding, same server): bench/kv_cassandra_vs_ycsb.sh.
# Usage: [ROUNDS=3] [RECORDS=10000] [RUN_S=15] [THREADS=4] [HEAP=1g]
#        [KV_BENCH_DIR=/var/tmp] bench/kv_cassandra.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
RECORDS=${RECORDS:-10000}
RUN_S=${RUN_S:-15}
THREADS=${THREADS:-4}
HEAP=${HEAP:-1g}
DIR=${KV_BENCH_DIR:-/var/tmp}
IOLAB=${IOLAB:-./target/release/iolab}
[ -x "$IOLAB" ] || cargo build --release --locked
bash scripts/fetch-cassandra.sh
work=$(mktemp -d "$DIR/kv-cassandra.XXXXXX")
trap 'rm -rf "$work"' EXIT

ARGS="--engine cassandra -t $work --heap $HEAP --threads $THREADS -p recordcount=$RECORDS \
 -p operationcount=2000000000 -p maxexecutiontime=$RUN_S --quiet"
echo "iolab: $($IOLAB --version)"
echo "iolab kv a,c $ARGS -o FILE"
echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
rows=$work/rows.txt
: >"$rows"
printf '%-5s %-9s %10s %16s %16s\n' round workload ops/s "client CPU/op" "server CPU/op"
for r in $(seq 1 "$ROUNDS"); do
  $IOLAB kv a,c $ARGS --seed "$r" -o "$work/r.json" >/dev/null
  python3 - "$work/r.json" "$r" >>"$rows" <<'PY'
import json, sys
res = json.load(open(sys.argv[1]))
for p in res["points"]:
    if not p["name"].endswith(".run"):
        continue
    ops = p["total"]["ops"]
    wall = p["cpu"]["wall_ns"]
    client = (p["cpu"]["user_ns"] + p["cpu"]["sys_ns"]) / ops / 1e3
    srv = p["extra"].get("server", {}).get("process", {})
    server = (srv.get("usr_pct", 0) + srv.get("sys_pct", 0)) / 100 * wall / ops / 1e3
    print(sys.argv[2], p["name"].split(".")[0], p["total"]["iops"], client, server)
PY
  tail -n 2 "$rows" | while read -r rr w ops c s; do
    printf '%-5s %-9s %10.0f %13.1f us %13.1f us\n' "$rr" "$w" "$ops" "$c" "$s"
  done
done
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$rows" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
for w in sorted({r[1] for r in rows}):
    sel = [r for r in rows if r[1] == w]
    col = lambda i: [float(r[i]) for r in sel]
    print(f"median {w}: {statistics.median(col(2)):.0f} ops/s ({min(col(2)):.0f}..{max(col(2)):.0f}), "
          f"client {statistics.median(col(3)):.1f} us/op, server {statistics.median(col(4)):.1f} us/op, n={len(sel)}")
PY

#!/usr/bin/env bash
# iolab's client CPU per operation over MongoDB's wire protocol (kv --engine
# mongodb), YCSB A and C, against a private FerretDB v1.24.2 (SQLite
# backend) that iolab starts per run. FerretDB is the protocol's test
# double: the throughput and FerretDB's own CPU printed here are FerretDB's
# and SQLite's, never a MongoDB figure; the claim is iolab's client cost.
# Client CPU/op: the run phase's getrusage of iolab (all threads, the
# driver's tokio workers included) over its operations; server CPU/op: the
# FerretDB process group's CPU over the same window (extra.server.process);
# and iolab's own share: the null engine paced (--target-ops) to the rate
# the FerretDB run reached, whose CPU/op is iolab's loop, pacing and
# sampling without a driver.
# RECORDS is small because FerretDB over SQLite reads a whole collection per
# findOne here (its CPU per op grows with the records): more ops/s per run.
# Rounds alternate the workloads' order. Prints per run, then per workload
# the median (min..max) over rounds.
# Usage: [ROUNDS=3] [RECORDS=200] [SECS=10] [THREADS=2] [IOLAB=...] [IOLAB_FERRETDB=...]
#        [KV_BENCH_DIR=/var/tmp] bench/kv_mongodb_client.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
RECORDS=${RECORDS:-200}
SECS=${SECS:-10}
THREADS=${THREADS:-2}
DIR=${KV_BENCH_DIR:-/var/tmp}
IOLAB=${IOLAB:-./target/release/iolab}
[ -x "$IOLAB" ] || cargo build --release --locked
bash scripts/build-ferretdb.sh
work=$(mktemp -d "$DIR/kv-mongodb.XXXXXX")
trap 'rm -rf "$work"' EXIT
ARGS="--engine mongodb -p recordcount=$RECORDS -p operationcount=2000000000 \
 -p maxexecutiontime=$SECS --threads $THREADS --quiet"
echo "iolab kv W $ARGS -t DIR -o FILE   (W = a, c; a private FerretDB per run)"
echo "iolab: $($IOLAB --version)"
echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
: >"$work/rows.txt"
for r in $(seq 1 "$ROUNDS"); do
  order="a c"
  [ $((r % 2)) -eq 0 ] && order="c a"
  for w in $order; do
    $IOLAB kv "$w" $ARGS -t "$work" -o "$work/o.json" >/dev/null
    python3 - "$work/o.json" "$w" "$r" >>"$work/rows.txt" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
p = [p for p in r["points"] if p["name"].endswith(".run")][0]
ops = p["total"]["ops"]
client = (p["cpu"]["user_ns"] + p["cpu"]["sys_ns"]) / ops / 1e3
proc = p["extra"]["server"]["process"]
server = (proc["usr_pct"] + proc["sys_pct"]) / 100 * p["duration_ns"] / ops / 1e3
assert p["verify"]["mismatches"] == 0, p["verify"]
print(sys.argv[2], sys.argv[3], ops, p["total"]["iops"], client, server)
PY
    # iolab's own cost at that rate: the null engine, paced to the same ops/s.
    rate=$(tail -n1 "$work/rows.txt" | awk '{printf "%d", $4}')
    $IOLAB kv "$w" --engine null -p recordcount=$RECORDS -p operationcount=2000000000 \
      -p maxexecutiontime=$SECS --threads $THREADS --target-ops "$rate" --quiet \
      -t "$work" -o "$work/n.json" >/dev/null
    python3 - "$work/n.json" >"$work/null.txt" <<'PY'
import json, sys
p = [p for p in json.load(open(sys.argv[1]))["points"] if p["name"].endswith(".run")][0]
print((p["cpu"]["user_ns"] + p["cpu"]["sys_ns"]) / p["total"]["ops"] / 1e3)
PY
    sed -i "\$s/\$/ $(cat "$work/null.txt")/" "$work/rows.txt"
    tail -n1 "$work/rows.txt" | awk '{printf "round %s %s: %d ops, %.0f ops/s, client CPU %.1f us/op (null engine at that rate %.1f), FerretDB CPU %.1f us/op\n", $2, $1, $3, $4, $5, $7, $6}'
  done
done
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$work/rows.txt" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
for w in ("a", "c"):
    rs = [r for r in rows if r[0] == w]
    for i, what in ((3, "ops/s (FerretDB's)"), (4, "iolab client CPU us/op"),
                    (6, "null engine CPU us/op at that rate"), (5, "FerretDB CPU us/op")):
        v = [float(r[i]) for r in rs]
        print(f"ycsb-{w} {what}: {statistics.median(v):.1f} ({min(v):.1f}..{max(v):.1f}) n={len(v)}")
PY

#!/usr/bin/env bash
# The cost per operation of each `iolab kv --check-values` mode (auto,
# all, sample, none) on RocksDB: the chain fillrandom, waitforcompaction,
# readrandom, readseq, seekrandom on a fresh database, once per mode per
# round, the modes' order rotated each round. Prints per mode and benchmark
# the median ns/op over the rounds and its difference from `none`.
# Usage: [ROUNDS=6] [NUM=100000] [VALUE=400] bench/kv_check_values.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-6}
NUM=${NUM:-100000}
VALUE=${VALUE:-400}
DIR=${KV_BENCH_DIR:-/var/tmp}
IOLAB=${IOLAB:-./target/release/iolab}
[ -x "$IOLAB" ] || cargo build --release --locked
work=$(mktemp -d "$DIR/kv-check.XXXXXX")
trap 'rm -rf "$work"' EXIT
CHAIN=fillrandom,waitforcompaction,readrandom,readseq,seekrandom
ARGS="--engine rocksdb --num $NUM --key-size 16 --value-size $VALUE --compression none \
 --cache-size 64m --write-buffer-size 64m --background-jobs 2 --pipelined-write --quiet"
echo "iolab kv $CHAIN $ARGS --check-values MODE --db DIR -o out.json"
echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
modes=(auto all sample none)
: >"$work/rows.txt"
for r in $(seq 1 "$ROUNDS"); do
  for i in 0 1 2 3; do
    m=${modes[$(((i + r) % 4))]}
    rm -rf "$work/db"
    $IOLAB kv "$CHAIN" $ARGS --check-values "$m" --db "$work/db" -o "$work/o.json" >/dev/null
    python3 - "$work/o.json" "$m" >>"$work/rows.txt" <<'PY'
import json, sys
for p in json.load(open(sys.argv[1]))["points"]:
    if p["name"] != "fillrandom":
        print(sys.argv[2], p["name"], 1e9 / p["total"]["iops"], p["verify"]["blocks_checked"])
PY
  done
done
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$work/rows.txt" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
med = {}
for m, b, ns, _ in rows:
    med.setdefault((m, b), []).append(float(ns))
print(f"{'bench':12s} {'mode':7s} {'ns/op median (min..max)':28s} {'vs none':>8s}")
for b in dict.fromkeys(r[1] for r in rows):
    base = statistics.median(med[("none", b)])
    for m in ("auto", "all", "sample", "none"):
        v = sorted(med[(m, b)])
        print(f"{b:12s} {m:7s} {statistics.median(v):8.1f} ({v[0]:.1f}..{v[-1]:.1f}){'':6s} {statistics.median(v) - base:+8.1f}")
PY

#!/usr/bin/env bash
# YCSB A-F on every engine on this machine (load + run each), one table of
# run-phase throughput and p99 per engine and workload, plus the driver's
# own per-operation cost measured with the null engine.
# Usage: bench/kv_ycsb_all.sh [RECORDS] [OPERATIONS] [THREADS]
set -euo pipefail
cd "$(dirname "$0")/.."
RECORDS=${1:-100000}
OPS=${2:-100000}
THREADS=${3:-2}
DIR=${KV_BENCH_DIR:-/var/tmp}
IOLAB=${IOLAB:-./target/release/iolab}
[ -x "$IOLAB" ] || cargo build --release
work=$(mktemp -d "$DIR/kv-ycsb.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "iolab kv <w> --engine <e> -p recordcount=$RECORDS -p operationcount=$OPS --threads $THREADS --dir $DIR -o out.json"
printf '%-8s %-3s %12s %12s %12s %s\n' engine wl "load ops/s" "run ops/s" "run p99" "ops (p99 per op)"
for e in rocksdb lmdb sqlite redb fjall; do
  for w in a b c d e f; do
    $IOLAB kv "$w" --engine "$e" -p recordcount="$RECORDS" -p operationcount="$OPS" --threads "$THREADS" \
      --dir "$DIR" -o "$work/o.json" >"$work/o.txt" 2>&1 || { echo "$e $w FAILED"; tail -3 "$work/o.txt"; continue; }
    python3 - "$work/o.json" "$e" "$w" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
load, run = r["points"][0], r["points"][1]
def p99(op):
    v = (op.get("lat") or {}).get("percentiles_ns", {}).get("99.000000", 0)
    return f"{v/1000:.1f}us"
ops = " ".join(f"{k}:{p99(v)}" for k, v in run["ops"].items() if not k.startswith("rmw-"))
worst = max(((v.get("lat") or {}).get("percentiles_ns", {}).get("99.000000", 0) for v in run["ops"].values()), default=0)
print(f"{sys.argv[2]:8s} {sys.argv[3]:3s} {load['total']['iops']:12.0f} {run['total']['iops']:12.0f} {worst/1000:10.1f}us  {ops}")
PY
  done
done
echo
echo "driver overhead (null engine, workload c, 1 thread, $((OPS * 10)) ops):"
$IOLAB kv c --engine null -p recordcount="$RECORDS" -p operationcount=$((OPS * 10)) --phase run --dir "$DIR" \
  -o "$work/n.json" >/dev/null 2>&1 || true
python3 - "$work/n.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["points"][0]
print(f"  {p['total']['iops']:.0f} ops/s = {1e9/p['total']['iops']:.0f} ns per operation (key choice, key name, engine call, two clock reads, recording)")
PY

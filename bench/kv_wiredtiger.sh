#!/usr/bin/env bash
# iolab kv --engine wiredtiger vs its floor: bench/wt_floor.c, a bare C loop
# making the same WiredTiger calls (fillrandom, then readrandom) on the same
# library (Debian's libwiredtiger 3.2.1) with the same connection and table
# configuration, built here with cc. Debian ships no wtperf.
# Rounds are interleaved (A B, then B A) on fresh databases; iolab checks no
# values (--check-values none), as the C loop does not. Prints per round the
# ops/s of both and the ratio iolab/floor, then per benchmark the median
# ratio with its spread. Each run starts after a sync. PHASE_THREADS=1
# runs each of the floor's phases on a thread of its own with its own
# session, as iolab's workers (and db_bench's benchmark threads) do; by
# default both run on its main thread with one cursor. EVICTION_THREADS
# (4 by default, iolab's and MongoDB's setting; auto: WiredTiger's own
# tuning between 1 and 8) goes to both: --wt-eviction-threads and the
# floor's environment.
# Usage: [ROUNDS=8] [NUM=200000] [READS=NUM] [VALUE=100] [PHASE_THREADS=] [EVICTION_THREADS=4]
#        [KV_BENCH_DIR=/var/tmp] bench/kv_wiredtiger.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-8}
NUM=${NUM:-200000}
READS=${READS:-$NUM}
VALUE=${VALUE:-100}
PHASE_THREADS=${PHASE_THREADS:-}
if [ -n "$PHASE_THREADS" ]; then export PHASE_THREADS; floor_phases="their own threads"; else unset PHASE_THREADS; floor_phases="the main thread"; fi
export EVICTION_THREADS=${EVICTION_THREADS:-4}
IOLAB=${IOLAB:-./target/release/iolab}
. bench/wt_common.sh
wt_prepare kv-wiredtiger

IO_ARGS="fillrandom,readrandom --engine wiredtiger --num $NUM --reads $READS --key-size 16 \
 --value-size $VALUE --threads 1 --check-values none --quiet --wt-eviction-threads $EVICTION_THREADS"
echo "iolab: $($IOLAB --version); floor: bench/wt_floor.c on $(readlink -f /usr/lib/x86_64-linux-gnu/libwiredtiger.so)"
echo "num=$NUM reads=$READS key=16 value=$VALUE threads=1 (cache 64 MiB, btree, journal on, no sync, checkpoint 60 s, eviction threads $EVICTION_THREADS)"
echo "floor: ${PHASE_THREADS:+PHASE_THREADS=1 }EVICTION_THREADS=$EVICTION_THREADS wt_floor DIR $NUM 16 $VALUE $READS SEED (phases on $floor_phases)"
echo "iolab: iolab kv $IO_ARGS --db DIR -o FILE"
echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
results=$work/ratios.txt
: >"$results"
printf '%-5s %-11s %12s %12s %7s\n' round bench floor iolab ratio
for r in $(seq 1 "$ROUNDS"); do
  rm -rf "$work"/db* "$work"/io.json
  mkdir "$work/db1"
  # sync first: neither tool's fill pays for the other's (or the last
  # round's deleted) dirty pages being written back.
  run_floor() { sync; "$work/wt_floor" "$work/db1" "$NUM" 16 "$VALUE" "$READS" "$r" >"$work/floor.txt"; }
  run_iolab() { sync; $IOLAB kv $IO_ARGS --seed "$r" --db "$work/db2" -o "$work/io.json" >/dev/null; }
  if [ $((r % 2)) -eq 1 ]; then run_floor; run_iolab; else run_iolab; run_floor; fi
  python3 - "$work/floor.txt" "$work/io.json" "$r" >>"$results" <<'PY'
import json, sys
floor = {l.split()[0]: float(l.split()[1]) for l in open(sys.argv[1]) if l.strip()}
for p in json.load(open(sys.argv[2]))["points"]:
    name = p["name"].split(".")[0]
    f = floor[name]
    print(sys.argv[3], name, f, p["total"]["iops"], p["total"]["iops"] / f, sep="\t")
PY
  grep -P "^$r\t" "$results" | while IFS=$'\t' read -r rr b f i ratio; do
    printf '%-5s %-11s %12.0f %12.0f %7.3f\n' "$rr" "$b" "$f" "$i" "$ratio"
  done
done
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
python3 - "$results" <<'PY'
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
print("median ratio iolab/floor ops/s (min..max), rounds")
for b in dict.fromkeys(r[1] for r in rows):
    rs = sorted(float(r[4]) for r in rows if r[1] == b)
    print(f"  {b:11s} {statistics.median(rs):.3f} ({rs[0]:.3f}..{rs[-1]:.3f}) n={len(rs)}")
PY

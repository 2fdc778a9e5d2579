#!/usr/bin/env bash
# WiredTiger's fillrandom alone, iolab against bench/wt_floor.c, in variants
# interleaved round by round (the order rotates each round): what the fill's
# spread is made of (docs/benchmarks.md section 34). Variants:
#   floor   the C loop, its phases on its main thread
#   floorT  the C loop with a thread and session per phase (PHASE_THREADS=1)
#   iolab   iolab kv fillrandom --check-values none
#   iolabA  the same with MALLOC_ARENA_MAX=1 (every allocation in the main arena)
# WTCONF, when set, is written to a WiredTiger.config in each database's
# home before the run (WiredTiger reads it at open: the same setting for
# both tools, for settings neither passes in its open string), e.g.
# WTCONF='eviction_dirty_target=10'. EVICTION_THREADS (4 by default, as
# iolab's --wt-eviction-threads; auto: WiredTiger's tuning) goes to both.
# Prints each round's ops/s per variant, then each variant's median.
# Usage: [ROUNDS=8] [NUM=500000] [VARIANTS="floor iolab"] [WTCONF=...] [EVICTION_THREADS=4]
#        [KV_BENCH_DIR=/var/tmp] [IOLAB=target/release/iolab] bench/kv_wiredtiger_fill.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-8}
NUM=${NUM:-500000}
read -r -a variants <<<"${VARIANTS:-floor floorT iolab iolabA}"
export EVICTION_THREADS=${EVICTION_THREADS:-4}
IOLAB=${IOLAB:-./target/release/iolab}
. bench/wt_common.sh
wt_prepare kv-wt-fill
echo "num=$NUM key=16 value=100 threads=1 eviction threads $EVICTION_THREADS${WTCONF:+ WiredTiger.config: $WTCONF}; load at start: $(cut -d' ' -f1-3 /proc/loadavg)"

fill() { # variant seed -> ops/s
  rm -rf "$work/db"
  mkdir -p "$work/db"
  if [ -n "${WTCONF:-}" ]; then echo "$WTCONF" >"$work/db/WiredTiger.config"; fi
  sync
  local io=(kv fillrandom --engine wiredtiger --num "$NUM" --key-size 16 --value-size 100
    --threads 1 --check-values none --quiet --wt-eviction-threads "$EVICTION_THREADS" --seed "$2" --db "$work/db" -o "$work/io.json")
  case $1 in
  floor) "$work/wt_floor" "$work/db" "$NUM" 16 100 1 "$2" | awk '/^fillrandom/ {print $2}' ;;
  floorT) PHASE_THREADS=1 "$work/wt_floor" "$work/db" "$NUM" 16 100 1 "$2" | awk '/^fillrandom/ {print $2}' ;;
  iolab | iolabA)
    if [ "$1" = iolabA ]; then MALLOC_ARENA_MAX=1 "$IOLAB" "${io[@]}" >/dev/null; else "$IOLAB" "${io[@]}" >/dev/null; fi
    python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['points'][0]['total']['iops'])" "$work/io.json" ;;
  *) echo "unknown variant $1" >&2; exit 2 ;;
  esac
}

results=$work/fills.txt
: >"$results"
n=${#variants[@]}
for r in $(seq 1 "$ROUNDS"); do
  line="round $r:"
  for i in $(seq 0 $((n - 1))); do
    v=${variants[$(((i + r) % n))]}
    ops=$(fill "$v" "$r")
    printf '%s\t%s\n' "$v" "$ops" >>"$results"
    line+=$(printf ' %s %.0f' "$v" "$ops")
  done
  echo "$line"
done
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$results" <<'PY'
import statistics, sys
by = {}
for line in open(sys.argv[1]):
    v, ops = line.split()
    by.setdefault(v, []).append(float(ops))
print("median fillrandom ops/s (min..max), rounds")
for v, xs in by.items():
    print(f"  {v:7s} {statistics.median(xs):9.0f} ({min(xs):.0f}..{max(xs):.0f}) n={len(xs)}")
PY

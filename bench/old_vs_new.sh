#!/usr/bin/env bash
# Two iolab builds side by side (e.g. before and after a refactor), interleaved
# A B / B A over ROUNDS rounds: null-engine IOPS at 4k QD1 and QD32 pinned to
# CPU 0 (the tool's own per-I/O cost), and the wall-time overhead of a 50-point
# sweep on an existing file (wall minus measured time, as a share of wall).
# Prints the median ratio new/old with its spread.
# Usage: OLD=/path/to/old/iolab NEW=target/release/iolab bench/old_vs_new.sh [DIR] [ROUNDS] [RUNTIME_S]
set -euo pipefail
DIR=${1:-/var/tmp}
ROUNDS=${2:-5}
RUNTIME=${3:-5}
OLD=${OLD:?set OLD to the old iolab binary}
NEW=${NEW:-target/release/iolab}
WORK=$(mktemp -d /tmp/iolab-oldnew.XXXXXX)
FILE="$DIR/iolab-oldnew-bench.dat"
trap 'rm -rf "$WORK" "$FILE"' EXIT
fio --name=layout --filename="$FILE" --size=1g --rw=write --bs=1m --direct=1 --ioengine=psync >/dev/null

null_iops() { # BIN QD
  "$1" device --engine null --rw randread --bs 4k --qd "$2" --cpus 0 --runtime "${RUNTIME}s" --quiet --json "$WORK/n.json"
  python3 -c "import json;print(json.load(open('$WORK/n.json'))['points'][0]['total']['iops'])"
}
sweep_overhead() { # BIN -> overhead percent of wall time
  local t0 t1
  t0=$(date +%s.%N)
  "$1" device --target "$FILE" --engine io_uring --rw randread,read --bs 4k..64k --qd 1..16 \
    --runtime 1s --quiet --json "$WORK/s.json"
  t1=$(date +%s.%N)
  python3 -c "import json;w=$t1-$t0;m=sum(p['duration_ns'] for p in json.load(open('$WORK/s.json'))['points'])/1e9;print(100*(w-m)/w)"
}

for r in $(seq 1 "$ROUNDS"); do
  if [ $((r % 2)) -eq 1 ]; then order="OLD NEW"; else order="NEW OLD"; fi
  for who in $order; do
    bin=${!who}
    echo "$r $who qd1 $(null_iops "$bin" 1)" >> "$WORK/rows"
    echo "$r $who qd32 $(null_iops "$bin" 32)" >> "$WORK/rows"
    echo "$r $who sweep $(sweep_overhead "$bin")" >> "$WORK/rows"
  done
done
python3 - "$WORK/rows" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
v = {}
for r, who, what, x in rows:
    v.setdefault((what, who), {})[r] = float(x)
def summary(xs):
    return f"{st.median(xs):.3f} ({min(xs):.3f}..{max(xs):.3f})"
for what, label in [("qd1", "null engine 4k QD1 IOPS"), ("qd32", "null engine 4k QD32 IOPS")]:
    o, n = v[(what, "OLD")], v[(what, "NEW")]
    print(f"{label}: old {st.median(o.values()):,.0f}, new {st.median(n.values()):,.0f}; "
          f"ratio new/old {summary([n[r] / o[r] for r in o])}")
o, n = v[("sweep", "OLD")], v[("sweep", "NEW")]
print(f"50-point sweep wall overhead: old {summary(list(o.values()))} %, new {summary(list(n.values()))} %")
PY

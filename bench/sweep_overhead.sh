#!/usr/bin/env bash
# Wall-time overhead of a 50-point sweep: wall time minus the sum of the
# points' measured runtimes, as a share of the wall time (target < 2%).
# Side by side with fio running the same 50 jobs (stonewalled, one job file),
# interleaved A B for ROUNDS rounds, on an existing file (no layout time).
# Usage: bench/sweep_overhead.sh [DIR] [ROUNDS]
set -euo pipefail
DIR=${1:-/var/tmp}
ROUNDS=${2:-3}
IOLAB=${IOLAB:-target/release/iolab}
FILE="$DIR/iolab-overhead-bench.dat"
WORK=$(mktemp -d /tmp/iolab-ovh.XXXXXX)
trap 'rm -f "$FILE"' EXIT
[ -f "$FILE" ] || fio --name=layout --filename="$FILE" --size=1g --rw=write --bs=1m --direct=1 --ioengine=psync >/dev/null
# 2 patterns x 5 block sizes x 5 depths = 50 points of 1 s.
JOBFILE="$WORK/sweep.fio"
{
  echo "[global]"; echo "filename=$FILE"; echo "size=1g"; echo "direct=1"; echo "ioengine=io_uring"
  echo "time_based=1"; echo "runtime=1"; echo "stonewall=1"
  for rw in randread read; do for qd in 1 2 4 8 16; do for bs in 4k 8k 16k 32k 64k; do
    echo "[$rw-$bs-qd$qd]"; echo "rw=$rw"; echo "bs=$bs"; echo "iodepth=$qd"
  done; done; done
} > "$JOBFILE"
for round in $(seq 1 "$ROUNDS"); do
  set -x
  t0=$(date +%s.%N)
  "$IOLAB" device --target "$FILE" --engine io_uring --rw randread,read --bs 4k..64k --qd 1..16 \
    --runtime 1s --quiet --json "$WORK/iolab-$round.json"
  t1=$(date +%s.%N)
  fio --output-format=json --output="$WORK/fio-$round.json" "$JOBFILE" >/dev/null
  t2=$(date +%s.%N)
  set +x
  echo "$round $t0 $t1 $t2" >> "$WORK/times"
done
python3 - "$WORK" <<'PY'
import json, sys, statistics as st
work = sys.argv[1]
rows = []
for line in open(f"{work}/times"):
    r, t0, t1, t2 = line.split()
    i = json.load(open(f"{work}/iolab-{r}.json"))
    f = json.load(open(f"{work}/fio-{r}.json"))
    i_wall, f_wall = float(t1) - float(t0), float(t2) - float(t1)
    i_meas = sum(p["duration_ns"] for p in i["points"]) / 1e9
    f_meas = sum(j["job_runtime"] for j in f["jobs"]) / 1e3
    rows.append((len(i["points"]), i_wall, i_meas, len(f["jobs"]), f_wall, f_meas))
    print(f"round {r}: iolab {len(i['points'])} points wall {i_wall:.2f}s measured {i_meas:.2f}s overhead {100*(i_wall-i_meas)/i_wall:.2f}% | "
          f"fio {len(f['jobs'])} jobs wall {f_wall:.2f}s measured {f_meas:.2f}s overhead {100*(f_wall-f_meas)/f_wall:.2f}%")
io = [100 * (w - m) / w for _, w, m, _, _, _ in rows]
fo = [100 * (w - m) / w for _, _, _, _, w, m in rows]
print(f"median overhead: iolab {st.median(io):.2f}% ({min(io):.2f}..{max(io):.2f}), fio {st.median(fo):.2f}% ({min(fo):.2f}..{max(fo):.2f})")
print(f"median wall ratio iolab/fio: {st.median(r[1]/r[4] for r in rows):.3f}")
PY

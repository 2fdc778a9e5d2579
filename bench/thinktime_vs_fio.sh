#!/usr/bin/env bash
# thinktime against fio (issue 11): the same 4k random-read job at QD 4 with
# 1 ms of think time after every 1, 2 and 4 completions, iolab and fio
# interleaved (A B / B A) over ROUNDS rounds. Prints IOPS and mean latency
# of each, and the median IOPS ratio iolab/fio with its spread.
#   bash bench/thinktime_vs_fio.sh [DIR] [ROUNDS] [RUNTIME_S]
set -euo pipefail
BIN=${IOLAB:-target/release/iolab}
DIR=${1:-/var/tmp}
ROUNDS=${2:-5}
RT=${3:-3}
WORK=$(mktemp -d /tmp/iolab-think.XXXXXX)
FILE="$DIR/iolab-think-bench.bin"
trap 'rm -rf "$WORK" "$FILE"' EXIT
fio --name=fill --filename="$FILE" --size=256M --rw=write --bs=1M --direct=1 --output=/dev/null
iolab_run() { # BLOCKS
  "$BIN" device --target "$FILE" --rw randread --bs 4k --qd 4 --engine io_uring \
    --thinktime 1ms --thinktime-blocks "$1" --runtime "${RT}s" --quiet -o "$WORK/i.json"
  python3 -c "import json;p=json.load(open('$WORK/i.json'))['points'][0];print(p['total']['iops'], p['ops']['read']['lat']['mean_ns']/1e3)"
}
fio_run() { # BLOCKS
  fio --name=t --filename="$FILE" --rw=randread --bs=4k --iodepth=4 --ioengine=io_uring \
    --direct=1 --thinktime=1ms --thinktime_blocks="$1" --runtime="$RT" --time_based \
    --output-format=json --output="$WORK/f.json"
  python3 -c "import json;j=json.load(open('$WORK/f.json'))['jobs'][0]['read'];print(j['iops'], j['lat_ns']['mean']/1e3)"
}
for r in $(seq 1 "$ROUNDS"); do
  for b in 1 2 4; do
    if [ $((r % 2)) -eq 1 ]; then order="iolab fio"; else order="fio iolab"; fi
    for who in $order; do
      echo "$r $b $who $(${who}_run "$b")" >> "$WORK/rows"
    done
  done
done
python3 - "$WORK/rows" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
print("| thinktime_blocks | iolab IOPS | fio IOPS | iolab/fio IOPS, median (min..max) | mean lat iolab / fio, us |")
print("|---|---|---|---|---|")
for b in ("1", "2", "4"):
    i = {r[0]: (float(r[3]), float(r[4])) for r in rows if r[1] == b and r[2] == "iolab"}
    f = {r[0]: (float(r[3]), float(r[4])) for r in rows if r[1] == b and r[2] == "fio"}
    ratios = [i[k][0] / f[k][0] for k in i if k in f]
    print(f"| {b} | {st.median(v[0] for v in i.values()):.0f} | {st.median(v[0] for v in f.values()):.0f} | "
          f"{st.median(ratios):.3f} ({min(ratios):.3f}..{max(ratios):.3f}) | "
          f"{st.median(v[1] for v in i.values()):.0f} / {st.median(v[1] for v in f.values()):.0f} |")
PY

#!/usr/bin/env bash
# iolab's per-I/O cost with each clock against fio's null engine: 4 KiB
# random reads, QD 1, one worker pinned to CPU $CPU, full histograms in
# iolab (fio keeps its own), 20M I/Os per run, fio / iolab --clock mono /
# iolab --clock tsc interleaved over ROUNDS rounds. Prints the median IOPS
# ratio iolab/fio per clock, with its range.
#   bash bench/clock_null.sh [ROUNDS]
set -euo pipefail
IOLAB=${IOLAB:-target/release/iolab}
ROUNDS=${1:-5}
CPU=${CPU:-1}
N=${N:-20m}
OUT=$(mktemp -d /tmp/iolab-bench-clock.XXXXXX)
trap 'rm -rf "$OUT"' EXIT
for r in $(seq 1 "$ROUNDS"); do
  taskset -c "$CPU" fio --name=n --ioengine=null --size=100g --rw=randread --bs=4k --iodepth=1 \
    --io_size=$((${N%m} * 4))m --cpus_allowed="$CPU" --output-format=json --output="$OUT/fio-$r.json"
  for c in mono tsc; do
    taskset -c "$CPU" "$IOLAB" device --engine null --rw randread --bs 4k --qd 1 --io-count "$N" \
      --cpus "$CPU" --clock "$c" --quiet --json "$OUT/$c-$r.json"
  done
done
python3 - "$OUT" "$ROUNDS" <<'PY'
import json, sys, statistics as st
out, rounds = sys.argv[1], int(sys.argv[2])
fio = [json.load(open(f"{out}/fio-{r}.json"))["jobs"][0]["read"]["iops"] for r in range(1, rounds + 1)]
print(f"fio null engine: median {st.median(fio)/1e6:.2f}M IOPS over {rounds} rounds")
print("| clock | iolab IOPS (median) | ratio to fio, median (min..max) |")
print("|---|---|---|")
for c in ["mono", "tsc"]:
    io = [json.load(open(f"{out}/{c}-{r}.json"))["points"][0]["total"]["iops"] for r in range(1, rounds + 1)]
    ratios = [a / b for a, b in zip(io, fio)]
    print(f"| {c} | {st.median(io)/1e6:.2f}M | {st.median(ratios):.2f} ({min(ratios):.2f}..{max(ratios):.2f}) |")
PY

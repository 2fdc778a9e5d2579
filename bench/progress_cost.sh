#!/usr/bin/env bash
# Cost of the live progress line (issue 11): the same job with a terminal
# (progress line once a second, read from the counters workers publish at
# their second boundaries) and without one (no progress), interleaved over
# ROUNDS rounds, plus the null engine (where iolab's own cost dominates).
# Prints the median IOPS ratio with-terminal / without and its spread.
#   bash bench/progress_cost.sh [DIR] [ROUNDS] [RUNTIME]
set -euo pipefail
BIN=${IOLAB:-target/release/iolab}
DIR=${1:-/var/tmp}
ROUNDS=${2:-5}
RT=${3:-5s}
WORK=$(mktemp -d /tmp/iolab-progress.XXXXXX)
FILE="$DIR/iolab-progress-bench.bin"
trap 'rm -rf "$WORK" "$FILE"' EXIT
fio --name=fill --filename="$FILE" --size=256M --rw=write --bs=1M --direct=1 --output=/dev/null
run() { # NAME TTY(0/1) ARGS...
  local name=$1 tty=$2; shift 2
  local cmd="$BIN device $* --runtime $RT --json $WORK/$name.json --force"
  if [ "$tty" = 1 ]; then
    script -qc "$cmd" /dev/null >/dev/null
  else
    $cmd >/dev/null 2>&1
  fi
  python3 -c "import json;print(json.load(open('$WORK/$name.json'))['points'][0]['total']['iops'])"
}
for r in $(seq 1 "$ROUNDS"); do
  for job in uring null; do
    case $job in
      uring) args="--target $FILE --engine io_uring --rw randread --bs 4k --qd 32";;
      null) args="--engine null --rw randread --bs 4k --qd 1 --cpus 0";;
    esac
    if [ $((r % 2)) -eq 1 ]; then order="1 0"; else order="0 1"; fi
    for tty in $order; do
      echo "$r $job $tty $(run "$job-$tty" "$tty" $args)" >> "$WORK/rows"
    done
  done
done
python3 - "$WORK/rows" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
for job in ["uring", "null"]:
    by = {}
    for r, j, tty, iops in rows:
        if j == job:
            by.setdefault(r, {})[tty] = float(iops)
    ratios = [v["1"] / v["0"] for v in by.values() if "0" in v and "1" in v]
    print(f"{job}: IOPS with a terminal / without, median {st.median(ratios):.3f} ({min(ratios):.3f}..{max(ratios):.3f}) over {len(ratios)} rounds")
PY

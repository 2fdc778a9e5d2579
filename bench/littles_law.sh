#!/usr/bin/env bash
# Little's law on real runs: IOPS x mean total latency / (QD x jobs) must be
# 1.00 for a closed loop. Runs iolab (NEW), optionally an older iolab (OLD)
# and fio on the same 16 KiB random-read jobs, interleaved, ROUNDS rounds, and
# prints the median ratio with its range per configuration.
#   NEW=target/release/iolab OLD=/tmp/iolab-before bash bench/littles_law.sh [DIR] [ROUNDS]
set -euo pipefail
NEW=${NEW:-target/release/iolab}
OLD=${OLD:-}
DIR=${1:-/var/tmp}
ROUNDS=${2:-3}
RUNTIME=${RUNTIME:-2}
FILE="$DIR/iolab-littles.bin"
OUT=$(mktemp -d /var/tmp/iolab-bench-littles.XXXXXX)
trap 'rm -rf "$OUT" "$FILE"' EXIT
# engine qd jobs (fio engine name)
CONFIGS="aio:1:1:libaio aio:4:1:libaio aio:8:1:libaio aio:32:1:libaio io_uring:4:1:io_uring io_uring:8:1:io_uring io_uring:16:2:io_uring psync:1:2:psync"
fio --name=fill --filename="$FILE" --size=512M --rw=write --bs=1M --direct=1 --output=/dev/null
tools="new fio"; [ -n "$OLD" ] && tools="old new fio"
for r in $(seq 1 "$ROUNDS"); do
  for c in $CONFIGS; do
    IFS=: read -r eng qd jobs fioeng <<<"$c"
    for t in $tools; do
      o="$OUT/$t-$eng-$qd-$jobs-$r.json"
      case $t in
        new|old)
          bin=$NEW; [ "$t" = old ] && bin=$OLD
          "$bin" device --target "$FILE" --engine "$eng" --qd "$qd" --jobs "$jobs" --bs 16k --rw randread \
            --runtime "${RUNTIME}s" --json "$o" --force >/dev/null 2>&1 ;;
        fio)
          fio --name=j --filename="$FILE" --rw=randread --bs=16k --ioengine="$fioeng" --iodepth="$qd" \
            --numjobs="$jobs" --group_reporting --direct=1 --time_based --runtime="$RUNTIME" \
            --output-format=json --output="$o" ;;
      esac
    done
  done
  echo "# round $r done" >&2
done
python3 - "$OUT" "$ROUNDS" "$tools" "$CONFIGS" <<'PY'
import json, sys, statistics as st
out, rounds, tools, configs = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4].split()
def ratio(tool, eng, qd, jobs, r):
    d = json.load(open(f"{out}/{tool}-{eng}-{qd}-{jobs}-{r}.json"))
    if tool == "fio":
        rd = d["jobs"][0]["read"]
        return rd["iops"] * rd["lat_ns"]["mean"] / 1e9 / (int(qd) * int(jobs))
    p = d["points"][0]["ops"]["read"]
    return p["iops"] * p["lat"]["mean_ns"] / 1e9 / (int(qd) * int(jobs))
print(f"IOPS x mean latency / (QD x jobs), 16 KiB random reads, O_DIRECT, median of {rounds} rounds (min..max)\n")
print("| engine | QD x jobs | " + " | ".join(tools) + " |")
print("|---|---|" + "---|" * len(tools))
for c in configs:
    eng, qd, jobs, _ = c.split(":")
    cells = []
    for t in tools:
        v = [ratio(t, eng, qd, jobs, r) for r in range(1, rounds + 1)]
        cells.append(f"{st.median(v):.3f} ({min(v):.3f}..{max(v):.3f})")
    print(f"| {eng} | {qd} x {jobs} | " + " | ".join(cells) + " |")
PY

#!/usr/bin/env bash
# CPU cost and issue precision of the open loop at light load: 4 KiB random
# reads at QD 8, Poisson arrivals at PCT% (default 10) of the closed-loop
# maximum, old and new build interleaved over ROUNDS rounds. Prints the
# median process CPU (usr+sys, % of one CPU) and issue-delay p99 per build
# and engine, with their ranges.
#   NEW=target/release/iolab OLD=/tmp/iolab-before bash bench/openloop_cpu.sh [DIR] [ROUNDS]
set -euo pipefail
NEW=${NEW:-target/release/iolab}
OLD=${OLD:?OLD=path of the build to compare with}
DIR=${1:-/var/tmp}
ROUNDS=${2:-3}
PCT=${PCT:-10}
RT=${RT:-3s}
FILE="$DIR/iolab-openloop-cpu.bin"
OUT=$(mktemp -d /var/tmp/iolab-bench-olcpu.XXXXXX)
trap 'rm -rf "$OUT" "$FILE"' EXIT
fio --name=fill --filename="$FILE" --size=256M --rw=write --bs=1M --direct=1 --output=/dev/null
"$NEW" device --target "$FILE" --rw randread --bs 4k --qd 8 --runtime "$RT" --json "$OUT/max.json" >/dev/null 2>&1
RATE=$(python3 -c "import json,sys; print(int(json.load(open('$OUT/max.json'))['points'][0]['total']['iops'] * $PCT / 100))")
echo "closed-loop max at QD 8: $(python3 -c "import json; print(round(json.load(open('$OUT/max.json'))['points'][0]['total']['iops']))") IOPS; open loop at $PCT%: --rate $RATE --arrival poisson"
for r in $(seq 1 "$ROUNDS"); do
  for eng in io_uring aio; do
    for t in old new; do
      bin=$NEW; [ "$t" = old ] && bin=$OLD
      "$bin" device --target "$FILE" --engine "$eng" --rw randread --bs 4k --qd 8 --rate "$RATE" \
        --arrival poisson --runtime "$RT" --json "$OUT/$t-$eng-$r.json" --force >/dev/null 2>&1
    done
  done
done
python3 - "$OUT" "$ROUNDS" <<'PY'
import json, sys, statistics as st
out, rounds = sys.argv[1], int(sys.argv[2])
def m(t, eng, r):
    p = json.load(open(f"{out}/{t}-{eng}-{r}.json"))["points"][0]
    c, o = p["cpu"], p["extra"]["open_loop"]
    return c["usr_pct"] + c["sys_pct"], o["issue_delay"]["percentiles_ns"]["99.000000"] / 1e3, p["ops"]["read"]["lat"]["percentiles_ns"]["50.000000"] / 1e3
print(f"\nmedian of {rounds} rounds (min..max)\n")
print("| engine | build | CPU % | issue delay p99 us | latency p50 us |")
print("|---|---|---|---|---|")
for eng in ["io_uring", "aio"]:
    for t in ["old", "new"]:
        v = [m(t, eng, r) for r in range(1, rounds + 1)]
        cell = lambda i: f"{st.median(x[i] for x in v):.1f} ({min(x[i] for x in v):.1f}..{max(x[i] for x in v):.1f})"
        print(f"| {eng} | {t} | {cell(0)} | {cell(1)} | {cell(2)} |")
PY

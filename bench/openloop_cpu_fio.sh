#!/usr/bin/env bash
# The open loop's CPU at light load against fio's: 4 KiB random reads at
# QD 8, Poisson arrivals at PCT% (default 10) of iolab's closed-loop
# maximum, iolab and fio (`rate_iops` + `rate_process=poisson`) interleaved
# A B / B A over ROUNDS rounds, io_uring and libaio. Prints the median
# process CPU (usr+sys, % of one CPU) of each, the per-round ratio
# iolab/fio with its range, and the median latency.
#   IOLAB=target/release/iolab bash bench/openloop_cpu_fio.sh [DIR] [ROUNDS]
set -euo pipefail
IOLAB=${IOLAB:-target/release/iolab}
DIR=${1:-/var/tmp}
ROUNDS=${2:-5}
PCT=${PCT:-10}
RT=${RT:-3}
FILE="$DIR/iolab-openloop-cpu-fio.bin"
OUT=$(mktemp -d /var/tmp/iolab-bench-olfio.XXXXXX)
trap 'rm -rf "$OUT" "$FILE"' EXIT
fio --name=fill --filename="$FILE" --size=256M --rw=write --bs=1M --direct=1 --output=/dev/null
"$IOLAB" device --target "$FILE" --rw randread --bs 4k --qd 8 --runtime "${RT}s" --json "$OUT/max.json" --quiet >/dev/null 2>&1
RATE=$(python3 -c "import json; print(int(json.load(open('$OUT/max.json'))['points'][0]['total']['iops'] * $PCT / 100))")
echo "open loop at $PCT% of iolab's closed-loop maximum: $RATE requests/s"
run_iolab() { "$IOLAB" device --target "$FILE" --engine "$1" --rw randread --bs 4k --qd 8 --rate "$RATE" \
  --arrival poisson --runtime "${RT}s" --json "$2" --force --quiet >/dev/null 2>&1; }
run_fio() { fio --name=ol --filename="$FILE" --ioengine="$1" --rw=randread --bs=4k --iodepth=8 --direct=1 \
  --rate_iops="$RATE" --rate_process=poisson --runtime="$RT" --time_based --output-format=json --output="$2"; }
for r in $(seq 1 "$ROUNDS"); do
  for eng in io_uring aio; do
    fioeng=$eng; [ "$eng" = aio ] && fioeng=libaio
    if [ $((r % 2)) = 1 ]; then
      run_iolab "$eng" "$OUT/iolab-$eng-$r.json"; run_fio "$fioeng" "$OUT/fio-$eng-$r.json"
    else
      run_fio "$fioeng" "$OUT/fio-$eng-$r.json"; run_iolab "$eng" "$OUT/iolab-$eng-$r.json"
    fi
  done
done
python3 - "$OUT" "$ROUNDS" <<'PY'
import json, sys, statistics as st
out, rounds = sys.argv[1], int(sys.argv[2])
def iolab(eng, r):
    p = json.load(open(f"{out}/iolab-{eng}-{r}.json"))["points"][0]
    return p["cpu"]["usr_pct"] + p["cpu"]["sys_pct"], p["ops"]["read"]["lat"]["mean_ns"] / 1e3
def fio(eng, r):
    j = json.load(open(f"{out}/fio-{eng}-{r}.json"))["jobs"][0]
    return j["usr_cpu"] + j["sys_cpu"], j["read"]["lat_ns"]["mean"] / 1e3
rng = lambda v: f"{st.median(v):.2f} ({min(v):.2f}..{max(v):.2f})"
print(f"\nmedian of {rounds} rounds (min..max)\n")
print("| engine | iolab CPU % | fio CPU % | CPU iolab/fio | mean latency us iolab / fio |")
print("|---|---|---|---|---|")
for eng in ["io_uring", "aio"]:
    a = [iolab(eng, r) for r in range(1, rounds + 1)]
    b = [fio(eng, r) for r in range(1, rounds + 1)]
    ratio = [x[0] / y[0] for x, y in zip(a, b)]
    print(f"| {eng} | {rng([x[0] for x in a])} | {rng([y[0] for y in b])} | {rng(ratio)} | "
          f"{st.median(x[1] for x in a):.1f} / {st.median(y[1] for y in b):.1f} |")
PY

#!/usr/bin/env bash
# iolab open loop vs fio rate_iops + rate_process=poisson at the same rates
# (4 KiB random read, io_uring, QD 32, O_DIRECT, same file), interleaved
# A B A B for ROUNDS rounds. fio stamps a request's start after its rate
# sleep, so its latency leaves out the time a request waited behind a slow
# device (coordinated omission); iolab reports latency from the intended
# issue time and from the actual issue. Prints, per rate, the medians over
# rounds: achieved IOPS, fio lat mean/p99, iolab issue-time mean/p99, iolab
# intended-time mean/p99, and the ratio intended p99 / fio p99.
# Usage: bench/openloop_vs_fio.sh [DIR] [ROUNDS] [RUNTIME_S]
set -euo pipefail
DIR=${1:-/var/tmp}
ROUNDS=${2:-3}
RT=${3:-5}
IOLAB=${IOLAB:-target/release/iolab}
FILE="$DIR/iolab-openloop-bench.dat"
WORK=$(mktemp -d /tmp/iolab-olfio.XXXXXX)
trap 'rm -f "$FILE"' EXIT
[ -f "$FILE" ] || fio --name=layout --filename="$FILE" --size=4g --rw=write --bs=1m --direct=1 --ioengine=psync >/dev/null
# The closed-loop maximum at QD 32 (iolab), then rates as fractions of it.
"$IOLAB" device --target "$FILE" --engine io_uring --rw randread --bs 4k --qd 32 --runtime 5s --quiet --json "$WORK/max.json"
MAX=$(python3 -c "import json;print(int(json.load(open('$WORK/max.json'))['points'][0]['total']['iops']))")
echo "closed-loop max at QD 32: $MAX IOPS"
RATES=""
for pct in 25 50 75 90 100 120; do RATES="$RATES $((MAX * pct / 100))"; done
for round in $(seq 1 "$ROUNDS"); do
  for rate in $RATES; do
    set -x
    fio --name=ol --filename="$FILE" --size=4g --rw=randread --bs=4k --direct=1 --ioengine=io_uring \
      --iodepth=32 --rate_iops="$rate" --rate_process=poisson --time_based --runtime="$RT" \
      --percentile_list=50:99 --output-format=json --output="$WORK/fio-$rate-$round.json" >/dev/null
    "$IOLAB" device --target "$FILE" --engine io_uring --rw randread --bs 4k --qd 32 \
      --rate "$rate" --arrival poisson --runtime "${RT}s" --quiet --json "$WORK/iolab-$rate-$round.json" || true
    set +x
  done
done
python3 - "$WORK" $RATES <<'PY'
import json, sys, glob, statistics as st
work, rates = sys.argv[1], sys.argv[2:]
print(f"{'rate':>7} {'fio IOPS':>9} {'iolab IOPS':>10} | {'fio mean':>9} {'fio p99':>9} | {'iss mean':>9} {'iss p99':>9} | {'int mean':>9} {'int p99':>9} | int p99/fio p99 (spread)")
for rate in rates:
    fr, ir = [], []
    for f in sorted(glob.glob(f"{work}/fio-{rate}-*.json")):
        j = json.load(open(f))["jobs"][0]["read"]
        fr.append((j["iops"], j["lat_ns"]["mean"], j["clat_ns"]["percentile"]["99.000000"]))
    for f in sorted(glob.glob(f"{work}/iolab-{rate}-*.json")):
        p = json.load(open(f))["points"][0]
        o = p["extra"]["open_loop"]["lat_from_intended"]["read"]
        l = p["ops"]["read"]["lat"]
        ir.append((p["total"]["iops"], l["mean_ns"], l["percentiles_ns"]["99.000000"], o["mean_ns"], o["percentiles_ns"]["99.000000"]))
    m = lambda xs, i: st.median(x[i] for x in xs)
    ratios = [b[4] / a[2] for a, b in zip(fr, ir)]
    print(f"{rate:>7} {m(fr,0):9.0f} {m(ir,0):10.0f} | {m(fr,1)/1e3:8.1f}u {m(fr,2)/1e3:8.1f}u | {m(ir,1)/1e3:8.1f}u {m(ir,2)/1e3:8.1f}u |"
          f" {m(ir,3)/1e3:8.1f}u {m(ir,4)/1e3:8.1f}u | {st.median(ratios):.2f} ({min(ratios):.2f}..{max(ratios):.2f})")
PY
echo "raw results: $WORK"

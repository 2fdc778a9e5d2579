#!/usr/bin/env bash
# An experiment of docs/benchmarks.md section 36 (issue 28 item 3): does
# spinning instead of a short timed wait cut the open loop's CPU or its
# p99 against fio's? Runs fio and an experimental iolab build at each
# threshold, interleaved per round, 4 KiB random reads, O_DIRECT, io_uring,
# QD 8, Poisson arrivals at each rate of LOADS (default 10% and 50% of
# this VM's 66,000 IOPS); prints per rate fio's CPU per request and p99,
# and per threshold iolab's with their ratios to fio's (median, min..max).
# The build: src/runner/openloop.rs with MIN_SPIN_NS read from the
# environment (IOLAB_SPIN_BELOW_NS, ns; 2000 is the committed constant):
#     fn min_spin_ns() -> u64 {
#         static V: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
#         *V.get_or_init(|| std::env::var("IOLAB_SPIN_BELOW_NS").ok()
#             .and_then(|v| v.parse().ok()).unwrap_or(2_000))
#     }
# and MIN_SPIN_NS replaced by min_spin_ns() in its two uses.
# Usage: IOLAB_EXP=path/to/that/iolab [ROUNDS=3] [VARS="2000 10000 20000 30000"]
#        [LOADS="6600 33000"] [DIR=/var/tmp] bench/openloop_spin_threshold.sh
set -euo pipefail
IOLAB_EXP=${IOLAB_EXP:?the experimental build, see the header}
DIR=${DIR:-/var/tmp}
F=$DIR/iolab-openloop-spin.bin
OUT=$(mktemp -d /var/tmp/iolab-bench-spin.XXXXXX)
trap 'rm -rf "$OUT" "$F"' EXIT
ROUNDS=${ROUNDS:-3}; RT=3; VARS=${VARS:-"2000 10000 20000 30000"}; LOADS=${LOADS:-"6600 33000"}
fio --name=fill --filename="$F" --size=256M --rw=write --bs=1M --direct=1 --output=/dev/null
for r in $(seq 1 $ROUNDS); do for rate in $LOADS; do
  fio --name=ol --filename="$F" --ioengine=io_uring --rw=randread --bs=4k --iodepth=8 --direct=1 --rate_iops=$rate --rate_process=poisson --lat_percentiles=1 --runtime=$RT --time_based --output-format=json --output=$OUT/fio-$rate-$r.json
  for v in $VARS; do IOLAB_SPIN_BELOW_NS=$v "$IOLAB_EXP" device --target "$F" --engine io_uring --rw randread --bs 4k --qd 8 --rate $rate --arrival poisson --runtime ${RT}s --json $OUT/io$v-$rate-$r.json --force --quiet >/dev/null 2>&1; done
done; done
python3 - $OUT $ROUNDS "$VARS" "$LOADS" <<'PY'
import json, sys, statistics as st
out, rounds, vars_, loads = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4].split()
def io(v, rate, r):
    p = json.load(open(f"{out}/io{v}-{rate}-{r}.json"))["points"][0]
    iops = p["total"]["iops"]; cpu = (p["cpu"]["usr_pct"] + p["cpu"]["sys_pct"]) / 100
    ol = p["extra"]["open_loop"]
    return cpu / iops * 1e6, ol["lat_from_intended"]["read"]["percentiles_ns"]["99.000000"] / 1e3, p["ops"]["read"]["lat"]["percentiles_ns"]["99.000000"]/1e3, ol["late_fraction"]
def fio(rate, r):
    j = json.load(open(f"{out}/fio-{rate}-{r}.json"))["jobs"][0]
    iops = j["read"]["iops"]; cpu = (j["usr_cpu"] + j["sys_cpu"]) / 100
    return cpu / iops * 1e6, j["read"]["lat_ns"]["percentile"]["99.000000"] / 1e3
for rate in loads:
    f = [fio(rate, r) for r in range(1, rounds+1)]
    print(f"rate {rate}: fio cpu/req {st.median(x[0] for x in f):.1f} p99 {st.median(x[1] for x in f):.1f}")
    for v in vars_:
        a = [io(v, rate, r) for r in range(1, rounds+1)]
        cr = [x[0]/y[0] for x, y in zip(a, f)]; pr = [x[1]/y[1] for x, y in zip(a, f)]
        print(f"   spin<{int(v)//1000}us: cpu/req {st.median(x[0] for x in a):.1f} ratio {st.median(cr):.2f} ({min(cr):.2f}..{max(cr):.2f}) | p99 intended {st.median(x[1] for x in a):.1f} ratio {st.median(pr):.2f} ({min(pr):.2f}..{max(pr):.2f}) | p99 issue {st.median(x[2] for x in a):.1f} | late {100*st.median(x[3] for x in a):.1f}%")
PY

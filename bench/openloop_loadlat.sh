#!/usr/bin/env bash
# 4 KiB random-read load-latency curve: measure the closed-loop maximum at
# QD 32, then open-loop Poisson arrivals at 10%..100% of it. Prints achieved
# IOPS vs latency from the intended issue time, and the knee (highest load
# whose p99 stays under 2x the unloaded p99) and saturation.
# Usage: bench/openloop_loadlat.sh [DIR] [RUNTIME]   (default /var/tmp, 5s)
set -euo pipefail
DIR=${1:-/var/tmp}
RT=${2:-5s}
IOLAB=${IOLAB:-target/release/iolab}
OUT=$(mktemp /tmp/iolab-loadlat.XXXXXX.json)
set -x
"$IOLAB" device --target "$DIR" --size 4g --engine io_uring --rw randread --bs 4k --qd 32 \
  --rate 10%..100%/10 --arrival poisson --runtime "$RT" --quiet --json "$OUT"
set +x
python3 - "$OUT" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
ll = r["analysis"]["load_latency"][0]
us = lambda v: f"{v/1e3:9.1f}" if v is not None else "        -"
print(f"closed-loop max: {ll['closed_loop_max_iops']:.0f} IOPS; unloaded p99 {ll['unloaded_p99_ns']/1e3:.1f} us")
print("  target  achieved |  intended: mean      p50      p95      p99    p99.9 | issue: mean      p99 | late")
for c in ll["curve"]:
    i, a = c["lat_from_intended"], c["lat_from_issue"]
    print(f"{c['target_iops']:8.0f} {c['achieved_iops']:9.0f} | {us(i['mean_ns'])}{us(i['p50_ns'])}{us(i['p95_ns'])}{us(i['p99_ns'])}{us(i['p99_9_ns'])} |"
          f" {us(a['mean_ns'])}{us(a['p99_ns'])} | {c['late_fraction']:.3f}")
print("knee:", ll["knee"])
print("saturation:", ll["saturation"])
PY
echo "results: $OUT"

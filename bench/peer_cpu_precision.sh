#!/usr/bin/env bash
# A target's CPU per I/O two ways on the same points (docs/benchmarks.md
# §44): from the nanoseconds its threads ran (/proc/PID/task/TID/schedstat,
# what `remote` reports as us_per_io) and from /proc/PID/stat's clock ticks
# (usr_pct + sys_pct over the point, what it reported before). Both come
# from the same samples of one `iolab remote` run, so they are side by side
# by construction. Needs root (the namespace pair).
#   IOLAB=target/release/iolab bash bench/peer_cpu_precision.sh [RUNTIME]
# Environment: TRANSPORTS (iolab,nvme-tcp,nbdkit-file), DIR (/var/tmp).
set -euo pipefail
BIN=${IOLAB:-target/release/iolab}
RUNTIME=${1:-300ms}
TRANSPORTS=${TRANSPORTS:-iolab,nvme-tcp,nbdkit-file}
work=$(mktemp -d "${DIR:-/var/tmp}/iolab-peercpu.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/t"
"$BIN" remote -t "$work/t" -o "$work/o" --transports "$TRANSPORTS" --mixes 100 \
  --qd 1,8 --runtime "$RUNTIME" --rates none --breakdown 0 --ramp 100ms --size 32m --quiet
python3 - "$work/o/results.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("| point | ops | ticks | CPU us/IO from ticks | from schedstat | ratio |")
print("|---|---|---|---|---|---|")
for p in d["points"]:
    for c in p.get("extra", {}).get("peers", {}).get("processes", []):
        if c.get("us_per_io") is None:
            continue
        ops, secs = p["total"]["ops"], p["duration_ns"] / 1e9
        cpu_s = (c["usr_pct"] + c["sys_pct"]) / 100 * secs
        from_ticks = cpu_s * 1e6 / ops
        ratio = c["us_per_io"] / from_ticks if from_ticks else float("nan")
        print(f"| {p['name']} | {ops} | {round(cpu_s * 100)} | {from_ticks:.1f} "
              f"| {c['us_per_io']:.1f} | {ratio:.3f} |")
PY

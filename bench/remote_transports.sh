#!/usr/bin/env bash
# The NVMe-oF study's comparison on this machine (issue 13): DAS, NBD
# (iolab's target), NVMe/TCP (iolab's initiator and target) and iSCSI
# (tgtd through libiscsi) side by side in `iolab remote`, 4 KiB random
# reads and writes at the mixes 100/80/50/20/0 and QD 1 and 32, ROUNDS
# rounds with the transport order rotated each round (DAS always first:
# it is every round's baseline). Prints per transport and workload the
# median over rounds of IOPS, IOPS vs DAS (per-round ratio: median and
# range), mean and p95 latency, CPU us per I/O on the initiator and the
# target, and the median unloaded breakdown of the two iolab targets.
# Needs root (namespaces, tgtd).
#   bash bench/remote_transports.sh [ROUNDS] [RUNTIME]
set -euo pipefail
BIN=${IOLAB:-target/release/iolab}
ROUNDS=${1:-3}
RT=${2:-3s}
DIR=${IOLAB_BENCH_DIR:-/var/tmp}
WORK=$(mktemp -d /tmp/iolab-remote-bench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
ORDERS=("iolab,nvme-tcp,tgtd" "nvme-tcp,tgtd,iolab" "tgtd,iolab,nvme-tcp")
for r in $(seq 1 "$ROUNDS"); do
  order=${ORDERS[$(( (r - 1) % 3 ))]}
  echo "round $r: das,$order" >&2
  "$BIN" remote -t "$DIR" --size 1g --transports "das,$order" --mixes 100,80,50,20,0 \
    --qd 1,32 --rates none --breakdown 3000 --runtime "$RT" --ramp 1s --quiet -o "$WORK/r$r"
done
python3 - "$WORK" "$ROUNDS" <<'PY'
import json, statistics as st, sys
work, rounds = sys.argv[1], int(sys.argv[2])
runs = [json.load(open(f"{work}/r{r}/results.json")) for r in range(1, rounds + 1)]
rows = {}
for run in runs:
    for row in run["analysis"]["remote"]:
        rows.setdefault((row["transport"], row["workload"]), []).append(row)
def med(xs):
    xs = [x for x in xs if x is not None]
    return st.median(xs) if xs else None
def f(v, scale=1.0, fmt="{:.1f}"):
    return "-" if v is None else fmt.format(v / scale)
print("| transport | workload | IOPS | vs DAS, median (min..max) | mean us | p95 us | CPU us/IO ini | CPU us/IO tgt |")
print("|---|---|---|---|---|---|---|---|")
order = ["das", "nbd-iolab", "nvme-tcp-iolab", "iscsi-tgtd"]
for (t, w), rs in sorted(rows.items(), key=lambda kv: (kv[0][1], order.index(kv[0][0]) if kv[0][0] in order else 9)):
    ratios = [r["iops_vs_das"] for r in rs]
    print(f"| {t} | {w} | {med([r['iops'] for r in rs]):.0f} | {med(ratios):.2f} ({min(ratios):.2f}..{max(ratios):.2f}) | "
          f"{f(med([r['mean_ns'] for r in rs]), 1e3)} | {f(med([r['p95_ns'] for r in rs]), 1e3)} | "
          f"{f(med([r.get('host_cpu_us_per_io') for r in rs]))} | {f(med([r.get('target_cpu_us_per_io') for r in rs]))} |")
print()
print("| breakdown (QD1 reads, us) | initiator | fabric out | target | device | fabric back | sum | point mean |")
print("|---|---|---|---|---|---|---|---|")
for t in ["nbd-iolab", "nvme-tcp-iolab"]:
    bs = [run["extra"]["remote"].get("breakdown", {}).get(t) for run in runs]
    bs = [b for b in bs if b]
    if not bs:
        continue
    keys = ["initiator_ns", "fabric_out_ns", "target_ns", "device_ns", "fabric_back_ns", "latency_ns", "point_mean_ns"]
    print(f"| {t} | " + " | ".join(f(med([b.get(k) for b in bs]), 1e3) for k in keys) + " |")
busy = sum(1 for run in runs for w in run.get("warnings", []) if "busy" in w)
print(f"\n{rounds} rounds; busy-machine warnings: {busy}")
PY

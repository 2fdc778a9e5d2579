#!/usr/bin/env bash
# Batched random access (Bingmann) on this machine: the batched-random
# profile (B 4k..64m x k 1..4096, trimmed to the budget), then the
# effective parallelism (largest batching speedup) and the k reaching 90%.
# Usage: bench/sweep_batched.sh [DIR] [BUDGET]   (default /var/tmp, 3m)
set -euo pipefail
DIR=${1:-/var/tmp}
BUDGET=${2:-3m}
IOLAB=${IOLAB:-target/release/iolab}
OUT=$(mktemp /tmp/iolab-batched.XXXXXX.json)
set -x
"$IOLAB" device --target "$DIR" --size 4g --engine io_uring --profile batched-random \
  --budget "$BUDGET" --quiet --json "$OUT"
set +x
python3 - "$OUT" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for g in r["analysis"]["batching"]:
    par = g["parallelism"]
    print(f"group: {g['group']}")
    print(f"effective parallelism (max speedup): {par['max_speedup']:.1f}x at B={par['bs']} k={par['k_at_max']}; "
          f"90% reached at k={par['k_reaching_90pct']}")
    print("speedup vs k per B (per-block time at k=1 / at k):")
    for b in g["per_bs"]:
        cells = " ".join(f"k{s['k']}={s['speedup']:.1f}" for s in b["speedup"])
        print(f"  B={b['bs']:>9}: {cells}")
    print("bandwidth: for each k the smallest B reaching 90% of the max MiB/s:")
    for k in g["bandwidth_by_k"]:
        print(f"  k={k['k']:>5}: max {k['max_mib_s']:8.1f} MiB/s at B={k['bs_at_max']}, 90% at B={k['bs_reaching_90pct']}")
wall = sum(p["duration_ns"] for p in r["points"]) / 1e9
print(f"{len(r['points'])} points, {wall:.0f} s measured; skipped: {len(r.get('extra', {}).get('skipped_points', []))}")
PY
echo "results: $OUT"

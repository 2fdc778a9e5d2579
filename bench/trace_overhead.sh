#!/usr/bin/env bash
# Breakdown of 4k random reads at QD1 and QD16 for psync, aio and io_uring,
# and the tracing overhead: every configuration runs untraced (A) then traced
# (B), in ROUNDS rounds (EXTRA="--no-syscalls" to trace without syscalls); prints the median overhead with its spread, and the
# per-stage means of the median round. Needs root (tracefs).
set -euo pipefail
IOLAB=${IOLAB:-target/release/iolab}
ROUNDS=${ROUNDS:-3}
RUNTIME=${RUNTIME:-3s}
DIR=${DIR:-/var/tmp}
OUT=$(mktemp -d /var/tmp/iolab-bench-trace.XXXXXX)
for r in $(seq 1 "$ROUNDS"); do
  echo "# round $r: $IOLAB trace --dir $DIR --size ${SIZE:-1G} --runtime $RUNTIME --engine psync,aio,io_uring --qd 1,16 ${EXTRA:-} -o $OUT/round$r.json" >&2
  "$IOLAB" trace --dir "$DIR" --size ${SIZE:-1G} --runtime "$RUNTIME" --engine psync,aio,io_uring --qd 1,16 ${EXTRA:-} -o "$OUT/round$r.json" > "$OUT/round$r.txt"
done
python3 - "$OUT" "$ROUNDS" <<'PY'
import json, sys, statistics as st
out, rounds = sys.argv[1], int(sys.argv[2])
runs = [json.load(open(f"{out}/round{r}.json")) for r in range(1, rounds + 1)]
labels = [p["name"] for p in runs[0]["points"]]
print("## Tracing overhead (mean latency traced / untraced - 1), %d rounds\n" % rounds)
print("| configuration | untraced mean us | traced mean us | overhead median | min | max | IOPS traced/untraced |")
print("|---|---|---|---|---|---|---|")
for i, l in enumerate(labels):
    t = [r["points"][i]["extra"]["trace"] for r in runs]
    ov = [x["overhead"] * 100 for x in t]
    ir = st.median([x["traced_iops"] / x["untraced_iops"] for x in t])
    print(f"| {l} | {st.median([x['untraced_mean_ns'] for x in t])/1e3:.1f} | {st.median([x['traced_mean_ns'] for x in t])/1e3:.1f} | {st.median(ov):+.1f}% | {min(ov):+.1f}% | {max(ov):+.1f}% | {ir:.3f} |")
pairs = [sum((r["points"][i]["extra"]["trace"].get("overhead_pairs", []) for r in runs), []) for i in range(len(labels))]
if any(len(v) > len(runs) for v in pairs):
    print("\n### All untraced/traced pairs (alternating order, --overhead-pairs)\n")
    print("| configuration | pairs | median | 25th pct | 75th pct |")
    print("|---|---|---|---|---|")
    for l, v in zip(labels, pairs):
        v = [x * 100 for x in v]
        q = st.quantiles(v, n=4) if len(v) > 1 else [v[0]] * 3
        print(f"| {l} | {len(v)} | {st.median(v):+.1f}% | {q[0]:+.1f}% | {q[2]:+.1f}% |")
print("\n## Stage means (us), median over rounds; share of the mean request\n")
stages = []
for r in runs:
    for p in r["points"]:
        for s in p["extra"]["trace"]["breakdown"]["stages"]:
            if s["stage"] not in stages:
                stages.append(s["stage"])
print("| stage | " + " | ".join(labels) + " |")
print("|---|" + "---|" * len(labels))
for s in stages + ["total"]:
    row = []
    for i, _ in enumerate(labels):
        vals = []
        for r in runs:
            b = r["points"][i]["extra"]["trace"]["breakdown"]
            ss = b["total"] if s == "total" else next((x for x in b["stages"] if x["stage"] == s), None)
            if ss:
                # contribution to the mean request = mean * n / requests
                vals.append((ss["mean_ns"] * ss["n"] / b["requests"] / 1e3, ss["share"] * 100))
        row.append(f"{st.median(v[0] for v in vals):.1f} ({st.median(v[1] for v in vals):.0f}%)" if vals else "")
    print(f"| {s} | " + " | ".join(row) + " |")
print("\n| configuration | software share | device share (D2irq) | requests | completed on another CPU | events lost |")
print("|---|---|---|---|---|---|")
for i, l in enumerate(labels):
    t = [r["points"][i]["extra"]["trace"] for r in runs]
    b = [x["breakdown"] for x in t]
    print(f"| {l} | {st.median(x['software_share'] for x in b)*100:.1f}% | {st.median(x['device_share'] for x in b)*100:.1f}% | {b[-1]['requests']} | {b[-1]['cross_cpu_completions']} | {sum(x['lost']['overrun'] + x['lost']['dropped'] + x['missed_in_pages'] for x in t)} |")
PY
echo "raw output: $OUT" >&2

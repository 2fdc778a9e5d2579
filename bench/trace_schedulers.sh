#!/usr/bin/env bash
# The breakdown of 4k random reads per I/O scheduler (none, mq-deadline, bfq,
# kyber) for psync QD1 and io_uring QD16; iolab restores the original
# scheduler afterwards. Prints per-configuration block-layer and device means.
set -euo pipefail
IOLAB=${IOLAB:-target/release/iolab}
RUNTIME=${RUNTIME:-3s}
DIR=${DIR:-/var/tmp}
ROUNDS=${ROUNDS:-3}
OUT=$(mktemp -d /var/tmp/iolab-bench-sched.XXXXXX)
before=$(cat /sys/block/vda/queue/scheduler)
for r in $(seq 1 "$ROUNDS"); do
  echo "# round $r: $IOLAB trace --dir $DIR --size ${SIZE:-1G} --runtime $RUNTIME --engine psync,io_uring --qd 16 --scheduler none,mq-deadline,bfq,kyber --no-overhead -o $OUT/round$r.json" >&2
  "$IOLAB" trace --dir "$DIR" --size ${SIZE:-1G} --runtime "$RUNTIME" --engine psync,io_uring --qd 16 \
    --scheduler none,mq-deadline,bfq,kyber --no-overhead -o "$OUT/round$r.json" > "$OUT/round$r.txt"
done
after=$(cat /sys/block/vda/queue/scheduler)
echo "scheduler before: $before; after: $after" >&2
python3 - "$OUT" "$ROUNDS" <<'PY'
import json, sys, statistics as st
out, rounds = sys.argv[1], int(sys.argv[2])
runs = [json.load(open(f"{out}/round{r}.json")) for r in range(1, rounds + 1)]
BLOCK = {"Q2G", "G2I", "I2D", "G2D", "Q2M", "M2D", "Q2D"}
print("| configuration | mean us | submit us | block layer us (Q2G+G2I+I2D) | device D2irq us | completion+reap us | software % |")
print("|---|---|---|---|---|---|---|")
for i, p in enumerate(runs[0]["points"]):
    def contrib(b, names):
        return sum(s["mean_ns"] * s["n"] / b["requests"] for s in b["stages"] if s["stage"] in names) / 1e3
    bs = [r["points"][i]["extra"]["trace"]["breakdown"] for r in runs]
    print(f"| {p['name']} | {st.median(b['total']['mean_ns'] for b in bs)/1e3:.1f} "
          f"| {st.median(contrib(b, {'user prepare','syscall+submit','prepare+submit'}) for b in bs):.1f} "
          f"| {st.median(contrib(b, BLOCK) for b in bs):.1f} "
          f"| {st.median(contrib(b, {'D2irq device','D2C device'}) for b in bs):.1f} "
          f"| {st.median(contrib(b, {'irq2C driver','completion path','reaping','completion+reap'}) for b in bs):.1f} "
          f"| {st.median(b['software_share'] for b in bs)*100:.1f}% |")
PY
echo "raw output: $OUT" >&2

#!/usr/bin/env bash
# When do the open loops of iolab and fio really issue their requests? 4 KiB
# random reads, O_DIRECT, io_uring, QD 8, Poisson arrivals at LOADS percent
# of the file's closed-loop maximum (as bench/openloop_cpu_fio.sh), iolab
# (`--rate --arrival poisson`) and fio (`rate_iops` + `rate_process=poisson`)
# one after the other per round. The block layer's issue tracepoint
# (block:block_rq_issue, recorded with perf) gives every request's issue
# time at the device, the same for both tools; printed per tool and load:
# the gaps between consecutive issues against the exponential gaps a
# Poisson process at that rate has (share of gaps under 10 us and under a
# tenth of the mean gap, coefficient of variation: 1.0 for Poisson), and
# the worker's context switches per request (from /proc/PID/task/*/schedstat
# is not needed here: perf's own count of sched:sched_switch by the tool).
# Needs root (tracefs) and perf.
#   bash bench/openloop_issue_pattern.sh [DIR] [ROUNDS]
#   env: IOLAB=target/release/iolab LOADS="1 10 50" RT=3 QD=8
set -euo pipefail
IOLAB=${IOLAB:-target/release/iolab}
DIR=${1:-/var/tmp}
ROUNDS=${2:-3}
LOADS=${LOADS:-1 10 50}
RT=${RT:-3}
QD=${QD:-8}
FILE="$DIR/iolab-openloop-pattern.bin"
OUT=$(mktemp -d /var/tmp/iolab-bench-olpat.XXXXXX)
trap 'rm -rf "$OUT" "$FILE"' EXIT
command -v perf >/dev/null || { echo "perf not found"; exit 1; }
fio --name=fill --filename="$FILE" --size=256M --rw=write --bs=1M --direct=1 --output=/dev/null
fio --name=max --filename="$FILE" --ioengine=io_uring --rw=randread --bs=4k --iodepth="$QD" --direct=1 \
  --runtime=3 --time_based --output-format=json --output="$OUT/max.json"
max=$(python3 -c "import json; print(int(json.load(open('$OUT/max.json'))['jobs'][0]['read']['iops']))")
echo "maximum $max IOPS (fio, closed loop, QD $QD); load average $(cut -d' ' -f1-3 /proc/loadavg)"
trace() { # OUT COMMAND...: issue times and switches of COMMAND
  local out=$1; shift
  perf record -q -e block:block_rq_issue -e sched:sched_switch -o "$out.data" -- "$@" >/dev/null 2>&1
  perf script -i "$out.data" -F comm,tid,time,event 2>/dev/null >"$out.txt"
}
for r in $(seq 1 "$ROUNDS"); do
  for pct in $LOADS; do
    rate=$((max * pct / 100))
    trace "$OUT/iolab-$pct-$r" "$IOLAB" device --target "$FILE" --engine io_uring --rw randread --bs 4k \
      --qd "$QD" --rate "$rate" --arrival poisson --runtime "${RT}s" --json "$OUT/iolab-$pct-$r.json" --force --quiet
    trace "$OUT/fio-$pct-$r" fio --name=ol --filename="$FILE" --ioengine=io_uring --rw=randread --bs=4k \
      --iodepth="$QD" --direct=1 --rate_iops="$rate" --rate_process=poisson --runtime="$RT" --time_based \
      --output-format=json --output="$OUT/fio-$pct-$r.json"
  done
done
python3 - "$OUT" "$ROUNDS" "$LOADS" "$max" <<'PY'
import math, statistics as st, sys
out, rounds, loads, mx = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), int(sys.argv[4])
def pattern(path, rate):
    issues, switches, tids = [], {}, {}
    for line in open(path):
        f = line.split()
        if len(f) < 4:
            continue
        comm, tid, t, ev = f[0], f[1], float(f[2].rstrip(":")), f[3]
        if "block_rq_issue" in ev:
            issues.append(t)
            tids[tid] = tids.get(tid, 0) + 1
        elif "sched_switch" in ev:
            switches[tid] = switches.get(tid, 0) + 1
    issues.sort()
    # The middle of the run: a second in from each end.
    lo, hi = issues[0] + 1.0, issues[-1] - 0.5
    mid = [t for t in issues if lo <= t <= hi]
    gaps = [(b - a) * 1e6 for a, b in zip(mid, mid[1:])]
    mean = 1e6 / rate
    worker = max(tids, key=tids.get)
    cv = st.pstdev(gaps) / st.mean(gaps)
    under10 = sum(g < 10 for g in gaps) / len(gaps)
    under_tenth = sum(g < mean / 10 for g in gaps) / len(gaps)
    return under10, under_tenth, cv, switches.get(worker, 0) / max(len(issues), 1)
print("\nmedian over rounds; a Poisson process has CV 1.0, and the shares printed under 'Poisson'\n")
print("| load | rate/s | gaps < 10 us: Poisson | iolab | fio | gaps < mean/10: Poisson | iolab | fio | CV of gaps iolab | fio | switches per request iolab | fio |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for pct in loads:
    rate = mx * int(pct) // 100
    mean = 1e6 / rate
    res = {tool: [pattern(f"{out}/{tool}-{pct}-{r}.txt", rate) for r in range(1, rounds + 1)] for tool in ("iolab", "fio")}
    med = lambda tool, k: st.median(x[k] for x in res[tool])
    print(f"| {pct}% | {rate} | {100 * (1 - math.exp(-10 / mean)):.1f}% | {100 * med('iolab', 0):.1f}% | {100 * med('fio', 0):.1f}% | "
          f"{100 * (1 - math.exp(-0.1)):.1f}% | {100 * med('iolab', 1):.1f}% | {100 * med('fio', 1):.1f}% | "
          f"{med('iolab', 2):.2f} | {med('fio', 2):.2f} | {med('iolab', 3):.2f} | {med('fio', 3):.2f} |")
PY

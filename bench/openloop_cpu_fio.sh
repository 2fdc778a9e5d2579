#!/usr/bin/env bash
# The open loop's CPU per request and tail latency against fio's: 4 KiB
# random reads, O_DIRECT, QD 8, Poisson arrivals at LOADS percent (default
# 1, 10 and 50) of the file's maximum IOPS (fio's closed loop at the same
# QD and engine), iolab (`--rate --arrival poisson`) and fio (`rate_iops` +
# `rate_process=poisson`) interleaved A B / B A over ROUNDS rounds. Prints
# per engine and load the median (min..max over rounds) of CPU per request
# (process usr+sys over completed requests) of each and their ratio, and of
# the p99 latency: iolab's from the intended issue time (what a client
# sees), fio's total latency from its actual issue (`lat_percentiles`);
# then iolab's p99 from the actual issue (fio's view of the same requests)
# and the p99 of its issue delay (how late requests started).
# With OLD=path/to/older/iolab, that build runs in the same rounds too
# (iolab fio old / old fio iolab) and its CPU and p99 are printed beside.
#   IOLAB=target/release/iolab bash bench/openloop_cpu_fio.sh [DIR] [ROUNDS]
#   env: LOADS="1 10 50" RT=3 (s per run) QD=8 ENGINES="io_uring aio" OLD=
set -euo pipefail
IOLAB=${IOLAB:-target/release/iolab}
DIR=${1:-/var/tmp}
ROUNDS=${2:-5}
LOADS=${LOADS:-1 10 50}
RT=${RT:-3}
QD=${QD:-8}
ENGINES=${ENGINES:-io_uring}
OLD=${OLD:-}
FILE="$DIR/iolab-openloop-cpu-fio.bin"
OUT=$(mktemp -d /var/tmp/iolab-bench-olfio.XXXXXX)
trap 'rm -rf "$OUT" "$FILE"' EXIT
fio --name=fill --filename="$FILE" --size=256M --rw=write --bs=1M --direct=1 --output=/dev/null
fioeng() { if [ "$1" = aio ]; then echo libaio; else echo "$1"; fi; }
run_fio() { # ENGINE RATE(0: closed loop) OUT
  local rate=(); [ "$2" = 0 ] || rate=(--rate_iops="$2" --rate_process=poisson)
  fio --name=ol --filename="$FILE" --ioengine="$(fioeng "$1")" --rw=randread --bs=4k --iodepth="$QD" \
    --direct=1 "${rate[@]}" --lat_percentiles=1 --runtime="$RT" --time_based \
    --output-format=json --output="$3"
}
run_iolab() { # ENGINE RATE OUT [BINARY]
  "${4:-$IOLAB}" device --target "$FILE" --engine "$1" --rw randread --bs 4k --qd "$QD" --rate "$2" \
    --arrival poisson --runtime "${RT}s" --json "$3" --force --quiet >/dev/null 2>&1
}
declare -A RATE
for eng in $ENGINES; do
  run_fio "$eng" 0 "$OUT/max-$eng.json"
  max=$(python3 -c "import json; print(int(json.load(open('$OUT/max-$eng.json'))['jobs'][0]['read']['iops']))")
  for pct in $LOADS; do RATE[$eng-$pct]=$((max * pct / 100)); done
  echo "$eng: maximum $max IOPS (fio, closed loop, QD $QD); rates: $(for p in $LOADS; do printf '%s%%=%s/s ' "$p" "${RATE[$eng-$p]}"; done)"
done
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq 1 "$ROUNDS"); do
  for pct in $LOADS; do
    for eng in $ENGINES; do
      rate=${RATE[$eng-$pct]}
      a="$OUT/iolab-$eng-$pct-$r.json" b="$OUT/fio-$eng-$pct-$r.json"
      o="$OUT/old-$eng-$pct-$r.json"
      if [ $((r % 2)) = 1 ]; then
        run_iolab "$eng" "$rate" "$a"; run_fio "$eng" "$rate" "$b"
        [ -z "$OLD" ] || run_iolab "$eng" "$rate" "$o" "$OLD"
      else
        [ -z "$OLD" ] || run_iolab "$eng" "$rate" "$o" "$OLD"
        run_fio "$eng" "$rate" "$b"; run_iolab "$eng" "$rate" "$a"
      fi
    done
  done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$OUT" "$ROUNDS" "$LOADS" "$ENGINES" <<'PY'
import json, sys, statistics as st
out, rounds, loads, engines = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4].split()
def iolab(eng, pct, r, build="iolab"):
    p = json.load(open(f"{out}/{build}-{eng}-{pct}-{r}.json"))["points"][0]
    iops = p["total"]["iops"]
    cpu = (p["cpu"]["usr_pct"] + p["cpu"]["sys_pct"]) / 100
    ol = p["extra"]["open_loop"]
    p99 = ol["lat_from_intended"]["read"]["percentiles_ns"]["99.000000"] / 1e3
    # The same requests from their actual issue (fio's view), and how late they started.
    p99_issue = p["ops"]["read"]["lat"]["percentiles_ns"]["99.000000"] / 1e3
    delay99 = (ol.get("issue_delay") or {}).get("percentiles_ns", {}).get("99.000000", 0) / 1e3
    return cpu / iops * 1e6, p99, iops, ol["late_fraction"], ol["target_iops"], p99_issue, delay99
def fio(eng, pct, r):
    j = json.load(open(f"{out}/fio-{eng}-{pct}-{r}.json"))["jobs"][0]
    iops = j["read"]["iops"]
    cpu = (j["usr_cpu"] + j["sys_cpu"]) / 100
    return cpu / iops * 1e6, j["read"]["lat_ns"]["percentile"]["99.000000"] / 1e3, iops
med = lambda v: f"{st.median(v):.1f}"
rng = lambda v: f"{st.median(v):.2f} ({min(v):.2f}..{max(v):.2f})"
print(f"\nmedian of {rounds} rounds (min..max over rounds)\n")
print("| engine | load | rate/s | IOPS iolab / fio | CPU us/request iolab | fio | iolab/fio | "
      "p99 us iolab (from intended) | fio (lat) | iolab/fio | iolab late issues | "
      "iolab p99 from issue | iolab issue delay p99 |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for eng in engines:
    for pct in loads:
        a = [iolab(eng, pct, r) for r in range(1, rounds + 1)]
        b = [fio(eng, pct, r) for r in range(1, rounds + 1)]
        cpu = [x[0] / y[0] for x, y in zip(a, b)]
        p99 = [x[1] / y[1] for x, y in zip(a, b)]
        print(f"| {eng} | {pct}% | {a[0][4]:.0f} | "
              f"{med([x[2] for x in a])} / {med([y[2] for y in b])} | "
              f"{med([x[0] for x in a])} | {med([y[0] for y in b])} | {rng(cpu)} | "
              f"{med([x[1] for x in a])} | {med([y[1] for y in b])} | {rng(p99)} | "
              f"{100 * st.median(x[3] for x in a):.1f}% | "
              f"{med([x[5] for x in a])} | {med([x[6] for x in a])} |")
import os
if os.path.exists(f"{out}/old-{engines[0]}-{loads[0]}-1.json"):
    print("\n| engine | load | CPU us/request old build | new | new/old | p99 us old | new | late issues old / new |")
    print("|---|---|---|---|---|---|---|---|")
    for eng in engines:
        for pct in loads:
            a = [iolab(eng, pct, r) for r in range(1, rounds + 1)]
            o = [iolab(eng, pct, r, "old") for r in range(1, rounds + 1)]
            cpu = [x[0] / y[0] for x, y in zip(a, o)]
            print(f"| {eng} | {pct}% | {med([y[0] for y in o])} | {med([x[0] for x in a])} | {rng(cpu)} | "
                  f"{med([y[1] for y in o])} | {med([x[1] for x in a])} | "
                  f"{100 * st.median(y[3] for y in o):.1f}% / {100 * st.median(x[3] for x in a):.1f}% |")
PY

#!/usr/bin/env bash
# The polling data path against the sleeping one (issue 47, part 2: the
# SPDK line of the NVMe-oF study). On loopback, for NBD and NVMe/TCP,
# iolab's target and initiator both sleeping (`serve`, `device`) and both
# busy-polling (`serve --poll`, `device --poll`), interleaved over ROUNDS
# rounds (sleep then poll in odd rounds, poll then sleep in even ones),
# each beside local DAS (io_uring, O_DIRECT) on the same file:
#   unloaded 4 KiB random reads at QD1 (p50 and mean latency, IOPS),
#   QD32 IOPS, CPU us per I/O on the initiator (the point's usr+sys / ops)
#   and on the target (utime+stime of the serve process over the run,
#   from /proc/PID/stat: a polling reactor's 100% counts), and how much of
#   the remote-vs-DAS latency gap polling closes:
#   (sleep p50 - poll p50) / (sleep p50 - DAS p50).
# Prints per protocol the medians over rounds and the poll/sleep ratios
# with their range. The target runs on CPU SERVER_CPU (pinned by --poll-cpus
# when polling, by taskset when sleeping), the initiator on CLIENT_CPU
# (--cpus): give each its own core on a quiet machine. With NS=1 (root)
# it also runs `iolab remote` over its namespace pair (veth) with
# das,iolab,iolab-poll,nvme-tcp,nvme-tcp-poll and prints that table.
#   IOLAB=target/release/iolab bash bench/poll_vs_sleep.sh [ROUNDS] [RUNTIME]
# Environment: SIZE (file size, 1g), DIR (where the file goes, /var/tmp),
# SERVER_CPU (0), CLIENT_CPU (1), NS (0).
set -euo pipefail
BIN=${IOLAB:-target/release/iolab}
ROUNDS=${1:-5}
RT=${2:-5s}
SIZE=${SIZE:-1g}
DIR=${DIR:-/var/tmp}
SCPU=${SERVER_CPU:-0}
CCPU=${CLIENT_CPU:-1}
WORK=$(mktemp -d /tmp/iolab-poll.XXXXXX)
FILE=$(mktemp "$DIR/iolab-poll-bench.XXXXXX.img")
SRV=
cleanup() { [ -n "$SRV" ] && kill "$SRV" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$WORK" "$FILE"; }
trap cleanup EXIT
free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
ticks() { python3 -c "f=open('/proc/$1/stat').read().rsplit(')',1)[1].split();print(int(f[11])+int(f[12]))"; }
HZ=$(getconf CLK_TCK)
# The file every setup reads: written once with random data.
python3 - "$FILE" "$SIZE" <<'PY'
import os, sys
path, size = sys.argv[1], sys.argv[2].lower()
n = int(size[:-1]) * {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[size[-1]] if size[-1] in "kmg" else int(size)
chunk = os.urandom(1 << 20)
with open(path, "wb") as f:
    for _ in range(n >> 20):
        f.write(chunk)
PY
# One point: ROW_PREFIX QD URL|FILE EXTRA... -> "qd iops p50_ns mean_ns ini_us_per_io"
point() {
  local qd=$1 target=$2; shift 2
  "$BIN" device --target "$target" --rw randread --bs 4k --qd "$qd" --runtime "$RT" --ramp 1s \
    --cpus "$CCPU" --overwrite --quiet -o "$WORK/p.json" "$@"
  python3 - "$WORK/p.json" "$qd" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["points"][0]
lat = p["ops"]["read"]["lat"]
c = p["cpu"]
print(sys.argv[2], p["total"]["iops"], lat["percentiles_ns"]["50.000000"], lat["mean_ns"],
      (c["user_ns"] + c["sys_ns"]) / 1e3 / max(p["total"]["ops"], 1))
PY
}
# Serve FILE over PROTO in MODE (sleep|poll); sets SRV and URL.
serve() {
  local proto=$1 mode=$2 port
  port=$(free_port)
  rm -f "$WORK/serve.out" "$WORK/p.json"
  local args=(serve -t "$FILE" --overwrite --protocol "$proto" --listen "127.0.0.1:$port" --quiet)
  if [ "$mode" = poll ]; then
    "$BIN" "${args[@]}" --poll --poll-cpus "$SCPU" > "$WORK/serve.out" 2> "$WORK/serve.err" &
  else
    taskset -c "$SCPU" "$BIN" "${args[@]}" > "$WORK/serve.out" 2> "$WORK/serve.err" &
  fi
  SRV=$!
  for _ in $(seq 100); do grep -q "://" "$WORK/serve.out" 2>/dev/null && break; sleep 0.1; done
  URL=$(grep -o '[a-z-]*://[^ ]*' "$WORK/serve.out" | head -1)
  [ -n "$URL" ] || { cat "$WORK/serve.err" >&2; exit 1; }
}
unserve() { kill -TERM "$SRV"; wait "$SRV" 2>/dev/null || true; SRV=; }
for r in $(seq 1 "$ROUNDS"); do
  if [ $((r % 2)) -eq 1 ]; then order="sleep poll"; else order="poll sleep"; fi
  echo "round $r: das, then nbd and nvme-tcp: $order" >&2
  for qd in 1 32; do
    rm -f "$WORK/p.json"
    row=$(point "$qd" "$FILE")
    echo "$r das das $row 0" >> "$WORK/rows"
  done
  for proto in nbd nvme-tcp; do
    for mode in $order; do
      serve "$proto" "$mode"
      extra=()
      [ "$mode" = poll ] && extra=(--poll)
      for qd in 1 32; do
        t0=$(ticks "$SRV")
        rm -f "$WORK/p.json"
        row=$(point "$qd" "$URL" "${extra[@]}")
        t1=$(ticks "$SRV")
        ops=$(python3 -c "import json;print(json.load(open('$WORK/p.json'))['points'][0]['total']['ops'])")
        # The target's CPU over the whole device run (ramp and set-up
        # included: a polling target's share is what it costs).
        tgt=$(python3 -c "print(($t1 - $t0) / $HZ * 1e6 / max($ops, 1))")
        echo "$r $proto $mode $row $tgt" >> "$WORK/rows"
      done
      unserve
    done
  done
done
python3 - "$WORK/rows" "$ROUNDS" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
rounds = int(sys.argv[2])
# round proto mode qd iops p50 mean ini tgt
def get(proto, mode, qd, col):
    return {int(r[0]): float(r[col]) for r in rows if r[1] == proto and r[2] == mode and r[3] == qd}
IOPS, P50, MEAN, INI, TGT = 4, 5, 6, 7, 8
def med(d):
    return st.median(d.values()) if d else float("nan")
def ratio(a, b):
    xs = [a[k] / b[k] for k in a if k in b and b[k]]
    return f"{st.median(xs):.2f} ({min(xs):.2f}..{max(xs):.2f})" if xs else "-"
das_p50 = get("das", "das", "1", P50)
print(f"DAS (io_uring, O_DIRECT): QD1 p50 {med(das_p50)/1e3:.1f} us, mean {med(get('das','das','1',MEAN))/1e3:.1f} us, "
      f"QD1 IOPS {med(get('das','das','1',IOPS)):.0f}, QD32 IOPS {med(get('das','das','32',IOPS)):.0f}, "
      f"CPU us/IO QD1 {med(get('das','das','1',INI)):.1f}")
print()
print("| protocol | mode | QD1 p50 us | QD1 mean us | QD1 IOPS | QD32 IOPS | CPU us/IO ini QD1 / QD32 | CPU us/IO tgt QD1 / QD32 |")
print("|---|---|---|---|---|---|---|---|")
for proto in ("nbd", "nvme-tcp"):
    for mode in ("sleep", "poll"):
        print(f"| {proto} | {mode} | {med(get(proto,mode,'1',P50))/1e3:.1f} | {med(get(proto,mode,'1',MEAN))/1e3:.1f} | "
              f"{med(get(proto,mode,'1',IOPS)):.0f} | {med(get(proto,mode,'32',IOPS)):.0f} | "
              f"{med(get(proto,mode,'1',INI)):.1f} / {med(get(proto,mode,'32',INI)):.1f} | "
              f"{med(get(proto,mode,'1',TGT)):.1f} / {med(get(proto,mode,'32',TGT)):.1f} |")
print()
print("| protocol | poll/sleep QD1 p50 | poll/sleep QD1 IOPS | poll/sleep QD32 IOPS | poll/sleep CPU/IO ini QD1 | poll/sleep CPU/IO tgt QD1 | gap to DAS closed (QD1 p50) |")
print("|---|---|---|---|---|---|---|")
for proto in ("nbd", "nvme-tcp"):
    s50, p50 = get(proto, "sleep", "1", P50), get(proto, "poll", "1", P50)
    closed = [(s50[k] - p50[k]) / (s50[k] - das_p50[k]) for k in s50 if k in p50 and k in das_p50 and s50[k] > das_p50[k]]
    closed_s = f"{st.median(closed):.0%} ({min(closed):.0%}..{max(closed):.0%})" if closed else "-"
    print(f"| {proto} | {ratio(p50, s50)} | {ratio(get(proto,'poll','1',IOPS), get(proto,'sleep','1',IOPS))} | "
          f"{ratio(get(proto,'poll','32',IOPS), get(proto,'sleep','32',IOPS))} | "
          f"{ratio(get(proto,'poll','1',INI), get(proto,'sleep','1',INI))} | "
          f"{ratio(get(proto,'poll','1',TGT), get(proto,'sleep','1',TGT))} | {closed_s} |")
print(f"\n{rounds} rounds on loopback; medians over rounds, ratios per round: median (min..max)")
PY
if [ "${NS:-0}" = 1 ]; then
  echo "namespace pair: iolab remote over veth" >&2
  for r in $(seq 1 "$ROUNDS"); do
    if [ $((r % 2)) -eq 1 ]; then order="iolab,iolab-poll,nvme-tcp,nvme-tcp-poll"; else order="iolab-poll,iolab,nvme-tcp-poll,nvme-tcp"; fi
    "$BIN" remote -t "$DIR" --size "$SIZE" --transports "das,$order" --mixes 100 --qd 1,32 \
      --rates none --breakdown 0 --runtime "$RT" --ramp 1s --quiet -o "$WORK/ns$r"
  done
  python3 - "$WORK" "$ROUNDS" <<'PY'
import json, statistics as st, sys
work, rounds = sys.argv[1], int(sys.argv[2])
rows = {}
for r in range(1, rounds + 1):
    for row in json.load(open(f"{work}/ns{r}/results.json"))["analysis"]["remote"]:
        rows.setdefault((row["transport"], row["workload"]), []).append(row)
def med(xs):
    xs = [x for x in xs if x is not None]
    return st.median(xs) if xs else None
def f(v, scale=1.0):
    return "-" if v is None else f"{v / scale:.1f}"
print("\n| transport (namespaces) | workload | IOPS | vs DAS | mean us | CPU us/IO ini | CPU us/IO tgt |")
print("|---|---|---|---|---|---|---|")
for (t, w), rs in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    print(f"| {t} | {w} | {f(med([r['iops'] for r in rs]))} | {f(med([r.get('iops_vs_das') for r in rs]))} | "
          f"{f(med([r['mean_ns'] for r in rs]), 1e3)} | {f(med([r.get('host_cpu_us_per_io') for r in rs]))} | "
          f"{f(med([r.get('target_cpu_us_per_io') for r in rs]))} |")
PY
fi

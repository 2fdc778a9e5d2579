#!/usr/bin/env bash
# iolab's iscsi engine (libiscsi, asynchronous) against libiscsi's own
# iscsi-perf on the same tgtd target on loopback (issue 12): 4k random
# reads at QD 1 and 32, interleaved A B / B A over ROUNDS rounds. The LUN
# is a file in /dev/shm (tgtd's rdwr backing store), so the initiators and
# the target, not a disk, set the pace. Prints the median IOPS ratio
# iolab/iscsi-perf and the CPU per I/O of each client (usr+sys of the
# client process / requests), with spreads. Needs root (tgtd).
#   bash bench/iscsi_vs_iscsiperf.sh [ROUNDS] [RUNTIME_S]
set -euo pipefail
BIN=${IOLAB:-target/release/iolab}
ROUNDS=${1:-5}
RT=${2:-5}
WORK=$(mktemp -d /tmp/iolab-iscsi.XXXXXX)
LUN=$(mktemp /dev/shm/iolab-iscsi-lun.XXXXXX)
truncate -s 1G "$LUN"
PORT=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
CTL=$((30000 + PORT % 2000))
IQN=iqn.2025-11.io.iolab:bench
tgtd -f -C "$CTL" --iscsi portal=127.0.0.1:"$PORT" >/dev/null 2>&1 &
SRV=$!
trap 'kill -9 $SRV 2>/dev/null; rm -rf "$WORK" "$LUN" /var/run/tgtd/socket.$CTL*' EXIT
for _ in $(seq 50); do tgtadm -C "$CTL" --lld iscsi --op new --mode target --tid 1 -T "$IQN" 2>/dev/null && break; sleep 0.1; done
tgtadm -C "$CTL" --lld iscsi --op new --mode logicalunit --tid 1 --lun 1 -b "$LUN" --bstype rdwr
tgtadm -C "$CTL" --lld iscsi --op bind --mode target --tid 1 -I ALL
URL="iscsi://127.0.0.1:$PORT/$IQN/1"
"$BIN" device --target "$URL" --rw write --bs 1m --io-bytes 1g --overwrite --quiet -o "$WORK/fill.json"
iolab_run() { # QD -> "iops cpu_us_per_io"
  "$BIN" device --target "$URL" --rw randread --bs 4k --qd "$1" --runtime "${RT}s" --quiet -o "$WORK/i.json"
  python3 -c "
import json;p=json.load(open('$WORK/i.json'))['points'][0];c=p['cpu']
print(p['total']['iops'], (c['user_ns']+c['sys_ns'])/1e3/p['total']['ops'])"
}
perf_run() { # QD: iscsi-perf runs until SIGINT; its last 'iops average' is the run's
  python3 - "$1" "$URL" "$RT" <<'PY'
import re, resource, signal, subprocess, sys, time
qd, url, rt = sys.argv[1], sys.argv[2], float(sys.argv[3])
p = subprocess.Popen(["iscsi-perf", "-m", qd, "-b", "8", "-r", url],
                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
time.sleep(rt + 0.5)
p.send_signal(signal.SIGINT)
out = p.communicate()[0]
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
avg = [float(x) for x in re.findall(r"iops average (\d+)", out)]
iops = avg[-1]
secs = len(avg)
print(iops, (ru.ru_utime + ru.ru_stime) * 1e6 / (iops * secs))
PY
}
for r in $(seq 1 "$ROUNDS"); do
  for qd in 1 32; do
    if [ $((r % 2)) -eq 1 ]; then order="iolab perf"; else order="perf iolab"; fi
    for who in $order; do
      echo "$r $qd $who $(${who}_run "$qd")" >> "$WORK/rows"
    done
  done
done
python3 - "$WORK/rows" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
print("| QD | iolab IOPS | iscsi-perf IOPS | IOPS iolab/iscsi-perf, median (min..max) | CPU us/IO iolab / iscsi-perf |")
print("|---|---|---|---|---|")
for qd in ("1", "32"):
    i = {r[0]: (float(r[3]), float(r[4])) for r in rows if r[1] == qd and r[2] == "iolab"}
    f = {r[0]: (float(r[3]), float(r[4])) for r in rows if r[1] == qd and r[2] == "perf"}
    ri = [i[k][0] / f[k][0] for k in i if k in f]
    print(f"| {qd} | {st.median(v[0] for v in i.values()):.0f} | {st.median(v[0] for v in f.values()):.0f} | "
          f"{st.median(ri):.3f} ({min(ri):.3f}..{max(ri):.3f}) | "
          f"{st.median(v[1] for v in i.values()):.1f} / {st.median(v[1] for v in f.values()):.1f} |")
PY

#!/usr/bin/env bash
# iolab's NBD engine against fio's nbd engine (libnbd) on the same nbdkit
# memory export on loopback (issue 12): 4k random reads at QD 1 and 32,
# interleaved A B / B A over ROUNDS rounds. Prints the median IOPS ratio
# iolab/fio and the ratio of initiator CPU per I/O (usr+sys of the client
# process / requests), each with its spread. The server runs on the same
# 2 vCPUs, so both clients share the machine with it alike.
#   bash bench/nbd_vs_fio.sh [ROUNDS] [RUNTIME_S]
set -euo pipefail
BIN=${IOLAB:-target/release/iolab}
ROUNDS=${1:-5}
RT=${2:-5}
WORK=$(mktemp -d /tmp/iolab-nbd.XXXXXX)
PORT=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
nbdkit -f --exit-with-parent -i 127.0.0.1 -p "$PORT" --threads 16 memory 1G &
SRV=$!
trap 'kill $SRV 2>/dev/null; rm -rf "$WORK"' EXIT
for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.1; done
URL="nbd://127.0.0.1:$PORT/"
# Fill the export once so reads return data, not holes.
"$BIN" device --target "$URL" --rw write --bs 1m --io-bytes 1g --overwrite --quiet -o "$WORK/fill.json"
iolab_run() { # QD -> "iops cpu_us_per_io"
  "$BIN" device --target "$URL" --rw randread --bs 4k --qd "$1" --runtime "${RT}s" --quiet -o "$WORK/i.json"
  python3 -c "
import json;p=json.load(open('$WORK/i.json'))['points'][0];c=p['cpu']
print(p['total']['iops'], (c['user_ns']+c['sys_ns'])/1e3/p['total']['ops'])"
}
fio_run() { # QD
  fio --name=n --ioengine=nbd --uri="$URL" --rw=randread --bs=4k --iodepth="$1" --size=1g \
    --runtime="$RT" --time_based --output-format=json --output="$WORK/f.json"
  python3 -c "
import json;j=json.load(open('$WORK/f.json'))['jobs'][0];r=j['read']
ops=r['total_ios'];secs=j['job_runtime']/1e3
print(r['iops'], (j['usr_cpu']+j['sys_cpu'])/100*secs*1e6/ops)"
}
for r in $(seq 1 "$ROUNDS"); do
  for qd in 1 32; do
    if [ $((r % 2)) -eq 1 ]; then order="iolab fio"; else order="fio iolab"; fi
    for who in $order; do
      echo "$r $qd $who $(${who}_run "$qd")" >> "$WORK/rows"
    done
  done
done
python3 - "$WORK/rows" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
print("| QD | iolab IOPS | fio IOPS | IOPS iolab/fio, median (min..max) | CPU us/IO iolab / fio | CPU per I/O iolab/fio, median (min..max) |")
print("|---|---|---|---|---|---|")
for qd in ("1", "32"):
    i = {r[0]: (float(r[3]), float(r[4])) for r in rows if r[1] == qd and r[2] == "iolab"}
    f = {r[0]: (float(r[3]), float(r[4])) for r in rows if r[1] == qd and r[2] == "fio"}
    ri = [i[k][0] / f[k][0] for k in i if k in f]
    rc = [i[k][1] / f[k][1] for k in i if k in f]
    print(f"| {qd} | {st.median(v[0] for v in i.values()):.0f} | {st.median(v[0] for v in f.values()):.0f} | "
          f"{st.median(ri):.3f} ({min(ri):.3f}..{max(ri):.3f}) | "
          f"{st.median(v[1] for v in i.values()):.1f} / {st.median(v[1] for v in f.values()):.1f} | "
          f"{st.median(rc):.3f} ({min(rc):.3f}..{max(rc):.3f}) |")
PY

#!/usr/bin/env bash
# Two builds of iolab's own NVMe/TCP target side by side (e.g. before and
# after a refactor of its core), interleaved A B / B A over ROUNDS rounds:
# `serve --protocol nvme-tcp` from OLD and from NEW on the same scratch file,
# each driven by NEW's nvme-tcp:// engine with 4k random reads at QD 1 and
# 32. Prints the median ratio new/old of IOPS and of the target's CPU per
# I/O (usr+sys of the serve process / requests), with their spread.
# Usage: OLD=/path/to/old/iolab NEW=target/release/iolab bench/target_old_vs_new.sh [DIR] [ROUNDS] [RUNTIME_S]
set -euo pipefail
DIR=${1:-/var/tmp}
ROUNDS=${2:-5}
RT=${3:-5}
OLD=${OLD:?set OLD to the old iolab binary}
NEW=${NEW:-target/release/iolab}
WORK=$(mktemp -d /tmp/iolab-tgt.XXXXXX)
FILE="$DIR/iolab-tgt-bench.dat"
SRV=
trap '[ -n "$SRV" ] && kill $SRV 2>/dev/null; rm -rf "$WORK" "$FILE"' EXIT
fio --name=layout --filename="$FILE" --size=1g --rw=write --bs=1m --direct=1 --ioengine=psync >/dev/null
NQN=nqn.2025-11.io.iolab:target

one() { # BIN QD -> "iops target_cpu_us_per_io"
  local port
  port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
  "$1" serve -t "$FILE" --protocol nvme-tcp --listen "127.0.0.1:$port" --threads 1 --overwrite --quiet >/dev/null 2>&1 &
  SRV=$!
  for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/"$port") 2>/dev/null && break; sleep 0.1; done
  local t0
  t0=$(awk '{print $14+$15}' /proc/$SRV/stat)
  "$NEW" device --target "nvme-tcp://127.0.0.1:$port/$NQN" --rw randread --bs 4k --qd "$2" \
    --runtime "${RT}s" --quiet --json "$WORK/i.json"
  local t1
  t1=$(awk '{print $14+$15}' /proc/$SRV/stat)
  kill -INT $SRV; wait $SRV 2>/dev/null || true; SRV=
  python3 -c "
import json,os;p=json.load(open('$WORK/i.json'))['points'][0]
hz=os.sysconf('SC_CLK_TCK');print(p['total']['iops'], ($t1-$t0)/hz*1e6/p['total']['ops'])"
}
for r in $(seq 1 "$ROUNDS"); do
  if [ $((r % 2)) -eq 1 ]; then order="OLD NEW"; else order="NEW OLD"; fi
  for qd in 1 32; do
    for who in $order; do
      echo "$r $qd $who $(one "${!who}" "$qd")" >> "$WORK/rows"
    done
  done
done
python3 - "$WORK/rows" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
def s(xs): return f"{st.median(xs):.3f} ({min(xs):.3f}..{max(xs):.3f})"
for qd in ("1", "32"):
    o = {r[0]: (float(r[3]), float(r[4])) for r in rows if r[1] == qd and r[2] == "OLD"}
    n = {r[0]: (float(r[3]), float(r[4])) for r in rows if r[1] == qd and r[2] == "NEW"}
    print(f"QD{qd}: IOPS old {st.median(v[0] for v in o.values()):,.0f}, new {st.median(v[0] for v in n.values()):,.0f}; "
          f"ratio new/old {s([n[k][0] / o[k][0] for k in o])}; target CPU us/IO old "
          f"{st.median(v[1] for v in o.values()):.1f}, new {st.median(v[1] for v in n.values()):.1f}; "
          f"ratio {s([n[k][1] / o[k][1] for k in o])}")
PY

#!/usr/bin/env bash
# Agreement with btt on the same capture: iolab traces a job, exports the
# block events in blktrace format, blkparse + btt read them; prints the ratio
# iolab/btt of mean Q2C and mean D2C per round, and the median with spread.
# The export is written with device 8:0 because btt treats majors 9/253/254
# (this VM's virtio disk is 254) as md/device-mapper and reports Q2Cdm.
set -euo pipefail
IOLAB=${IOLAB:-target/release/iolab}
ROUNDS=${ROUNDS:-3}
RUNTIME=${RUNTIME:-3s}
DIR=${DIR:-/var/tmp}
OUT=$(mktemp -d /var/tmp/iolab-bench-btt.XXXXXX)
for r in $(seq 1 "$ROUNDS"); do
  for cfg in "psync 1" "io_uring 16"; do
    set -- $cfg
    name="${1}_qd${2}"
    echo "# round $r $name: $IOLAB trace --dir $DIR --size ${SIZE:-1G} --runtime $RUNTIME --engine $1 --qd $2 --no-overhead --export $OUT/r$r --export-dev 8:0 -o $OUT/r$r-$name.json; blkparse -q -i <export> -d bin; btt -i bin" >&2
    "$IOLAB" trace --dir "$DIR" --size ${SIZE:-1G} --runtime "$RUNTIME" --engine "$1" --qd "$2" --no-overhead \
      --export "$OUT/r$r" --export-dev 8:0 -o "$OUT/r$r-$name.json" > "$OUT/r$r-$name.txt"
    base=$(ls "$OUT/r$r" | grep "^${1}_qd${2}_" | head -1 | sed 's/\.blktrace\.[0-9]*$//')
    (cd "$OUT/r$r" && blkparse -q -i "$base" -d "$name.bin" > /dev/null && btt -i "$name.bin" > "$name.btt")
  done
done
python3 - "$OUT" "$ROUNDS" <<'PY'
import json, sys, statistics as st
out, rounds = sys.argv[1], int(sys.argv[2])
def btt_avg(path, key):
    for line in open(path):
        f = line.split()
        if f and f[0] in (key, key + "dm"):
            return float(f[2]) * 1e9
    return None
print("| job | round | iolab Q2C us | btt Q2C us | ratio | iolab D2C us | btt D2C us | ratio |")
print("|---|---|---|---|---|---|---|---|")
ratios = {}
for name in ("psync_qd1", "io_uring_qd16"):
    for r in range(1, rounds + 1):
        t = json.load(open(f"{out}/r{r}-{name}.json"))["points"][0]["extra"]["trace"]
        iq, idc = t["capture_q2c_mean_ns"], t["capture_d2c_mean_ns"]
        bq, bd = btt_avg(f"{out}/r{r}/{name}.btt", "Q2C"), btt_avg(f"{out}/r{r}/{name}.btt", "D2C")
        ratios.setdefault(name, []).append((iq / bq, idc / bd))
        print(f"| {name} | {r} | {iq/1e3:.2f} | {bq/1e3:.2f} | {iq/bq:.4f} | {idc/1e3:.2f} | {bd/1e3:.2f} | {idc/bd:.4f} |")
print()
for name, v in ratios.items():
    q = [x[0] for x in v]; d = [x[1] for x in v]
    print(f"{name}: Q2C ratio median {st.median(q):.4f} (min {min(q):.4f}, max {max(q):.4f}); "
          f"D2C ratio median {st.median(d):.4f} (min {min(d):.4f}, max {max(d):.4f})")
PY
echo "raw output: $OUT" >&2

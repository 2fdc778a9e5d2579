#!/usr/bin/env bash
# Agreement with btt on the same capture: iolab traces a job and exports the
# block events in blktrace format twice: all I/O on the device, and the job's
# own requests only (<config>_job). blkparse + btt read both. Printed per
# round: iolab's per-request mean Q2C/D2C vs btt on the job-only export, and
# iolab's capture-wide means vs btt on the full export; then the median ratio
# iolab/btt with its spread. The export uses device 8:0 because btt treats
# majors 9/253/254 (this VM's virtio disk is 254) as md/device-mapper.
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
    "$IOLAB" trace --dir "$DIR" --size "${SIZE:-1G}" --runtime "$RUNTIME" --engine "$1" --qd "$2" --no-overhead \
      --export "$OUT/r$r" --export-dev 8:0 -o "$OUT/r$r-$name.json" > "$OUT/r$r-$name.txt"
    base=$(ls "$OUT/r$r" | grep "^${1}_qd${2}_" | grep -v '_job\.' | head -1 | sed 's/\.blktrace\.[0-9]*$//')
    (cd "$OUT/r$r" && blkparse -q -i "$base" -d "$name.bin" > /dev/null && btt -i "$name.bin" > "$name.btt" \
      && blkparse -q -i "${base}_job" -d "${name}_job.bin" > /dev/null && btt -i "${name}_job.bin" > "${name}_job.btt")
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
print("| job | round | iolab Q2C us (job) | btt Q2C us (job export) | ratio | iolab D2C us (job) | btt D2C us (job export) | ratio | iolab Q2C all I/O | btt Q2C all I/O | ratio | iolab D2C all I/O | btt D2C all I/O | ratio |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
ratios = {}
for name in ("psync_qd1", "io_uring_qd16"):
    for r in range(1, rounds + 1):
        t = json.load(open(f"{out}/r{r}-{name}.json"))["points"][0]["extra"]["trace"]
        jq, jd = t["breakdown"]["q2c"]["mean_ns"], t["breakdown"]["d2c"]["mean_ns"]
        aq, ad = t["capture_q2c_mean_ns"], t["capture_d2c_mean_ns"]
        bjq, bjd = btt_avg(f"{out}/r{r}/{name}_job.btt", "Q2C"), btt_avg(f"{out}/r{r}/{name}_job.btt", "D2C")
        baq, bad = btt_avg(f"{out}/r{r}/{name}.btt", "Q2C"), btt_avg(f"{out}/r{r}/{name}.btt", "D2C")
        ratios.setdefault(name, []).append((jq / bjq, jd / bjd, aq / baq, ad / bad))
        print(f"| {name} | {r} | {jq/1e3:.2f} | {bjq/1e3:.2f} | {jq/bjq:.4f} | {jd/1e3:.2f} | {bjd/1e3:.2f} | {jd/bjd:.4f} "
              f"| {aq/1e3:.2f} | {baq/1e3:.2f} | {aq/baq:.4f} | {ad/1e3:.2f} | {bad/1e3:.2f} | {ad/bad:.4f} |")
print()
for name, v in ratios.items():
    for i, what in enumerate(("Q2C job", "D2C job", "Q2C all I/O", "D2C all I/O")):
        x = [r[i] for r in v]
        print(f"{name} {what}: ratio iolab/btt median {st.median(x):.4f} (min {min(x):.4f}, max {max(x):.4f})")
PY
echo "raw output: $OUT" >&2

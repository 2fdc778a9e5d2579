#!/usr/bin/env bash
# iolab kv vs Debian's db_bench (rocksdb-tools) on the same librocksdb 7.8.3
# and the same options, every db_bench benchmark iolab offers:
#   chain 1: fillseq (a fresh database)
#   chain 2: fillrandom, overwrite, readrandom, readseq, seekrandom,
#            readrandomwriterandom, readwhilewriting (1 reader + 1 writer)
# on one database per chain, as db_bench runs its --benchmarks list, in two
# modes: "settled" puts db_bench's waitforcompaction before every benchmark
# (both tools start each phase on a quiet LSM), "unsettled" runs them back
# to back (a phase may start while a flush or compaction still runs).
# Rounds are interleaved (A B, then B A) on fresh databases. Prints per
# round the ops/s of both, the ratio iolab/db_bench, the LSM state iolab
# recorded at the start of the phase and whether db_bench's LSM had the
# same shape (from its `levelstats` step before each benchmark: the
# sorted runs a point read searches, each L0 file and each non-empty
# level below it); then per mode the median ratio with its spread, over
# all rounds and over the rounds where both LSMs had the same shape. Near
# a level's size target (1 M keys of 400 bytes put L1 at about its 256
# MiB) each tool's random keys decide whether L1 was compacted into L2,
# and a point read searches one level more or less. readwhilewriting compares
# the reader's ops/s.
# Usage: [DB_BENCH=db_bench] [ROUNDS=8] [NUM=100000] [VALUE=400] [READS=NUM]
#        [MODES="settled unsettled"] [CHECK=auto] [KEYS=binary] bench/kv_dbbench.sh
# KEYS is iolab's --key-format: binary (db_bench's own key bytes, so both
# tools build the same LSM) or decimal (iolab's default).
set -euo pipefail
cd "$(dirname "$0")/.."
DB_BENCH=${DB_BENCH:-db_bench}
ROUNDS=${ROUNDS:-8}
NUM=${NUM:-100000}
VALUE=${VALUE:-400}
READS=${READS:-$NUM}
MODES=${MODES:-settled unsettled}
CHECK=${CHECK:-auto}
KEYS=${KEYS:-binary}
DIR=${KV_BENCH_DIR:-/var/tmp}
IOLAB=${IOLAB:-./target/release/iolab}
command -v "$DB_BENCH" >/dev/null || { echo "db_bench not found (apt-get install rocksdb-tools)"; exit 1; }
[ -x "$IOLAB" ] || cargo build --release --locked
work=$(mktemp -d "$DIR/kv-dbbench.XXXXXX")
trap 'rm -rf "$work"' EXIT

BENCHES="fillrandom,overwrite,readrandom,readseq,seekrandom,readrandomwriterandom,readwhilewriting"
# The chain of one mode: settled waits for a quiet LSM before every benchmark.
chain() {
  if [ "$1" = settled ]; then sed 's/,/,waitforcompaction,/g' <<<"$BENCHES"; else echo "$BENCHES"; fi
}
# db_bench's chain prints its files per level before every benchmark.
chain_db() {
  local out="" b
  for b in ${BENCHES//,/ }; do
    [ -n "$out" ] && [ "$1" = settled ] && out+="waitforcompaction,"
    out+="levelstats,$b,"
  done
  echo "${out%,}"
}
# The same options on both sides. --perf_level=1 (kDisable) is db_bench's default;
# iolab's RocksDB sessions also run with perf counters off.
COMMON_DB="--num=$NUM --reads=$READS --key_size=16 --value_size=$VALUE --compression_type=none \
 --cache_size=67108864 --write_buffer_size=67108864 --max_background_jobs=2 --sync=0 --disable_wal=0 \
 --bloom_bits=-1 --enable_pipelined_write=1 --perf_level=1 --statistics=0 --histogram=0 \
 --progress_reports=0 --seed=42 --threads=1 --use_existing_db=0"
COMMON_IO="--engine rocksdb --num $NUM --reads $READS --key-size 16 --value-size $VALUE --compression none \
 --cache-size 64m --write-buffer-size 64m --background-jobs 2 --pipelined-write --readers 1 \
 --check-values $CHECK --key-format $KEYS --quiet"

echo "db_bench: $($DB_BENCH --version 2>&1 | head -1); iolab: $($IOLAB --version)"
echo "num=$NUM reads=$READS key=16 value=$VALUE compression=none cache=64MiB wbs=64MiB jobs=2 sync=0 wal=1 check-values=$CHECK key-format=$KEYS"
echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for m in $MODES; do
  echo "$m: $DB_BENCH $COMMON_DB --benchmarks=fillseq --db=DIR1; $DB_BENCH $COMMON_DB --benchmarks=$(chain_db "$m") --db=DIR2"
  echo "$m: iolab kv fillseq $COMMON_IO --db DIR1 -o A.json; iolab kv $(chain "$m") $COMMON_IO --db DIR2 -o B.json"
done
results=$work/ratios.txt
: >"$results"
printf '%-5s %-9s %-21s %10s %10s %6s  %s\n' round mode bench db_bench iolab ratio "iolab's LSM at the phase's start"
for r in $(seq 1 "$ROUNDS"); do
  for m in $MODES; do
    rm -rf "$work"/db* "$work"/io*.json
    run_db() {
      "$DB_BENCH" $COMMON_DB --benchmarks=fillseq --db="$work/db1" >"$work/db.txt" 2>&1
      "$DB_BENCH" $COMMON_DB --benchmarks="$(chain_db "$m")" --db="$work/db2" >>"$work/db.txt" 2>&1
    }
    run_io() {
      $IOLAB kv fillseq $COMMON_IO --db "$work/db3" -o "$work/io1.json" >"$work/io.txt" 2>&1
      $IOLAB kv "$(chain "$m")" $COMMON_IO --db "$work/db4" -o "$work/io2.json" >>"$work/io.txt" 2>&1
    }
    # A B in odd rounds, B A in even rounds, so neither tool always runs first.
    if [ $((r % 2)) -eq 1 ]; then run_db; run_io; else run_io; run_db; fi
    python3 - "$work/db.txt" "$r" "$m" "$work/io1.json" "$work/io2.json" >>"$results" <<'PY'
import json, re, sys
db, shape, levels = {}, {}, None
for line in open(sys.argv[1]):
    if line.startswith("Level Files Size(MB)"):
        levels = []
    elif levels is not None and re.match(r"\s+\d+\s+\d+\s+\d+", line):
        levels.append(int(line.split()[1]))
    m = re.match(r"(\w+)\s*:\s*([\d.]+) micros/op (\d+) ops/sec", line)
    if m:
        db[m.group(1)] = float(m.group(3))
        shape[m.group(1)] = levels
        levels = None
for path in sys.argv[4:]:
    for p in json.load(open(path))["points"]:
        name = p["name"].split(".")[0]
        iops = p["ops"]["read"]["iops"] if name == "readwhilewriting" else p["total"]["iops"]
        s = ((p["extra"].get("kv") or {}).get("lsm") or {}).get("start") or {}
        quiet = not (s.get("flush_pending") or s.get("running_flushes") or
                     s.get("compaction_pending") or s.get("running_compactions"))
        mine = s.get("files_per_level")
        theirs = shape.get(name)
        runs = lambda lv: lv[0] + sum(1 for n in lv[1:] if n)
        same = "n/a" if theirs is None or mine is None else (
            "same" if runs(mine) == runs(theirs) else f"db_bench {theirs}")
        lsm = (f"files/level={mine} {same} "
               f"pending={s.get('pending_compaction_bytes', 0) >> 20}MiB "
               f"flushes={s.get('running_flushes', '?')}+{s.get('flush_pending', '?')} "
               f"compactions={s.get('running_compactions', '?')}+{s.get('compaction_pending', '?')} "
               f"imm={s.get('immutable_memtables', '?')} {'quiet' if quiet else 'busy'}")
        lsm += "" if same in ("same", "n/a") else " DIFFERENT-SHAPE"
        d = db.get(name, 0)
        print(sys.argv[2], sys.argv[3], name, d, iops, iops / d if d else 0, lsm, sep="\t")
PY
    grep -P "^$r\t$m\t" "$results" | while IFS=$'\t' read -r rr mm b d i ratio lsm; do
      printf '%-5s %-9s %-21s %10.0f %10.0f %6.3f  %s\n' "$rr" "$mm" "$b" "$d" "$i" "$ratio" "$lsm"
    done
  done
done
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
python3 - "$results" <<'PY'
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
for mode in dict.fromkeys(r[1] for r in rows):
    print(f"{mode}: median ratio iolab/db_bench ops/s (min..max), rounds; phases iolab started busy")
    for b in dict.fromkeys(r[2] for r in rows if r[1] == mode):
        these = [r for r in rows if r[1] == mode and r[2] == b]
        rs = sorted(float(r[5]) for r in these)
        busy = sum(" busy" in r[6] for r in these)
        alike = sorted(float(r[5]) for r in these if "DIFFERENT-SHAPE" not in r[6])
        line = f"  {b:21s} {statistics.median(rs):.3f} ({rs[0]:.3f}..{rs[-1]:.3f}) n={len(rs)} busy={busy}"
        if alike:
            line += f"; same LSM shape: {statistics.median(alike):.3f} ({alike[0]:.3f}..{alike[-1]:.3f}) n={len(alike)}"
        else:
            line += "; same LSM shape: no round"
        print(line)
PY

#!/usr/bin/env bash
# iolab kv vs Debian's db_bench (rocksdb-tools) on the same librocksdb 7.8.3
# and the same options: the chain BENCHES (default fillrandom, readrandom,
# seekrandom, readseq) on one database without flushes in between, as db_bench
# runs it, then readwhilewriting (1 reader + 1 writer). Interleaved A B B A ...
# for ROUNDS rounds on a fresh database each time; prints per-round ops/s and
# the median ratio iolab/db_bench with its spread.
# Usage: [VALUE=100] [BENCHES=a,b] bench/kv_dbbench.sh [ROUNDS] [NUM] [READS]
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
NUM=${2:-500000}
READS=${3:-200000}
VALUE=${VALUE:-100}
BENCHES=${BENCHES:-fillrandom,readrandom,seekrandom,readseq}
DIR=${KV_BENCH_DIR:-/var/tmp}
IOLAB=${IOLAB:-./target/release/iolab}
command -v db_bench >/dev/null || { echo "db_bench not found (apt-get install rocksdb-tools)"; exit 1; }
[ -x "$IOLAB" ] || cargo build --release
work=$(mktemp -d "$DIR/kv-dbbench.XXXXXX")
trap 'rm -rf "$work"' EXIT

# WRITER_RATE=N limits the readwhilewriting writer to N writes/s on both sides
# (db_bench takes bytes/s: N x (key + value)).
if [ -n "${WRITER_RATE:-}" ]; then
  RATE_DB="--benchmark_write_rate_limit=$((WRITER_RATE * (16 + VALUE)))"
  RATE_IO="--writer-rate $WRITER_RATE"
else
  RATE_DB=""
  RATE_IO=""
fi
# The same options on both sides. --perf_level=1 (kDisable) is db_bench's default;
# iolab's RocksDB sessions also run with perf counters off.
COMMON_DB="--num=$NUM --reads=$READS --key_size=16 --value_size=$VALUE --compression_type=none \
 --cache_size=67108864 --write_buffer_size=67108864 --max_background_jobs=2 --sync=0 --disable_wal=0 \
 --bloom_bits=-1 --enable_pipelined_write=1 --perf_level=1 --statistics=0 --histogram=0 --progress_reports=0 --seed=42"
COMMON_IO="--engine rocksdb --num $NUM --reads $READS --key-size 16 --value-size $VALUE --compression none \
 --cache-size 64m --write-buffer-size 64m --background-jobs 2 --pipelined-write --readers 1 $RATE_IO"

echo "db_bench: $(db_bench --version 2>&1 | head -1); iolab: $($IOLAB --version)"
echo "num=$NUM reads=$READS key=16 value=$VALUE compression=none cache=64MiB wbs=64MiB jobs=2 sync=0 wal=1"
echo "db_bench $COMMON_DB --benchmarks=$BENCHES --threads=1 --db=DIR --use_existing_db=0"
echo "db_bench $COMMON_DB $RATE_DB --benchmarks=readwhilewriting --threads=1 --db=DIR --use_existing_db=1"
echo "iolab kv $BENCHES,readwhilewriting $COMMON_IO --db DIR -o out.json"
printf '%-6s %-17s %12s %12s %7s\n' round bench db_bench iolab ratio
results=$work/ratios.txt
: >"$results"
for r in $(seq 1 "$ROUNDS"); do
  rm -rf "$work/db1" "$work/db2"
  run_db() {
    # db_bench's write rate limit applies to every benchmark: only readwhilewriting gets it.
    db_bench $COMMON_DB --benchmarks="$BENCHES" --threads=1 --db="$work/db1" \
      --use_existing_db=0 >"$work/db.txt" 2>&1
    db_bench $COMMON_DB $RATE_DB --benchmarks=readwhilewriting --threads=1 --db="$work/db1" \
      --use_existing_db=1 >>"$work/db.txt" 2>&1
  }
  run_io() {
    $IOLAB kv "$BENCHES",readwhilewriting $COMMON_IO --db "$work/db2" -o "$work/io.json" >"$work/io.txt" 2>&1
  }
  # A B in odd rounds, B A in even rounds, so neither tool always runs first.
  if [ $((r % 2)) -eq 1 ]; then run_db; run_io; else run_io; run_db; fi
  python3 - "$work/db.txt" "$work/io.json" "$r" "$BENCHES" >>"$results" <<'PY'
import json, re, sys
db = {}
for line in open(sys.argv[1]):
    m = re.match(r"(\w+)\s*:\s*([\d.]+) micros/op (\d+) ops/sec", line)
    if m:
        db[m.group(1)] = float(m.group(3))
pts = {p["name"]: p for p in json.load(open(sys.argv[2]))["points"]}
benches = sys.argv[4].split(",")
io = {b: pts[b]["total"]["iops"] for b in benches}
io["readwhilewriting"] = pts["readwhilewriting.readers1"]["ops"]["read"]["iops"]
for k in benches + ["readwhilewriting"]:
    print(sys.argv[3], k, db.get(k, 0), io[k], io[k] / db[k] if db.get(k) else 0)
w = pts["readwhilewriting.readers1"]["ops"]["write"]["iops"]
open(sys.argv[2] + ".writer", "a").write(f"{w:.0f}\n")
PY
  tail -n $(( $(tr ',' '\n' <<<"$BENCHES" | wc -l) + 1 )) "$results" | while read -r rr b d i ratio; do
    printf '%-6s %-17s %12.0f %12.0f %7.3f\n' "$rr" "$b" "$d" "$i" "$ratio"
  done
done
echo "iolab's writer during readwhilewriting (ops/s, per round): $(tr '\n' ' ' < "$work/io.json.writer")"
echo
python3 - "$results" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
for b in dict.fromkeys(r[1] for r in rows):
    rs = sorted(float(r[4]) for r in rows if r[1] == b)
    print(f"{b:17s} median ratio iolab/db_bench {statistics.median(rs):.3f}  (min {rs[0]:.3f}, max {rs[-1]:.3f}, n={len(rs)})")
PY

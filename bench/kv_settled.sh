#!/usr/bin/env bash
# One db_bench read benchmark (BENCH: readseq, readrandom or seekrandom)
# of kv against db_bench's own on a settled database large enough for
# phases of a second or more (NUM=1000000 keys by default; 16-byte keys,
# 400-byte values, bench/kv_dbbench.sh's options): each tool fills its own
# database once (fillseq, waitforcompaction), then ROUNDS rounds of READS
# operations each (NUM for readseq: one walk of every key), interleaved
# (db_bench, iolab, and the OLD build when given). Prints per round the
# ops/s, then the median ratio iolab/db_bench with its spread.
#   [BENCH=seekrandom] [ROUNDS=6] [NUM=1000000] [READS=NUM] [OLD=older/iolab] bench/kv_settled.sh
set -euo pipefail
cd "$(dirname "$0")/.."
DB_BENCH=${DB_BENCH:-db_bench}
IOLAB=${IOLAB:-./target/release/iolab}
BENCH=${BENCH:-readseq}
ROUNDS=${ROUNDS:-6}
NUM=${NUM:-1000000}
READS=${READS:-$NUM}
OLD=${OLD:-}
DIR=${KV_BENCH_DIR:-/var/tmp}
case "$BENCH" in readseq | readrandom | seekrandom) ;; *)
  echo "BENCH must be readseq, readrandom or seekrandom" >&2
  exit 2
  ;;
esac
work=$(mktemp -d "$DIR/kv-settled.XXXXXX")
trap 'rm -rf "$work"' EXIT
DB="--num=$NUM --key_size=16 --value_size=400 --compression_type=none --cache_size=67108864 \
 --write_buffer_size=67108864 --max_background_jobs=2 --sync=0 --disable_wal=0 --bloom_bits=-1 \
 --enable_pipelined_write=1 --perf_level=1 --statistics=0 --histogram=0 --progress_reports=0 --seed=42 --threads=1"
IO="--engine rocksdb --num $NUM --key-size 16 --value-size 400 --compression none --cache-size 64m \
 --write-buffer-size 64m --background-jobs 2 --pipelined-write --readers 1 --check-values auto --quiet"
$DB_BENCH $DB --benchmarks=fillseq,waitforcompaction --use_existing_db=0 --db="$work/db" >/dev/null
"$IOLAB" kv fillseq,waitforcompaction $IO --db "$work/io" -o "$work/fill.json" >/dev/null
echo "$BENCH, $READS operations per round; load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
iolab_ops() { # BINARY -> ops/s of one run of BENCH
  "$1" kv "$BENCH" $IO --reads "$READS" --db "$work/io" -o "$work/r.json" --force >/dev/null
  python3 -c "import json; print(json.load(open('$work/r.json'))['points'][0]['total']['iops'])"
}
: >"$work/ratios"
for r in $(seq 1 "$ROUNDS"); do
  a=$($DB_BENCH $DB --benchmarks="$BENCH" --use_existing_db=1 --reads="$READS" --db="$work/db" 2>/dev/null |
    awk -v b="$BENCH" '$1 == b {print $5}')
  b=$(iolab_ops "$IOLAB")
  c=${OLD:+$(iolab_ops "$OLD")}
  echo "$r $a $b ${c:-0}" | tee -a "$work/ratios"
done
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$work/ratios" "$BENCH" <<'PY'
import statistics as st, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1])]
def show(name, k):
    v = [r[k] / r[1] for r in rows]
    print(f"  {name:<12} {st.median(v):.3f} ({min(v):.3f}..{max(v):.3f}) n={len(v)}")
print(f"db_bench {sys.argv[2]} median {st.median(r[1] for r in rows):.0f} ops/s; iolab/db_bench:")
show("iolab", 2)
if rows[0][3] > 0:
    show("old build", 3)
PY

#!/usr/bin/env bash
# kv readseq against db_bench's on a settled database large enough for
# phases of a second or more (NUM=1000000 keys by default; 16-byte keys,
# 400-byte values, bench/kv_dbbench.sh's options): each tool fills its own
# database once (fillseq, waitforcompaction), then ROUNDS rounds of one
# readseq walk of every key each, interleaved (db_bench, iolab, and the
# OLD build when given). Prints per round the ops/s and ratios, then the
# median ratio with its spread.
#   [ROUNDS=6] [NUM=1000000] [OLD=path/to/older/iolab] bench/kv_readseq.sh
set -euo pipefail
cd "$(dirname "$0")/.."
DB_BENCH=${DB_BENCH:-db_bench}
IOLAB=${IOLAB:-./target/release/iolab}
ROUNDS=${ROUNDS:-6}
NUM=${NUM:-1000000}
OLD=${OLD:-}
DIR=${KV_BENCH_DIR:-/var/tmp}
work=$(mktemp -d "$DIR/kv-readseq.XXXXXX")
trap 'rm -rf "$work"' EXIT
DB="--num=$NUM --key_size=16 --value_size=400 --compression_type=none --cache_size=67108864 \
 --write_buffer_size=67108864 --max_background_jobs=2 --sync=0 --disable_wal=0 --bloom_bits=-1 \
 --enable_pipelined_write=1 --perf_level=1 --statistics=0 --histogram=0 --progress_reports=0 --seed=42 --threads=1"
IO="--engine rocksdb --num $NUM --key-size 16 --value-size 400 --compression none --cache-size 64m \
 --write-buffer-size 64m --background-jobs 2 --pipelined-write --readers 1 --check-values auto --quiet"
$DB_BENCH $DB --benchmarks=fillseq,waitforcompaction --use_existing_db=0 --db="$work/db" >/dev/null
"$IOLAB" kv fillseq,waitforcompaction $IO --db "$work/io" -o "$work/fill.json" >/dev/null
echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
iolab_ops() { # BINARY -> ops/s of one readseq walk
  "$1" kv readseq $IO --reads "$NUM" --db "$work/io" -o "$work/r.json" --force >/dev/null
  python3 -c "import json; print(json.load(open('$work/r.json'))['points'][0]['total']['iops'])"
}
: >"$work/ratios"
for r in $(seq 1 "$ROUNDS"); do
  a=$($DB_BENCH $DB --benchmarks=readseq --use_existing_db=1 --reads="$NUM" --db="$work/db" 2>/dev/null | awk '/^readseq/ {print $5}')
  b=$(iolab_ops "$IOLAB")
  c=${OLD:+$(iolab_ops "$OLD")}
  echo "$r $a $b ${c:-0}" | tee -a "$work/ratios"
done
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$work/ratios" <<'PY'
import statistics as st, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1])]
def show(name, k):
    v = [r[k] / r[1] for r in rows]
    print(f"  {name:<12} {st.median(v):.3f} ({min(v):.3f}..{max(v):.3f}) n={len(v)}")
print(f"db_bench readseq median {st.median(r[1] for r in rows):.0f} ops/s; iolab/db_bench:")
show("iolab", 2)
if rows[0][3] > 0:
    show("old build", 3)
PY

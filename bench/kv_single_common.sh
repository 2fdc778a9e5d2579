#!/usr/bin/env bash
# Sourced by bench/kv_settled.sh and bench/kv_fill.sh (one db_bench
# benchmark at a time, iolab against db_bench): both tools' options, those
# of bench/kv_dbbench.sh (16-byte keys, 400-byte values, no compression,
# 64 MiB cache and write buffer, WAL on, no sync, pipelined writes, one
# thread), and the summary of the rounds.

# db_bench's options for NUM keys.
kv_db_opts() {
  echo "--num=$1 --key_size=16 --value_size=400 --compression_type=none --cache_size=67108864 \
 --write_buffer_size=67108864 --max_background_jobs=2 --sync=0 --disable_wal=0 --bloom_bits=-1 \
 --enable_pipelined_write=1 --perf_level=1 --statistics=0 --histogram=0 --progress_reports=0 --seed=42 --threads=1"
}

# iolab's options for NUM keys in key format KEYS.
kv_io_opts() {
  echo "--engine rocksdb --num $1 --key-size 16 --key-format $2 --value-size 400 --compression none \
 --cache-size 64m --write-buffer-size 64m --background-jobs 2 --pipelined-write --quiet"
}

# FILE of rows "round db_bench iolab [old]" (ops/s) and BENCH -> the median
# ratio iolab/db_bench with its spread, and the old build's when given.
kv_summary() {
  python3 - "$1" "$2" <<'PY'
import statistics as st, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1])]
def show(name, k):
    v = [r[k] / r[1] for r in rows]
    print(f"  {name:<12} {st.median(v):.3f} ({min(v):.3f}..{max(v):.3f}) n={len(v)}")
print(f"db_bench {sys.argv[2]} median {st.median(r[1] for r in rows):.0f} ops/s; iolab/db_bench:")
show("iolab", 2)
if len(rows[0]) > 3 and rows[0][3] > 0:
    show("old build", 3)
PY
}

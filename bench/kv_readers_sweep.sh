#!/usr/bin/env bash
# The Symas readwhilewriting sweep: a database at least 4x larger than the
# memory limit (16-byte keys, 4000-byte values), loaded with fillrandom, then
# one writer and 1, 2, 4, ... readers, on LMDB and RocksDB, inside a memory
# cgroup (root). Usage: bench/kv_readers_sweep.sh [NUM] [LIMIT] [READERS] [READS]
set -euo pipefail
cd "$(dirname "$0")/.."
NUM=${1:-100000}
LIMIT=${2:-96m}
READERS=${3:-1,2,4,8}
READS=${4:-20000}
DIR=${KV_BENCH_DIR:-/var/tmp}
IOLAB=${IOLAB:-./target/release/iolab}
[ -x "$IOLAB" ] || cargo build --release
work=$(mktemp -d "$DIR/kv-sweep.XXXXXX")
trap 'rm -rf "$work"' EXIT
for e in ${ENGINES:-lmdb rocksdb}; do
  # LMDB without OS readahead; RocksDB with cache and memtable well inside the
  # limit and O_DIRECT flush/compaction (the v1 memory controller has no dirty
  # page throttling: buffered SST writes can get the process OOM-killed).
  extra="--no-readahead"; [ "$e" = rocksdb ] && extra="--cache-size 8m --write-buffer-size 8m --direct-io"
  cmd="$IOLAB kv fillrandom,readwhilewriting --engine $e $extra --num $NUM --key-size 16 --value-size 4000 --reads $READS --readers $READERS --memory-limit $LIMIT --map-size 8g --dir $DIR -o $work/$e.json"
  echo "$ ${cmd/$work/OUT}"
  $cmd >"$work/$e.txt" 2>&1 || { echo "$e FAILED (exit $?); points measured before that:"; tail -3 "$work/$e.txt"; }
  [ -s "$work/$e.json" ] || continue
  python3 - "$work/$e.json" "$e" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
pts = r["points"]
load = pts[0]["extra"]["kv"]["load"]
cpu = pts[0]["cpu"]
dev = pts[0].get("device") or {}
print(f"{sys.argv[2]} load: wall {load['wall_ns']/1e9:.1f}s user {cpu['user_ns']/1e9:.1f}s sys {cpu['sys_ns']/1e9:.1f}s "
      f"CPU {100*(cpu['user_ns']+cpu['sys_ns'])/load['wall_ns']:.0f}% db {load['db_size_bytes']/2**20:.0f} MiB "
      f"ctx {cpu['ctx_voluntary']}/{cpu['ctx_involuntary']} fs in/out {cpu['fs_in_blocks']}/{cpu['fs_out_blocks']} "
      f"dev written {dev.get('write_bytes',0)/2**20:.0f} MiB WA {load.get('write_amplification') or 0:.2f}")
print(f"{'readers':>8} {'reads/s':>10} {'writes/s':>10} {'read p99':>10} {'dev read MiB':>12}")
for p in pts[1:]:
    rd, wr = p["ops"]["read"], p["ops"].get("write", {"iops": 0})
    p99 = rd["lat"]["percentiles_ns"]["99.000000"] / 1000
    print(f"{p['params']['readers']:>8} {rd['iops']:10.0f} {wr['iops']:10.0f} {p99:8.1f}us {(p.get('device') or {}).get('read_bytes',0)/2**20:12.0f}")
print("peak memory charged to the cgroup:", r["extra"].get("memory_cgroup_peak_bytes", 0) // 2**20, "MiB")
PY
done

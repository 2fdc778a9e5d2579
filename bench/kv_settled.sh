#!/usr/bin/env bash
# One db_bench read benchmark (BENCH: readseq, readrandom or seekrandom)
# of kv against db_bench's own on a settled database large enough for
# phases of a second or more (NUM=1000000 keys by default; 16-byte keys,
# 400-byte values, bench/kv_dbbench.sh's options): each tool fills its own
# database once (fillseq, waitforcompaction), then ROUNDS rounds of READS
# operations each (NUM for readseq: one walk of every key), interleaved
# (db_bench, iolab, and the OLD build when given). Prints per round the
# ops/s, then the median ratio iolab/db_bench with its spread.
# CHECK sets iolab's --check-values (auto by default), KEYS its
# --key-format (binary by default: db_bench's key bytes).
#   [BENCH=seekrandom] [ROUNDS=6] [NUM=1000000] [READS=NUM] [CHECK=auto] [KEYS=binary] [OLD=older/iolab] bench/kv_settled.sh
set -euo pipefail
cd "$(dirname "$0")/.."
DB_BENCH=${DB_BENCH:-db_bench}
IOLAB=${IOLAB:-./target/release/iolab}
BENCH=${BENCH:-readseq}
ROUNDS=${ROUNDS:-6}
NUM=${NUM:-1000000}
READS=${READS:-$NUM}
OLD=${OLD:-}
CHECK=${CHECK:-auto}
KEYS=${KEYS:-binary}
DIR=${KV_BENCH_DIR:-/var/tmp}
case "$BENCH" in readseq | readrandom | seekrandom) ;; *)
  echo "BENCH must be readseq, readrandom or seekrandom" >&2
  exit 2
  ;;
esac
work=$(mktemp -d "$DIR/kv-settled.XXXXXX")
trap 'rm -rf "$work"' EXIT
. bench/kv_single_common.sh
DB=$(kv_db_opts "$NUM")
IO="$(kv_io_opts "$NUM" "$KEYS") --readers 1 --check-values $CHECK"
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
kv_summary "$work/ratios" "$BENCH"

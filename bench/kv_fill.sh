#!/usr/bin/env bash
# One db_bench fill (BENCH: fillseq or fillrandom) of kv against db_bench's
# own, each round on a fresh database per tool (NUM=1000000 keys by
# default; 16-byte keys in db_bench's bytes, 400-byte values,
# bench/kv_dbbench.sh's options), ROUNDS rounds with the order rotated
# (db_bench, iolab, the OLD build when given, then the next tool first).
# Prints per round the ops/s, then the median ratio iolab/db_bench with
# its spread.
#   [BENCH=fillseq] [ROUNDS=6] [NUM=1000000] [OLD=older/iolab] bench/kv_fill.sh
set -euo pipefail
cd "$(dirname "$0")/.."
DB_BENCH=${DB_BENCH:-db_bench}
IOLAB=${IOLAB:-./target/release/iolab}
BENCH=${BENCH:-fillseq}
ROUNDS=${ROUNDS:-6}
NUM=${NUM:-1000000}
OLD=${OLD:-}
DIR=${KV_BENCH_DIR:-/var/tmp}
case "$BENCH" in fillseq | fillrandom) ;; *)
  echo "BENCH must be fillseq or fillrandom" >&2
  exit 2
  ;;
esac
work=$(mktemp -d "$DIR/kv-fill.XXXXXX")
trap 'rm -rf "$work"' EXIT
. bench/kv_single_common.sh
DB=$(kv_db_opts "$NUM")
IO=$(kv_io_opts "$NUM" binary)
db_ops() {
  rm -rf "$work/db"
  $DB_BENCH $DB --benchmarks="$BENCH" --use_existing_db=0 --db="$work/db" 2>/dev/null |
    awk -v b="$BENCH" '$1 == b {print $5}'
}
iolab_ops() { # BINARY -> ops/s of one fill on a fresh database
  rm -rf "$work/io"
  "$1" kv "$BENCH" $IO --db "$work/io" -o "$work/f.json" --force >/dev/null
  python3 -c "import json; print(json.load(open('$work/f.json'))['points'][0]['total']['iops'])"
}
echo "$BENCH, $NUM records per round; load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
tools=(db "$IOLAB")
[ -n "$OLD" ] && tools+=("$OLD")
: >"$work/ratios"
for r in $(seq 1 "$ROUNDS"); do
  declare -A got=()
  n=${#tools[@]}
  for i in $(seq 0 $((n - 1))); do
    t=${tools[$(((i + r) % n))]}
    if [ "$t" = db ]; then got[db]=$(db_ops); else got[$t]=$(iolab_ops "$t"); fi
  done
  echo "$r ${got[db]} ${got[$IOLAB]} ${OLD:+${got[$OLD]}}" | tee -a "$work/ratios"
  unset got
done
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
kv_summary "$work/ratios" "$BENCH"

#!/usr/bin/env bash
# Instructions per record of kv fillseq, and per read of readrandom, under
# callgrind (it counts instructions: other work on the machine does not
# disturb it), iolab against db_bench: 16-byte keys, 400-byte values, no
# compression. Prints whole-run instructions / records (or reads), and the
# difference of a SMALL- and a NUM-record (or read) run / (NUM - SMALL),
# which leaves out what does not grow with them (process start, opening
# the database). Both write db_bench's key bytes (--key-format binary) through
# pipelined writes (db_bench's default).
#   [NUM=50000] [SMALL=10000] [IOLAB=target/release/iolab] bench/kv_callgrind.sh
set -euo pipefail
NUM=${NUM:-50000}
SMALL=${SMALL:-10000}
IOLAB=${IOLAB:-./target/release/iolab}
DB_BENCH=${DB_BENCH:-db_bench}
work=$(mktemp -d "${KV_BENCH_DIR:-/var/tmp}/kv-callgrind.XXXXXX")
trap 'rm -rf "$work"' EXIT
cg() { # command... -> instructions of the whole process, all threads
  valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" "$@" >/dev/null 2>"$work/cg.err" ||
    { cat "$work/cg.err" >&2; exit 1; }
  awk '/^summary:/ {print $2}' "$work/cg.out"
}
DB="--key_size=16 --value_size=400 --compression_type=none --histogram=0 --seed=42 --threads=1"
IO="--engine rocksdb --key-size 16 --value-size 400 --compression none --check-values auto \
 --key-format binary --pipelined-write --quiet"
fill_db_bench() { cg "$DB_BENCH" $DB --benchmarks=fillseq --num="$1" --use_existing_db=0 --db="$work/db$1"; }
fill_iolab() { cg "$IOLAB" kv fillseq $IO --num "$1" --db "$work/io$1" -o "$work/f.json" --force; }
read_db_bench() { cg "$DB_BENCH" $DB --benchmarks=readrandom --num="$NUM" --reads="$1" --use_existing_db=1 --db="$work/db$NUM"; }
read_iolab() { cg "$IOLAB" kv readrandom $IO --num "$NUM" --reads "$1" --db "$work/io$NUM" -o "$work/r.json" --force; }
row() { # name small-run-instructions num-run-instructions
  python3 -c "import sys; s, n, a, b = map(int, sys.argv[2:]); \
print(f'{sys.argv[1]:<22} {b / n:9.0f} per record (whole run)  {(b - a) / (n - s):9.0f} per record ({s} to {n})')" \
    "$1" "$SMALL" "$NUM" "$2" "$3"
}
echo "instructions (callgrind); $IOLAB against $DB_BENCH"
row "fillseq db_bench" "$(fill_db_bench "$SMALL")" "$(fill_db_bench "$NUM")"
row "fillseq iolab" "$(fill_iolab "$SMALL")" "$(fill_iolab "$NUM")"
# The first open of a filled database replays its WAL into a table: done
# once, unmeasured, before the reads.
"$DB_BENCH" $DB --benchmarks=readrandom --num="$NUM" --reads=1 --use_existing_db=1 --db="$work/db$NUM" >/dev/null 2>&1
"$IOLAB" kv readrandom $IO --num "$NUM" --reads 1 --db "$work/io$NUM" -o "$work/r.json" --force >/dev/null
row "readrandom db_bench" "$(read_db_bench "$SMALL")" "$(read_db_bench "$NUM")"
row "readrandom iolab" "$(read_iolab "$SMALL")" "$(read_iolab "$NUM")"

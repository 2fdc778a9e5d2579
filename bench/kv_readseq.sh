#!/usr/bin/env bash
# kv readseq against db_bench's on a settled 1 M-key database: benchmarks
# section 22's loop, now one case of bench/kv_settled.sh.
#   [ROUNDS=6] [NUM=1000000] [OLD=path/to/older/iolab] bench/kv_readseq.sh
exec env BENCH=readseq "$(dirname "$0")/kv_settled.sh" "$@"

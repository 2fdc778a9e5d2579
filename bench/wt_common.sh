#!/usr/bin/env bash
# Sourced by bench/kv_wiredtiger.sh and bench/kv_wiredtiger_fill.sh (iolab's
# WiredTiger engine against bench/wt_floor.c): the library checked, iolab
# built if missing, a scratch directory removed on exit, the floor compiled.

# Sets `work` to a new directory under KV_BENCH_DIR (/var/tmp) named after
# NAME, removed on exit, holding the compiled floor ($work/wt_floor).
wt_prepare() {
  [ -f /usr/include/wiredtiger.h ] || { echo "libwiredtiger-dev is missing (scripts/install-deps.sh)"; exit 1; }
  [ -x "$IOLAB" ] || cargo build --release --locked
  work=$(mktemp -d "${KV_BENCH_DIR:-/var/tmp}/$1.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  cc -O2 -Wall -pthread -o "$work/wt_floor" bench/wt_floor.c -lwiredtiger
}

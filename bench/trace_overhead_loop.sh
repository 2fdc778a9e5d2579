#!/usr/bin/env bash
# The tracing overhead measured on a fast, quiet block device: a loop device
# backed by a file in /dev/shm (ext4 on it), so the per-request cost of
# tracing (in microseconds) is not buried in the noise of a shared virtual
# disk. Runs bench/trace_overhead.sh there, then tears everything down.
set -euo pipefail
cd "$(dirname "$0")/.."
IMG=$(mktemp /dev/shm/iolab-loop.XXXXXX)
MNT=$(mktemp -d /var/tmp/iolab-loop-mnt.XXXXXX)
truncate -s 1G "$IMG"
LOOP=$(losetup -f --show "$IMG")
cleanup() { umount "$MNT" 2>/dev/null || true; losetup -d "$LOOP" 2>/dev/null || true; rm -f "$IMG"; rmdir "$MNT" 2>/dev/null || true; }
trap cleanup EXIT
mkfs.ext4 -q "$LOOP"
mount "$LOOP" "$MNT"
echo "# loop device $LOOP on $IMG (tmpfs), ext4 mounted at $MNT" >&2
DIR="$MNT" SIZE=${SIZE:-256M} ROUNDS=${ROUNDS:-5} RUNTIME=${RUNTIME:-1s} bench/trace_overhead.sh

#!/usr/bin/env bash
# Install the system packages iolab's build, tests and benchmarks need.
# Idempotent and quiet when everything is present; needs root (or sudo) only
# when something is missing.
set -euo pipefail

PACKAGES=(
  pkg-config clang libclang-dev       # bindgen for the RocksDB bindings
  librocksdb-dev libsqlite3-dev       # database engines linked from Debian
  libwiredtiger-dev                   # WiredTiger 3.2.1 (kv --engine wiredtiger; built into iolab by build.rs)
  fio rocksdb-tools blktrace          # peers for agreement checks and benchmarks
  python3-pandas                      # runs fio's fiologparser_hist on iolab's histogram logs (tests)
  nbdkit qemu-utils libnbd-bin        # NBD servers for the nbd engine's tests; libnbd for fio's nbd engine (bench)
  tgt libiscsi-dev libiscsi-bin       # iSCSI target (tgtd) and initiator library for the iscsi engine; iscsi-perf (bench)
  util-linux e2fsprogs kmod           # losetup, mkfs.ext4 for safety tests
  xfsprogs btrfs-progs                # mkfs.xfs, mkfs.btrfs for the media configurations (device --make)
  chromium                            # headless check of the HTML report (tests)
  qemu-system-x86 busybox-static cpio # a full Linux kernel under qemu: Linux's NVMe/TCP target (tests)
  nvme-cli                            # `nvme discover` against iolab's discovery controller, in that kernel (tests)
  libibverbs1 librdmacm1 ibverbs-providers iproute2   # rdma-core for the nvme-rdma engine (dlopen; soft-RoCE's provider); `rdma link` for soft-RoCE
  postgresql mariadb-server           # database servers iolab starts privately (kv --engine postgres|mariadb, oltp)
  redis-server redis-tools            # Redis (kv --engine redis); redis-benchmark as a peer (bench)
  openjdk-17-jre-headless maven       # Cassandra (kv --engine cassandra): its JVM; mvn fetches its jars from Maven Central
  openssh-client openssh-server       # fleet: ssh to the hosts; a private sshd per test host (tests; never the machine's own)
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}" >&2
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq >/dev/null
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Debian's kernel and an initramfs for the qemu interoperability tests
# (downloaded once into the cache; quiet when present).
if [ -w "$(dirname "${IOLAB_VM_CACHE:-/var/cache/iolab-vm}")" ] || [ "$(id -u)" -eq 0 ]; then
  bash "$(dirname "$0")/linux-vm.sh" prepare
fi

# Cassandra's jars from Maven Central (quiet when present). Not fatal: its
# tests say why they skip when the jars are missing.
bash "$(dirname "$0")/fetch-cassandra.sh" ||
  echo "install-deps: Cassandra's jars could not be fetched; kv --engine cassandra and its tests will say so" >&2
# FerretDB, MongoDB's wire protocol over SQLite: the test double of
# `kv --engine mongodb`, built from the Go module proxy into a cache outside
# the repository. Not fatal: without it the mongodb tests skip, saying why.
bash "$(dirname "$0")/build-ferretdb.sh" || true

if ! command -v cargo >/dev/null 2>&1; then
  echo "install-deps: cargo (Rust >= 1.85) is required; install it with rustup" >&2
  exit 1
fi

#!/usr/bin/env bash
# A full Linux kernel under qemu (TCG), for interoperability tests against
# the kernel's own NVMe-oF target: Debian's linux-image-6.1 (it has nvmet,
# nvmet-tcp, nvme-tcp, nbd), a busybox initramfs, and nvmet serving one
# 64 MiB file-backed namespace on the guest's port 4420, forwarded to
# 127.0.0.1:PORT on the host (user-mode networking: nothing leaves loopback).
# Emulated CPU: functional checks only, never timings.
#   scripts/linux-vm.sh prepare      download and unpack the kernel, build the initramfs (quiet when done)
#   scripts/linux-vm.sh nvmet PORT   boot; prints "IOLAB-NVMET-READY" when nvmet listens; powers off after LIMIT s (300)
#   scripts/linux-vm.sh initiator PORT NQN
#                                    boot; the guest kernel's nvme-tcp connects to PORT on the host (10.0.2.2),
#                                    writes 1 MiB of a pattern at offset 0 with a flush, reads it back past the
#                                    page cache and prints "IOLAB-MD5 <sum>" (or "IOLAB-FAIL <why>"), then powers off
#   scripts/linux-vm.sh exec CPIO    boot with CPIO (uncompressed, appended to the initramfs in CPIO.initrd)
#                                    and run its /iolab-run.sh; its output goes to stdout; powers off after it
# The cache is $IOLAB_VM_CACHE (default /var/cache/iolab-vm). SMP (default 1)
# is the guest's CPU count; QEMU_EXTRA, more qemu arguments (e.g. -numa nodes).
set -euo pipefail
CACHE=${IOLAB_VM_CACHE:-/var/cache/iolab-vm}
NQN=nqn.2025-11.io.iolab:linux
LIMIT=${LIMIT:-300}
MODS="crc32c_generic crct10dif_common crct10dif_generic crc-t10dif crc64 crc64_rocksoft_generic crc64-rocksoft t10-pi configfs nvmet nvmet-tcp nvme-core nvme-fabrics nvme-tcp crc16 mbcache jbd2 ext4 nbd e1000 crc32_generic udp_tunnel ip6_udp_tunnel ib_core ib_uverbs iw_cm ib_cm rdma_cm rdma_ucm rdma_rxe nvme-rdma nvmet-rdma veth"
# Bumped whenever the initramfs changes, so a cached one is rebuilt.
VERSION=8

prepare() {
  [ -s "$CACHE/initrd.gz" ] && [ -s "$CACHE/vmlinuz" ] && [ "$(cat "$CACHE/version" 2>/dev/null)" = "$VERSION" ] && return 0
  mkdir -p "$CACHE"
  local pkg
  pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-6/ {print $2; exit}')
  [ -n "$pkg" ] || { echo "linux-vm: no linux-image-6.x package in apt" >&2; exit 1; }
  local work
  work=$(mktemp -d)
  trap 'rm -rf "$work"' RETURN
  (cd "$work" && apt-get download -qq "$pkg" >/dev/null 2>&1)
  dpkg-deb -x "$work"/*.deb "$work/root"
  cp "$work"/root/boot/vmlinuz-* "$CACHE/vmlinuz"
  local kdir=("$work"/root/lib/modules/*/kernel)
  local ird="$work/initramfs"
  mkdir -p "$ird"/{bin,proc,sys,dev,tmp,mods}
  cp "$(command -v busybox)" "$ird/bin/busybox"
  for m in $MODS; do
    find "${kdir[0]}" -name "$m.ko" -exec cp {} "$ird/mods/" \;
    [ -s "$ird/mods/$m.ko" ] || { echo "linux-vm: module $m not in $pkg" >&2; exit 1; }
  done
  cat > "$ird/init" <<INIT
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev; mount -t tmpfs tmp /tmp
for m in $MODS; do insmod /mods/\$m.ko || echo "insmod \$m failed"; done
mount -t configfs none /sys/kernel/config
ip link set lo up; ip link set eth0 up; ip addr add 10.0.2.15/24 dev eth0
arg() { sed -n "s/.*\$1=\([^ ]*\).*/\\1/p" /proc/cmdline; }
case \$(arg iolab_mode) in
nvmet)
  dd if=/dev/zero of=/tmp/disk bs=1M count=64 2>/dev/null
  S=/sys/kernel/config/nvmet/subsystems/$NQN
  P=/sys/kernel/config/nvmet/ports/1
  mkdir \$S; echo 1 > \$S/attr_allow_any_host
  mkdir \$S/namespaces/1
  echo -n /tmp/disk > \$S/namespaces/1/device_path
  echo 1 > \$S/namespaces/1/buffered_io
  echo 1 > \$S/namespaces/1/enable
  mkdir \$P
  echo tcp > \$P/addr_trtype; echo ipv4 > \$P/addr_adrfam; echo 0.0.0.0 > \$P/addr_traddr; echo 4420 > \$P/addr_trsvcid
  ln -s \$S \$P/subsystems/$NQN
  echo IOLAB-NVMET-READY
  sleep \$(arg iolab_limit)
  ;;
initiator)
  ip route add default via 10.0.2.2
  if ! echo "transport=tcp,traddr=10.0.2.2,trsvcid=\$(arg iolab_port),nqn=\$(arg iolab_nqn)" > /dev/nvme-fabrics; then
    echo "IOLAB-FAIL connect"
  else
    i=0; while [ ! -b /dev/nvme0n1 ] && [ \$i -lt 100 ]; do sleep 0.1; i=\$((i+1)); done
    [ -b /dev/nvme0n1 ] || { echo "IOLAB-FAIL no namespace"; dmesg | tail -20; }
    awk 'BEGIN { for (i = 0; i < 16384; i++) printf "iolab guest line %046d\\n", i }' > /tmp/pattern
    if [ -b /dev/nvme0n1 ] && dd if=/tmp/pattern of=/dev/nvme0n1 bs=65536 conv=fsync 2>/dev/null; then
      echo 3 > /proc/sys/vm/drop_caches
      echo "IOLAB-MD5 \$(dd if=/dev/nvme0n1 bs=65536 count=16 2>/dev/null | md5sum | cut -d' ' -f1) \$(md5sum < /tmp/pattern | cut -d' ' -f1)"
    else
      echo "IOLAB-FAIL write"
    fi
    echo 1 > /sys/class/nvme/nvme0/delete_controller
  fi
  ;;
exec)
  sh /iolab-run.sh 2>&1
  ;;
esac
echo IOLAB-VM-DONE
poweroff -f
INIT
  chmod +x "$ird/init"
  (cd "$ird" && find . | cpio -o -H newc 2>/dev/null | gzip > "$CACHE/initrd.gz.tmp")
  mv "$CACHE/initrd.gz.tmp" "$CACHE/initrd.gz"
  echo "$pkg" > "$CACHE/kernel-package"
  echo "$VERSION" > "$CACHE/version"
}

# qemu with the kernel, the initramfs (and more appended) and the command line.
boot() {
  local initrd=$1 append=$2; shift 2
  # shellcheck disable=SC2086 # QEMU_EXTRA is split into arguments.
  exec qemu-system-x86_64 -accel tcg -cpu max -m 1536 -smp "${SMP:-1}" ${QEMU_EXTRA:-} -nographic -no-reboot \
    -kernel "$CACHE/vmlinuz" -initrd "$initrd" \
    -append "console=ttyS0 quiet iolab_limit=$LIMIT $append" "$@"
}

case "${1:-}" in
  prepare) prepare ;;
  nvmet)
    PORT=${2:?PORT}
    prepare
    boot "$CACHE/initrd.gz" "iolab_mode=nvmet" \
      -netdev "user,id=n0,hostfwd=tcp:127.0.0.1:$PORT-:4420" -device e1000,netdev=n0
    ;;
  initiator)
    PORT=${2:?PORT}; NQN_HOST=${3:?NQN}
    prepare
    boot "$CACHE/initrd.gz" "iolab_mode=initiator iolab_port=$PORT iolab_nqn=$NQN_HOST" \
      -netdev "user,id=n0,restrict=off" -device e1000,netdev=n0
    ;;
  exec)
    CPIO=${2:?CPIO}
    prepare
    # Next to CPIO, so whoever made CPIO removes it too (qemu is exec'd).
    cp "$CACHE/initrd.gz" "$CPIO.initrd"
    # The kernel finds the next archive only at a 4-byte boundary after the gzip stream.
    truncate -s %512 "$CPIO.initrd"
    cat "$CPIO" >> "$CPIO.initrd"
    boot "$CPIO.initrd" "iolab_mode=exec" -netdev "user,id=n0" -device e1000,netdev=n0
    ;;
  *) sed -n '2,19p' "$0" >&2; exit 2 ;;
esac

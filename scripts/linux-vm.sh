#!/usr/bin/env bash
# A full Linux kernel under qemu (TCG), for interoperability tests against
# the kernel's own NVMe-oF target: Debian's linux-image-6.1 (it has nvmet,
# nvmet-tcp, nvme-tcp, nbd), a busybox initramfs, and nvmet serving one
# 64 MiB file-backed namespace on the guest's port 4420, forwarded to
# 127.0.0.1:PORT on the host (user-mode networking: nothing leaves loopback).
# Emulated CPU: functional checks only, never timings.
#   scripts/linux-vm.sh prepare      download and unpack the kernel, build the initramfs (quiet when done)
#   scripts/linux-vm.sh nvmet PORT   boot; prints "IOLAB-NVMET-READY" when nvmet listens; powers off after LIMIT s (300)
# The cache is $IOLAB_VM_CACHE (default /var/cache/iolab-vm).
set -euo pipefail
CACHE=${IOLAB_VM_CACHE:-/var/cache/iolab-vm}
NQN=nqn.2025-11.io.iolab:linux
LIMIT=${LIMIT:-300}
MODS="crc32c_generic crct10dif_common crct10dif_generic crc-t10dif crc64 crc64_rocksoft_generic crc64-rocksoft t10-pi configfs nvmet nvmet-tcp e1000"

prepare() {
  [ -s "$CACHE/initrd.gz" ] && [ -s "$CACHE/vmlinuz" ] && return 0
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
sleep \$(cat /proc/cmdline | sed -n 's/.*iolab_limit=\([0-9]*\).*/\1/p')
poweroff -f
INIT
  chmod +x "$ird/init"
  (cd "$ird" && find . | cpio -o -H newc 2>/dev/null | gzip > "$CACHE/initrd.gz.tmp")
  mv "$CACHE/initrd.gz.tmp" "$CACHE/initrd.gz"
  echo "$pkg" > "$CACHE/kernel-package"
}

case "${1:-}" in
  prepare) prepare ;;
  nvmet)
    PORT=${2:?PORT}
    prepare
    exec qemu-system-x86_64 -accel tcg -cpu max -m 1024 -smp 1 -nographic -no-reboot \
      -kernel "$CACHE/vmlinuz" -initrd "$CACHE/initrd.gz" \
      -append "console=ttyS0 quiet iolab_limit=$LIMIT" \
      -netdev "user,id=n0,hostfwd=tcp:127.0.0.1:$PORT-:4420" -device e1000,netdev=n0
    ;;
  *) sed -n '2,11p' "$0" >&2; exit 2 ;;
esac

#!/usr/bin/env bash
# iolab's fleet (`iolab device --hosts`, over ssh) against fio's own
# client/server (`fio --server` on every host, `fio --client` from the
# control side) on the same namespace hosts and the same job, interleaved:
# the start skew between hosts (a paced job: 1,000 IOPS per host, null
# engine; fio's from each host's first logged I/O, in ms since the epoch:
# the namespaces share one clock, so the hosts' times compare directly;
# iolab's from the agents' release instants), the aggregate IOPS (null
# engine and a 4 KiB random read of a file per host, flat out) and the
# control side's CPU per host (user + system, children included: iolab's
# ssh clients count).
#
# Each host is a network namespace with a veth to this one, its own sshd
# (keys made here, in a temporary directory) and its own fio server on its
# address. Needs root, ip netns, sshd, fio. Everything goes at exit.
#
# iolab's control CPU is split into its own process and its ssh clients
# (an `ssh` wrapper first in PATH times each client). KEX=curve25519-sha256
# puts that key exchange in the hosts' ssh_config (a choice of the user's
# config; OpenSSH's default hybrid post-quantum exchange costs more CPU);
# CM=1 adds a ControlMaster (ControlPersist 120 s): runs after the first
# reuse one connection per host and pay no handshake.
#
#   IOLAB=target/release/iolab HOSTS=3 ROUNDS=3 RUNTIME=5 [KEX=...] bash bench/fleet_vs_fio.sh
set -euo pipefail
IOLAB=$(realpath "${IOLAB:-target/release/iolab}")
FIO=${FIO:-fio}
HOSTS=${HOSTS:-3}
ROUNDS=${ROUNDS:-3}
RUNTIME=${RUNTIME:-5}
DIR=${DIR:-/var/tmp}
[ "$(id -u)" = 0 ] || { echo "needs root (namespaces)"; exit 1; }
W=$(mktemp -d "$DIR/iolab-fleet-bench.XXXXXX")
TAG=fb$$
declare -a NS ADDRS SSHD_PIDS
cleanup() {
  for a in "${ADDRS[@]:-}"; do [ -n "$a" ] && [ -n "${CM:-}" ] && ssh -F "$W/ssh_config" -O exit "$a" 2>/dev/null || true; done
  for p in "${SSHD_PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  for n in "${NS[@]:-}"; do
    [ -n "$n" ] || continue
    for p in $(ip netns pids "$n" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
    ip netns del "$n" 2>/dev/null || true
  done
  rm -rf "$W"
}
trap cleanup EXIT INT TERM
mkdir -p /run/sshd "$W/files"
ssh-keygen -q -t ed25519 -N '' -f "$W/host_key"
ssh-keygen -q -t ed25519 -N '' -f "$W/client_key"
cp "$W/client_key.pub" "$W/authorized_keys"
: > "$W/known_hosts"
third=$(( ($$ % 200) + 20 ))
for i in $(seq 0 $((HOSTS - 1))); do
  n="iolab-$TAG-$i"; NS+=("$n")
  ip netns add "$n"
  v="v$TAG$i"
  ip link add "$v" type veth peer name eth0 netns "$n"
  ip addr add "10.214.$third.$((i * 4 + 1))/30" dev "$v"; ip link set "$v" up
  a="10.214.$third.$((i * 4 + 2))"; ADDRS+=("$a")
  ip -n "$n" addr add "$a/30" dev eth0; ip -n "$n" link set eth0 up; ip -n "$n" link set lo up
  cat > "$W/sshd_config-$i" <<CFG
ListenAddress $a
HostKey $W/host_key
AuthorizedKeysFile $W/authorized_keys
PidFile none
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
MaxStartups 100
CFG
  ip netns exec "$n" /usr/sbin/sshd -D -e -f "$W/sshd_config-$i" 2>/dev/null &
  SSHD_PIDS+=($!)
  echo "$a $(cut -d' ' -f1,2 "$W/host_key.pub")" >> "$W/known_hosts"
  ip netns exec "$n" "$FIO" --server="ip:$a,8765" >/dev/null 2>&1 &
done
cat > "$W/ssh_config" <<CFG
Host *
  User root
  IdentityFile $W/client_key
  IdentitiesOnly yes
  UserKnownHostsFile $W/known_hosts
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
  LogLevel ERROR
${KEX:+  KexAlgorithms $KEX}
${CM:+  ControlMaster auto}
${CM:+  ControlPath $W/cm-%C}
${CM:+  ControlPersist 120}
CFG
mkdir -p "$W/bin"
cat > "$W/bin/ssh" <<WRAP
#!/bin/sh
exec /usr/bin/time -a -o "$W/ssh_cpu" -f '%U %S' /usr/bin/ssh "\$@"
WRAP
chmod +x "$W/bin/ssh"
sleep 1
LIST=$(IFS=,; echo "${ADDRS[*]}")

# Each host's job file (fio's client parses ${VAR} on its own side, so
# every host gets its own file name here).
for i in $(seq 0 $((HOSTS - 1))); do
  common="rw=randread\nbs=4k\ntime_based=1\nruntime=$RUNTIME\n"
  printf "[null]\nioengine=null\nsize=1g\n$common" > "$W/job-null-$i.fio"
  printf "[file]\nioengine=psync\nsize=64m\ndirect=0\nfilename=$W/files/f-h$i\n$common" > "$W/job-file-$i.fio"
  printf "[paced]\nioengine=null\nsize=1g\nrate_iops=1000\nwrite_lat_log=$W/files/lat\nlog_unix_epoch=1\n$common" > "$W/job-paced-$i.fio"
done

# One run; prints "skew_us iops cpu_ms".
run_iolab() {
  local eng=$1 out="$W/iolab.json" t="$W/time"
  local extra=(--engine null)
  : > "$W/ssh_cpu"
  [ "$eng" = file ] && extra=(--engine psync --target "$W/files" --size 64m)
  [ "$eng" = paced ] && extra=(--engine null --rate $((1000 * HOSTS)))  # the whole load: 1,000 a second from each host
  PATH="$W/bin:$PATH" /usr/bin/time -f '%U %S' -o "$t" "$IOLAB" device --hosts "$LIST" --ssh-config "$W/ssh_config" \
    --host-iolab "$IOLAB" "${extra[@]}" --rw randread --bs 4k --qd 1 --runtime "${RUNTIME}s" \
    --quiet --json "$out" >/dev/null
  python3 - "$out" "$t" "$W/ssh_cpu" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); p = r["points"][0]; h = p["extra"]["hosts"]
assert p["total"]["ops"] == sum(x["ops"] for x in h["per_host"]), "merge not exact"
u, s = map(float, open(sys.argv[2]).read().split()[-2:])
ssh = sum(float(a) + float(b) for a, b in (l.split() for l in open(sys.argv[3]) if len(l.split()) == 2))
print(h["start_skew_ns"] / 1e3, p["total"]["iops"], (u + s) * 1e3, ssh * 1e3)
PY
}
run_fio() {
  local eng=$1 out="$W/fio.json" t="$W/time"
  local clients=()
  for i in $(seq 0 $((HOSTS - 1))); do clients+=(--client="ip:${ADDRS[$i]},8765" "$W/job-$eng-$i.fio"); done
  /usr/bin/time -f '%U %S' -o "$t" "$FIO" "${clients[@]}" \
    --output-format=json --output="$out" >/dev/null 2>&1
  python3 - "$out" "$t" "$W/files" <<'PY'
import glob, json, sys
text = open(sys.argv[1]).read()
d = json.loads(text[text.index("{"):])
jobs = [c for c in d.get("client_stats", []) if c.get("jobname") != "All clients"]
iops = sum(j["read"]["iops"] for j in jobs)
u, s = map(float, open(sys.argv[2]).read().split()[-2:])
firsts = [int(open(f).readline().split(",")[0]) for f in glob.glob(sys.argv[3] + "/lat_lat.*.log.*")]
skew = (max(firsts) - min(firsts)) * 1e3 if len(firsts) > 1 else float("nan")
print(skew, iops, (u + s) * 1e3, 0)
PY
  rm -f "$W"/files/lat_*
}

echo "hosts=$HOSTS rounds=$ROUNDS runtime=${RUNTIME}s iolab=$IOLAB fio=$($FIO --version)"
printf '%-5s %-5s %-6s %12s %14s %16s %14s\n' round eng tool skew_us iops ctl_cpu_ms/host of_it_ssh
declare -A R
for r in $(seq 1 "$ROUNDS"); do
  for eng in paced null file; do
    order="iolab fio"; [ $((r % 2)) = 0 ] && order="fio iolab"
    for tool in $order; do
      read -r skew iops cpu ssh < <(run_"$tool" "$eng")
      per=$(python3 -c "print($cpu / $HOSTS)")
      ssh_per=$(python3 -c "print($ssh / $HOSTS)")
      own=$(python3 -c "print(($cpu - $ssh) / $HOSTS)")
      printf '%-5s %-5s %-6s %12.0f %14.0f %16.1f %14.1f\n' "$r" "$eng" "$tool" "$skew" "$iops" "$per" "$ssh_per"
      R[$r,$eng,$tool]="$skew $iops $per $own"
    done
  done
done
echo
echo "median over rounds (spread min..max); ratios iolab/fio per round"
for eng in paced null file; do
  args=""
  for r in $(seq 1 "$ROUNDS"); do args+=" ${R[$r,$eng,iolab]} ${R[$r,$eng,fio]}"; done
  python3 - "$eng" $args <<'PY'
import statistics as st, sys
eng = sys.argv[1]; v = list(map(float, sys.argv[2:]))
rows = [v[i:i + 8] for i in range(0, len(v), 8)]
def show(name, i, unit, fmt="{:.0f}"):
    a = [r[i] for r in rows]; b = [r[i + 4] for r in rows]
    ratio = [x / y for x, y in zip(a, b) if y == y and y]
    med = lambda xs: fmt.format(st.median(xs)) if xs else "n/a"
    rr = f"{st.median(ratio):.2f} ({min(ratio):.2f}..{max(ratio):.2f})" if ratio else "n/a"
    print(f"  {eng:5} {name:22} iolab {med(a)} {unit}  fio {med(b)} {unit}  iolab/fio {rr}")
if eng == "paced":
    show("start skew", 0, "us")
else:
    show("aggregate IOPS", 1, "")
    show("control CPU per host", 2, "ms", "{:.1f}")
    show("  without ssh clients", 3, "ms", "{:.1f}")
PY
done

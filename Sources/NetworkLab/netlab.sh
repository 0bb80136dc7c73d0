#!/usr/bin/env bash
# netlab.sh - N isolated "hosts" on one Linux machine, each with its own D-Bus system bus and
# avahi-daemon, for mDNS/DNS-SD tests of peerd's Discovery. Needs root, iproute2,
# util-linux (nsenter, unshare, setsid), dbus and avahi-daemon.
#
#   netlab.sh up N                        create hosts 1..N and start dbus + avahi in each (idempotent)
#   netlab.sh down                        stop everything this lab started, delete its namespaces, unmount (idempotent)
#   netlab.sh exec I CMD...               run CMD inside host I (its netns + its private /run)
#   netlab.sh spawn I PIDFILE LOG CMD...  start CMD detached inside host I; its pid -> PIDFILE, output -> LOG
#   netlab.sh avahi-stop I [SIG]          stop host I's avahi-daemon (default TERM; KILL = a crash)
#   netlab.sh avahi-start I               (re)start host I's avahi-daemon
#   netlab.sh block-multicast I           host I neither sends nor hears mDNS (eth0 multicast off); unicast works
#   netlab.sh unblock-multicast I         undo block-multicast
#   netlab.sh status                      namespaces, addresses, daemon pids, spawned pids
#
# Environment (so that concurrent runs use distinct labs):
#   NETLAB_PREFIX  namespace prefix, [a-z][a-z0-9]{0,7} (default psync): hosts PREFIX1..PREFIXN, hub PREFIXbr
#   NETLAB_NET     first three octets of the lab's /24 (default 10.77.0): host I is NET.(10+I)
#   LAB            state directory (default ${TMPDIR:-/tmp}/netlab-PREFIX): configs, logs, per-host /run
#   NETLAB_IPV6    yes|no (default no): Avahi's use-ipv6, and IPv6 sysctl-disabled in the hosts when no
#
# Topology: namespace PREFIXbr holds bridge br0 (no address). Host I is namespace PREFIXI whose eth0 is the
# veth peer of vI on br0. Nothing is created in the root network namespace and nothing routes out. Each
# host also has a persistent private mount namespace (bound at $LAB/mnt/PREFIXI) in which $LAB/PREFIXI/run
# is bind-mounted over /run, so /run/dbus/system_bus_socket and /run/avahi-daemon/{pid,socket} are per
# host. Every command for a host enters both namespaces with nsenter.
set -euo pipefail
export PATH=$PATH:/usr/sbin:/sbin

P=${NETLAB_PREFIX:-psync}
NET=${NETLAB_NET:-10.77.0}
LAB=${LAB:-${TMPDIR:-/tmp}/netlab-$P}
IPV6=${NETLAB_IPV6:-no}
BRNS=${P}br

[[ $P =~ ^[a-z][a-z0-9]{0,7}$ ]] || { echo "netlab: NETLAB_PREFIX must match [a-z][a-z0-9]{0,7}: '$P'" >&2; exit 2; }
[[ $NET =~ ^[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}$ ]] || { echo "netlab: NETLAB_NET must be three octets: '$NET'" >&2; exit 2; }

# Descriptors beyond 0-2 that the caller leaked to us (Foundation's Process leaks the socket it watches
# its child's exit with) would stay open in every daemon started below, and the caller would wait for
# an EOF that never comes. Close them all, except the one bash reads this script through.
self=$(readlink -f "$0")
for fd_path in /proc/$$/fd/*; do
  fd=${fd_path##*/}
  ((fd > 2)) || continue
  [[ $(readlink "$fd_path" 2>/dev/null) == "$self" ]] && continue
  eval "exec $fd>&-" 2>/dev/null || true
done
unset self fd_path fd

log() { printf '[netlab %s] %s\n' "$P" "$*" >&2; }
have_ns() { [[ -e /run/netns/$1 ]]; }
lab_hosts() { ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$P[0-9]+$" | sort -V || true; }
host_index() { [[ ${1:-} =~ ^[0-9]+$ ]] && have_ns "$P$1" || { log "no host '${1:-}' (run: $0 up N)"; exit 2; }; }

# Whether PID lives in network namespace NS (guards every kill against pid reuse).
pid_in_ns() {
  local pid=$1 ns=$2
  [[ -e /proc/$pid/ns/net && -e /run/netns/$ns ]] || return 1
  [[ $(stat -L -c %i "/proc/$pid/ns/net" 2>/dev/null) == "$(stat -L -c %i "/run/netns/$ns")" ]]
}

# Whether PID runs: exists and is not a zombie (PID 1 here may reap exited daemons only seconds later).
pid_running() {
  local state
  state=$(sed -n 's/.*) \(.\).*/\1/p' "/proc/$1/stat" 2>/dev/null) || return 1
  [[ -n $state && $state != Z ]]
}

# pid_alive_as PIDFILE COMM: echoes the pid if it is alive and its name starts with COMM.
pid_alive_as() {
  local f=$1 comm=$2 pid
  [[ -s $f ]] || return 1
  pid=$(tr -dc '0-9' <"$f")
  [[ -n $pid ]] && pid_running "$pid" || return 1
  [[ $(cat "/proc/$pid/comm" 2>/dev/null) == "$comm"* ]] || return 1
  echo "$pid"
}

# stop_pid PID [SIG]: signal, wait up to 5 s for it to end, then SIGKILL.
stop_pid() {
  local pid=$1 sig=${2:-TERM} n=0
  kill -s "$sig" "$pid" 2>/dev/null || return 0
  while pid_running "$pid" && ((n++ < 100)); do sleep 0.05; done
  if pid_running "$pid"; then kill -s KILL "$pid" 2>/dev/null || true; fi
  return 0
}

# kill_pidfile PIDFILE COMM [SIG]: stops only the pid recorded there, after checking its name.
kill_pidfile() {
  local f=$1 comm=$2 sig=${3:-TERM} pid
  if pid=$(pid_alive_as "$f" "$comm"); then
    stop_pid "$pid" "$sig"
    log "stopped $comm pid $pid (SIG$sig)"
  fi
  rm -f "$f"
}

ns_enter() { # ns_enter I CMD...: net + mount namespace of host I, same working directory
  local i=$1
  shift
  nsenter --net="/run/netns/$P$i" --mount="$LAB/mnt/$P$i" --wd="$PWD" -- "$@"
}

write_avahi_conf() {
  local i=$1
  cat >"$LAB/$P$i/avahi-daemon.conf" <<EOF
[server]
host-name=$P$i
domain-name=local
use-ipv4=yes
use-ipv6=$IPV6
allow-interfaces=eth0
enable-dbus=yes
ratelimit-interval-usec=1000000
ratelimit-burst=1000

[wide-area]
# must stay off: wide-area would send unicast DNS to the resolv.conf servers
enable-wide-area=no

[publish]
publish-hinfo=no
publish-workstation=no
publish-resolv-conf-dns-servers=no

[reflector]
enable-reflector=no

[rlimits]
EOF
}

avahi_start() {
  local i=$1
  local d=$LAB/$P$i off n=0
  if pid_alive_as "$d/run/avahi-daemon/pid" avahi-daemon >/dev/null; then return 0; fi
  rm -f "$d/run/avahi-daemon/pid"
  touch "$d/avahi.log"
  off=$(($(stat -c %s "$d/avahi.log") + 1))
  # Root, unchrooted: keeps the per-host /run bind simple (the stock chroot and user drop work too).
  setsid -f nsenter --net="/run/netns/$P$i" --mount="$LAB/mnt/$P$i" -- \
    avahi-daemon -f "$d/avahi-daemon.conf" --no-rlimits --no-chroot --no-drop-root --no-proc-title \
    >>"$d/avahi.log" 2>&1 </dev/null
  until tail -c +"$off" "$d/avahi.log" 2>/dev/null | grep -q 'Server startup complete' &&
    pid_alive_as "$d/run/avahi-daemon/pid" avahi-daemon >/dev/null; do
    ((n++ < 100)) || { log "avahi in $P$i did not start; see $d/avahi.log"; tail -5 "$d/avahi.log" >&2; return 1; }
    sleep 0.1
  done
  log "$P$i avahi-daemon pid $(cat "$d/run/avahi-daemon/pid")"
}

avahi_stop() { kill_pidfile "$LAB/$P$1/run/avahi-daemon/pid" avahi-daemon "${2:-TERM}"; }

dbus_start() {
  local i=$1
  local d=$LAB/$P$i n=0
  if pid_alive_as "$d/run/dbus/pid" dbus-daemon >/dev/null; then return 0; fi
  rm -f "$d/run/dbus/pid" "$d/run/dbus/system_bus_socket"
  # stock system bus config: socket /run/dbus/system_bus_socket, pid file /run/dbus/pid (both private here)
  ns_enter "$i" dbus-daemon --system --fork --nosyslog >>"$d/dbus.log" 2>&1 </dev/null
  until [[ -S $d/run/dbus/system_bus_socket ]]; do
    ((n++ < 50)) || { log "dbus in $P$i did not start; see $d/dbus.log"; return 1; }
    sleep 0.1
  done
  log "$P$i dbus-daemon pid $(cat "$d/run/dbus/pid")"
}

host_up() {
  local i=$1
  local d=$LAB/$P$i ns=$P$i
  mkdir -p "$d/run/dbus" "$d/run/avahi-daemon" "$d/run/lock"
  if ! have_ns "$ns"; then
    ip netns add "$ns"
    ip -n "$BRNS" link add "v$i" type veth peer name eth0 netns "$ns"
    ip -n "$BRNS" link set "v$i" master br0 up
    ip -n "$ns" link set lo up
    if [[ $IPV6 == no ]]; then
      ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
    fi
    ip -n "$ns" addr add "$NET.$((10 + i))/24" dev eth0
    ip -n "$ns" link set eth0 up # a veth has the MULTICAST flag by default
    log "created $ns ($NET.$((10 + i))/24)"
  fi
  if ! mountpoint -q "$LAB/mnt/$ns" 2>/dev/null; then
    touch "$LAB/mnt/$ns"
    unshare --mount="$LAB/mnt/$ns" --propagation private -- mount --bind "$d/run" /run
  fi
  write_avahi_conf "$i"
  dbus_start "$i"
  avahi_start "$i"
}

cmd_up() {
  local n=${1:?usage: up N} i
  [[ $n =~ ^[0-9]+$ ]] && ((n >= 1 && n <= 200)) || { log "up: N must be 1..200"; exit 2; }
  mkdir -p "$LAB/mnt"
  # namespace files can only be bind-mounted onto a private mount
  if ! mountpoint -q "$LAB/mnt"; then mount --bind "$LAB/mnt" "$LAB/mnt"; fi
  mount --make-private "$LAB/mnt"
  if ! have_ns "$BRNS"; then
    ip netns add "$BRNS"
    ip -n "$BRNS" link set lo up
    ip -n "$BRNS" link add br0 type bridge stp_state 0 mcast_snooping 0
    ip -n "$BRNS" link set br0 up
    log "created $BRNS/br0"
  fi
  for ((i = 1; i <= n; i++)); do host_up "$i"; done
}

cmd_down() {
  local ns i p f d pids
  for ns in $(lab_hosts); do
    # what exec/spawn started (and their children) first, then the daemons, each by pid
    pids=()
    for p in $(ip netns pids "$ns" 2>/dev/null); do
      case $(cat "/proc/$p/comm" 2>/dev/null) in avahi-daemon | dbus-daemon | "") ;; *) pids+=("$p") ;; esac
    done
    for p in "${pids[@]}"; do
      log "stopping pid $p ($(cat "/proc/$p/comm" 2>/dev/null)) in $ns"
      kill -s TERM "$p" 2>/dev/null || true
    done
    for p in "${pids[@]}"; do if pid_in_ns "$p" "$ns"; then stop_pid "$p" TERM; fi; done
    avahi_stop "${ns#"$P"}" TERM
    kill_pidfile "$LAB/$ns/run/dbus/pid" dbus-daemon TERM
  done
  # daemons of hosts whose namespace is already gone
  for d in "$LAB/$P"[0-9]*; do
    [[ -d $d ]] || continue
    kill_pidfile "$d/run/avahi-daemon/pid" avahi-daemon TERM
    kill_pidfile "$d/run/dbus/pid" dbus-daemon TERM
  done
  if [[ -d $LAB/mnt ]]; then
    for f in "$LAB"/mnt/*; do
      [[ -e $f ]] || continue
      if mountpoint -q "$f"; then umount "$f"; fi
      rm -f "$f"
    done
    if mountpoint -q "$LAB/mnt"; then umount "$LAB/mnt"; fi
    rmdir "$LAB/mnt" 2>/dev/null || true
  fi
  for ns in $(lab_hosts) $(have_ns "$BRNS" && echo "$BRNS"); do
    ip netns del "$ns" && log "deleted netns $ns"
  done
  rm -f "$LAB/spawned"
}

cmd_exec() {
  local i=${1:?usage: exec I CMD...}
  shift
  host_index "$i"
  exec nsenter --net="/run/netns/$P$i" --mount="$LAB/mnt/$P$i" --wd="$PWD" -- "$@"
}

cmd_spawn() { # detached, in its own session; PIDFILE gets the command's own pid (nsenter execs it)
  local i=${1:?usage: spawn I PIDFILE LOG CMD...} pidf=${2:?} logf=${3:?} n=0
  shift 3
  host_index "$i"
  rm -f "$pidf"
  setsid -f sh -c 'echo $$ > "$1"; shift; exec "$@"' sh "$pidf" \
    nsenter --net="/run/netns/$P$i" --mount="$LAB/mnt/$P$i" --wd="$PWD" -- "$@" >"$logf" 2>&1 </dev/null
  until [[ -s $pidf ]]; do
    ((n++ < 100)) || { log "spawn in $P$i: no pid in $pidf"; return 1; }
    sleep 0.05
  done
  echo "$P$i $(cat "$pidf") $*" >>"$LAB/spawned"
}

# Multicast off: clears IFF_MULTICAST on the host's eth0. Avahi then leaves the mDNS group on it
# ("Interface eth0.IPv4 no longer relevant for mDNS"): the host neither sends nor hears mDNS, while
# unicast (TCP to static peers) keeps working, which is what Discovery must survive (packet loss, by
# nftables, is a separate fault that NetworkLab's link shaping sets).
cmd_block_multicast() {
  local i=${1:?usage: block-multicast I}
  host_index "$i"
  ip -n "$P$i" link set eth0 multicast off
  log "$P$i: multicast off on eth0"
}

cmd_unblock_multicast() {
  local i=${1:?usage: unblock-multicast I}
  host_index "$i"
  ip -n "$P$i" link set eth0 multicast on
  log "$P$i: multicast on on eth0"
}

cmd_status() {
  local ns pa pd blocked
  echo "lab $P: state $LAB, net $NET.0/24"
  for ns in $(lab_hosts); do
    pa=$(pid_alive_as "$LAB/$ns/run/avahi-daemon/pid" avahi-daemon || echo -)
    pd=$(pid_alive_as "$LAB/$ns/run/dbus/pid" dbus-daemon || echo -)
    blocked=$(ip -n "$ns" link show dev eth0 | grep -q MULTICAST || echo " multicast=off")
    printf '%-10s %-18s dbus=%-7s avahi=%s%s\n' "$ns" \
      "$(ip -n "$ns" -4 -br addr show dev eth0 | awk '{print $3}')" "$pd" "$pa" "$blocked"
  done
  if [[ -s $LAB/spawned ]]; then
    echo "spawned (host pid command):"
    while read -r ns p rest; do
      if pid_in_ns "$p" "$ns"; then echo "  $ns $p $rest"; fi
    done <"$LAB/spawned"
  fi
}

case ${1:-} in
  up) shift && cmd_up "$@" ;;
  down) cmd_down ;;
  exec) shift && cmd_exec "$@" ;;
  spawn) shift && cmd_spawn "$@" ;;
  status) cmd_status ;;
  avahi-stop) shift && host_index "${1:-}" && avahi_stop "$@" ;;
  avahi-start) shift && host_index "${1:-}" && avahi_start "$@" ;;
  block-multicast) shift && cmd_block_multicast "$@" ;;
  unblock-multicast) shift && cmd_unblock_multicast "$@" ;;
  *) sed -n '2,24p' "$0" >&2; exit 2 ;;
esac

# The RoCE profile's milestones (issue 16), sourced by milestones.sh in the guest: soft-RoCE
# (rdma_rxe) on the virtio NIC as the peer of a RoCEv2 endpoint on the host (the model inside
# the peer command), and rdma-core's tools. The host's side (roce-peer) answers on the second
# serial port (ttyS1), one line each way; see roce-peer for the requests.

ROCE_OK=0
if [ -f /roceconf ]; then
  read -r R_IP R_PREFIX R_MAC R_BRIDGE R_MODEL R_MODEL_MAC R_ITERS R_SIZES R_LOSS < /roceconf
  ROCE_OK=1
fi
roce_chan=0

# The host's lines land in ROCE_RX, one per line, written by a reader that blocks on the port:
# a `read -t` that times out while a line is arriving loses the part it had read (seen once: a
# reply whose first half vanished), so nothing here reads the port with a timeout.
ROCE_RX=/tmp/roce-rx
roce_seen=0

roce_open() {
  [ -c /dev/ttyS1 ] || return 1
  stty -F /dev/ttyS1 raw -echo 2>/dev/null || return 1
  exec 5<>/dev/ttyS1
  : > "$ROCE_RX"
  ( while IFS= read -r l; do printf '%s\n' "$l" >> "$ROCE_RX"; done ) <&5 &
  roce_chan=1
}

# roce_ask LINE PATTERN SECONDS: sends LINE to the host, waits for a reply matching PATTERN (a
# shell case pattern); the reply in $rreply. Lines that do not match are shown and skipped.
roce_ask() {
  rreply=
  [ "$roce_chan" = 1 ] || return 1
  [ -z "$1" ] || printf '%s\n' "$1" >&5
  deadline=$(($(cut -d. -f1 /proc/uptime) + $3))
  while [ "$(cut -d. -f1 /proc/uptime)" -lt "$deadline" ]; do
    total=$(wc -l < "$ROCE_RX")
    if [ "$roce_seen" -ge "$total" ]; then sleep 0.2; continue; fi
    roce_seen=$((roce_seen + 1))
    rreply=$(sed -n "${roce_seen}p" "$ROCE_RX" | tr -d '\r')
    case "$rreply" in $2) echo "@@PEER ${1:-(wait)} => $rreply"; return 0 ;; esac
    echo "@@INFO roce channel: unexpected '$rreply'"
  done
  echo "@@PEER ${1:-(wait)} => (no answer in $3 s)"
  rreply=
  return 1
}

# The interface with the fixed MAC the harness gave the virtio NIC.
roce_if() {
  for d in /sys/class/net/*; do
    [ "$(cat "$d/address" 2>/dev/null)" = "$R_MAC" ] && { basename "$d"; return 0; }
  done
  return 1
}

# gid_v4 A.B.C.D: the IPv4-mapped GID as sysfs prints it (::ffff:A.B.C.D, every group in full).
gid_v4() {
  echo "$1" | awk -F. '{ printf "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x\n", $1, $2, $3, $4 }'
}

# The modules rdma_rxe needs, crc32_generic first (see roce-host.sh).
roce_modules() {
  for m in crc32_generic ib_core ib_uverbs udp_tunnel ip6_udp_tunnel rdma_rxe; do
    modprobe "$m" 2>&1 | sed "s/^/@@INFO modprobe $m: /"
  done
  grep -q '^rdma_rxe ' /proc/modules
}

# rxe_port DEV: why DEV's port 1 is not usable, or nothing. Leaves ibv_devinfo's output in /tmp/out.
rxe_port_state() {
  ibv_devinfo -d "$1" > /tmp/out 2>&1 || { echo "ibv_devinfo -d $1 failed: $(head -n 3 /tmp/out)"; return; }
  grep -q 'state:.*PORT_ACTIVE' /tmp/out || echo "$1's port is $(sed -n 's/.*state:[[:space:]]*//p' /tmp/out | head -n 1)"
}

rxe_active() { [ -z "$(rxe_port_state "$1")" ]; }

# rxe: the virtio NIC with its address, soft-RoCE on it, the port active, GID 1 the IPv4-mapped
# GID of the guest's address with type RoCE v2; a permanent neighbour entry for the model.
m_rxe() {
  begin rxe
  [ "$ROCE_OK" = 1 ] || { end fail "no /roceconf (not the roce profile)"; return; }
  modprobe virtio_net 2>&1 | sed 's/^/@@INFO modprobe virtio_net: /'
  wait_for 10 roce_if > /dev/null || { end fail "no interface with MAC $R_MAC (virtio_net)"; return; }
  RIF=$(roce_if)
  ip link set "$RIF" up || { end fail "ip link set $RIF up failed"; return; }
  ip addr add "$R_IP/$R_PREFIX" dev "$RIF" || { end fail "ip addr add $R_IP/$R_PREFIX failed"; return; }
  wait_for 10 sh -c "[ \"\$(cat /sys/class/net/$RIF/carrier)\" = 1 ]" || { end fail "no carrier on $RIF"; return; }
  arp -i "$RIF" -s "$R_MODEL" "$R_MODEL_MAC" || { end fail "arp -s $R_MODEL $R_MODEL_MAC failed"; return; }
  roce_modules || { end fail "rdma_rxe did not load"; return; }
  info "rdma link add" rdma link add rxe0 type rxe netdev "$RIF" || { end fail "rdma link add rxe0 failed: $(head -n 1 /tmp/out)"; return; }
  info "rdma link" rdma link show
  wait_for 10 rxe_active rxe0
  why=$(rxe_port_state rxe0)
  sed 's/^/@@INFO ibv_devinfo: /' /tmp/out
  [ -z "$why" ] || { end fail "$why"; return; }
  mtu=$(sed -n 's/.*active_mtu:[[:space:]]*\([0-9]*\).*/\1/p' /tmp/out | head -n 1)
  g=/sys/class/infiniband/rxe0/ports/1
  gid0=$(cat $g/gids/0) gid1=$(cat $g/gids/1) type1=$(cat $g/gid_attrs/types/1 2>/dev/null)
  ndev1=$(cat $g/gid_attrs/ndevs/1 2>/dev/null)
  want=$(gid_v4 "$R_IP")
  [ "$gid1" = "$want" ] || { end fail "GID 1 is $gid1, the IPv4-mapped GID of $R_IP is $want"; return; }
  [ "$type1" = "RoCE v2" ] || { end fail "GID 1 has type '$type1', not RoCE v2"; return; }
  [ "$ndev1" = "$RIF" ] || { end fail "GID 1 belongs to '$ndev1', not $RIF"; return; }
  end pass "rxe0 on $RIF $R_IP $R_MAC: PORT_ACTIVE, active_mtu $mtu; gid 0 $gid0; gid 1 $gid1 ($type1, $ndev1); $R_MODEL at $R_MODEL_MAC"
}

# pp_run TAG ARGS...: ibv_rc_pingpong ARGS in the background, output in /tmp/pp-TAG.
pp_run() { tag=$1; shift; ibv_rc_pingpong "$@" > "/tmp/pp-$tag" 2>&1 & pp_pid=$!; }
# pp_wait SECONDS: waits for pp_pid to exit (kills it after SECONDS); its status in $pp_rc.
pp_wait() {
  i=0
  while kill -0 "$pp_pid" 2>/dev/null && [ "$i" -lt "$(($1 * 5))" ]; do sleep 0.2; i=$((i + 1)); done
  kill -0 "$pp_pid" 2>/dev/null && { kill "$pp_pid"; echo "(killed after $1 s)" >> "/tmp/pp-$tag"; }
  wait "$pp_pid"; pp_rc=$?
}
# iters_of FILE: the N of ibv_rc_pingpong's "N iters in S seconds" line, 0 if none.
iters_of() { n=$(sed -n 's/^ *\([0-9][0-9]*\) iters in .*/\1/p' "$1" | tail -n 1); echo "${n:-0}"; }
rate_of() { sed -n 's/^ *[0-9]* iters in \(.*\)/\1/p' "$1" | tail -n 1; }
# listening PORT: a TCP socket listens on PORT (/proc/net/tcp: hex port, state 0A).
tcp_listening() { cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk -v p="$(printf ':%04X' "$1")" '$2 ~ p"$" && $4 == "0A" { f = 1 } END { exit !f }'; }
# show TAG: the run's output as @@PP lines (scripts/guest keeps them in target/guest/).
pp_show() { sed "s/^/@@PP $1 /" "/tmp/pp-$1"; }

# One exchange with the guest as server: ibv_rc_pingpong listens, the host's peer connects.
pp_guest_server() { # SIZE
  pp_tag=server-$1${PP_LOSS:+-loss$PP_LOSS}
  pp_run "$pp_tag" -d rxe0 -g 1 -n "$R_ITERS" -s "$1" -m 1024
  wait_for 20 tcp_listening 18515 || { kill "$pp_pid"; pp_show "$pp_tag"; pp_why="the guest's server did not listen"; return 1; }
  roce_ask "pp-client $1 $R_ITERS${PP_LOSS:+ $PP_LOSS}" "done client $1 *" "$PEER_WAIT" || { pp_wait 1; pp_show "$pp_tag"; pp_why="no answer from the host"; return 1; }
  set -- $rreply; peer_rc=$4 peer_iters=$5 peer_lost=${6:-} peer_qp=${7:-}
  # A peer that failed leaves the server waiting: no need to give it long.
  if [ "$peer_rc" = 0 ]; then pp_wait 30; else pp_wait 1; fi
  pp_show "$pp_tag"
  pp_check "$pp_tag" "guest server / host client"
}

# One exchange with the guest as client: the host's peer listens first (ready), the guest
# connects to the bridge's address (the peer's TCP runs on the host's stack there); tried
# again while the connection is refused.
pp_guest_client() { # SIZE
  pp_tag=client-$1${PP_LOSS:+-loss$PP_LOSS}
  roce_ask "pp-server $1 $R_ITERS${PP_LOSS:+ $PP_LOSS}" "[rd]* server $1*" 90 || { pp_why="no answer from the host"; return 1; }
  case "$rreply" in
    done*) set -- $rreply; pp_why="the host's peer exited before it listened (status $4)"; return 1 ;;
  esac
  tries=0
  while :; do
    pp_run "$pp_tag" -d rxe0 -g 1 -n "$R_ITERS" -s "$1" -m 1024 "$R_BRIDGE"
    pp_wait "$PEER_WAIT"
    grep -q "Couldn't connect" "/tmp/pp-$pp_tag" && [ "$tries" -lt 10 ] || break
    tries=$((tries + 1)); sleep 1
  done
  pp_show "$pp_tag"
  roce_ask "" "done server $1 *" 60 || { pp_why="the host's peer did not finish"; return 1; }
  set -- $rreply; peer_rc=$4 peer_iters=$5 peer_lost=${6:-} peer_qp=${7:-}
  pp_check "$pp_tag" "host server / guest client"
}

# pp_check TAG LABEL: both ends exited 0 and both report R_ITERS iterations.
pp_check() {
  gi=$(iters_of "/tmp/pp-$1")
  note="$2 $(echo "$1" | sed 's/^[a-z]*-\([0-9]*\).*/\1/') B: guest exit $pp_rc, $gi iters ($(rate_of "/tmp/pp-$1")); host exit $peer_rc, $peer_iters iters"
  [ "$pp_rc" = 0 ] && [ "$gi" = "$R_ITERS" ] && [ "$peer_rc" = 0 ] && [ "$peer_iters" = "$R_ITERS" ] \
    || { pp_why=$note; return 1; }
  pp_notes="${pp_notes:+$pp_notes; }$note"
}

# pingpong: ibv_rc_pingpong on rxe0 against the host's peer, both roles, each size.
m_pingpong() {
  begin pingpong
  [ -e /sys/class/infiniband/rxe0 ] || { end fail "no rxe0 (run the rxe milestone first)"; return; }
  roce_ask hello hello 20 || { end fail "the host's peer service does not answer on ttyS1"; return; }
  PEER_WAIT=${PEER_WAIT:-400}
  pp_notes=
  all_iters=$R_ITERS
  # Each size may name its own round trips: SIZE:ITERS (else R_ITERS).
  for item in $(echo "$R_SIZES" | tr , ' '); do
    size=${item%%:*} R_ITERS=$all_iters
    [ "$item" = "$size" ] || R_ITERS=${item#*:}
    pp_guest_server "$size" || { R_ITERS=$all_iters; end fail "$pp_why"; return; }
    pp_guest_client "$size" || { R_ITERS=$all_iters; end fail "$pp_why"; return; }
  done
  R_ITERS=$all_iters
  end pass "$pp_notes"
}

# rxe_count NAME: soft-RoCE's device-wide count NAME (rdma statistic's hw counters), 0 if none.
rxe_count() { cat "/sys/class/infiniband/rxe0/ports/1/hw_counters/$1" 2>/dev/null || echo 0; }
RXE_COUNTS="completer_retry_err rcvd_seq_err out_of_seq_request duplicate_request retry_exceeded_err"
# qp_count NAME: NAME's value in the host's last "qp=a:1,b:2" report, 0 if absent.
qp_count() { echo "$peer_qp" | tr ',=' '\n\n' | sed -n "s/^$1:\([0-9]*\)$/\1/p" | head -n 1 | grep . || echo 0; }

# loss: the pingpong again, both roles, with the model's port losing one frame in R_LOSS each
# way (the peer's --loss). Every run must still complete its R_ITERS round trips with the data
# intact, and both transports must show they recovered: soft-RoCE's retransmission
# (completer_retry_err: timeouts, rcvd_seq_err: sequence NAKs) and out-of-sequence/duplicate
# counts, and the model QP's (local_ack_timeout_err, packet_seq_err, out_of_sequence,
# duplicate_request) and its port's lost frames both ways.
m_loss() {
  begin loss
  [ -e /sys/class/infiniband/rxe0 ] || { end fail "no rxe0 (run the rxe milestone first)"; return; }
  roce_ask hello hello 20 || { end fail "the host's peer service does not answer on ttyS1"; return; }
  PEER_WAIT=${PEER_WAIT:-400}
  for c in $RXE_COUNTS; do eval "before_$c=\$(rxe_count $c)"; done
  pp_notes= PP_LOSS=${R_LOSS:-50}
  lost_out=0 lost_in=0 h_resent=0 h_seen=0
  for role in server client; do
    pp_guest_$role 4096 || { PP_LOSS=; end fail "$pp_why"; return; }
    o=${peer_lost#lost=}; o=${o%/*} i=${peer_lost#*/}
    case "$o$i" in *[!0-9]*|'') PP_LOSS=; end fail "the host's peer did not report lost frames ($peer_lost)"; return ;; esac
    lost_out=$((lost_out + o)) lost_in=$((lost_in + i))
    h_resent=$((h_resent + $(qp_count local_ack_timeout_err) + $(qp_count packet_seq_err) + $(qp_count implied_nak_seq_err)))
    h_seen=$((h_seen + $(qp_count out_of_sequence) + $(qp_count duplicate_request)))
    info "host QP counters ($role run)" echo "$peer_qp $peer_lost"
  done
  PP_LOSS=
  for c in $RXE_COUNTS; do eval "d_$c=\$((\$(rxe_count $c) - before_$c))"; done
  info "rdma statistic" rdma statistic show link rxe0/1
  g_resent=$((d_completer_retry_err + d_rcvd_seq_err)) g_seen=$((d_out_of_seq_request + d_duplicate_request))
  counts="model port lost $lost_out leaving, $lost_in arriving; model QPs: $h_resent resends (timeouts + sequence NAKs), $h_seen out-of-sequence or duplicate; rxe0: completer_retry_err $d_completer_retry_err, rcvd_seq_err $d_rcvd_seq_err, out_of_seq_request $d_out_of_seq_request, duplicate_request $d_duplicate_request, retry_exceeded_err $d_retry_exceeded_err"
  [ "$lost_out" -gt 0 ] && [ "$lost_in" -gt 0 ] || { end fail "the port lost nothing both ways: $counts"; return; }
  [ "$h_resent" -gt 0 ] && [ "$h_seen" -gt 0 ] || { end fail "the model's counters did not move: $counts"; return; }
  [ "$g_resent" -gt 0 ] && [ "$g_seen" -gt 0 ] || { end fail "soft-RoCE's counters did not move: $counts"; return; }
  end pass "one frame in $R_LOSS lost each way; $pp_notes; $counts"
}

# rxe-self (a self-test of the tools, not in the profile's default list): two rxe devices on
# the two ends of a veth pair in this guest, ibv_rc_pingpong and a short ib_write_bw between
# them. Both addresses are local, so without policy routing the frames would take lo (where
# no rxe device listens): lookups of locally sent packets (iif lo) for the other end go to a
# table whose only route is out of this end's veth; the local table moves behind those rules;
# accept_local lets a packet with a local source in.
m_rxe_self() {
  begin rxe-self
  roce_modules || { end fail "rdma_rxe did not load"; return; }
  modprobe veth 2>&1 | sed 's/^/@@INFO modprobe veth: /'
  a=10.79.1.1 b=10.79.1.2
  ip link add rxva type veth peer name rxvb || { end fail "ip link add veth failed"; return; }
  # (busybox's ip names the peer itself: rename it, found by rxva's iflink)
  if [ ! -e /sys/class/net/rxvb ]; then
    for d in /sys/class/net/*; do
      [ "$(cat "$d/ifindex")" = "$(cat /sys/class/net/rxva/iflink)" ] && ip link set "${d##*/}" name rxvb
    done
  fi
  ip addr add $a/24 dev rxva && ip addr add $b/24 dev rxvb || { end fail "addresses on the veth pair failed"; return; }
  ip link set rxva up && ip link set rxvb up
  for f in all rxva rxvb; do
    echo 1 > /proc/sys/net/ipv4/conf/$f/accept_local
    echo 0 > /proc/sys/net/ipv4/conf/$f/rp_filter
  done
  ip rule add pref 10 to $b iif lo lookup 10 && ip route add $b dev rxva src $a table 10 \
    && ip rule add pref 11 to $a iif lo lookup 11 && ip route add $a dev rxvb src $b table 11 \
    && ip rule add pref 100 lookup local && ip rule del pref 0 lookup local \
    || { end fail "policy routing failed"; info "ip rule" ip rule show; return; }
  info "ip rule" ip rule show
  info "rdma link add" sh -c "rdma link add rxa type rxe netdev rxva && rdma link add rxb type rxe netdev rxvb" \
    || { end fail "rdma link add on the veth pair failed"; return; }
  wait_for 10 rxe_active rxa && wait_for 10 rxe_active rxb || { end fail "$(rxe_port_state rxa)$(rxe_port_state rxb)"; return; }
  # ibv_rc_pingpong: rxa serves, rxb connects.
  pp_run self-server -d rxa -g 1 -n "${R_ITERS:-1000}" -s 4096 -m 1024
  wait_for 20 tcp_listening 18515 || { kill "$pp_pid"; pp_show self-server; end fail "ibv_rc_pingpong did not listen"; return; }
  srv=$pp_pid
  pp_run self-client -d rxb -g 1 -n "${R_ITERS:-1000}" -s 4096 -m 1024 $a
  pp_wait 300; crc=$pp_rc
  pp_pid=$srv tag=self-server; pp_wait 30; src=$pp_rc
  pp_show self-server; pp_show self-client
  si=$(iters_of /tmp/pp-self-server) ci=$(iters_of /tmp/pp-self-client)
  [ "$src" = 0 ] && [ "$crc" = 0 ] && [ "$si" = "${R_ITERS:-1000}" ] && [ "$ci" = "${R_ITERS:-1000}" ] \
    || { end fail "ibv_rc_pingpong: server exit $src ($si iters), client exit $crc ($ci iters)"; return; }
  note="ibv_rc_pingpong 4096 B x $si: $(rate_of /tmp/pp-self-client)"
  # ib_write_bw: 2000 RDMA writes of 64 KiB (-F: no failure over TCG's CPU frequency).
  ib_write_bw -d rxa -x 1 -F -s 65536 -n 2000 > /tmp/bw-server 2>&1 &
  srv=$!
  wait_for 20 tcp_listening 18515 || { kill $srv; end fail "ib_write_bw did not listen"; return; }
  timeout 300 ib_write_bw -d rxb -x 1 -F -s 65536 -n 2000 $a > /tmp/bw-client 2>&1; crc=$?
  i=0; while kill -0 $srv 2>/dev/null && [ $i -lt 100 ]; do sleep 0.2; i=$((i + 1)); done
  kill $srv 2>/dev/null; wait $srv; src=$?
  sed 's/^/@@PP bw-server /' /tmp/bw-server; sed 's/^/@@PP bw-client /' /tmp/bw-client
  # The result row: bytes, iterations, peak and average MiB/s (perftest's columns).
  row=$(awk '$1 == 65536 && $2 == 2000 { print $4 " MiB/s average, " $3 " peak" }' /tmp/bw-client | head -n 1)
  [ "$src" = 0 ] && [ "$crc" = 0 ] && [ -n "$row" ] \
    || { end fail "$note; ib_write_bw: server exit $src, client exit $crc, result '$row'"; return; }
  # The frames crossed the veth pair (not lo): its counters moved by at least the messages.
  tx=$(cat /sys/class/net/rxva/statistics/tx_packets) rx=$(cat /sys/class/net/rxva/statistics/rx_packets)
  [ "$tx" -ge 2000 ] && [ "$rx" -ge 2000 ] || { end fail "$note; only $tx/$rx frames crossed rxva: not over the veth pair"; return; }
  end pass "$note; ib_write_bw 64 KiB x 2000: $row; rxva sent $tx frames, received $rx"
}

. /roce-rdma.sh

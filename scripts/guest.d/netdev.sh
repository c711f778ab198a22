# The Ethernet profile's milestones (issue 15), sourced by milestones.sh in the guest: mlx5e's
# netdev, then traffic with the peer agent that scripts/guest runs on the host, in the network
# namespace of the model's TAP interface. The agent answers on the third serial port (ttyS2),
# one JSON line per command (see netcheck/src/agent.rs); the transfers on both sides are
# mlx5-netcheck's, which checks every byte and prints flat JSON.

read -r GUEST_IP PREFIX HOST_IP BYTES < /netconf
peer_ok=0
# IPv6 off before mlx5e makes its interface: no autoconfiguration or neighbour discovery
# crosses the port while counters are compared, only what the milestones send.
for f in /proc/sys/net/ipv6/conf/default/disable_ipv6 /proc/sys/net/ipv6/conf/all/disable_ipv6; do
  [ -w "$f" ] && echo 1 > "$f"
done

peer_open() {
  stty -F /dev/ttyS2 raw -echo 2>/dev/null || return 1
  exec 4<>/dev/ttyS2
  peer_ok=1
}

# peer COMMAND: one command to the host's agent; its JSON answer in $reply. The agent sends
# `LENGTH JSON`: an answer that lost bytes on the serial line (seen under heavy load) is asked
# for `again`, which repeats it without running the command twice.
peer() {
  reply=
  [ "$peer_ok" = 1 ] || { echo "@@PEER $* => (no peer channel)"; return 1; }
  printf '%s\n' "$*" >&4
  tries=0
  while :; do
    read -t 600 -r line <&4 || { echo "@@PEER $* => (no answer)"; return 1; }
    len=${line%% *}; reply=${line#* }
    [ "$len" = "${#reply}" ] && break
    tries=$((tries + 1))
    echo "@@INFO peer: a garbled answer to '$*' (${#reply} bytes, $len sent), asking again"
    [ "$tries" -lt 5 ] || { echo "@@PEER $* => (garbled 5 times)"; return 1; }
    printf 'again\n' >&4
  done
  echo "@@PEER $* => $reply"
  [ "$(json_bool ok)" = true ]
}

# json_f KEY: a number (integer or float) after "KEY": in $reply.
json_f() { printf '%s' "$reply" | sed -n "s/.*\"$1\":\([0-9.eE+-]*\).*/\1/p"; }
# The function's network interface (mlx5e), its name from sysfs.
netif() { ls "$PCIDEV/net" 2>/dev/null | head -n 1; }
carrier() { [ "$(cat "/sys/class/net/$IF/carrier" 2>/dev/null)" = 1 ]; }
# info LABEL COMMAND...: runs COMMAND, shows its output as @@INFO lines, keeps it in /tmp/out.
info() {
  label=$1; shift
  "$@" > /tmp/out 2>&1; rc=$?
  sed "s/^/@@INFO $label: /" /tmp/out
  return $rc
}
# field NAME: the value of "NAME: value" (ethtool pads names with spaces before the colon).
field() { sed -n "s/^[[:space:]]*$1[[:space:]]*:[[:space:]]*//p" /tmp/out | head -n 1; }

# mlx5e's netdev: it exists with the model's MAC, `ip link set up` brings the carrier up (the
# model raises PORT_CHANGE when PAOS turns the port up), and ethtool shows what the model's
# registers say: driver and firmware (-i), the PTYS speed, the module EEPROM of MCIA (-m).
m_netdev() {
  begin "${1:-netdev}"
  bound || { end fail "mlx5_core is not bound"; return; }
  wait_for 20 sh -c "[ -n \"\$(ls $PCIDEV/net 2>/dev/null)\" ]" \
    || { end fail "no network interface under $PCIDEV/net"; return; }
  IF=$(netif)
  mac=$(cat "/sys/class/net/$IF/address")
  ctl status || { end fail "no control channel"; return; }
  want=$(json_str mac)
  MODULE_VENDOR=$(json_str vendor); MODULE_PN=$(json_str part_number); MODULE_SN=$(json_str serial_number)
  [ "$mac" = "$want" ] || { end fail "$IF has MAC $mac, the model's is $want"; return; }
  irq0=$(irq_count)
  info "ip link" ip link set "$IF" up || { end fail "ip link set $IF up failed"; return; }
  wait_for 20 carrier || { end fail "no carrier on $IF 20 s after ip link set up"; return; }
  irq1=$(irq_count)
  [ "$irq1" -gt "$irq0" ] || { end fail "no interrupt on the control vector (PORT_CHANGE)"; return; }
  wait_for 10 sh -c "dmesg | grep -q '$IF: Link up'" || { end fail "mlx5e logged no 'Link up'"; return; }
  ctl status
  [ "$(json_bool oper_up)" = true ] || { end fail "the model's port is not up"; return; }
  info "ethtool -i" ethtool -i "$IF" || { end fail "ethtool -i failed"; return; }
  [ "$(field driver)" = mlx5_core ] || { end fail "ethtool -i names driver '$(field driver)'"; return; }
  fwv=$(field firmware-version)
  case "$fwv" in "$fw"*) ;; *) end fail "ethtool -i firmware '$fwv', dmesg said '$fw'"; return ;; esac
  info ethtool ethtool "$IF" || { end fail "ethtool failed"; return; }
  speed=$(field Speed)
  [ "$speed" = 100000Mb/s ] || { end fail "ethtool shows speed '$speed', PTYS says 100000Mb/s"; return; }
  [ "$(field 'Link detected')" = yes ] || { end fail "ethtool: link not detected"; return; }
  info "ethtool -m" ethtool -m "$IF" || { end fail "ethtool -m failed"; return; }
  vendor=$(field "Vendor name"); pn=$(field "Vendor PN"); sn=$(field "Vendor SN")
  temp=$(field "Module temperature")
  rx=$(grep -i -m 1 -E '(rcvr|receiver) signal.*channel 1' /tmp/out | sed 's/.*: *//')
  [ "$vendor" = "$MODULE_VENDOR" ] || { end fail "ethtool -m vendor '$vendor', the model's is '$MODULE_VENDOR'"; return; }
  [ "$pn" = "$MODULE_PN" ] && [ "$sn" = "$MODULE_SN" ] \
    || { end fail "ethtool -m part/serial '$pn'/'$sn', the model's are '$MODULE_PN'/'$MODULE_SN'"; return; }
  [ -n "$temp" ] && [ -n "$rx" ] || { end fail "ethtool -m shows no temperature or Rx power"; return; }
  # The addresses for the traffic milestones, and permanent neighbour entries both ways (no
  # ARP crosses the port while counters are compared).
  ip addr add "$GUEST_IP/$PREFIX" dev "$IF" || { end fail "ip addr add $GUEST_IP/$PREFIX failed"; return; }
  if [ "$peer_ok" = 1 ]; then
    peer stats || { end fail "the host's agent does not answer"; return; }
    hostmac=$(json_str mac)
    # (busybox's ip has no "neigh replace"; its arp -s makes a permanent entry)
    arp -i "$IF" -s "$HOST_IP" "$hostmac" || { end fail "arp -s $HOST_IP $hostmac failed"; return; }
    peer neigh "$GUEST_IP" "$mac" || { end fail "the host could not add $GUEST_IP's neighbour entry"; return; }
  fi
  end pass "$IF $mac carrier up, $speed, fw $fwv, module $vendor $pn $sn, $temp, rx $rx"
}


# ICMP both ways: 100 echo requests from the host's namespace (the agent's), none lost, and
# 10 from the guest to the host.
m_ping() {
  begin "${1:-ping}"
  IF=$(netif)
  [ -n "$IF" ] && carrier || { end fail "no interface with carrier"; return; }
  peer ping "$GUEST_IP" 100 || { end fail "the host's ping failed"; return; }
  got=$(json_num received); avg=$(printf '%.2f' "$(json_f rtt_avg_ms)")
  [ "$got" = 100 ] || { end fail "$got of 100 echo replies reached the host"; return; }
  info "ping" ping -c 10 -i 0.1 -W 2 "$HOST_IP"
  grep -q '10 packets transmitted, 10 packets received' /tmp/out \
    || { end fail "the guest's ping lost replies: $(grep transmitted /tmp/out)"; return; }
  end pass "host -> guest 100/100 (0 % loss, avg ${avg} ms), guest -> host 10/10"
}

# xfer PROTO PORT_IN PORT_OUT SEED: BYTES of checked stream host -> guest (the guest receives on
# PORT_IN), then guest -> host (the host receives on PORT_OUT). Leaves "in/out MB/s" in
# $xfer_note, or returns 1 with the reason in $xfer_why.
xfer() {
  proto=$1 pin=$2 pout=$3 seed=$4
  xfer_why= xfer_note=
  # host -> guest
  mlx5-netcheck "$proto-recv" --listen "0.0.0.0:$pin" --seed "$seed" > /tmp/rx.json 2> /tmp/rx.err &
  rpid=$!
  wait_for 10 grep -q listening /tmp/rx.err || { xfer_why="the guest's $proto receiver did not start"; kill $rpid; return 1; }
  if ! peer "$proto-send" "$GUEST_IP:$pin" "$BYTES" "$seed"; then
    xfer_why="host -> guest $proto: $reply"; kill $rpid 2>/dev/null; return 1
  fi
  crc_sent=$(json_str crc32); in_mbs=$(printf '%.1f' "$(json_f mb_per_s)"); in_resent=$(json_num resent)
  HOST_SENT=$(json_num datagrams_sent)
  wait $rpid
  reply=$(cat /tmp/rx.json); echo "@@DATA guest $proto-recv $reply"
  [ "$(json_bool ok)" = true ] && [ "$(json_num bytes)" = "$BYTES" ] && [ "$(json_str crc32)" = "$crc_sent" ] \
    || { xfer_why="host -> guest $proto: the guest got $(json_num bytes) bytes, crc $(json_str crc32) (sent $crc_sent), first mismatch $(json_num first_mismatch)"; return 1; }
  GUEST_ACKS=$(json_num datagrams_sent)
  # guest -> host
  peer "$proto-recv" "$pout" "$seed" || { xfer_why="the host's $proto receiver did not start: $reply"; return 1; }
  mlx5-netcheck "$proto-send" --to "$HOST_IP:$pout" --bytes "$BYTES" --seed "$seed" > /tmp/tx.json 2> /tmp/tx.err
  reply=$(cat /tmp/tx.json); echo "@@DATA guest $proto-send $reply"
  crc_sent=$(json_str crc32); out_mbs=$(printf '%.1f' "$(json_f mb_per_s)"); out_resent=$(json_num resent)
  GUEST_SENT=$(json_num datagrams_sent)
  peer wait "$pout" || { xfer_why="guest -> host $proto: $reply"; return 1; }
  [ "$(json_num bytes)" = "$BYTES" ] && [ "$(json_str crc32)" = "$crc_sent" ] \
    || { xfer_why="guest -> host $proto: the host got $(json_num bytes) bytes, crc $(json_str crc32) (sent $crc_sent)"; return 1; }
  HOST_ACKS=$(json_num datagrams_sent)
  xfer_note="$BYTES B each way, every byte checked; host -> guest $in_mbs MB/s, guest -> host $out_mbs MB/s"
  [ "$proto" = udp ] && xfer_note="$xfer_note (datagrams resent: $in_resent in, $out_resent out)"
  return 0
}

m_udp() {
  begin "${1:-udp}"
  xfer udp 5001 5002 11 || { end fail "$xfer_why"; return; }
  end pass "$xfer_note"
}

# TCP both ways. mlx5e segments nothing itself: TSO is on, so the guest's sends are LSO WQEs
# the model cuts into segments (tx_tso_packets must move), and received segments get
# CHECKSUM_COMPLETE from the CQE's check_sum (rx_csum_complete).
m_tcp() {
  begin "${1:-tcp}"
  IF=$(netif)
  ethtool -S "$IF" > /tmp/tcp0
  xfer tcp 5003 5004 12 || { end fail "$xfer_why"; return; }
  ethtool -S "$IF" > /tmp/tcp1
  tso=$(( $(stat_of /tmp/tcp1 tx_tso_packets) - $(stat_of /tmp/tcp0 tx_tso_packets) ))
  tso_bytes=$(( $(stat_of /tmp/tcp1 tx_tso_bytes) - $(stat_of /tmp/tcp0 tx_tso_bytes) ))
  csum=$(( $(stat_of /tmp/tcp1 rx_csum_complete) - $(stat_of /tmp/tcp0 rx_csum_complete) ))
  [ "$tso" -gt 0 ] || { end fail "no LSO WQE was sent (tx_tso_packets did not move)"; return; }
  [ "$csum" -gt 0 ] || { end fail "no received segment had CHECKSUM_COMPLETE (rx_csum_complete did not move)"; return; }
  end pass "$xfer_note; $tso LSO sends ($tso_bytes B), $csum receives with CHECKSUM_COMPLETE"
}

# stat_of FILE NAME: the value of counter NAME in an `ethtool -S` listing.
stat_of() { sed -n "s/^[[:space:]]*$2: \([0-9]*\)$/\1/p" "$1" | head -n 1; }
# stat_sum FILE PATTERN: the sum of the counters whose names match PATTERN (a regex).
stat_sum() { awk -v p="^$2:\$" '{ n = $1 } n ~ p { s += $2 } END { print s + 0 }' "$1"; }

# snapshot N: guest (ethtool -S), model (control status) and host (agent stats) counters.
snapshot() {
  ethtool -S "$IF" > "/tmp/stats$1" || return 1
  ctl status || return 1
  eval "M$1_TX=$(json_num tx_frames) M$1_RX=$(json_num rx_frames) M$1_DROP=$(json_num rx_dropped)"
  eval "M$1_TOK=$(json_num to_kernel) M$1_FROMK=$(json_num from_kernel)"
  peer stats || return 1
  eval "H$1_RXP=$(json_num rx_packets) H$1_TXP=$(json_num tx_packets)"
  eval "H$1_RXB=$(json_num rx_bytes) H$1_TXB=$(json_num tx_bytes)"
}

# counters: a known exchange (100 pings from the host, 1 MB of UDP each way, every datagram
# counted by the programs that sent it), then every counter that sees these frames must have
# moved by exactly that many: the guest's mlx5e (software totals and the sum over channels),
# the model's own counters as mlx5e shows them (vport and PPCNT physical-port groups), the
# model's port and TAP cable (control channel), and the host's TAP interface (agent).
m_counters() {
  begin counters
  IF=$(netif)
  sleep 1
  snapshot 0 || { end fail "could not read the counters"; return; }
  peer ping "$GUEST_IP" 100 && [ "$(json_num received)" = 100 ] || { end fail "ping: $reply"; return; }
  saved=$BYTES; BYTES=1000000
  xfer udp 5005 5006 13 || { BYTES=$saved; end fail "$xfer_why"; return; }
  BYTES=$saved
  sleep 1
  snapshot 1 || { end fail "could not read the counters"; return; }
  # What the programs sent: host -> guest echo requests, the host's data datagrams and its
  # acks; guest -> host the echo replies, the guest's data datagrams and its acks.
  want_in=$((100 + HOST_SENT + HOST_ACKS))
  want_out=$((100 + GUEST_SENT + GUEST_ACKS))
  bad=
  check() { # check LABEL GOT WANT
    echo "@@INFO counters: $1 moved by $2 (want $3)"
    [ "$2" = "$3" ] || bad="$bad; $1 moved by $2, not $3"
  }
  d() { echo $(( $(stat_of /tmp/stats1 "$1") - $(stat_of /tmp/stats0 "$1") )); }
  ds() { echo $(( $(stat_sum /tmp/stats1 "$1") - $(stat_sum /tmp/stats0 "$1") )); }
  check "guest rx_packets" "$(d rx_packets)" "$want_in"
  check "guest rx*_packets (sum over channels)" "$(ds 'rx[0-9]+_packets')" "$want_in"
  check "guest rx_vport_unicast_packets" "$(d rx_vport_unicast_packets)" "$want_in"
  check "guest rx_packets_phy (PPCNT)" "$(d rx_packets_phy)" "$want_in"
  check "model rx_frames" "$((M1_RX - M0_RX))" "$want_in"
  check "model rx_dropped" "$((M1_DROP - M0_DROP))" 0
  check "TAP cable from_kernel" "$((M1_FROMK - M0_FROMK))" "$want_in"
  check "host TAP tx_packets" "$((H1_TXP - H0_TXP))" "$want_in"
  check "guest tx_packets" "$(d tx_packets)" "$want_out"
  check "guest tx*_packets (sum over channels)" "$(ds 'tx[0-9]+_packets')" "$want_out"
  check "guest tx_vport_unicast_packets" "$(d tx_vport_unicast_packets)" "$want_out"
  check "guest tx_packets_phy (PPCNT)" "$(d tx_packets_phy)" "$want_out"
  check "model tx_frames" "$((M1_TX - M0_TX))" "$want_out"
  check "TAP cable to_kernel" "$((M1_TOK - M0_TOK))" "$want_out"
  check "host TAP rx_packets" "$((H1_RXP - H0_RXP))" "$want_out"
  # Bytes: the frames as they cross the cable (no FCS) on both ends.
  check "guest rx_bytes = host TAP tx_bytes" "$(d rx_bytes)" "$((H1_TXB - H0_TXB))"
  check "guest tx_bytes = host TAP rx_bytes" "$(d tx_bytes)" "$((H1_RXB - H0_RXB))"
  check "guest rx_vport_unicast_bytes = host TAP tx_bytes" "$(d rx_vport_unicast_bytes)" "$((H1_TXB - H0_TXB))"
  check "guest tx_vport_unicast_bytes = host TAP rx_bytes" "$(d tx_vport_unicast_bytes)" "$((H1_RXB - H0_RXB))"
  # PPCNT counts wire bytes: each frame with its 4-byte FCS (none of these frames is shorter
  # than the 60-byte minimum, so there is no padding).
  check "guest rx_bytes_phy (PPCNT) = host TAP tx_bytes + 4 per frame" "$(d rx_bytes_phy)" "$((H1_TXB - H0_TXB + 4 * want_in))"
  check "guest tx_bytes_phy (PPCNT) = host TAP rx_bytes + 4 per frame" "$(d tx_bytes_phy)" "$((H1_RXB - H0_RXB + 4 * want_out))"
  [ -z "$bad" ] || { end fail "${bad#; }"; return; }
  # The counters as ethtool shows them (those not zero), for the log and the README.
  awk '$2 != 0' /tmp/stats1 | sed 's/^/@@INFO ethtool -S: /'
  end pass "in $want_in frames, out $want_out: guest (total, per channel, vport, PPCNT), model, TAP cable and host agree"
}

# comp_irqs N: the interrupts of completion vector N (mlx5_compN of this function).
comp_irqs() { irqs "mlx5_comp$1@"; }

# rss: the RSS table decides the channel. With the indirection table all on one channel
# (`ethtool -X weight`, which mlx5e turns into MODIFY_RQT), 50 pings from the host (IPv4: an
# RSS TIR, hashed, the table's entry) must all land on that channel's RQ, and its completion
# vector must fire; then the other channel; then the default table.
m_rss() {
  begin rss
  IF=$(netif)
  n=$(ethtool -l "$IF" | awk '/^Combined:/ { v = $2 } END { print v + 0 }')
  [ "$n" -ge 2 ] || { end fail "$IF has $n channel(s); RSS needs 2"; return; }
  note=
  for ch in 0 1; do
    w="1 0"; [ "$ch" = 1 ] && w="0 1"
    info "ethtool -X weight $w" ethtool -X "$IF" weight $w || { end fail "ethtool -X $IF weight $w failed"; return; }
    other=$((1 - ch))
    ethtool -S "$IF" > /tmp/rss0; i0=$(comp_irqs "$ch")
    peer ping "$GUEST_IP" 50 && [ "$(json_num received)" = 50 ] || { end fail "ping: $reply"; return; }
    sleep 0.5
    ethtool -S "$IF" > /tmp/rss1; i1=$(comp_irqs "$ch")
    mine=$(( $(stat_of /tmp/rss1 "rx${ch}_packets") - $(stat_of /tmp/rss0 "rx${ch}_packets") ))
    theirs=$(( $(stat_of /tmp/rss1 "rx${other}_packets") - $(stat_of /tmp/rss0 "rx${other}_packets") ))
    [ "$mine" = 50 ] && [ "$theirs" = 0 ] \
      || { end fail "table on channel $ch: rx${ch}_packets +$mine, rx${other}_packets +$theirs (want 50, 0)"; return; }
    [ "$i1" -gt "$i0" ] || { end fail "no interrupt on mlx5_comp$ch while channel $ch received"; return; }
    note="${note:+$note; }channel $ch: 50/50 pings, mlx5_comp$ch $i0 -> $i1"
  done
  info "ethtool -X default" ethtool -X "$IF" default || { end fail "ethtool -X $IF default failed"; return; }
  info "ethtool -x" ethtool -x "$IF"
  end pass "$note"
}

# fault: the model fails the next send WQE as a bad lkey would (control channel `tx-fault 1`):
# an error CQE, the SQ in error; mlx5e's TX recovery (QUERY_SQ, ERR -> RST -> RDY) brings it
# back and traffic flows again.
m_fault() {
  begin fault
  IF=$(netif)
  rec0=$(stat_sum_now 'tx[0-9]+_recover')
  ctl tx-fault 1 || { end fail "tx-fault got no answer"; return; }
  [ "$(json_bool ok)" = true ] || { end fail "tx-fault refused: $reply"; return; }
  ping -c 3 -i 0.2 -W 1 "$HOST_IP" > /dev/null 2>&1
  wait_for 30 sh -c "[ \$(ethtool -S $IF | awk '\$1 ~ /^tx[0-9]+_recover:\$/ { s += \$2 } END { print s + 0 }') -gt $rec0 ]" \
    || { end fail "mlx5e did not recover the SQ within 30 s (tx*_recover still $rec0)"; return; }
  rec1=$(stat_sum_now 'tx[0-9]+_recover')
  ctl status
  left=$(json_num tx_faults_pending)
  [ "${left:-0}" = 0 ] || { end fail "the fault was not consumed ($left pending)"; return; }
  peer ping "$GUEST_IP" 20 && [ "$(json_num received)" = 20 ] || { end fail "no traffic after the recovery: $reply"; return; }
  saved=$BYTES; BYTES=1000000
  xfer udp 5007 5008 14 || { BYTES=$saved; end fail "after the recovery: $xfer_why"; return; }
  BYTES=$saved
  end pass "error CQE, SQ recovered (tx*_recover $rec0 -> $rec1); then 20/20 pings and 1 MB UDP each way"
}
stat_sum_now() { ethtool -S "$IF" > /tmp/statsnow; stat_sum /tmp/statsnow "$1"; }

# down: `ip link set down` turns the port down through PAOS; the model's port goes down and
# raises PORT_CHANGE (an interrupt on the control vector), and the interface has no carrier.
m_down() {
  begin down
  IF=$(netif)
  irq0=$(irq_count)
  ip link set "$IF" down || { end fail "ip link set down failed"; return; }
  i=0
  while ctl status && [ "$(json_bool oper_up)" != false ] && [ "$i" -lt 50 ]; do
    sleep 0.2; i=$((i + 1))
  done
  [ "$(json_bool oper_up)" = false ] || { end fail "the model's port is still up"; return; }
  [ "$(json_bool admin_up)" = false ] || { end fail "the model's port is still administratively up"; return; }
  [ "$(cat /sys/class/net/$IF/operstate)" = down ] || { end fail "operstate $(cat /sys/class/net/$IF/operstate)"; return; }
  wait_for 10 irq_count_above "$irq0" || { end fail "no interrupt (PORT_CHANGE) after the port went down"; return; }
  end pass "$IF down, no carrier; the model's port down (PAOS), PORT_CHANGE raised"
}

# reload: rmmod leaves the model with no firmware page and no object; modprobe brings the
# netdev back, and ping and both transfers pass again in the same boot.
m_reload() {
  begin reload
  modprobe -r mlx5_core 2>&1 | sed 's/^/@@INFO rmmod: /'
  if grep -q '^mlx5_core ' /proc/modules; then end fail "mlx5_core is still loaded"; return; fi
  emptied || { end fail "$why"; return; }
  end pass "0 pages, 0 objects"
  m_bind bind-again
  m_netdev netdev-again
  m_ping ping-again
  m_udp udp-again
  m_tcp tcp-again
}

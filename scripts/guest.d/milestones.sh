# Milestone steps of issues 14 and 15, run by the guest's /init (busybox sh); the Ethernet
# profile's (mlx5e's netdev and traffic) are in netdev.sh. Each milestone prints
#   @@BEGIN name <uptime>            then the kernel lines it caused as  @@K <raw dmesg line>
#   @@END name pass|fail <uptime> <reason>
# Kernel lines are judged by the host (scripts/guest.d/verdict): any mlx5_core line of level
# warning or worse fails the milestone it falls in (except the expected ones of "fatal").
# The control channel (ttyS1) is a line to the device server's --control socket: one command
# out, one JSON line back.

BDF=$(cat /bdf)
PCIDEV=/sys/bus/pci/devices/$BDF
DBG=/sys/kernel/debug/mlx5/$BDF
dmesg_seen=0
ctl_ok=0

now() { cut -d' ' -f1 /proc/uptime; }

# Prints the kernel lines logged since the last call, raw (with their <level>), marked.
flush_kmsg() {
  dmesg -r > /tmp/dmesg.all
  n=$(wc -l < /tmp/dmesg.all)
  if [ "$n" -gt "$dmesg_seen" ]; then
    tail -n +"$((dmesg_seen + 1))" /tmp/dmesg.all | sed 's/^/@@K /'
  fi
  dmesg_seen=$n
}

ctl_open() {
  [ -c /dev/ttyS1 ] || return 1
  stty -F /dev/ttyS1 raw -echo 2>/dev/null || return 1
  exec 3<>/dev/ttyS1
  ctl_ok=1
}

# ctl COMMAND: sends one control command, leaves the JSON reply in $reply; fails on timeout.
# A `status` answer that lost bytes on the serial line (not one JSON object) is asked again.
ctl() {
  reply=
  [ "$ctl_ok" = 1 ] || return 1
  tries=0
  while :; do
    printf '%s\n' "$*" >&3
    read -t 20 -r reply <&3 || { echo "@@CTL $* => (no answer)"; return 1; }
    case "$reply" in '{"'*'}') break ;; esac
    tries=$((tries + 1))
    echo "@@INFO ctl: a garbled answer to '$*' (${#reply} bytes)"
    [ "$1" = status ] && [ "$tries" -lt 5 ] || break
  done
  echo "@@CTL $* => $reply"
}

# json_num KEY: the number after "KEY": in $reply (flat JSON written by the server).
json_num() { printf '%s' "$reply" | sed -n "s/.*\"$1\":\([0-9-]*\).*/\1/p"; }

# json_str KEY / json_bool KEY: a string's or a boolean's value after "KEY": in $reply.
json_str() { printf '%s' "$reply" | sed -n "s/.*\"$1\":\"\([^\"]*\)\".*/\1/p"; }
json_bool() { printf '%s' "$reply" | sed -n "s/.*\"$1\":\(true\|false\).*/\1/p"; }

begin() { cur=$1; flush_kmsg; echo "@@BEGIN $1 $(now)"; }
end() { flush_kmsg; echo "@@END $cur $1 $(now) ${2:-}"; }

# wait_for SECONDS COMMAND...: polls COMMAND every 0.2 s until it succeeds or time runs out.
wait_for() {
  t=$1; shift
  i=0
  while [ "$i" -lt "$((t * 5))" ]; do
    "$@" && return 0
    sleep 0.2; i=$((i + 1))
  done
  return 1
}

bound() { [ "$(basename "$(readlink "$PCIDEV/driver" 2>/dev/null)")" = mlx5_core ]; }
# irqs NAME: the interrupts (summed over CPUs) of this function's vectors named NAME*.
irqs() {
  grep "$1.*$BDF" /proc/interrupts | awk '{ s = 0; for (i = 2; i <= NF; i++) if ($i ~ /^[0-9]+$/) s += $i; else break; t += s } END { print t + 0 }'
}
irq_count() { irqs mlx5_async; } # the control vector's
irq_count_above() { [ "$(irq_count)" -gt "$1" ]; }

# emptied: the model holds no firmware page and no object after an unload (control channel);
# the reason in $why when not.
emptied() {
  ctl status || { why="no control channel"; return 1; }
  held=$(json_num pages_held); objs=$(json_num objects_total)
  [ "$held" = 0 ] || { why="the model still holds $held firmware pages"; return 1; }
  [ "$objs" = 0 ] || { why="the model still has $objs objects"; return 1; }
}
fw_pages() { cat "$DBG/pages/fw_pages_total" 2>/dev/null || echo -1; }

m_bind() {
  begin "${1:-bind}"
  [ -e "$PCIDEV" ] || { end fail "no PCI function at $BDF"; lspci 2>/dev/null; return; }
  echo "@@INFO pci $(cat "$PCIDEV/vendor"):$(cat "$PCIDEV/device") class $(cat "$PCIDEV/class")"
  modprobe mlx5_core 2>&1 | sed 's/^/@@INFO modprobe: /'
  if ! wait_for 10 bound; then end fail "mlx5_core did not bind $BDF"; return; fi
  fw=$(dmesg | grep "mlx5_core $BDF: firmware version" | tail -n1 | sed 's/.*firmware version: //')
  [ -n "$fw" ] || { end fail "no firmware version line"; return; }
  end pass "bound, firmware $fw"
}

m_events() {
  begin "${1:-events}"
  bound || { end fail "mlx5_core is not bound"; return; }
  irq0=$(irq_count)
  [ "$irq0" -gt 0 ] || { end fail "no interrupt on the control vector (mlx5_async) after probe"; return; }
  pages0=$(fw_pages)
  ctl status || { end fail "no control channel"; return; }
  held0=$(json_num pages_held)
  ctl request-pages 64 || { end fail "request-pages got no answer"; return; }
  if ! wait_for 20 sh -c "[ \$(cat $DBG/pages/fw_pages_total) -ge $((pages0 + 64)) ]"; then
    end fail "the guest did not give 64 pages (fw_pages_total $pages0 -> $(fw_pages))"; return
  fi
  ctl status
  held1=$(json_num pages_held)
  [ -n "$held1" ] && [ "$held1" -ge "$((held0 + 64))" ] \
    || { end fail "the model holds $held1 pages, expected >= $((held0 + 64))"; return; }
  irq1=$(irq_count)
  [ "$irq1" -gt "$irq0" ] || { end fail "no interrupt for the page request / MANAGE_PAGES"; return; }
  echo "@@INFO quiet health poll for 12 s"
  sleep 12
  bound || { end fail "mlx5_core unbound during the health poll"; return; }
  end pass "irqs $irq0 -> $irq1, pages $pages0 -> $(fw_pages), model holds $held1"
}

m_unload() {
  begin unload
  modprobe -r mlx5_core 2>&1 | sed 's/^/@@INFO rmmod: /'
  if grep -q '^mlx5_core ' /proc/modules; then end fail "mlx5_core is still loaded"; return; fi
  emptied || { end fail "$why"; return; }
  end pass "0 pages, 0 objects"
  m_bind bind-again
  m_events events-again
}

m_fatal() {
  begin fatal
  bound || { end fail "mlx5_core is not bound"; return; }
  ctl health-fatal 0x1 || { end fail "health-fatal got no answer"; return; }
  health_error() { dmesg | grep "mlx5_core $BDF: " | grep -q -e 'Fatal error' -e "health compromised"; }
  if ! wait_for 30 health_error; then
    end fail "mlx5_core reported no health error within 30 s"; return
  fi
  # The kernel's recovery (software reset, reload) runs on; give it a few seconds.
  if wait_for 20 sh -c "dmesg | grep -q 'mlx5_core $BDF: health recovery succeeded'"; then
    recovery="recovered"
  else
    recovery="no recovery reported in 20 s"
  fi
  ctl status || { end fail "the server does not answer after the fatal error"; return; }
  end pass "health error reported ($recovery), server alive"
  m_unload_after_fatal
}

# After the recovery the driver must still unload cleanly: TEARDOWN_HCA, the pages back,
# DISABLE_HCA, all answered (a command the model left without its completion would hang
# rmmod, or log "no done completion" when the guest shuts down).
m_unload_after_fatal() {
  begin fatal-unload
  (modprobe -r mlx5_core 2>&1 | sed 's/^/@@INFO rmmod after fatal: /') &
  if ! wait_for 60 sh -c '! grep -q "^mlx5_core " /proc/modules'; then
    end fail "mlx5_core still unloading 60 s after rmmod"; return
  fi
  emptied || { end fail "$why"; return; }
  end pass "0 pages, 0 objects"
}

# The driver bound again, then the kernel's own shutdown path: /init powers off with
# poweroff -f (reboot(2): every driver's shutdown runs, mlx5_core's included, as on a host
# that reboots). scripts/guest.d/verdict ends the milestone at "reboot: Power down" and checks
# the kernel lines between, which reach the console directly (console_msg_format=syslog).
m_shutdown() {
  begin shutdown
  bound || modprobe mlx5_core 2>&1 | sed 's/^/@@INFO modprobe: /'
  if ! wait_for 30 bound; then end fail "mlx5_core did not bind again before shutdown"; return; fi
  flush_kmsg
  : > /tmp/shutdown-requested
}

. /netdev.sh
. /roce.sh
. /vfio.sh

run_milestones() {
  if [ "$ROCE_OK" = 1 ]; then
    roce_open || echo "@@INFO no channel to the host's peer service on ttyS1"
  else
    ctl_open || echo "@@INFO no control channel on ttyS1"
    [ -c /dev/ttyS2 ] && peer_open
  fi
  for m in $(echo "$1" | tr , ' '); do
    case "$m" in
      bind) m_bind ;;
      events) m_events ;;
      unload) m_unload ;;
      fatal) m_fatal ;;
      shutdown) m_shutdown ;;
      netdev) m_netdev ;;
      ping) m_ping ;;
      udp) m_udp ;;
      tcp) m_tcp ;;
      counters) m_counters ;;
      rss) m_rss ;;
      fault) m_fault ;;
      down) m_down ;;
      reload) m_reload ;;
      rxe) m_rxe ;;
      rxe-self) m_rxe_self ;;
      pingpong) m_pingpong ;;
      loss) m_loss ;;
      rdma) m_rdma ;;
      vfio-bringup) m_vfio_bringup ;;
      vfio-traffic) m_vfio_traffic ;;
      vfio-interrupts) m_vfio_interrupts ;;
      vfio-ping) m_vfio_ping ;;
      *) echo "@@INFO unknown milestone $m" ;;
    esac
  done
  flush_kmsg
}

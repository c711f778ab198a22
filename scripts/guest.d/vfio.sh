# The VFIO profile's milestones (issue 19), sourced by milestones.sh in the guest: the model's
# function is handed to vfio-pci instead of mlx5_core, and our own driver (the workspace's
# `bringup` example, /bin/mlx5-bringup, static) drives it from user space through the guest
# kernel's VFIO stack and QEMU's virtual IOMMU.
#
#   vfio-bringup   the function bound to vfio-pci; `bringup --device vfio:BDF` runs the same
#                  commands as on the in-process model (the host ran it there and put the
#                  table in /vfio-expected) and ends with "firmware pages held after
#                  teardown: 0"; before it, the function is opened and closed 100 times (with
#                  DMA memory each time) and the process's open files and mappings (but its
#                  malloc heap) must be as they were
#   vfio-traffic   100,000 frames out of the port and back (the server loops it), every byte
#                  checked, through the batch tx/rx API
#   vfio-interrupts  command and receive completions delivered by MSI-X
#   vfio-ping      the port unplugged from its loopback (control channel), `ping --device
#                  vfio:BDF` pings the host's end of the TAP cable from the driver's
#                  smoltcp host, every payload checked

# The guest's VFIO: type-1 IOMMU over QEMU's intel-iommu. The virtual IOMMU runs without
# interrupt remapping (intremap=off, as the probe profile needs), which vfio_iommu_type1
# accepts only when told to, as on hosts without IR.
vfio_bind() {
  # 2 MiB pages for the backend's large DMA buffers (the reopen rounds' 2 MiB one, eth_bench's
  # packet pool); without them it takes 4 KiB pages.
  echo 16 > /proc/sys/vm/nr_hugepages
  modprobe vfio_iommu_type1 allow_unsafe_interrupts=1 || return 1
  modprobe vfio_pci || return 1
  echo vfio-pci > "$PCIDEV/driver_override" || return 1
  if [ -e "$PCIDEV/driver" ]; then echo "$BDF" > "$PCIDEV/driver/unbind" || return 1; fi
  echo "$BDF" > /sys/bus/pci/drivers_probe
  wait_for 10 vfio_bound
}
vfio_bound() { [ "$(basename "$(readlink "$PCIDEV/driver" 2>/dev/null)")" = vfio-pci ]; }

# commands FILE: the command table of a bringup run (name, opcode, op_mod; times left out).
commands() { awk 'NF == 4 && $2 ~ /^0x/ && $4 ~ /s$/ { print $1, $2, $3 }' "$1"; }

m_vfio_bringup() {
  begin vfio-bringup
  vfio_bind || { end fail "could not bind $BDF to vfio-pci"; return; }
  group=$(basename "$(readlink "$PCIDEV/iommu_group")")
  echo "@@INFO vfio: $BDF bound to vfio-pci, IOMMU group $group ($(ls /dev/vfio | tr '\n' ' '))"
  /bin/mlx5-bringup --device "vfio:$BDF" --reopen "${VFIO_REOPEN:-100}" > /tmp/vb.out 2>&1; rc=$?
  sed 's/^/@@INFO bringup: /' /tmp/vb.out
  [ "$rc" = 0 ] || { end fail "bringup --device vfio:$BDF exited $rc: $(tail -n 1 /tmp/vb.out)"; return; }
  commands /tmp/vb.out > /tmp/vb.cmds
  commands /vfio-expected > /tmp/vb.want
  n=$(wc -l < /tmp/vb.cmds)
  [ "$n" -gt 0 ] || { end fail "no command table in bringup's output"; return; }
  if ! cmp -s /tmp/vb.cmds /tmp/vb.want; then
    diff /tmp/vb.want /tmp/vb.cmds | sed 's/^/@@INFO commands (model < > vfio): /'
    end fail "the command table differs from the in-process model's (diff above)"
    return
  fi
  grep -q "firmware pages held after teardown: 0;" /tmp/vb.out \
    || { end fail "pages left after teardown: $(grep 'after teardown' /tmp/vb.out)"; return; }
  reopened=$(sed -n 's/^reopened \([0-9]*\) times in \([0-9.]* ms\): open files \([0-9]*\) -> .*/\1 opens in \2, open files and mappings unchanged/p' /tmp/vb.out)
  [ -n "$reopened" ] || { end fail "no reopen report: $(grep -i reopen /tmp/vb.out)"; return; }
  up=$(sed -n 's/^bring-up: \([0-9]*\) commands in \([0-9.]* ms\)$/\2/p' /tmp/vb.out)
  huge=$(sed -n 's/^DMA memory held in each round: .*, of it \([0-9]*\) huge pages$/\1/p' /tmp/vb.out)
  [ "${huge:-0}" -ge 1 ] || { end fail "the 2 MiB buffer took no huge page ($(grep HugePages_ /proc/meminfo | tr '\n' ' '))"; return; }
  end pass "$n commands in $up, the same as on the in-process model; 0 firmware pages after teardown; $reopened (huge pages held each time: $huge)"
}

# vfio-traffic: eth_bench sends 100,000 sequence-numbered frames of 60 to 1514 bytes through
# the batch tx/rx API; the server loops the model's port back (--loopback) and every byte of
# every frame that returns is checked, in order.
m_vfio_traffic() {
  begin vfio-traffic
  vfio_bound || vfio_bind || { end fail "could not bind $BDF to vfio-pci"; return; }
  /bin/mlx5-eth-bench mpps 32 "${VFIO_FRAMES:-100000}" --verify --device "vfio:$BDF" > /tmp/vt.out 2>&1; rc=$?
  sed 's/^/@@INFO eth_bench: /' /tmp/vt.out
  [ "$rc" = 0 ] || { end fail "eth_bench exited $rc: $(tail -n 1 /tmp/vt.out)"; return; }
  line=$(grep 'every byte of every frame checked' /tmp/vt.out) \
    || { end fail "eth_bench did not report a checked run"; return; }
  end pass "${line#loopback }"
}

# vfio-interrupts: the interrupts example runs 50 commands in event mode, whose waits (with
# MSI-X) have no polling step: only an interrupt ends one before the command's deadline; then
# it arms the receive CQ, sends a frame (looped back) and sleeps in the backend's wait, which
# only vector 0's interrupt ends, before it finds the completion event.
m_vfio_interrupts() {
  begin vfio-interrupts
  vfio_bound || vfio_bind || { end fail "could not bind $BDF to vfio-pci"; return; }
  before=$(grep -c . /proc/interrupts)
  /bin/mlx5-interrupts --device "vfio:$BDF" > /tmp/vi.out 2>&1; rc=$?
  sed 's/^/@@INFO interrupts: /' /tmp/vi.out
  grep vfio /proc/interrupts | sed 's/^/@@INFO \/proc\/interrupts: /'
  [ "$rc" = 0 ] || { end fail "interrupts exited $rc: $(tail -n 1 /tmp/vi.out)"; return; }
  grep -q "events by MSI-X interrupt" /tmp/vi.out || { end fail "no MSI-X vectors were routed"; return; }
  cmd=$(sed -n 's/^commands: \([0-9]*\) .* fired \([0-9]*\) times, \([0-9]*\) waits woken by it$/\1 commands: \2 interrupts, \3 waits woken/p' /tmp/vi.out)
  cq=$(sed -n 's/^receive CQ \([^:]*\): completion event \([0-9.]* ms\) after the send, found after an interrupt.*/receive CQ \1: its completion found after an interrupt ended the wait (\2)/p' /tmp/vi.out)
  [ -n "$cq" ] || { end fail "the receive completion was not found after an interrupt"; return; }
  end pass "$cmd; $cq"
}

m_vfio_ping() {
  begin vfio-ping
  vfio_bound || vfio_bind || { end fail "could not bind $BDF to vfio-pci"; return; }
  ctl loopback off || { end fail "the control channel did not unplug the loopback"; return; }
  /bin/mlx5-ping --device "vfio:$BDF" --peer "$HOST_IP" --addr "$GUEST_IP/$PREFIX" --count 5 \
    --interval 100 > /tmp/vp.out 2>&1; rc=$?
  sed 's/^/@@INFO ping: /' /tmp/vp.out
  [ "$rc" = 0 ] || { end fail "ping exited $rc: $(tail -n 1 /tmp/vp.out)"; return; }
  sum=$(sed -n 's/^--- driver → peer: \(.*\)$/\1/p' /tmp/vp.out)
  grep -q "^payloads: 5 of 5 came back intact" /tmp/vp.out || { end fail "$(grep payloads /tmp/vp.out)"; return; }
  end pass "$HOST_IP (the host's TAP) answered: $sum"
}

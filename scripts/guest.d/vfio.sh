# The VFIO profile's milestones (issue 19), sourced by milestones.sh in the guest: the model's
# function is handed to vfio-pci instead of mlx5_core, and our own driver (the workspace's
# `bringup` example, /bin/mlx5-bringup, static) drives it from user space through the guest
# kernel's VFIO stack and QEMU's virtual IOMMU.
#
#   vfio-bringup   the function bound to vfio-pci; `bringup --device vfio:BDF` runs the same
#                  commands as on the in-process model (the host ran it there and put the
#                  table in /vfio-expected) and ends with "firmware pages held after
#                  teardown: 0"

# The guest's VFIO: type-1 IOMMU over QEMU's intel-iommu. The virtual IOMMU runs without
# interrupt remapping (intremap=off, as the probe profile needs), which vfio_iommu_type1
# accepts only when told to, as on hosts without IR.
vfio_bind() {
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
  /bin/mlx5-bringup --device "vfio:$BDF" > /tmp/vb.out 2>&1; rc=$?
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
  end pass "$n commands, the same as on the in-process model; 0 firmware pages after teardown"
}

# The host side of the RoCE profile (MLX5_GUEST_PROFILE=roce), sourced by scripts/guest: the
# initramfs with soft-RoCE (rdma_rxe) and rdma-core's tools, the namespace's bridge, the guest's
# virtio NIC and the peer service. The guest's side is roce.sh; docs/guest.md draws the picture.
#
# The guest is a soft-RoCE peer, not a host of the model: the RoCEv2 endpoint under test runs on
# the host (the peer command, e.g. the rc_pingpong example with the model in it), so this
# profile boots without the vfio-user function and without the device server, which saves the
# server's build and the guest's probe.

# The network: a bridge in the namespace (with an address for the tools' out-of-band TCP), the
# guest's TAP and the peer's TAP enslaved to it. The model's MAC and IP are what the peer
# command is given; the guest learns them from /roceconf.
roce_net=10.79.0 roce_prefix=24
roce_bridge_ip=$roce_net.1 roce_model_ip=$roce_net.2 roce_guest_ip=$roce_net.3
roce_model_mac=02:00:00:79:00:02 roce_guest_mac=02:00:00:79:00:03
roce_bridge=mlx5br0 roce_guest_tap=mlx5rg0 roce_peer_tap=mlx5roce
# Each peer run's capture of the guest's TAP stops after this many frames: a 4096-byte
# pingpong of 1000 round trips is about 10000 each way, the 1 MiB ones 400,000 (400 MB),
# more than the wire check needs; every run's first frames cover its opcodes.
roce_capture_frames=${MLX5_ROCE_CAPTURE_FRAMES:-5000}

# Packages from the pinned suite (apt-get download in the root, never installed there): the
# rdma-core tools and provider, perftest, iproute2's rdma, and the libraries they link that the
# root may lack. Whatever else ldd resolves (libc, libudev, zlib) comes from the root.
roce_pkgs="ibverbs-utils=56.1-1 ibverbs-providers=56.1-1 libibverbs1=56.1-1 librdmacm1t64=56.1-1
  libibumad3=56.1-1 perftest=25.01.0+0.80-1 iproute2=6.15.0-1 libpci3=1:3.13.0-2
  libnl-3-200=3.7.0-2 libnl-route-3-200=3.7.0-2 libmnl0=1.0.5-3"
# The programs copied into the initramfs (paths inside the packages), with the rxe provider
# that libibverbs loads by name from /etc/libibverbs.d/rxe.driver (no ldd sees it).
roce_bins="usr/bin/ibv_rc_pingpong usr/bin/ibv_devinfo usr/bin/ibv_devices usr/bin/ib_write_bw
  usr/bin/ib_read_bw usr/bin/ib_atomic_bw usr/bin/ib_send_bw usr/bin/rdma
  usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so"
# Kernel modules (and what modinfo says they depend on): soft-RoCE, crc32_generic before the
# first `rdma link add` (6.12 asks the crypto API for "crc32" and, without a modprobe helper in
# the initramfs, finds none), the virtio NIC and veth for the rxe-self check.
roce_mods="rdma_rxe ib_core ib_uverbs udp_tunnel ip6_udp_tunnel crc32_generic virtio_net veth"
roce_key=$(printf '%s\n' "$roce_pkgs" "$roce_bins" "$roce_mods" | md5sum | cut -c1-8)
roce_cpio="$cache/initramfs-roce-$kernel_abi-${guest_tools// /-}-$roce_key.cpio.gz"

# The RoCE initramfs: the base unpacked, the packages' programs with their libraries, the extra
# modules, modules.dep made again over all of them. Cached by the key above.
build_roce_initramfs() {
  local stage="$tmp/roce" pkgs="$tmp/roce-pkgs" debs="$cache/debs" p
  rm -rf "$stage" "$pkgs"; mkdir -p "$stage" "$pkgs"
  say "downloading the RoCE tools (once; cached in $roce_cpio)"
  # shellcheck disable=SC2086
  binds="$debs:/debs" in_root sh -c 'cd /debs && for p in "$@"; do
      n=${p%%=*}; v=${p#*=}; ls "${n}_$(echo "$v" | sed "s/:/%3a/")_"*.deb >/dev/null 2>&1 && continue
      apt-get download -qq "$p" || { apt-get update -qq && apt-get download -qq "$p"; } || exit 1
    done' sh $roce_pkgs >> "$cache/apt.log" 2>&1 \
    || die "could not download the RoCE packages ($roce_pkgs); bump the versions in \
scripts/guest.d/roce-host.sh; see $cache/apt.log"
  for p in $roce_pkgs; do
    local n=${p%%=*} v=${p#*=} deb
    deb=$(ls "$debs/${n}_${v/:/%3a}_"*.deb 2>/dev/null | head -n 1)
    [ -n "$deb" ] || die "no .deb for $p in $debs"
    binds="$debs:/debs $pkgs:/p" in_root dpkg-deb -x "/debs/${deb##*/}" /p
  done
  cp "$base_cpio" "$tmp/base.cpio.gz"
  binds="$kdir:/k $stage:/stage $pkgs:/p $tmp:/t" in_root sh -c '
    set -e
    abi=$1; bins=$2; mods=$3; dst=/stage
    libs=/p/usr/lib/x86_64-linux-gnu
    (cd $dst && gzip -dc /t/base.cpio.gz | cpio -id --quiet)
    for b in $bins; do
      [ -e "/p/$b" ] || { echo "roce initramfs: no /$b in the packages" >&2; exit 1; }
      mkdir -p "$dst/$(dirname "$b")"; cp "/p/$b" "$dst/$b"
      # Each library from the packages if one has it, else from the root; none may be missing.
      LD_LIBRARY_PATH=$libs ldd "/p/$b" > /tmp/ldd.out
      if grep -q "not found" /tmp/ldd.out; then
        echo "roce initramfs: /$b needs a library no package provides:" >&2; cat /tmp/ldd.out >&2; exit 1
      fi
      for lib in $(grep -o "/[^ ]*" /tmp/ldd.out); do
        case "$lib" in /p/*) d=$(dirname "${lib#/p}") ;; *) d=$(readlink -f "$(dirname "$lib")") ;; esac
        mkdir -p "$dst$d"; cp -L "$lib" "$dst$d/"
      done
    done
    mkdir -p $dst/etc/libibverbs.d
    cp /p/etc/libibverbs.d/rxe.driver $dst/etc/libibverbs.d/
    # The modules and their dependencies, transitively (modinfo -F depends), unmodified.
    while :; do
      new=
      for m in $mods; do
        for d in $(modinfo -b /k/usr -k "$abi" -F depends "$m" | tr , " "); do
          case " $mods $new " in *" $d "*) ;; *) new="$new $d" ;; esac
        done
      done
      [ -z "$new" ] && break
      mods="$mods$new"
    done
    for m in $mods; do
      f=$(modinfo -b /k/usr -k "$abi" -F filename "$m")
      rel=${f#/k/usr/}
      mkdir -p "$dst/usr/$(dirname "$rel")"
      xz -dc "$f" > "$dst/usr/${rel%.xz}"
    done
    depmod -b $dst/usr $abi
    echo "$(cat $dst/etc/modules-included) $mods" > $dst/etc/modules-included
    cd $dst && find . | cpio -o -H newc --quiet | gzip -1
  ' sh "$kernel_abi" "$roce_bins" "$roce_mods" > "$roce_cpio.partial" \
    || die "building the RoCE initramfs failed"
  mv "$roce_cpio.partial" "$roce_cpio"
}

# The namespace's network: the bridge with its address, the guest's TAP (persistent, so QEMU
# run in the namespace attaches to it and it is a bridge port before the guest boots).
roce_net_setup() {
  # No IPv6 on the host's side: only what the tools send crosses the bridge (and the capture).
  ip netns exec "$netns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 || true
  ip -n "$netns" link add "$roce_bridge" type bridge || die "ip link add $roce_bridge failed"
  ip -n "$netns" link set "$roce_bridge" type bridge forward_delay 0 stp_state 0
  ip -n "$netns" addr add "$roce_bridge_ip/$roce_prefix" dev "$roce_bridge"
  ip -n "$netns" tuntap add dev "$roce_guest_tap" mode tap || die "ip tuntap add $roce_guest_tap failed"
  ip -n "$netns" link set "$roce_guest_tap" master "$roce_bridge" up
  # The peer's TAP made here too, persistent and a bridge port before the peer starts: the
  # peer's TUNSETIFF attaches to it (same name, IFF_TAP | IFF_NO_PI), so its first RoCE frame
  # already crosses the bridge (no race with enslaving a TAP the peer makes itself).
  ip -n "$netns" tuntap add dev "$roce_peer_tap" mode tap || die "ip tuntap add $roce_peer_tap failed"
  ip -n "$netns" link set "$roce_peer_tap" master "$roce_bridge" up
  ip -n "$netns" link set "$roce_bridge" up
}

# The QEMU arguments of the guest's NIC: virtio-net on the namespace's TAP, a fixed MAC.
roce_qemu_nic() {
  printf '%s\n' -netdev "tap,id=rn0,ifname=$roce_guest_tap,script=no,downscript=no" \
    -device "virtio-net-pci,netdev=rn0,mac=$roce_guest_mac"
}

# What the guest's roce.sh reads: its address and MAC, the bridge's, the model's, the sizes.
roce_conf() {
  printf '%s %s %s %s %s %s %s %s %s\n' "$roce_guest_ip" "$roce_prefix" "$roce_guest_mac" \
    "$roce_bridge_ip" "$roce_model_ip" "$roce_model_mac" "${MLX5_ROCE_ITERS:-1000}" \
    "${MLX5_ROCE_SIZES:-4096,1048576}" "${MLX5_ROCE_LOSS:-50}"
}

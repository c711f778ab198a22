//! The capability pages and access registers of the Linux probe, with their refusals: every
//! capability type the model has (maximum and current) on both profiles, the ones it lacks
//! (BAD_PARAM, listed as unimplemented), SET_HCA_CAP of the settable types, and PCAM, MCAM,
//! QCAM, DTOR and the host endianness register: sizes, groups, read-only registers.

mod common;

use common::linux::Linux;
use common::linux_flow::{function_enable, read_reg};
use common::Host;
use mlx5_prm::rt::Command;
use mlx5_prm::{cmd, AccessRegisterId, AtomicCaps, CmdHcaCap, CmdStatus};
use mlx5_sim::{syndrome as syn, Config};

const BAD_PARAM: u8 = CmdStatus::BadParamErr as u8;
const BAD_OUTP_LEN: u8 = CmdStatus::BadOutpLenErr as u8;

/// An ACCESS_REGISTER of `reg` with `len` bytes of zeroed image in and out, `op_mod` 0 write or
/// 1 read, the first byte of the image set to `b0` and byte 3 to `b3`.
fn access(
    host: &Host,
    reg: u16,
    op_mod: u16,
    len: usize,
    out: usize,
    b: (u8, u8),
) -> common::Reply {
    let mut input = vec![0u8; 0x10 + len];
    input[..2].copy_from_slice(&cmd::AccessRegister::OPCODE.to_be_bytes());
    input[6..8].copy_from_slice(&op_mod.to_be_bytes());
    input[10..12].copy_from_slice(&reg.to_be_bytes());
    if len >= 4 {
        input[0x11] = b.0;
        input[0x13] = b.1;
    }
    host.exec(&input, 0x10 + out)
}

#[test]
fn capability_types_of_each_profile() {
    // op_mod (type << 1 | current) of every type Linux 6.12 may query.
    let types: &[(u16, &str)] = &[
        (0x0, "general"),
        (0x1, "ethernet"),
        (0x2, "odp"),
        (0x3, "atomic"),
        (0x4, "roce"),
        (0x6, "ipoib enhanced"),
        (0x7, "flow table"),
        (0x8, "eswitch flow table"),
        (0x9, "eswitch"),
        (0xc, "qos"),
        (0xd, "debug"),
        (0x20, "general 2"),
        (0x25, "port selection"),
    ];
    for (config, has) in [
        (Config::linux_probe_only(), &[0x0u16, 0x3][..]),
        (Config::default(), &[0x0, 0x1, 0x3, 0x4, 0x7][..]),
        (Config::linux_ethernet(), &[0x0, 0x1, 0x3, 0x7][..]),
    ] {
        let l = Linux::new(config);
        l.host.simple::<cmd::EnableHca>(0).ok();
        let general = l.general(false);
        for &(ty, name) in types {
            for current in [0u16, 1] {
                let r = l.query_cap_raw(ty << 1 | current);
                if has.contains(&ty) {
                    assert_eq!(r.status(), 0, "{name}");
                    assert_eq!(r.out.len(), 0x1010);
                } else {
                    r.fails(BAD_PARAM, syn::CAP_TYPE_UNSUPPORTED);
                }
            }
        }
        // The general page says which pages exist.
        assert_eq!(general.eth_net_offloads(), has.contains(&0x1));
        assert_eq!(general.roce(), has.contains(&0x4));
        assert_eq!(general.nic_flow_table(), has.contains(&0x7));
        assert!(general.atomic() && !general.pg() && !general.hca_cap_2());
        // What the model lacks is listed, by op_mod, twice each (max and current).
        let missing = l.host.dev.unimplemented_commands().commands;
        assert_eq!(missing.len(), 2 * (types.len() - has.len()));
        assert!(missing.iter().all(|m| m.opcode == cmd::QueryHcaCap::OPCODE
            && m.count == 1
            && m.status == BAD_PARAM
            && !has.contains(&(m.op_mod >> 1))));
    }
}

#[test]
fn set_hca_cap_honours_what_may_change() {
    let l = Linux::new(Config::linux_probe_only());
    l.host.simple::<cmd::EnableHca>(0).ok();
    // Atomic: Linux sends a zeroed page with only the byte order set; host order is refused
    // since the device cannot switch.
    let mut page = AtomicCaps::zeroed();
    page.set_atomic_req_8b_endianness_mode(mlx5_prm::AtomicEndiannessMode::HostEndianness);
    let set_atomic = |p: &AtomicCaps| {
        l.host
            .run::<cmd::SetHcaCap>(cmd::SetHcaCapOpMod::Atomic, 0, 0, |i| {
                i.capability_mut().storage_mut()[..0x100].copy_from_slice(p.storage())
            })
    };
    set_atomic(&page).fails(BAD_PARAM, syn::SET_CAP_ABOVE_MAX);
    set_atomic(&AtomicCaps::zeroed()).ok();
    // The read-only fields of a zeroed page were ignored, not applied.
    let r = l
        .simple::<cmd::QueryHcaCap>(cmd::QueryHcaCapOpMod::AtomicCur)
        .ok();
    let cur = AtomicCaps::new_unchecked(&r.out[0x10..0x110]);
    assert_eq!(cur.atomic_operations(), 0b11);
    // No RoCE page on an InfiniBand port.
    l.host
        .run::<cmd::SetHcaCap>(cmd::SetHcaCapOpMod::Roce, 0, 0, |_| {})
        .fails(BAD_PARAM, syn::SET_CAP_TYPE_UNSUPPORTED);
    // General: a value above the maximum is refused; read-only fields are ignored.
    let mut g = l.general(true);
    g.set_log_max_qp(l.general(false).log_max_qp() + 1);
    let set_general = |g: &CmdHcaCap| {
        l.host
            .run::<cmd::SetHcaCap>(cmd::SetHcaCapOpMod::General, 0, 0, |i| {
                i.capability_mut().storage_mut()[..0x100].copy_from_slice(g.storage())
            })
    };
    set_general(&g).fails(BAD_PARAM, syn::SET_CAP_ABOVE_MAX);
    let mut g = l.general(true);
    g.set_port_type(mlx5_prm::HcaPortType::Ethernet);
    g.set_release_all_pages(true);
    set_general(&g).ok();
    let now = l.general(true);
    assert_eq!(
        now.port_type(),
        Ok(mlx5_prm::HcaPortType::Ib),
        "read-only: ignored"
    );
    assert!(now.release_all_pages(), "settable: applied");
}

#[test]
fn capability_mask_registers_and_dtor() {
    let l = Linux::new(Config::linux_probe_only());
    function_enable(&l);
    let host = &l.host;
    let (pcam, mcam, qcam, dtor) = (
        AccessRegisterId::Pcam.raw(),
        AccessRegisterId::Mcam.raw(),
        AccessRegisterId::Qcam.raw(),
        AccessRegisterId::Dtor.raw(),
    );
    // Read only.
    for (reg, len) in [(pcam, 0x50), (mcam, 0x48), (qcam, 0x48), (dtor, 0x40)] {
        access(host, reg, 0, len, len, (0, 0)).fails(BAD_PARAM, syn::REG_READ_ONLY);
        access(host, reg, 1, len, len - 4, (0, 0)).fails(BAD_OUTP_LEN, syn::REG_OUTPUT_SHORT);
        assert_eq!(access(host, reg, 1, len, len, (0, 0)).status(), 0);
    }
    // Groups: PCAM and QCAM have group 0 only, MCAM groups 0 to 3; feature group 0 only.
    access(host, pcam, 1, 0x50, 0x50, (0, 1)).fails(BAD_PARAM, syn::REG_BAD_GROUP);
    access(host, pcam, 1, 0x50, 0x50, (1, 0)).fails(BAD_PARAM, syn::REG_BAD_GROUP);
    access(host, qcam, 1, 0x48, 0x48, (0, 1)).fails(BAD_PARAM, syn::REG_BAD_GROUP);
    for group in 0..4 {
        let r = access(host, mcam, 1, 0x48, 0x48, (0, group));
        assert_eq!(r.status(), 0);
        assert_eq!(r.out[0x13], group, "the indices come back");
    }
    access(host, mcam, 1, 0x48, 0x48, (0, 4)).fails(BAD_PARAM, syn::REG_BAD_GROUP);
    // Registers Linux reads only when MCAM lists them are not there (and are listed).
    let mtutc = AccessRegisterId::Mtutc.raw();
    access(host, mtutc, 1, 0x1c, 0x1c, (0, 0)).fails(BAD_PARAM, syn::REG_UNKNOWN);
    let missing = host.dev.unimplemented_commands().commands;
    assert_eq!(missing.len(), 1);
    assert_eq!(missing[0].register_id, Some(mtutc));
    assert_eq!(missing[0].op_mod, 1);

    // Without timeouts (the in-process profile) there is no DTOR, and the segment says so.
    let plain = Linux::new(Config::default());
    plain.host.simple::<cmd::EnableHca>(0).ok();
    assert_eq!(plain.host.dev.read32(0xffc), 0);
    access(&plain.host, dtor, 1, 0x40, 0x40, (0, 0)).fails(BAD_PARAM, syn::REG_UNKNOWN);
    assert_eq!(
        plain.host.dev.unimplemented_commands().commands[0].register_id,
        Some(dtor)
    );
}

#[test]
fn host_endianness_is_written_and_read_back() {
    let l = Linux::new(Config::linux_probe_only());
    l.host.simple::<cmd::EnableHca>(0).ok();
    let he = AccessRegisterId::HostEndianness.raw();
    // A big-endian host writes 0x80 into the first byte.
    let mut input = vec![0u8; 0x20];
    input[..2].copy_from_slice(&cmd::AccessRegister::OPCODE.to_be_bytes());
    input[10..12].copy_from_slice(&he.to_be_bytes());
    input[0x10] = 0x80;
    assert_eq!(l.host.exec(&input, 0x20).status(), 0);
    let back = read_reg(&l, AccessRegisterId::HostEndianness, &[0; 0x10]);
    assert_eq!(back[0], 0x80);
    let view = mlx5_prm::HostEndiannessReg::new_unchecked(&back[..]);
    assert!(view.he());
}

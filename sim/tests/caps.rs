//! QUERY_HCA_CAP and SET_HCA_CAP: maximum and current pages, settable fields, limits. The
//! 0x1010-byte outputs and inputs travel through 8-block mailbox chains.

mod common;

use common::Host;
use mlx5_prm::cmd::{self, QueryHcaCapOpMod as Q, SetHcaCapOpMod};
use mlx5_prm::{
    CmdHcaCap, EthWqeInlineModeCap, HcaCmdifChecksum, PerProtocolNetworkingOffloadCaps, RoceCap,
};
use mlx5_sim::{syndrome as syn, Caps, Config};

fn general(host: &Host, op: Q) -> CmdHcaCap {
    let r = host.simple::<cmd::QueryHcaCap>(op).ok();
    let mut c = CmdHcaCap::zeroed();
    c.storage_mut().copy_from_slice(&r.out[0x10..0x110]);
    c
}

#[test]
fn connectx5_profile() {
    let host = Host::inline();
    host.simple::<cmd::EnableHca>(0).ok();
    let max = general(&host, Q::GeneralMax);
    assert_eq!(max.log_max_qp(), 18);
    assert_eq!(max.log_max_cq(), 24);
    assert_eq!(max.log_max_eq(), 8);
    assert_eq!(max.log_max_pd(), 23);
    assert_eq!(max.log_max_mkey(), 24);
    assert_eq!(max.log_uar_page_sz(), 0);
    assert_eq!(max.log_bf_reg_size(), 9);
    assert_eq!(max.cqe_version(), 1);
    assert_eq!(max.num_ports(), 1);
    assert_eq!(max.log_max_msg(), 30);
    assert!(max.eth_net_offloads() && max.roce());
    assert_eq!(max.cmdif_checksum(), Ok(HcaCmdifChecksum::Enabled));
    let cur = general(&host, Q::GeneralCur);
    assert_eq!(cur.cmdif_checksum(), Ok(HcaCmdifChecksum::InitialState));
    assert!(!cur.mkey_by_name() && max.mkey_by_name());

    let r = host.simple::<cmd::QueryHcaCap>(Q::EthernetOffloadsCur).ok();
    let eth = PerProtocolNetworkingOffloadCaps::new_unchecked(&r.out[0x10..0x110]);
    assert!(eth.csum_cap());
    assert_eq!(eth.wqe_inline_mode(), Ok(EthWqeInlineModeCap::NotRequired));
    let r = host.simple::<cmd::QueryHcaCap>(Q::RoceMax).ok();
    let roce = RoceCap::new_unchecked(&r.out[0x10..0x110]);
    assert_eq!(roce.r_roce_dest_udp_port(), 4791);
    assert!(roce.sw_r_roce_src_udp_port());
    // The rest of the 4 KiB page is zero.
    assert!(r.out[0x110..].iter().all(|&b| b == 0));
}

#[test]
fn set_hca_cap_changes_current_values_within_the_maxima() {
    let host = Host::inline();
    host.simple::<cmd::EnableHca>(0).ok();
    let mut cur = general(&host, Q::GeneralCur);
    cur.set_cmdif_checksum(HcaCmdifChecksum::Disabled);
    cur.set_log_max_qp(12);
    cur.set_mkey_by_name(true);
    // Not settable: ignored.
    cur.set_log_max_cq(3);
    let page = *cur.storage();
    host.run::<cmd::SetHcaCap>(SetHcaCapOpMod::General, 0, 0, |i| {
        i.capability_mut()
            .cmd_hca_cap_mut()
            .storage_mut()
            .copy_from_slice(&page)
    })
    .ok();
    let now = general(&host, Q::GeneralCur);
    assert_eq!(now.log_max_qp(), 12);
    assert_eq!(now.cmdif_checksum(), Ok(HcaCmdifChecksum::Disabled));
    assert!(now.mkey_by_name());
    assert_eq!(now.log_max_cq(), 24, "read-only fields keep their values");
    assert_eq!(general(&host, Q::GeneralMax).log_max_qp(), 18);

    // Above the maximum.
    let mut bad = now;
    bad.set_log_max_qp(19);
    let page = *bad.storage();
    host.run::<cmd::SetHcaCap>(SetHcaCapOpMod::General, 0, 0, |i| {
        i.capability_mut()
            .cmd_hca_cap_mut()
            .storage_mut()
            .copy_from_slice(&page)
    })
    .fails(0x3, syn::SET_CAP_ABOVE_MAX);
    // cmdif_checksum 2 is not a mode.
    let mut bad = now;
    bad.set_cmdif_checksum_raw(2);
    let page = *bad.storage();
    host.run::<cmd::SetHcaCap>(SetHcaCapOpMod::General, 0, 0, |i| {
        i.capability_mut()
            .cmd_hca_cap_mut()
            .storage_mut()
            .copy_from_slice(&page)
    })
    .fails(0x3, syn::SET_CAP_ABOVE_MAX);
    // The RoCE page: its one settable flag.
    host.run::<cmd::SetHcaCap>(SetHcaCapOpMod::Roce, 0, 0, |i| {
        i.capability_mut()
            .roce_cap_mut()
            .set_sw_r_roce_src_udp_port(true)
    })
    .ok();
    let r = host.simple::<cmd::QueryHcaCap>(Q::RoceCur).ok();
    assert!(RoceCap::new_unchecked(&r.out[0x10..0x110]).sw_r_roce_src_udp_port());
    // Not a settable page, and op_mod bit 0 set.
    host.simple::<cmd::SetHcaCap>(SetHcaCapOpMod::Odp)
        .fails(0x3, syn::SET_CAP_TYPE_UNSUPPORTED);
    let mut raw = vec![0u8; 0x1010];
    raw[..2].copy_from_slice(&0x109u16.to_be_bytes());
    raw[7] = 1;
    host.exec(&raw, 16).fails(0x3, syn::SET_CAP_CURRENT_BIT);
}

#[test]
fn checksums_once_enabled_are_checked() {
    let host = Host::inline();
    host.simple::<cmd::EnableHca>(0).ok();
    let mut cur = general(&host, Q::GeneralCur);
    cur.set_cmdif_checksum(HcaCmdifChecksum::Enabled);
    let page = *cur.storage();
    host.run::<cmd::SetHcaCap>(SetHcaCapOpMod::General, 0, 0, |i| {
        i.capability_mut()
            .cmd_hca_cap_mut()
            .storage_mut()
            .copy_from_slice(&page)
    })
    .ok();
    // The test host writes no signatures: delivery fails with a signature error.
    let r = host
        .submit(
            0,
            &[0x01, 0x0a, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            0x70,
            &Default::default(),
        )
        .unwrap();
    assert_eq!(r.delivery, mlx5_prm::CmdDeliveryStatus::SignatErr as u8);
}

#[test]
fn a_custom_profile() {
    let mut caps = Caps::connectx5();
    caps.general_max.set_log_max_pd(1);
    caps.general_cur.set_log_max_pd(1);
    let host = Host::new(Config {
        caps,
        ..Config::default()
    });
    host.bring_up();
    host.alloc_pd();
    host.alloc_pd();
    host.simple::<cmd::AllocPd>(0).fails(0x8, syn::PD_LIMIT);
}

#[test]
fn caps_cannot_change_after_init() {
    let host = Host::inline();
    host.bring_up();
    host.simple::<cmd::SetHcaCap>(SetHcaCapOpMod::General)
        .fails(0x4, syn::SET_CAP_AFTER_INIT);
    // Queries still work.
    general(&host, Q::GeneralCur);
}

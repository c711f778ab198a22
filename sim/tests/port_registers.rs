//! The port registers behind `ethtool` (PFCC, PMLP, PDDR, PPCNT, MCIA) and the TIR/RQT
//! changes `ip link set up` makes (MODIFY_TIR, MODIFY_RQT), as mlx5e uses them.

mod common;

use common::dp::Node;
use common::eth::{id_at, l2, Eth};
use common::Reply;
use mlx5_prm::cmd::{self, AccessRegisterOpMod as Op};
use mlx5_prm::rt::BytesMut;
use mlx5_prm::{
    CqeOpcode, Eth2863CntrsGrpDataLayout, Eth8023CntrsGrpDataLayout, MciaReg, PddrReg, PfccReg,
    PmlpReg, PpcntReg, TircDispType,
};
use mlx5_sim::syndrome as syn;

const MAC_A: [u8; 6] = [0x02, 0xaa, 0, 0, 0, 1];
const MAC_B: [u8; 6] = [0x02, 0xbb, 0, 0, 0, 2];

/// ACCESS_REGISTER of register `id` with `image` (its size is the register's).
fn reg(e: &Eth, op: Op, id: u16, image: &[u8]) -> Reply {
    e.n.host
        .run::<cmd::AccessRegister>(op, image.len(), image.len(), |i| {
            i.set_register_id(id);
            i.storage_mut()[16..].copy_from_slice(image);
        })
}

/// The register image of a successful read.
fn read(e: &Eth, id: u16, image: &[u8]) -> Vec<u8> {
    reg(e, Op::Read, id, image).ok().out[16..16 + image.len()].to_vec()
}

fn mcia(e: &Eth, module: u8, i2c: u8, page: u8, offset: u16, size: u16) -> Reply {
    let mut img = [0u8; 0x90];
    let mut r = MciaReg::new_unchecked(&mut img[..]);
    r.set_module(module);
    r.set_i2c_device_address(i2c);
    r.set_page_number(page);
    r.set_device_address(offset);
    r.set_size(size);
    reg(e, Op::Read, 0x9014, &img)
}

#[test]
fn pmlp_names_the_module_that_mcia_reads_a_qsfp28_eeprom_from() {
    let e = Eth::new(Node::inline(), &[MAC_A]);
    let mut img = [0u8; 0x40];
    PmlpReg::new_unchecked(&mut img[..]).set_local_port(1);
    let out = read(&e, 0x5002, &img);
    let p = PmlpReg::new_unchecked(&out[..]);
    assert_eq!((p.width(), p.lane0_module_mapping().module()), (4, 0));
    assert_eq!(p.lane3_module_mapping().tx_lane(), 3);

    let status_and_data = |r: Reply| {
        let r = r.ok();
        let m = MciaReg::new_unchecked(&r.out[16..16 + 0x90]);
        (m.status(), m.dwords())
    };
    let (status, data) = status_and_data(mcia(&e, 0, 0x50, 0, 0, 1));
    assert_eq!((status, data[0]), (0, 0x11), "identifier: QSFP28");
    let (status, data) = status_and_data(mcia(&e, 0, 0x50, 0, 148, 16));
    assert_eq!(status, 0);
    assert_eq!(
        &data[..16],
        format!("{:<16}", mlx5_sim::MODULE_VENDOR).as_bytes()
    );
    let (status, data) = status_and_data(mcia(&e, 0, 0x50, 3, 128, 2));
    assert_eq!(
        (status, data[0]),
        (0, 75),
        "page 03h: temperature high alarm, 75 °C"
    );
    // Module faults are the register's status, not the command's.
    assert_eq!(
        status_and_data(mcia(&e, 1, 0x50, 0, 0, 1)).0,
        0x3,
        "no module 1"
    );
    assert_eq!(
        status_and_data(mcia(&e, 0, 0x51, 0, 0, 1)).0,
        0x9,
        "no address 0x51"
    );
    assert_eq!(
        status_and_data(mcia(&e, 0, 0x50, 1, 128, 8)).0,
        0x9,
        "no page 01h"
    );
    assert_eq!(
        status_and_data(mcia(&e, 0, 0x50, 0, 250, 8)).0,
        0x9,
        "past the window"
    );
    // More than one read carries (no mcia_32dwords) is a driver bug.
    mcia(&e, 0, 0x50, 0, 0, 49).fails(0x3, syn::MCIA_BAD_SIZE);
    // MCIA is read-only.
    reg(&e, Op::Write, 0x9014, &[0u8; 0x90]).fails(0x3, syn::REG_READ_ONLY);
}

#[test]
fn pfcc_keeps_global_pause_and_honours_the_mask_bits() {
    let e = Eth::new(Node::inline(), &[MAC_A]);
    let pfcc = |f: &dyn Fn(&mut PfccReg<&mut [u8]>)| {
        let mut img = [0u8; 0x20];
        let mut r = PfccReg::new_unchecked(&mut img[..]);
        r.set_local_port(1);
        f(&mut r);
        img
    };
    let state = |img: &[u8]| {
        let r = PfccReg::new_unchecked(img);
        (r.pptx(), r.pprx())
    };
    assert_eq!(state(&read(&e, 0x5007, &pfcc(&|_| {}))), (false, false));
    reg(
        &e,
        Op::Write,
        0x5007,
        &pfcc(&|r| {
            r.set_pptx(true);
            r.set_pprx(true);
        }),
    )
    .ok();
    assert_eq!(state(&read(&e, 0x5007, &pfcc(&|_| {}))), (true, true));
    reg(
        &e,
        Op::Write,
        0x5007,
        &pfcc(&|r| {
            r.set_pptx_mask_n(true);
            r.set_pprx(false);
        }),
    )
    .ok();
    assert_eq!(
        state(&read(&e, 0x5007, &pfcc(&|_| {}))),
        (true, false),
        "pptx_mask_n leaves pptx"
    );
    reg(&e, Op::Read, 0x5007, &pfcc(&|r| r.set_local_port(2))).fails(0x3, syn::REG_BAD_PORT);
}

#[test]
fn pddr_troubleshooting_page_has_nothing_to_report() {
    let e = Eth::new(Node::inline(), &[MAC_A]);
    let mut img = [0xa5u8; 0x100];
    img[..8].fill(0);
    let mut r = PddrReg::new_unchecked(&mut img[..]);
    r.set_local_port(1);
    r.set_page_select_raw(1);
    r.page_data_mut()
        .pddr_troubleshooting_page_mut()
        .set_group_opcode(0);
    let out = read(&e, 0x5031, &img);
    assert!(out[8..].iter().all(|&b| b == 0), "opcode 0, empty message");
    let mut bad = img;
    PddrReg::new_unchecked(&mut bad[..]).set_page_select_raw(2);
    reg(&e, Op::Read, 0x5031, &bad).fails(0x3, syn::PDDR_BAD_PAGE);
}

fn ppcnt(e: &Eth, group: u8, clear: bool) -> Reply {
    let mut img = [0u8; 0x100];
    let mut r = PpcntReg::new_unchecked(&mut img[..]);
    r.set_local_port(1);
    r.set_grp_raw(group);
    r.set_clr(clear);
    reg(e, Op::Read, 0x5008, &img)
}

/// (frames, octets) sent and received, and broadcast frames received, from group 0x0.
fn ieee(e: &Eth, clear: bool) -> (u64, u64, u64, u64, u64) {
    let r = ppcnt(e, 0x0, clear).ok();
    let g = Eth8023CntrsGrpDataLayout::new_unchecked(&r.out[16 + 8..16 + 0x100]);
    let v = |h: u32, l: u32| (u64::from(h) << 32) | u64::from(l);
    (
        v(
            g.a_frames_transmitted_ok_high(),
            g.a_frames_transmitted_ok_low(),
        ),
        v(
            g.a_octets_transmitted_ok_high(),
            g.a_octets_transmitted_ok_low(),
        ),
        v(g.a_frames_received_ok_high(), g.a_frames_received_ok_low()),
        v(g.a_octets_received_ok_high(), g.a_octets_received_ok_low()),
        v(
            g.a_broadcast_frames_received_ok_high(),
            g.a_broadcast_frames_received_ok_low(),
        ),
    )
}

#[test]
fn ppcnt_counts_the_ports_frames_in_wire_bytes_and_clears_one_group() {
    let e = Eth::new(Node::inline(), &[MAC_A]);
    e.n.dev().loopback(true);
    e.post_recv(0, 2048);
    e.send(&l2(MAC_A, MAC_B), 0x8000, 200); // 214 bytes: delivered
    e.send(&l2([0xff; 6], MAC_B), 0x8000, 10); // 24 bytes, padded to 60: steered nowhere
    for _ in 0..2 {
        e.scq.expect(CqeOpcode::Req);
    }
    e.rcq.expect(CqeOpcode::RespSend);
    let wire = (214 + 4) + (60 + 4);
    assert_eq!(ieee(&e, false), (2, wire, 2, wire, 1));
    let r = ppcnt(&e, 0x1, false).ok();
    let g = Eth2863CntrsGrpDataLayout::new_unchecked(&r.out[16 + 8..16 + 0x100]);
    assert_eq!(
        g.if_in_discards_low(),
        0,
        "the broadcast frame found no RQ, but the port dropped nothing (a steering discard)"
    );
    assert_eq!(g.if_in_ucast_pkts_low(), 1);
    assert_eq!(g.if_out_broadcast_pkts_low(), 1);

    assert_eq!(
        ieee(&e, true),
        (2, wire, 2, wire, 1),
        "clr returns the counts"
    );
    assert_eq!(ieee(&e, false), (0, 0, 0, 0, 0));
    let r = ppcnt(&e, 0x1, false).ok();
    let g = Eth2863CntrsGrpDataLayout::new_unchecked(&r.out[16 + 8..16 + 0x100]);
    assert_eq!(g.if_in_ucast_pkts_low(), 1, "clearing group 0x0 leaves 0x1");

    // Groups the port has no events for read as zeros (RFC 3635: errors); unknown groups
    // fail. The other groups are in ppcnt_groups.rs.
    let r = ppcnt(&e, 0x3, false).ok();
    assert!(r.out[16 + 8..].iter().all(|&b| b == 0));
    ppcnt(&e, 0x30, false).fails(0x3, syn::PPCNT_BAD_GROUP);
}

#[test]
fn modify_tir_changes_the_loopback_filter_and_refuses_lro() {
    let e = Eth::new(Node::inline(), &[MAC_A]);
    let host = &e.n.host;
    host.run::<cmd::ModifyTir>(0, 0, 0, |i| {
        i.set_tirn(e.tirn);
        i.bitmask_mut().set_self_lb_en(true);
        i.ctx_mut().set_self_lb_block(0x3);
    })
    .ok();
    host.run::<cmd::ModifyTir>(0, 0, 0, |i| {
        i.set_tirn(e.tirn);
        i.bitmask_mut().set_packet_merge(true);
        i.ctx_mut().set_packet_merge_mask(0x1);
    })
    .fails(0x3, syn::TIR_NO_LRO);
    host.run::<cmd::ModifyTir>(0, 0, 0, |i| {
        i.set_tirn(e.tirn);
        i.bitmask_mut().set_hash(true);
        i.ctx_mut().set_rx_hash_fn_raw(0x7);
    })
    .fails(0x3, syn::TIR_BAD_DISPATCH);
    host.run::<cmd::ModifyTir>(0, 0, 0, |i| i.set_tirn(0xabcd))
        .fails(0x5, syn::TIR_UNKNOWN);
}

#[test]
fn modify_rqt_replaces_the_list_within_its_maximum() {
    let e = Eth::new(Node::inline(), &[MAC_A]);
    let host = &e.n.host;
    let rqtn = id_at(
        &host
            .run::<cmd::CreateRqt>(0, 8, 0, |i| {
                let raw = i.storage_mut();
                let mut c = mlx5_prm::Rqtc::new_unchecked(&mut raw[0x20..]);
                c.set_rqt_max_size(2);
                c.set_rqt_actual_size(1);
                raw.write_be32(0x110, e.rqn);
            })
            .ok(),
    );
    let modify = |actual: u16, rqs: &[u32]| {
        host.run::<cmd::ModifyRqt>(0, 8, 0, |i| {
            i.set_rqtn(rqtn);
            i.bitmask_mut().set_rqn_list(true);
            let raw = i.storage_mut();
            mlx5_prm::Rqtc::new_unchecked(&mut raw[0x20..]).set_rqt_actual_size(actual);
            for (k, &rqn) in rqs.iter().enumerate() {
                raw.write_be32(0x110 + 4 * k, rqn);
            }
        })
    };
    modify(2, &[e.rqn, e.rqn]).ok();
    modify(3, &[e.rqn, e.rqn]).fails(0x3, syn::RQT_BAD_SIZE);
    modify(1, &[0xfff]).fails(0x5, syn::RQT_RQ_UNKNOWN);
    // An indirect TIR over the table delivers to the list's RQ.
    let tirn = id_at(
        &host
            .run::<cmd::CreateTir>(0, 0, 0, |i| {
                let mut c = i.ctx_mut();
                c.set_transport_domain(e.td);
                c.set_disp_type(TircDispType::Indirect);
                c.set_indirect_table(rqtn);
            })
            .ok(),
    );
    assert_ne!(tirn, 0);
    // The table is busy while the TIR spreads over it, and gone after.
    host.run::<cmd::DestroyRqt>(0, 0, 0, |i| i.set_rqtn(rqtn))
        .fails(0x6, syn::RQT_BUSY);
    host.run::<cmd::DestroyTir>(0, 0, 0, |i| i.set_tirn(tirn))
        .ok();
    host.run::<cmd::DestroyRqt>(0, 0, 0, |i| i.set_rqtn(rqtn))
        .ok();
    modify(1, &[e.rqn]).fails(0x5, syn::RQT_UNKNOWN);
}

#[test]
fn frames_sent_while_the_link_is_down_are_discarded_and_counted() {
    let e = Eth::new(Node::inline(), &[MAC_A]);
    e.n.dev().loopback(true);
    e.post_recv(0, 2048);
    e.n.dev().raise_port_change(1, false);
    // The SQ completes them (the frame left the queue), but nothing reaches the wire: the
    // port discards them and says so in RFC 2863's if_out_discards (ethtool's
    // tx_discards_phy) and the model's tx_discarded.
    for _ in 0..3 {
        e.send(&l2(MAC_A, MAC_B), 0x8000, 100);
        e.scq.expect(CqeOpcode::Req);
    }
    assert_eq!(e.n.dev().tx_discarded(), 3);
    let r = ppcnt(&e, 0x1, false).ok();
    let g = Eth2863CntrsGrpDataLayout::new_unchecked(&r.out[16 + 8..16 + 0x100]);
    assert_eq!(g.if_out_discards_low(), 3);
    assert_eq!(g.if_out_ucast_pkts_low(), 0, "not sent on the wire");
    assert_eq!(ieee(&e, false).0, 0);
    // Up again: frames leave and the discards stay as they were.
    e.n.dev().raise_port_change(1, true);
    e.send(&l2(MAC_A, MAC_B), 0x8000, 100);
    e.scq.expect(CqeOpcode::Req);
    e.rcq.expect(CqeOpcode::RespSend);
    assert_eq!(e.n.dev().tx_discarded(), 3);
    let r = ppcnt(&e, 0x1, true).ok();
    let g = Eth2863CntrsGrpDataLayout::new_unchecked(&r.out[16 + 8..16 + 0x100]);
    assert_eq!((g.if_out_discards_low(), g.if_out_ucast_pkts_low()), (3, 1));
    // Cleared with its group.
    let r = ppcnt(&e, 0x1, false).ok();
    let g = Eth2863CntrsGrpDataLayout::new_unchecked(&r.out[16 + 8..16 + 0x100]);
    assert_eq!(g.if_out_discards_low(), 0);
}

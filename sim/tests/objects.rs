//! Objects of the control path: mkeys, QPs through their state machine, SQs and RQs, TIS,
//! TIR and RQT, flow steering, the vport and port registers; references are checked and
//! counted, and teardown leaves nothing behind.

mod common;

use common::wq::Wq;
use common::Host;
use mlx5_prm::cmd;
use mlx5_prm::rt::BytesMut;
use mlx5_prm::{
    FlowDestinationType, FlowTableType, PmtuReg, PtysReg, QpMtu, QpPmState, QpRqType,
    QpServiceType, QpState, QueryMkeyOut, QueryNicVportContextOut, QueryQpOut, QueryVportStateOut,
    RqState, SqState, TircDispType, VportOperState,
};
use mlx5_sim::syndrome as syn;

fn id_at(r: &common::Reply) -> u32 {
    common::be32(&r.out, 8) & 0xff_ffff
}

struct Qp {
    qpn: u32,
}

/// An RC QP with 2^4 receive WQEs of 64 bytes and 2^4 send WQEBBs.
fn create_qp(host: &Host, pd: u32, uar: u32, cqn: u32) -> Qp {
    let dma = host.dev.dma();
    let buf = dma.alloc(2048, 4096).unwrap();
    let dbr = dma.alloc(64, 64).unwrap();
    let r = host
        .run::<cmd::CreateQp>(0, 8, 0, |i| {
            let mut q = i.qpc_mut();
            q.set_st(QpServiceType::Rc);
            q.set_pm_state(QpPmState::Migrated);
            q.set_pd(pd);
            q.set_uar_page(uar);
            q.set_log_rq_size(4);
            q.set_log_rq_stride(2);
            q.set_log_sq_size(4);
            q.set_rq_type(QpRqType::Regular);
            q.set_cqn_snd(cqn);
            q.set_cqn_rcv(cqn);
            q.set_dbr_addr(dbr.iova);
            i.set_pas(0, buf.iova).unwrap();
        })
        .ok();
    Qp { qpn: id_at(&r) }
}

fn qp_state(
    host: &Host,
    qpn: u32,
) -> (
    Result<QpState, mlx5_prm::rt::UnknownValue>,
    QueryQpOut<Vec<u8>>,
) {
    let r = host.run::<cmd::QueryQp>(0, 0, 0, |i| i.set_qpn(qpn)).ok();
    let out = QueryQpOut::new_unchecked(r.out);
    (out.qpc().state(), out)
}

#[test]
fn qp_state_machine() {
    let host = Host::inline();
    host.bring_up();
    let uar = host.alloc_uar();
    let pd = host.alloc_pd();
    let (eqn, _ring) = host.create_eq(4, 0, uar, 0);
    let cqn = host.create_cq(eqn, uar, 6);
    let Qp { qpn } = create_qp(&host, pd, uar, cqn);
    assert_eq!(qp_state(&host, qpn).0, Ok(QpState::Rst));

    // Wrong starting state: RTR2RTS from RST.
    host.run::<cmd::Rtr2rtsQp>(0, 0, 0, |i| i.set_qpn(qpn))
        .fails(0x10, syn::QP_BAD_STATE);
    // RST2INIT takes no optional parameters.
    host.run::<cmd::Rst2initQp>(0, 0, 0, |i| {
        i.set_qpn(qpn);
        i.set_opt_param_mask(0x2);
    })
    .fails(0x3, syn::QP_BAD_OPT_MASK);
    // Port 2 does not exist.
    host.run::<cmd::Rst2initQp>(0, 0, 0, |i| {
        i.set_qpn(qpn);
        i.qpc_mut().primary_address_path_mut().set_vhca_port_num(2);
    })
    .fails(0x3, syn::QP_BAD_PORT);
    host.run::<cmd::Rst2initQp>(0, 0, 0, |i| {
        i.set_qpn(qpn);
        let mut q = i.qpc_mut();
        q.primary_address_path_mut().set_vhca_port_num(1);
        q.set_rre(true);
        q.set_pm_state(QpPmState::Migrated);
        // Not a field RST2INIT applies: ignored.
        q.set_remote_qpn(0x1234);
    })
    .ok();
    let (state, out) = qp_state(&host, qpn);
    assert_eq!(state, Ok(QpState::Init));
    assert!(out.qpc().rre());
    assert_eq!(out.qpc().remote_qpn(), 0);

    // INIT2RTR: a bad MTU, then a good one; Q_KEY is not an RC optional bit.
    host.run::<cmd::Init2rtrQp>(0, 0, 0, |i| {
        i.set_qpn(qpn);
        i.qpc_mut().primary_address_path_mut().set_vhca_port_num(1);
    })
    .fails(0x3, syn::QP_BAD_MTU);
    host.run::<cmd::Init2rtrQp>(0, 0, 0, |i| {
        i.set_qpn(qpn);
        i.set_opt_param_mask(0x20);
    })
    .fails(0x3, syn::QP_BAD_OPT_MASK);
    host.run::<cmd::Init2rtrQp>(0, 0, 0, |i| {
        i.set_qpn(qpn);
        let mut q = i.qpc_mut();
        q.set_mtu(QpMtu::Mtu1k);
        q.set_log_msg_max(31);
        q.primary_address_path_mut().set_vhca_port_num(1);
    })
    .fails(0x3, syn::QP_BAD_MSG_MAX);
    host.run::<cmd::Init2rtrQp>(0, 0, 0, |i| {
        i.set_qpn(qpn);
        let mut q = i.qpc_mut();
        q.set_mtu(QpMtu::Mtu1k);
        q.set_log_msg_max(30);
        q.set_remote_qpn(0xabc);
        q.set_next_rcv_psn(77);
        let mut p = q.primary_address_path_mut();
        p.set_vhca_port_num(1);
        p.set_rmac_47_32(0x0202);
        p.set_rgid_rip(&[0xfe; 16]);
    })
    .ok();
    let (state, out) = qp_state(&host, qpn);
    assert_eq!(state, Ok(QpState::Rtr));
    assert_eq!(out.qpc().remote_qpn(), 0xabc);
    assert_eq!(out.qpc().primary_address_path().rgid_rip(), [0xfe; 16]);

    host.run::<cmd::Rtr2rtsQp>(0, 0, 0, |i| {
        i.set_qpn(qpn);
        i.qpc_mut().set_next_send_psn(99);
        i.qpc_mut().set_retry_count(7);
    })
    .ok();
    // RTS2RTS: rwe only under its mask bit.
    host.run::<cmd::Rts2rtsQp>(0, 0, 0, |i| {
        i.set_qpn(qpn);
        i.qpc_mut().set_rwe(true);
    })
    .ok();
    assert!(!qp_state(&host, qpn).1.qpc().rwe());
    host.run::<cmd::Rts2rtsQp>(0, 0, 0, |i| {
        i.set_qpn(qpn);
        i.set_opt_param_mask(0x8);
        i.qpc_mut().set_rwe(true);
    })
    .ok();
    let (state, out) = qp_state(&host, qpn);
    assert_eq!(state, Ok(QpState::Rts));
    assert!(out.qpc().rwe());
    assert_eq!(
        (out.qpc().next_send_psn(), out.qpc().retry_count()),
        (99, 7)
    );

    // SQERR2RTS is a known transition (not BAD_OP) that starts only in SQER, which an RC QP
    // of the model never enters.
    host.run::<cmd::Sqerr2rtsQp>(0, 0, 0, |i| i.set_qpn(qpn))
        .fails(0x10, syn::QP_BAD_STATE);

    host.run::<cmd::Qp2err>(0, 0, 0, |i| i.set_qpn(qpn)).ok();
    assert_eq!(qp_state(&host, qpn).0, Ok(QpState::Err));
    host.run::<cmd::Qp2rst>(0, 0, 0, |i| i.set_qpn(qpn)).ok();
    assert_eq!(qp_state(&host, qpn).0, Ok(QpState::Rst));

    // The QP holds its CQ and PD.
    host.run::<cmd::DestroyCq>(0, 0, 0, |i| i.set_cqn(cqn))
        .fails(0x6, syn::CQ_BUSY);
    host.run::<cmd::DeallocPd>(0, 0, 0, |i| i.set_pd(pd))
        .fails(0x6, syn::PD_BUSY);
    host.run::<cmd::DestroyQp>(0, 0, 0, |i| i.set_qpn(qpn)).ok();
    host.run::<cmd::DestroyQp>(0, 0, 0, |i| i.set_qpn(qpn))
        .fails(0x5, syn::QP_UNKNOWN);
    host.run::<cmd::DestroyCq>(0, 0, 0, |i| i.set_cqn(cqn)).ok();
}

#[test]
fn qp_references_are_checked() {
    let host = Host::inline();
    host.bring_up();
    let uar = host.alloc_uar();
    let pd = host.alloc_pd();
    host.run::<cmd::CreateQp>(0, 8, 0, |i| {
        let mut q = i.qpc_mut();
        q.set_pd(pd);
        q.set_uar_page(uar);
        q.set_cqn_snd(0x401);
    })
    .fails(0x5, syn::QP_CQ_SND_UNKNOWN);
    host.run::<cmd::CreateQp>(0, 8, 0, |i| {
        i.qpc_mut().set_pd(pd + 1);
        i.qpc_mut().set_uar_page(uar);
    })
    .fails(0x5, syn::QP_PD_UNKNOWN);
}

#[test]
fn mkeys() {
    let host = Host::inline();
    host.bring_up();
    let pd = host.alloc_pd();
    let r = host
        .run::<cmd::CreateMkey>(0, 16, 0, |i| {
            let mut m = i.memory_key_mkey_entry_mut();
            m.set_pd(pd);
            m.set_lr(true);
            m.set_lw(true);
            m.set_access_mode_1_0(1);
            m.set_mkey_7_0(0x42);
            m.set_start_addr(0x1_0000_0000);
            m.set_len(4096);
            m.set_translations_octword_size(1);
            i.set_translations_octword_actual_size(1);
            i.set_klm_pas_mtt(1, 0x1000).unwrap();
        })
        .ok();
    let index = mlx5_prm::CreateMkeyOut::new_unchecked(&r.out[..]).mkey_index();
    let r = host
        .run::<cmd::QueryMkey>(0, 0, 0, |i| i.set_mkey_index(index))
        .ok();
    let q = QueryMkeyOut::new_unchecked(&r.out[..]);
    assert_eq!(q.memory_key_mkey_entry().mkey_7_0(), 0x42);
    assert_eq!(q.memory_key_mkey_entry().len(), 4096);
    assert_eq!(&q.bsf0_klm0_pas_mtt0_1()[4..8], &[0, 0, 0x10, 0]);
    host.run::<cmd::DeallocPd>(0, 0, 0, |i| i.set_pd(pd))
        .fails(0x6, syn::PD_BUSY);
    host.run::<cmd::CreateMkey>(0, 0, 0, |i| {
        i.memory_key_mkey_entry_mut().set_pd(pd);
        i.memory_key_mkey_entry_mut()
            .set_translations_octword_size(4);
        i.set_translations_octword_actual_size(4);
    })
    .fails(0x50, syn::MKEY_TRANSLATIONS_SHORT);
    host.run::<cmd::CreateMkey>(0, 0, 0, |i| i.memory_key_mkey_entry_mut().set_pd(7))
        .fails(0x5, syn::MKEY_PD_UNKNOWN);
    host.run::<cmd::DestroyMkey>(0, 0, 0, |i| i.set_mkey_index(index))
        .ok();
    host.run::<cmd::DeallocPd>(0, 0, 0, |i| i.set_pd(pd)).ok();
}

/// Writes the wq's first page address (the page list trails the create input).
#[test]
fn ethernet_path_objects_and_flow_steering() {
    let host = Host::inline();
    host.bring_up();
    let dma = host.dev.dma();
    let uar = host.alloc_uar();
    let pd = host.alloc_pd();
    let td = host.alloc_td();
    let (eqn, _ring) = host.create_eq(4, 0, uar, 0);
    let cqn = host.create_cq(eqn, uar, 6);

    let r = host
        .run::<cmd::CreateTis>(0, 0, 0, |i| i.ctx_mut().set_transport_domain(td))
        .ok();
    let tisn = id_at(&r);

    let ring = dma.alloc(4096, 4096).unwrap();
    let dbr = dma.alloc(64, 64).unwrap();
    let sq = |state: SqState| {
        let wq = Wq {
            cqn,
            pd,
            dbr: dbr.iova + 4,
            ring: ring.iova,
        };
        wq.create_sq(uar, |c| {
            c.set_state(state);
            c.set_tis_lst_sz(1);
            c.set_tis_num_0(tisn);
        })
    };
    host.exec(&sq(SqState::Rdy), 16)
        .fails(0x3, syn::SQ_CREATE_NOT_RST);
    let r = host.exec(&sq(SqState::Rst), 16).ok();
    let sqn = id_at(&r);
    let modify_sq = |cur: SqState, new: SqState| {
        host.run::<cmd::ModifySq>(0, 0, 0, |i| {
            i.set_sqn(sqn);
            i.set_sq_state(cur);
            i.ctx_mut().set_state(new);
        })
    };
    modify_sq(SqState::Rdy, SqState::Rst).fails(0x9, syn::SQ_STATE_MISMATCH);
    modify_sq(SqState::Rst, SqState::Err).fails(0x9, syn::SQ_BAD_TRANSITION);
    modify_sq(SqState::Rst, SqState::Rdy).ok();
    modify_sq(SqState::Rdy, SqState::Err).ok();
    modify_sq(SqState::Err, SqState::Rst).ok();
    host.run::<cmd::DestroyTis>(0, 0, 0, |i| i.set_tisn(tisn))
        .fails(0x6, syn::TIS_BUSY);

    let rq_ring = dma.alloc(4096, 4096).unwrap();
    let wq = Wq {
        cqn,
        pd,
        dbr: dbr.iova,
        ring: rq_ring.iova,
    };
    let rqn = id_at(&host.exec(&wq.create_rq(|_| {}), 16).ok());
    host.run::<cmd::ModifyRq>(0, 0, 0, |i| {
        i.set_rqn(rqn);
        i.set_rq_state(RqState::Rst);
        i.ctx_mut().set_state(RqState::Rdy);
        i.set_modify_bitmask(0x4);
        i.ctx_mut().set_scatter_fcs(true);
    })
    .ok();

    // RQT over the RQ twice, a direct and an indirect TIR.
    let r = host
        .run::<cmd::CreateRqt>(0, 8, 0, |i| {
            let mut c = i.rqt_context_mut();
            c.set_rqt_max_size(2);
            c.set_rqt_actual_size(2);
            let raw = i.storage_mut();
            raw.write_be32(0x110, rqn);
            raw.write_be32(0x114, rqn);
        })
        .ok();
    let rqtn = id_at(&r);
    let tir = |direct: bool| {
        host.run::<cmd::CreateTir>(0, 0, 0, |i| {
            let mut c = i.ctx_mut();
            c.set_transport_domain(td);
            if direct {
                c.set_disp_type(TircDispType::Direct);
                c.set_inline_rqn(rqn);
            } else {
                c.set_disp_type(TircDispType::Indirect);
                c.set_indirect_table(rqtn);
            }
        })
    };
    let tir_direct = id_at(&tir(true).ok());
    let tir_rss = id_at(&tir(false).ok());
    host.run::<cmd::DestroyRq>(0, 0, 0, |i| i.set_rqn(rqn))
        .fails(0x6, syn::RQ_BUSY);
    host.run::<cmd::DestroyRqt>(0, 0, 0, |i| i.set_rqtn(rqtn))
        .fails(0x6, syn::RQT_BUSY);

    // Flow steering: a 16-entry NIC RX table, a group of 8, an entry forwarding to a TIR.
    let r = host
        .run::<cmd::CreateFlowTable>(0, 0, 0, |i| {
            i.set_table_type(FlowTableType::NicRx);
            i.flow_table_context_mut().set_log_size(4);
        })
        .ok();
    let table = id_at(&r);
    let group = |start: u32, end: u32| {
        host.run::<cmd::CreateFlowGroup>(0, 0, 0, |i| {
            i.set_table_type(FlowTableType::NicRx);
            i.set_table_id(table);
            i.set_start_flow_index(start);
            i.set_end_flow_index(end);
        })
    };
    let r = group(0, 7).ok();
    let group_id = common::be32(&r.out, 8);
    group(4, 9).fails(0x3, syn::FG_OVERLAP);
    group(8, 16).fails(0x3, syn::FG_BAD_RANGE);
    let fte = |op: u16, index: u32, tirn: u32| {
        host.run::<cmd::SetFte>(op, 8, 0, |i| {
            i.set_table_type(FlowTableType::NicRx);
            i.set_table_id(table);
            i.set_flow_index(index);
            let mut f = i.flow_context_mut();
            f.set_group_id(group_id);
            f.set_action(0x4);
            f.set_destination_list_size(1);
            let raw = i.storage_mut();
            let mut d = mlx5_prm::DestFormatStruct::new_unchecked(&mut raw[0x340..0x348]);
            d.set_destination_type(FlowDestinationType::Tir);
            d.set_destination_id(tirn);
        })
    };
    fte(0, 3, tir_rss).ok();
    fte(0, 3, tir_rss).fails(0x3, syn::FTE_EXISTS);
    fte(0, 9, tir_rss).fails(0x3, syn::FTE_INDEX_OUTSIDE_GROUP);
    fte(0, 4, 0x777).fails(0x5, syn::FTE_DEST_UNKNOWN);
    fte(1, 3, tir_direct).ok();
    host.run::<cmd::SetFlowTableRoot>(0, 0, 0, |i| {
        i.set_table_type(FlowTableType::NicRx);
        i.set_table_id(table);
    })
    .ok();
    host.run::<cmd::SetFlowTableRoot>(0, 0, 0, |i| {
        i.set_table_type(FlowTableType::NicTx);
        i.set_table_id(table);
    })
    .fails(0x5, syn::FT_UNKNOWN);
    host.run::<cmd::DestroyTir>(0, 0, 0, |i| i.set_tirn(tir_direct))
        .fails(0x6, syn::TIR_BUSY);
    host.run::<cmd::DestroyTir>(0, 0, 0, |i| i.set_tirn(tir_rss))
        .ok();

    let objects = host.dev.objects();
    assert_eq!(
        (objects.sqs, objects.rqs, objects.tirs, objects.flow_entries),
        (1, 1, 1, 1)
    );
    // Teardown drops everything still alive.
    host.simple::<cmd::TeardownHca>(0).ok();
    assert_eq!(host.dev.objects().total(), 0);
}

#[test]
fn vport_and_port_registers() {
    let host = Host::inline();
    host.bring_up();
    let r = host
        .simple::<cmd::QueryVportState>(cmd::QueryVportStateOpMod::VnicVport)
        .ok();
    assert_eq!(
        QueryVportStateOut::new_unchecked(&r.out[..]).state(),
        Ok(VportOperState::Up)
    );
    host.dev.raise_port_change(1, false);
    let r = host
        .simple::<cmd::QueryVportState>(cmd::QueryVportStateOpMod::VnicVport)
        .ok();
    assert_eq!(
        QueryVportStateOut::new_unchecked(&r.out[..]).state(),
        Ok(VportOperState::Down)
    );
    host.simple::<cmd::QueryVportState>(cmd::QueryVportStateOpMod::EswVport)
        .fails(0x3, syn::BAD_OP_MOD);

    host.run::<cmd::ModifyNicVportContext>(0, 0, 0, |i| {
        i.field_select_mut().set_mtu(true);
        i.field_select_mut().set_roce_en(true);
        i.nic_vport_context_mut().set_mtu(9000);
        i.nic_vport_context_mut().set_roce_en(true);
    })
    .ok();
    let r = host.simple::<cmd::QueryNicVportContext>(0).ok();
    let ctx = QueryNicVportContextOut::new_unchecked(&r.out[..]);
    let ctx = ctx.nic_vport_context();
    assert_eq!((ctx.mtu(), ctx.roce_en()), (9000, true));
    assert_eq!(ctx.permanent_address().mac_addr_47_32(), 0x024d);
    host.run::<cmd::ModifyNicVportContext>(0, 0, 0, |i| {
        i.field_select_mut().set_mtu(true);
        i.nic_vport_context_mut().set_mtu(10000);
    })
    .fails(0x3, syn::VPORT_MTU_TOO_LARGE);

    // PMTU: write 9000, read it back as admin and oper MTU.
    let pmtu = |op: cmd::AccessRegisterOpMod, mtu: u16| {
        host.run::<cmd::AccessRegister>(op, 16, 16, |i| {
            i.set_register_id(0x5003);
            let mut r = PmtuReg::new_unchecked([0u8; 16]);
            r.set_local_port(1);
            r.set_admin_mtu(mtu);
            for (k, chunk) in r.storage().chunks(4).enumerate() {
                i.set_register_data(k, u32::from_be_bytes(chunk.try_into().unwrap()))
                    .unwrap();
            }
        })
    };
    pmtu(cmd::AccessRegisterOpMod::Write, 9000).ok();
    let r = pmtu(cmd::AccessRegisterOpMod::Read, 0).ok();
    let reg = PmtuReg::new_unchecked(&r.out[0x10..0x20]);
    assert_eq!(
        (reg.admin_mtu(), reg.oper_mtu(), reg.max_mtu()),
        (9000, 9000, 9978)
    );
    pmtu(cmd::AccessRegisterOpMod::Write, 20000).fails(0x3, syn::PMTU_BAD_MTU);

    let r = host
        .run::<cmd::AccessRegister>(cmd::AccessRegisterOpMod::Read, 0x40, 0x40, |i| {
            i.set_register_id(0x5004);
            i.set_register_data(0, (1 << 16) | 0x4).unwrap();
        })
        .ok();
    let ptys = PtysReg::new_unchecked(&r.out[0x10..0x50]);
    assert_ne!(ptys.eth_proto_capability(), 0);
    assert_eq!(ptys.eth_proto_oper(), 0, "link is down");
    host.run::<cmd::AccessRegister>(cmd::AccessRegisterOpMod::Read, 16, 16, |i| {
        i.set_register_id(0x9999);
    })
    .fails(0x3, syn::REG_UNKNOWN);
}

/// A create may carry at most the translation entries its context makes room for
/// (translations_octword_actual_size ≤ mkc.translations_octword_size, spec/mkey.yaml).
#[test]
fn mkey_translations_within_the_contexts_size() {
    let host = Host::inline();
    host.bring_up();
    let pd = host.alloc_pd();
    let create = |size: u32, actual: u32| {
        host.run::<cmd::CreateMkey>(0, actual as usize * 16, 0, |i| {
            let mut m = i.memory_key_mkey_entry_mut();
            m.set_pd(pd);
            m.set_access_mode_1_0(1);
            m.set_translations_octword_size(size);
            i.set_translations_octword_actual_size(actual);
        })
    };
    create(1, 2).fails(0x3, syn::MKEY_TRANSLATIONS_TOO_MANY);
    create(0, 1).fails(0x3, syn::MKEY_TRANSLATIONS_TOO_MANY);
    // Fewer than room for (the rest written later by UMR), or as many.
    create(4, 2).ok();
    create(2, 2).ok();
    create(8, 0).ok();
}

/// INIT2RTR's log_rra_max and RTR2RTS's log_sra_max stay within log_max_ra_res_qp and
/// log_max_ra_req_qp (4 in every profile): the responder keeps that many reads and atomics
/// for duplicates.
#[test]
fn qp_read_and_atomic_depths_within_the_capabilities() {
    let host = Host::inline();
    host.bring_up();
    let uar = host.alloc_uar();
    let pd = host.alloc_pd();
    let (eqn, _ring) = host.create_eq(4, 0, uar, 0);
    let cqn = host.create_cq(eqn, uar, 6);
    let Qp { qpn } = create_qp(&host, pd, uar, cqn);
    host.run::<cmd::Rst2initQp>(0, 0, 0, |i| {
        i.set_qpn(qpn);
        i.qpc_mut().primary_address_path_mut().set_vhca_port_num(1);
    })
    .ok();
    let init2rtr = |rra: u8| {
        host.run::<cmd::Init2rtrQp>(0, 0, 0, |i| {
            i.set_qpn(qpn);
            let mut q = i.qpc_mut();
            q.set_mtu(QpMtu::Mtu1k);
            q.set_log_rra_max(rra);
            q.primary_address_path_mut().set_vhca_port_num(1);
        })
    };
    init2rtr(5).fails(0x3, syn::QP_BAD_RRA_MAX);
    init2rtr(7).fails(0x3, syn::QP_BAD_RRA_MAX);
    assert_eq!(qp_state(&host, qpn).0, Ok(QpState::Init), "unchanged");
    init2rtr(4).ok();
    let rtr2rts = |sra: u8| {
        host.run::<cmd::Rtr2rtsQp>(0, 0, 0, |i| {
            i.set_qpn(qpn);
            i.qpc_mut().set_log_sra_max(sra);
        })
    };
    rtr2rts(5).fails(0x3, syn::QP_BAD_SRA_MAX);
    assert_eq!(qp_state(&host, qpn).0, Ok(QpState::Rtr), "unchanged");
    rtr2rts(4).ok();
    let out = qp_state(&host, qpn).1;
    assert_eq!((out.qpc().log_rra_max(), out.qpc().log_sra_max()), (4, 4));
}

//! Object contexts ask only for what the capabilities offer: a QP's or an RQ's receive WQE
//! stride within max_wqe_sz_rq, a striding RQ only with striding_rq, and CQE compression or a
//! collapsed CQ (which the model does not write) only where a capability offers them.
//! Anything else is BAD_PARAM with the check's syndrome.

mod common;

use common::wq::Wq;
use common::Host;
use mlx5_prm::cmd;
use mlx5_prm::{QpPmState, QpRqType, QpServiceType, QueryQpOut, WqType};
use mlx5_sim::{syndrome as syn, Caps, Config};

const BAD_PARAM: u8 = 0x3;

/// A PD, a UAR and a CQ (on an EQ) for QPs to use.
struct Rig {
    host: Host,
    pd: u32,
    uar: u32,
    cqn: u32,
    eqn: u8,
    _eq: mlx5_sim::DmaRegion,
}

fn rig(config: Config) -> Rig {
    let host = Host::new(config);
    host.bring_up();
    let uar = host.alloc_uar();
    let pd = host.alloc_pd();
    let (eqn, eq) = host.create_eq(4, 0, uar, 0);
    let cqn = host.create_cq(eqn, uar, 6);
    Rig {
        host,
        pd,
        uar,
        cqn,
        eqn,
        _eq: eq,
    }
}

/// CREATE_QP (RC) of 2 receive WQEs of 16 << `log_rq_stride` bytes (or none) and 16 send
/// WQEBBs, over three pages: enough for any stride the field can hold.
fn create_qp(r: &Rig, rq_type: QpRqType, log_rq_stride: u8) -> common::Reply {
    let buf = r.host.alloc(3 * 4096, 4096);
    let dbr = r.host.alloc(64, 64);
    r.host.run::<cmd::CreateQp>(0, 3 * 8, 0, |i| {
        let mut q = i.qpc_mut();
        q.set_st(QpServiceType::Rc);
        q.set_pm_state(QpPmState::Migrated);
        q.set_pd(r.pd);
        q.set_uar_page(r.uar);
        q.set_log_rq_size(1);
        q.set_log_rq_stride(log_rq_stride);
        q.set_log_sq_size(4);
        q.set_rq_type(rq_type);
        q.set_cqn_snd(r.cqn);
        q.set_cqn_rcv(r.cqn);
        q.set_dbr_addr(dbr.iova);
        for p in 0..3 {
            i.set_pas(p, buf.iova + p as u64 * 4096).unwrap();
        }
    })
}

/// A QP's receive WQE stride (16 << log_rq_stride bytes, up to 2 KiB) is at most
/// max_wqe_sz_rq (512 bytes), as an RQ's is; without a receive queue it means nothing. The
/// transitions do not write it (none lists it), so CREATE_QP is where it is checked.
#[test]
fn a_qps_receive_stride_is_within_max_wqe_sz_rq() {
    let r = rig(Config::default());
    assert_eq!(r.host.dev.config().caps.general_cur.max_wqe_sz_rq(), 512);
    for stride in [6, 7] {
        create_qp(&r, QpRqType::Regular, stride).fails(BAD_PARAM, syn::QP_RQ_STRIDE_TOO_LARGE);
    }
    assert_eq!(r.host.dev.objects().qps, 0, "nothing created");
    create_qp(&r, QpRqType::ZeroLen, 7).ok();
    let qp = create_qp(&r, QpRqType::Regular, 5).ok();
    let qpn = common::be32(&qp.out, 8) & 0xff_ffff;
    r.host
        .run::<cmd::Rst2initQp>(0, 0, 0, |i| {
            i.set_qpn(qpn);
            let mut q = i.qpc_mut();
            q.primary_address_path_mut().set_vhca_port_num(1);
            q.set_log_rq_stride(7);
        })
        .ok();
    let out = r.host.run::<cmd::QueryQp>(0, 0, 0, |i| i.set_qpn(qpn)).ok();
    let stride = QueryQpOut::new_unchecked(&out.out[..])
        .qpc()
        .log_rq_stride();
    assert_eq!(stride, 5, "a transition leaves the stride as created");
}

/// CREATE_CQ of 64 CQEs with `cqe_comp_en` and `cc` (collapsed) as given.
fn create_cq(r: &Rig, comp: bool, collapsed: bool) -> common::Reply {
    let ring = r.host.alloc(4096, 4096);
    let dbr = r.host.alloc(64, 64);
    r.host.run::<cmd::CreateCq>(0, 8, 0, |i| {
        let mut c = i.cq_context_mut();
        c.set_log_cq_size(6);
        c.set_uar_page(r.uar);
        c.set_c_eqn_or_apu_element(r.eqn.into());
        c.set_dbr_addr(dbr.iova);
        c.set_cqe_comp_en(comp);
        c.set_cc(collapsed);
        i.set_pas(0, ring.iova).unwrap();
    })
}

/// CQE compression only with the cqe_compression capability (off in every profile: the
/// model writes every CQE whole, as a device that has compression on may), and no collapsed
/// CQ (every CQE on entry 0), which no capability offers and the model does not write.
#[test]
fn cqe_compression_and_collapsed_cqs_only_where_offered() {
    let r = rig(Config::default());
    let caps = &r.host.dev.config().caps;
    assert!(!caps.general_cur.cqe_compression() && !caps.general_max.cqe_compression());
    create_cq(&r, true, false).fails(BAD_PARAM, syn::CQ_COMPRESSION_UNSUPPORTED);
    create_cq(&r, false, true).fails(BAD_PARAM, syn::CQ_COLLAPSED_UNSUPPORTED);
    assert_eq!(r.host.dev.objects().cqs, 1, "only the rig's");
    create_cq(&r, false, false).ok();

    let mut caps = Caps::connectx5();
    caps.general_max.set_cqe_compression(true);
    caps.general_cur.set_cqe_compression(true);
    let r = rig(Config {
        caps,
        ..Config::default()
    });
    create_cq(&r, true, false).ok();
    create_cq(&r, false, true).fails(BAD_PARAM, syn::CQ_COLLAPSED_UNSUPPORTED);
}

/// CREATE_RQ: a striding RQ only with the striding_rq capability (off in every profile), and
/// a stride no larger than max_wqe_sz_rq (512 bytes).
#[test]
fn rq_type_and_stride_within_the_capabilities() {
    let r = rig(Config::default());
    let (host, pd, cqn) = (&r.host, r.pd, r.cqn);
    let wq = Wq {
        cqn,
        pd,
        dbr: host.alloc(64, 64).iova,
        ring: host.alloc(4096, 4096).iova,
    };
    let rq = |ty: WqType, log_stride: u8| {
        let buf = wq.create_rq(|c| {
            let mut w = c.wq_mut();
            w.set_wq_type(ty);
            w.set_log_wq_stride(log_stride);
            // One page whatever the stride.
            w.set_log_wq_sz(12 - log_stride.min(12));
        });
        host.exec(&buf, 16)
    };
    assert!(!host.dev.config().caps.general_cur.striding_rq());
    rq(WqType::CyclicStridingRq, 6).fails(0x3, syn::RQ_STRIDING_UNSUPPORTED);
    assert_eq!(host.dev.config().caps.general_cur.max_wqe_sz_rq(), 512);
    rq(WqType::Cyclic, 10).fails(0x3, syn::RQ_STRIDE_TOO_LARGE);
    rq(WqType::Cyclic, 15).fails(0x3, syn::RQ_STRIDE_TOO_LARGE);
    rq(WqType::Cyclic, 9).ok();
    rq(WqType::Cyclic, 4).ok();
    rq(WqType::Cyclic, 3).fails(0x3, syn::RQ_BAD_WQ);
}

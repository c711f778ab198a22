//! Real-time CQE timestamps: a device configured to offer the real-time format
//! (`Config::with_ts_formats`) lets SQs, RQs and RC QPs ask for it in their context's
//! ts_format, and their CQEs then carry the UTC clock (the one MTUTC steers and the
//! initialization segment shows at 0x1040) as seconds in the high word and nanoseconds in the
//! low; queues of the same device in the free-running format keep the internal timer. A
//! format the device does not offer is refused with BAD_PARAM and the queue kind's syndrome;
//! DEFAULT is real time only on a device that offers nothing else; a modify keeps the format.

mod common;

use common::dp::{publish, Node};
use common::eth::{l2, Eth};
use common::rc_wqe::Wqe;
use common::wq::Wq;
use common::{be32, Host};
use mlx5_prm::rt::{Bytes as _, Command, View};
use mlx5_prm::{
    cmd, AccessRegisterId, CmdStatus, CqeOpcode, HcaTsFormatCap, MtutcOperation, MtutcReg, QpMtu,
    QpPmState, QpRqType, QpServiceType, RqState, SendOpcode, SqState, TircDispType, TsFormat,
};
use mlx5_sim::{syndrome as syn, Config};

const MAC_A: [u8; 6] = [0x02, 0xaa, 0, 0, 0, 1];
const MAC_B: [u8; 6] = [0x02, 0xbb, 0, 0, 0, 2];
const MAC_C: [u8; 6] = [0x02, 0xcc, 0, 0, 0, 3];
const BAD_PARAM: u8 = CmdStatus::BadParamErr as u8;
const NS: u64 = 1_000_000_000;
/// The UTC time the tests set: 2023-11-14, far from 0 so that seconds show.
const UTC_SEC: u32 = 1_700_000_000;

fn node(formats: HcaTsFormatCap) -> Node {
    Node::new(Host::new(Config::default().with_ts_formats(formats)))
}

/// MTUTC SET_TIME_IMMEDIATE to `sec` seconds.
fn set_utc(host: &Host, sec: u32) {
    let mut input = vec![0u8; 0x10 + MtutcReg::<&[u8]>::SIZE];
    input[..2].copy_from_slice(&cmd::AccessRegister::OPCODE.to_be_bytes());
    input[10..12].copy_from_slice(&AccessRegisterId::Mtutc.raw().to_be_bytes());
    let mut r = MtutcReg::new_unchecked(&mut input[0x10..]);
    r.set_operation(MtutcOperation::SetTimeImmediate);
    r.set_utc_sec(sec);
    let len = input.len();
    host.exec(&input, len).ok();
}

/// The UTC clock of the segment in ns (seconds, nanoseconds; read high, low, high).
fn utc(host: &Host) -> u64 {
    loop {
        let h = host.dev.read32(0x1040);
        let l = host.dev.read32(0x1044);
        if host.dev.read32(0x1040) == h {
            return u64::from(h) * NS + u64::from(l);
        }
    }
}

/// A real-time timestamp in ns, checked to be one: nanoseconds below 10^9.
#[track_caller]
fn rt_ns(ts: u64) -> u64 {
    assert!(
        ts & 0xffff_ffff < NS,
        "{ts:#x} is not seconds and nanoseconds"
    );
    (ts >> 32) * NS + (ts & 0xffff_ffff)
}

/// CREATE_SQ on CQ `cqn` of node `n`, without a TIS, asking for `ts` (raw): the reply, the
/// ring and the doorbell record.
fn create_sq(n: &Node, cqn: u32, ts: u8) -> (common::Reply, u64, u64) {
    let wq = wq_on(n, cqn);
    let buf = wq.create_sq(n.uar, |c| {
        c.set_flush_in_error_en(true);
        c.set_ts_format_raw(ts);
    });
    (n.host.exec(&buf, 16), wq.ring, wq.dbr)
}

/// CREATE_RQ on CQ `cqn` of node `n` asking for `ts` (raw).
fn create_rq(n: &Node, cqn: u32, ts: u8) -> (common::Reply, u64, u64) {
    let wq = wq_on(n, cqn);
    let buf = wq.create_rq(|c| c.set_ts_format_raw(ts));
    (n.host.exec(&buf, 16), wq.ring, wq.dbr)
}

/// A work queue on CQ `cqn` of node `n`, with a new ring page and doorbell record.
fn wq_on(n: &Node, cqn: u32) -> Wq {
    Wq {
        cqn,
        pd: n.pd,
        dbr: n.alloc(64).iova,
        ring: n.alloc(4096).iova,
    }
}

/// Points `e`'s send and receive paths at a new SQ and RQ in format `ts`, the RQ reached
/// through its own TIR by frames to MAC_C. The SQ and RQ are moved to RDY with a modify
/// whose context asks for another format, which a modify does not change.
fn switch_queues(e: &mut Eth, ts: TsFormat) {
    let (r, sq_ring, sq_dbr) = create_sq(&e.n, e.scq.cqn, ts.raw());
    let sqn = be32(&r.ok().out, 8) & 0xff_ffff;
    let other = if ts == TsFormat::RealTime {
        TsFormat::FreeRunning
    } else {
        TsFormat::RealTime
    };
    let host = &e.n.host;
    host.run::<cmd::ModifySq>(0, 0, 0, |i| {
        i.set_sqn(sqn);
        i.set_sq_state(SqState::Rst);
        let mut c = i.ctx_mut();
        c.set_state(SqState::Rdy);
        c.set_ts_format(other);
    })
    .ok();
    let (r, rq_ring, rq_dbr) = create_rq(&e.n, e.rcq.cqn, ts.raw());
    let rqn = be32(&r.ok().out, 8) & 0xff_ffff;
    host.run::<cmd::ModifyRq>(0, 0, 0, |i| {
        i.set_rqn(rqn);
        i.set_rq_state(RqState::Rst);
        let mut c = i.ctx_mut();
        c.set_state(RqState::Rdy);
        c.set_ts_format(other);
    })
    .ok();
    let tirn = be32(
        &host
            .run::<cmd::CreateTir>(0, 0, 0, |i| {
                let mut c = i.ctx_mut();
                c.set_transport_domain(e.td);
                c.set_disp_type(TircDispType::Direct);
                c.set_inline_rqn(rqn);
            })
            .ok()
            .out,
        8,
    ) & 0xff_ffff;
    e.add_entry(1, MAC_C, tirn);
    (e.sqn, e.sq_ring, e.sq_dbr) = (sqn, sq_ring, sq_dbr);
    (e.rqn, e.rq_ring, e.rq_dbr) = (rqn, rq_ring, rq_dbr);
    e.sq_pc.set(0);
    e.rq_pc.set(0);
}

#[test]
fn ethernet_queues_stamp_in_the_format_they_ask_for() {
    let mut e = Eth::new(node(HcaTsFormatCap::FreeRunningAndRealTime), &[MAC_A]);
    set_utc(&e.n.host, UTC_SEC);
    e.n.dev().loopback(true);
    // The helper's queues ask for the free-running format: internal timer ticks, far below
    // the UTC clock's seconds.
    e.post_recv(0, 2048);
    e.send(&l2(MAC_A, MAC_B), 0x8000, 100);
    let tx = e.scq.expect(CqeOpcode::Req).timestamp();
    let rx = e.rcq.expect(CqeOpcode::RespSend).timestamp();
    assert!(tx >> 32 < 16 && rx >> 32 < 16, "ticks: {tx:#x} {rx:#x}");

    switch_queues(&mut e, TsFormat::RealTime);
    e.post_recv(0, 2048);
    let before = utc(&e.n.host);
    e.send(&l2(MAC_C, MAC_B), 0x8000, 100);
    let tx = rt_ns(e.scq.expect(CqeOpcode::Req).timestamp());
    let rx = rt_ns(e.rcq.expect(CqeOpcode::RespSend).timestamp());
    let after = utc(&e.n.host);
    assert!(
        before <= tx && tx <= rx && rx <= after,
        "UTC {before} .. {after}, tx {tx}, rx {rx}"
    );
    assert_eq!(tx / NS, u64::from(UTC_SEC), "seconds of the time set");
    // An error CQE of a real-time queue still has its syndrome and no timestamp.
    e.post_recv(0, 16);
    e.send(&l2(MAC_C, MAC_B), 0x8000, 100);
    e.scq.expect(CqeOpcode::Req);
    let c = e.rcq.expect_err(CqeOpcode::RespErr, 0x1);
    assert_eq!(&c.storage()[0x30..0x34], &[0; 4]);
}

#[test]
fn mtutc_moves_the_real_time_stamps() {
    let mut e = Eth::new(node(HcaTsFormatCap::FreeRunningAndRealTime), &[MAC_A]);
    switch_queues(&mut e, TsFormat::RealTime);
    e.n.dev().loopback(true);
    for (k, sec) in [(0, 100u32), (1, 2_000_000_000)] {
        set_utc(&e.n.host, sec);
        e.post_recv(k * 2048, 2048);
        e.send(&l2(MAC_C, MAC_B), 0x8000, 64);
        let tx = rt_ns(e.scq.expect(CqeOpcode::Req).timestamp());
        let rx = rt_ns(e.rcq.expect(CqeOpcode::RespSend).timestamp());
        assert_eq!((tx / NS, rx / NS), (u64::from(sec), u64::from(sec)));
    }
}

#[test]
fn formats_the_device_does_not_offer_are_refused() {
    // Free running only (every profile's default): REAL_TIME is refused, DEFAULT is free
    // running, and an undefined value is refused.
    let n = Node::inline();
    let (scq, rcq) = (n.cq(4, false), n.cq(4, false));
    let (rt, fr, default) = (
        TsFormat::RealTime.raw(),
        TsFormat::FreeRunning.raw(),
        TsFormat::Default.raw(),
    );
    let sq = |ts| create_sq(&n, scq.cqn, ts).0;
    let rq = |ts| create_rq(&n, rcq.cqn, ts).0;
    let qp = |ts| create_qp(&n, scq.cqn, rcq.cqn, ts);
    for ts in [rt, 3] {
        sq(ts).fails(BAD_PARAM, syn::SQ_BAD_TS_FORMAT);
        rq(ts).fails(BAD_PARAM, syn::RQ_BAD_TS_FORMAT);
        qp(ts).fails(BAD_PARAM, syn::QP_BAD_TS_FORMAT);
    }
    for ts in [fr, default] {
        sq(ts).ok();
        rq(ts).ok();
        qp(ts).ok();
    }

    // Real time only: FREE_RUNNING is refused, DEFAULT and REAL_TIME are taken.
    let n = node(HcaTsFormatCap::RealTime);
    let (scq, rcq) = (n.cq(4, false), n.cq(4, false));
    let sq = |ts| create_sq(&n, scq.cqn, ts).0;
    let rq = |ts| create_rq(&n, rcq.cqn, ts).0;
    let qp = |ts| create_qp(&n, scq.cqn, rcq.cqn, ts);
    sq(fr).fails(BAD_PARAM, syn::SQ_BAD_TS_FORMAT);
    rq(fr).fails(BAD_PARAM, syn::RQ_BAD_TS_FORMAT);
    qp(fr).fails(BAD_PARAM, syn::QP_BAD_TS_FORMAT);
    for ts in [rt, default] {
        sq(ts).ok();
        rq(ts).ok();
        qp(ts).ok();
    }
}

/// CREATE_QP (RC, 16 receives of 64 bytes, 16 send WQEBBs) asking for `ts` (raw).
fn create_qp(n: &Node, scq: u32, rcq: u32, ts: u8) -> common::Reply {
    create_qp_on(n, scq, rcq, ts, n.alloc(4096).iova, n.alloc(64).iova)
}

fn create_qp_on(n: &Node, scq: u32, rcq: u32, ts: u8, buf: u64, dbr: u64) -> common::Reply {
    let mut input = vec![0u8; common::in_size::<cmd::CreateQp>() + 8];
    let mut i = cmd::CreateQp::input(&mut input[..], 0).unwrap();
    let mut q = i.qpc_mut();
    q.set_st(QpServiceType::Rc);
    q.set_pm_state(QpPmState::Migrated);
    q.set_pd(n.pd);
    q.set_uar_page(n.uar);
    q.set_log_rq_size(4);
    q.set_log_rq_stride(2);
    q.set_log_sq_size(4);
    q.set_rq_type(QpRqType::Regular);
    q.set_cqn_snd(scq);
    q.set_cqn_rcv(rcq);
    q.set_dbr_addr(dbr);
    q.set_ts_format_raw(ts);
    i.set_pas(0, buf).unwrap();
    n.host.exec(&input, common::out_size::<cmd::CreateQp>())
}

/// RST → INIT → RTR → RTS, connected to itself.
fn connect_to_itself(n: &Node, qpn: u32) {
    n.host
        .run::<cmd::Rst2initQp>(0, 0, 0, |i| {
            i.set_qpn(qpn);
            let mut q = i.qpc_mut();
            q.primary_address_path_mut().set_vhca_port_num(1);
            q.set_pm_state(QpPmState::Migrated);
        })
        .ok();
    n.host
        .run::<cmd::Init2rtrQp>(0, 0, 0, |i| {
            i.set_qpn(qpn);
            let mut q = i.qpc_mut();
            q.set_mtu(QpMtu::Mtu1k);
            q.set_log_msg_max(30);
            q.set_remote_qpn(qpn);
            q.set_min_rnr_nak(1);
            let mut ads = q.primary_address_path_mut();
            ads.set_vhca_port_num(1);
            ads.set_rmac_47_32(u16::from_be_bytes([n.mac[0], n.mac[1]]));
            ads.set_rmac_31_0(u32::from_be_bytes([n.mac[2], n.mac[3], n.mac[4], n.mac[5]]));
            let mut gid = [0u8; 16];
            gid[10] = 0xff;
            gid[11] = 0xff;
            gid[12..].copy_from_slice(&n.ip);
            ads.set_rgid_rip(&gid);
            ads.set_hop_limit(64);
        })
        .ok();
    n.host
        .run::<cmd::Rtr2rtsQp>(0, 0, 0, |i| {
            i.set_qpn(qpn);
            i.qpc_mut().set_retry_count(7);
            i.qpc_mut().set_rnr_retry(7);
            i.qpc_mut().primary_address_path_mut().set_ack_timeout(12);
        })
        .ok();
}

#[test]
fn an_rc_qp_stamps_sends_and_receives_in_real_time() {
    let n = node(HcaTsFormatCap::FreeRunningAndRealTime);
    set_utc(&n.host, UTC_SEC);
    let (scq, rcq) = (n.cq(4, false), n.cq(4, false));
    let (buf, dbr) = (n.alloc(4096), n.alloc(64));
    let r = create_qp_on(
        &n,
        scq.cqn,
        rcq.cqn,
        TsFormat::RealTime.raw(),
        buf.iova,
        dbr.iova,
    );
    let qpn = be32(&r.ok().out, 8) & 0xff_ffff;
    connect_to_itself(&n, qpn);
    // A receive of 64 bytes into the data buffer (entry 0 of 16-byte scatter entries, the
    // rest of the 64-byte stride ended by an invalid-lkey entry), counter 1.
    let data = n.alloc(4096);
    let key = n.mkey(n.pd, data.iova, 4096, "lr,lw");
    let mut rwqe = [0u8; 64];
    rwqe[..4].copy_from_slice(&64u32.to_be_bytes());
    rwqe[4..8].copy_from_slice(&key.to_be_bytes());
    rwqe[8..16].copy_from_slice(&data.iova.to_be_bytes());
    rwqe[20..24].copy_from_slice(&0x100u32.to_be_bytes());
    n.write(buf.iova, &rwqe);
    publish(n.dev(), dbr.iova, &1u32.to_be_bytes());
    // A signaled SEND of 8 inline bytes at send WQE 0 (the send queue follows the 16
    // receives of 64 bytes), counter 1, rung with its first 8 bytes.
    let mut wqe = Wqe::new(SendOpcode::Send, qpn, true)
        .inline(b"realtime")
        .build();
    wqe.resize(64, 0);
    n.write(buf.iova + 16 * 64, &wqe);
    publish(n.dev(), dbr.iova + 4, &1u32.to_be_bytes());
    let before = utc(&n.host);
    n.dev()
        .write64(n.uar as usize * 4096 + 0x800, wqe.read_be64(0));
    n.dev().tick();
    let tx = rt_ns(scq.expect(CqeOpcode::Req).timestamp());
    let rx = rt_ns(rcq.expect(CqeOpcode::RespSend).timestamp());
    let after = utc(&n.host);
    assert!(before <= tx && tx <= after && before <= rx && rx <= after);
    assert_eq!(tx / NS, u64::from(UTC_SEC));
    assert_eq!(n.read(data.iova, 8), b"realtime");
}

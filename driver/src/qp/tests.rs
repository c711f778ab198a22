use super::*;
use crate::backend::sim::SimBackend;
use crate::mr::Access;
use crate::qp::post::tests::{forged, wait};
use crate::HcaConfig;
use mlx5_prm::rt::Bytes;
use mlx5_prm::{
    CmdStatus, CqeOpcode, QpState, SendOpcode, WqeCompletionMode, WqeCtrlSeg, WqeDataSeg,
    WqeRaddrSeg,
};

fn up() -> (Hca<SimBackend>, std::sync::Arc<mlx5_sim::Device>) {
    let (be, dev) = SimBackend::new(mlx5_sim::Config::default());
    (Hca::bring_up(be, &HcaConfig::default()).unwrap(), dev)
}

/// A QP of 16 WQEBBs on `cq` in RTS, connected to itself (the post tests' set-up).
fn rts<'h>(hca: &'h Hca<SimBackend>, cq: &Cq<'h, SimBackend>) -> Qp<'h, SimBackend, Rts> {
    super::post::tests::rts(hca, cq, 4)
}

/// SQER → RTS is in the spec's state machine and nowhere in the driver: its method is the
/// generated one, sent through the driver's one `Handle` implementation. No transition of the
/// spec leads an RC QP into SQER (the device moves it there on a send error; the model's RC
/// QPs never do), so the test claims the state with the crate-private cast, and the model
/// refuses the command as the PRM says: BAD_QP_STATE, the QP handed back still typed SQER and
/// still in RTS on the device.
#[test]
fn sqer2rts_is_generated_and_refused_by_the_model_as_bad_qp_state() {
    let (hca, _dev) = up();
    let cq = Cq::create(&hca, 6).unwrap();
    let qp: Qp<'_, SimBackend, Sqer> = rts(&hca, &cq).into_state();
    let before = hca.commands_run();
    let args = Sqer2rts {
        optional: Sqer2rtsOptional {
            min_rnr_nak: Some(3),
            ..Sqer2rtsOptional::default()
        },
    };
    let (err, qp) = match qp.sqer2rts(args) {
        Ok(_) => panic!("the model moved an RTS QP with SQERR2RTS"),
        Err(pair) => pair,
    };
    assert_eq!(err.cmd_status(), Some(CmdStatus::BadQpStateErr), "{err}");
    assert!(err.to_string().contains("sqerr2rts_qp"), "{err}");
    assert_eq!(hca.commands_run(), before + 1, "one command sent");
    let last = hca.history().last().map(|c| c.opcode);
    assert_eq!(last, Some(Sqerr2rtsQp::OPCODE));
    assert_eq!(qp.state(), QpState::Sqer);
    assert_eq!(qp.query_state().unwrap(), QpState::Rts);
    // A value too wide for its field is refused before anything is sent, QP handed back.
    let wide = Sqer2rts {
        optional: Sqer2rtsOptional {
            min_rnr_nak: Some(0x20),
            ..Sqer2rtsOptional::default()
        },
    };
    let (err, qp) = qp.sqer2rts(wide).map(|_| ()).unwrap_err();
    assert!(
        matches!(err, Error::Field(o) if o.field == "min_rnr_nak"),
        "{err}"
    );
    assert_eq!(hca.commands_run(), before + 2, "QUERY_QP only");
    // From SQER (as from any state) the generated TO_ERR and TO_RST still work.
    let qp = qp.to_err().map_err(|(e, _)| e).unwrap();
    assert_eq!(qp.query_state().unwrap(), QpState::Err);
    let qp = qp.to_rst().map_err(|(e, _)| e).unwrap();
    assert_eq!(qp.query_state().unwrap(), QpState::Rst);
}

#[test]
fn a_send_wqe_is_laid_out_as_the_prm_says_and_rung_in_order() {
    let (hca, dev) = up();
    let cq = Cq::create(&hca, 6).unwrap();
    let mut qp = rts(&hca, &cq);
    let access = Access {
        local_write: true,
        ..Access::default()
    };
    let region = Region::register(&hca, 256, access).unwrap();
    let (lkey, addr) = (region.lkey(), region.addr());
    let remote = RemoteAddr {
        addr: 0x1234_5000,
        rkey: 0x77,
    };
    qp.post_send(SendRequest {
        id: 7,
        op: SendOp::Write(remote),
        region: Some(region),
        len: Some(100),
        signaled: true,
        inline: None,
    })
    .map_err(|(e, _)| e)
    .unwrap();
    let at = qp.rq_bytes();
    let buf = qp.inner.object.memory(0);
    let ctrl = WqeCtrlSeg::new_unchecked(buf.slice(at, 16));
    assert_eq!(ctrl.opcode(), Ok(SendOpcode::RdmaWrite));
    assert_eq!((ctrl.wqe_index(), ctrl.qpn(), ctrl.ds()), (0, qp.qpn(), 3));
    assert_eq!(ctrl.ce(), Ok(WqeCompletionMode::CqUpdate));
    let raddr = WqeRaddrSeg::new_unchecked(buf.slice(at + 16, 16));
    assert_eq!((raddr.raddr(), raddr.rkey()), (0x1234_5000, 0x77));
    let data = WqeDataSeg::new_unchecked(buf.slice(at + 32, 16));
    assert_eq!(
        (data.byte_count(), data.lkey(), data.addr()),
        (100, lkey, addr)
    );
    // The doorbell record holds the new producer counter; the UAR write carries the WQE's
    // first 8 bytes.
    let record = qp.inner.object.memory(1);
    assert_eq!(record.slice(0, 8).read_be32(4) & 0xffff, 1);
    assert_eq!(
        dev.last_send_doorbell(hca.info().uar),
        Some(buf.slice(at, 8).read_be64(0))
    );
    assert_eq!(qp.outstanding(), (1, 0));
}

/// A completion the QP does not have outstanding (a WQE not posted, another QP's, a receive
/// with nothing posted) is refused, as a device could write it; the real one gives back every
/// buffer it covers.
#[test]
fn completions_are_checked_before_buffers_come_back() {
    let (hca, _dev) = up();
    let mut cq = Cq::create(&hca, 6).unwrap();
    let mut qp = rts(&hca, &cq);
    // WRITEs to the QP's own memory (it is connected to itself), which complete at once.
    let target = Region::register(&hca, 64, crate::qp::post::tests::ALL).unwrap();
    for id in 0..3 {
        let region = Region::register(&hca, 64, Access::default()).unwrap();
        let req = SendRequest {
            id,
            op: SendOp::Write(RemoteAddr::of(&target)),
            region: Some(region),
            len: None,
            signaled: id == 2,
            inline: None,
        };
        qp.post_send(req).map_err(|(e, _)| e).unwrap();
    }
    let c = wait(&mut cq, 1).remove(0);
    assert_eq!((c.opcode, c.wqe_counter), (CqeOpcode::Req.raw(), 2));
    let qpn = qp.qpn();
    let ahead = forged(&mut cq, CqeOpcode::Req, qpn, 9, 0);
    assert!(
        qp.complete(ahead).is_err(),
        "a WQE index that is not outstanding is refused"
    );
    let other = forged(&mut cq, CqeOpcode::Req, qpn + 1, 2, 0);
    assert!(
        qp.complete(other).is_err(),
        "another QP's completion is refused"
    );
    assert_eq!(qp.outstanding(), (3, 0));
    // The signaled third request finishes the two unsignaled ones before it.
    let done = qp.complete(c).unwrap();
    assert_eq!(done.iter().map(|d| d.id).collect::<Vec<_>>(), [0, 1, 2]);
    assert!(done.iter().all(|d| d.region.is_some()));
    assert!(done[2].completion.is_some() && done[0].completion.is_none());
    assert_eq!(qp.outstanding(), (0, 0));
    let recv = forged(&mut cq, CqeOpcode::RespSend, qpn, 0, 0);
    assert!(
        qp.complete(recv).is_err(),
        "a receive completion with nothing posted is refused"
    );
}

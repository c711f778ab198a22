//! RC QPs on the device model: created, brought RST → INIT → RTR → RTS by the transition
//! methods generated from the spec's state machine (each with exactly the fields it
//! requires), sent to ERR and back to RST; the model checks every transition against the
//! same table, and QUERY_QP confirms that the state the type says is the device's.

mod common;

use common::{params, qp_config};
use mlx5_driver::cq::Cq;
use mlx5_driver::qp::*;
use mlx5_prm::QpState;
use mlx5_sim::Mode;

#[test]
fn reset_to_rts_and_back() {
    let (hca, device) = common::up(Mode::Inline);
    let cq = Cq::create(&hca, 6).unwrap();
    let a = Qp::create(&hca, &cq, &cq, &qp_config(6)).unwrap();
    let b = Qp::create(&hca, &cq, &cq, &qp_config(6)).unwrap();
    assert_eq!(a.query_state().unwrap(), QpState::Rst);

    let (init, rtr, rts) = params(b.qpn());
    let a = a.rst2init(init).map_err(|(e, _)| e).unwrap();
    assert_eq!(a.query_state().unwrap(), a.state());
    assert_eq!(a.state(), QpState::Init);
    // INIT → INIT changes only what it is given (here the write right, its mask bit set).
    let a = a
        .init2init(Init2init {
            optional: Init2initOptional {
                rwe: Some(false),
                ..Init2initOptional::default()
            },
        })
        .map_err(|(e, _)| e)
        .unwrap();
    assert_eq!(a.query_state().unwrap(), QpState::Init);
    let a = a.init2rtr(rtr).map_err(|(e, _)| e).unwrap();
    assert_eq!(
        (a.query_state().unwrap(), a.state()),
        (QpState::Rtr, QpState::Rtr)
    );
    let a = a.rtr2rts(rts).map_err(|(e, _)| e).unwrap();
    assert_eq!(
        (a.query_state().unwrap(), a.state()),
        (QpState::Rts, QpState::Rts)
    );
    let a = a
        .rts2rts(Rts2rts {
            optional: Rts2rtsOptional {
                min_rnr_nak: Some(4),
                ..Rts2rtsOptional::default()
            },
        })
        .map_err(|(e, _)| e)
        .unwrap();
    assert_eq!(a.query_state().unwrap(), QpState::Rts);

    let a = a.to_err().map_err(|(e, _)| e).unwrap();
    assert_eq!(
        (a.query_state().unwrap(), a.state()),
        (QpState::Err, QpState::Err)
    );
    let a = a.to_rst().map_err(|(e, _)| e).unwrap();
    assert_eq!(
        (a.query_state().unwrap(), a.state()),
        (QpState::Rst, QpState::Rst)
    );

    assert!(a.destroy().is_ok());
    assert!(b.destroy().is_ok());
    assert!(cq.destroy().is_ok());
    hca.teardown().unwrap();
    assert_eq!(device.pages_held(), 0);
    assert_eq!(device.dma().allocated(), 0);
}

#[test]
fn a_refused_transition_gives_the_qp_back() {
    let (hca, _device) = common::up(Mode::Inline);
    let cq = Cq::create(&hca, 6).unwrap();
    let qp = Qp::create(&hca, &cq, &cq, &qp_config(6)).unwrap();
    let (init, mut rtr, _) = params(qp.qpn());
    let qp = qp.rst2init(init).map_err(|(e, _)| e).unwrap();
    // A message size beyond the device's log_max_msg is refused with the PRM's status.
    rtr.log_msg_max = 31;
    let (err, qp) = match qp.init2rtr(rtr) {
        Ok(_) => panic!("the model accepted log_msg_max 31"),
        Err(pair) => pair,
    };
    assert!(err.to_string().contains("init2rtr_qp"), "{err}");
    assert!(err.status().is_some(), "{err}");
    // Still in INIT, and still usable.
    assert_eq!(qp.query_state().unwrap(), QpState::Init);
    rtr.log_msg_max = 20;
    let qp = qp.init2rtr(rtr).map_err(|(e, _)| e).unwrap();
    assert!(qp.destroy().is_ok());
    assert!(cq.destroy().is_ok());
}

/// A CQ dropped while a QP still reports to it is not destroyed under the QP: it goes with
/// the QP, and the model is left with nothing.
#[test]
fn a_cq_in_use_goes_with_its_last_qp() {
    let (hca, device) = common::up(Mode::Inline);
    let cq = Cq::create(&hca, 6).unwrap();
    let qp = Qp::create(&hca, &cq, &cq, &qp_config(4)).unwrap();
    let base = device.objects().total();
    match cq.destroy() {
        Err(mlx5_driver::Error::InUse { what: "cq", users }) => assert_eq!(users, 2),
        other => panic!("{other:?}"),
    }
    assert_eq!(device.objects().cqs, 1, "the QP still reports to it");
    drop(qp);
    assert_eq!(device.objects().cqs, 0);
    assert_eq!(device.objects().total(), base - 2);
}

/// `Transition` and `Handle` are public traits, so a type from outside the spec can go through
/// `Handle::apply` from safe code, naming any command and writing any input. Only a move of
/// this QP between the states its types name reaches the device: not a CREATE_MKEY over an
/// address of the caller's choosing, not a reset of another owner's QP, not a reset the QP's
/// type would not know of (its posted work would be handed back while the device still had
/// it).
#[test]
fn a_transition_from_outside_the_spec_sends_nothing_else() {
    use mlx5_prm::cmd::{CreateMkey, Qp2rst};
    use mlx5_prm::qp_machine::Machine;
    use mlx5_prm::rt::typestate::{Handle, Machine as _, Transition};
    use mlx5_prm::rt::{sm, BytesMut, Command, Overflow};

    const ROW: &sm::Transition<QpState> = &Machine::TABLE.transitions[0];

    /// A key over a megabyte at 0x1000, dressed as RST → INIT.
    struct KeyAnywhere;
    impl Transition<Rst> for KeyAnywhere {
        type To = Init;
        type Command = CreateMkey;
        const OP_MOD: u16 = 0;
        const ROW: &'static sm::Transition<QpState> = ROW;
        fn write<B: BytesMut>(
            &self,
            _: u32,
            input: &mut <CreateMkey as Command>::Input<B>,
        ) -> Result<(), Overflow> {
            let mut c = input.memory_key_mkey_entry_mut();
            c.set_lw(true);
            c.set_start_addr(0x1000);
            c.set_len(1 << 20);
            Ok(())
        }
    }

    /// A reset of QP `.0`, whoever owns it.
    struct ResetOf(u32);
    impl Transition<Rts> for ResetOf {
        type To = Rst;
        type Command = Qp2rst;
        const OP_MOD: u16 = 0;
        const ROW: &'static sm::Transition<QpState> = ROW;
        fn write<B: BytesMut>(
            &self,
            _: u32,
            input: &mut <Qp2rst as Command>::Input<B>,
        ) -> Result<(), Overflow> {
            input.try_set_qpn(self.0)
        }
    }

    /// A reset of this QP that leaves its type in RTS.
    struct QuietReset;
    impl Transition<Rts> for QuietReset {
        type To = Rts;
        type Command = Qp2rst;
        const OP_MOD: u16 = 0;
        const ROW: &'static sm::Transition<QpState> = ROW;
        fn write<B: BytesMut>(
            &self,
            qpn: u32,
            input: &mut <Qp2rst as Command>::Input<B>,
        ) -> Result<(), Overflow> {
            input.try_set_qpn(qpn)
        }
    }

    let (hca, device) = common::up(Mode::Inline);
    let cq = Cq::create(&hca, 6).unwrap();
    let a = Qp::create(&hca, &cq, &cq, &qp_config(4)).unwrap();
    let b = Qp::create(&hca, &cq, &cq, &qp_config(4)).unwrap();
    let sent = device.commands().len();
    let refused = |e: &mlx5_driver::Error| {
        matches!(
            e,
            mlx5_driver::Error::InvalidArgument {
                what: "QP transition",
                ..
            }
        )
    };

    let (e, a) = a.apply(KeyAnywhere).map(drop).unwrap_err();
    assert!(refused(&e), "{e}");
    assert_eq!(device.commands().len(), sent, "no key was asked for");
    let (qa, qb) = (a.qpn(), b.qpn());
    let (a, b) = (common::to_rts(a, qb), common::to_rts(b, qa));
    let sent = device.commands().len();
    let (e, a) = a.apply(ResetOf(qb)).map(drop).unwrap_err();
    assert!(refused(&e), "{e}");
    let (e, a) = a.apply(QuietReset).map(drop).unwrap_err();
    assert!(refused(&e), "{e}");
    assert_eq!(device.commands().len(), sent, "nothing reached the device");
    assert_eq!(a.query_state().unwrap(), QpState::Rts);
    assert_eq!(b.query_state().unwrap(), QpState::Rts);
}

//! The QP typestate generated from `spec/qp_states.yaml`, driven through a tiny handle over an
//! in-memory executor (no driver, no device model): each transition's method exists only on
//! the states it leaves, returns the handle in the state it reaches, and writes exactly its
//! fields (with the optional-parameter mask bits of those given) into its command's input.
//! The executor checks every command against the same table the device model uses.
//! Compile-fail cases (a transition on the wrong state, a required field left out) are in
//! `ui-tests/tests/prm`, run by `trybuild` (`ui-tests/tests/prm.rs`).

use core::marker::PhantomData;
use mlx5_prm::cmd::Rst2initQp;
use mlx5_prm::qp_machine::{
    ErrState, Init, Init2init, Init2initOptional, Init2rtr, Init2rtrOptional, Machine, Rst,
    Rst2init, Rtr, Rtr2rts, Rtr2rtsOptional, Rts, Rts2rts, Rts2rtsOptional, Sqer, Sqer2rts,
    Transitions as _,
};
use mlx5_prm::rt::typestate::{Handle, State, Transition};
use mlx5_prm::rt::{Command, Overflow};
use mlx5_prm::{
    Ads, Init2rtrQpIn, QpMtu, QpPmState, QpState, Rst2initQpIn, Rts2rtsQpIn, QP_OPT_RNR_TIMEOUT,
    QP_OPT_RWE, QP_STATE_MACHINE,
};
use std::cell::RefCell;

/// What the executor refuses.
#[derive(Debug, PartialEq)]
enum Refused {
    /// The arguments did not fit their fields.
    Overflow(Overflow),
    /// The command does not start in the object's state (the device's BAD_QP_STATE).
    BadState(QpState),
    /// A mask bit the transition does not accept (BAD_PARAM).
    BadMask(u64),
}

/// An in-memory device that knows one QP's state and keeps the inputs it was sent.
struct Executor {
    state: RefCell<QpState>,
    inputs: RefCell<Vec<Vec<u8>>>,
}

impl Executor {
    fn new() -> Self {
        Executor {
            state: RefCell::new(QpState::Rst),
            inputs: RefCell::new(Vec::new()),
        }
    }

    /// Runs a transition input as a device would: by opcode, against the table.
    fn run(&self, input: Vec<u8>) -> Result<(), Refused> {
        let opcode = u16::from_be_bytes([input[0], input[1]]);
        let t = QP_STATE_MACHINE.by_opcode(opcode).expect("a QP transition");
        let state = *self.state.borrow();
        if !t.starts_in(state) {
            return Err(Refused::BadState(state));
        }
        if let Some(mf) = QP_STATE_MACHINE.mask_field {
            let at = mf.bit_offset / 8;
            let mask = u64::from(u32::from_be_bytes(input[at..at + 4].try_into().unwrap()));
            if mask & !t.allowed_mask() != 0 {
                return Err(Refused::BadMask(mask));
            }
        }
        *self.state.borrow_mut() = t.to;
        self.inputs.borrow_mut().push(input);
        Ok(())
    }
}

/// A QP handle in state `S`: all a driver writes to get every transition method.
struct Qp<'e, S> {
    qpn: u32,
    exec: &'e Executor,
    state: PhantomData<S>,
}

impl<'e, S: State<Machine = Machine>> Handle for Qp<'e, S> {
    type Machine = Machine;
    type State = S;
    type Next<T: State<Machine = Machine>> = Qp<'e, T>;
    // A refused transition gives the QP back, unchanged, with the reason.
    type Error = (Refused, Qp<'e, S>);

    fn apply<T: Transition<S>>(self, args: T) -> Result<Qp<'e, T::To>, Self::Error> {
        let mut buf = vec![0u8; 0x110];
        let written = {
            let mut input = T::Command::input(&mut buf[..], T::OP_MOD).expect("buffer fits");
            args.write(self.qpn, &mut input)
        };
        if let Err(e) = written {
            return Err((Refused::Overflow(e), self));
        }
        match self.exec.run(buf) {
            Ok(()) => Ok(Qp {
                qpn: self.qpn,
                exec: self.exec,
                state: PhantomData,
            }),
            Err(e) => Err((e, self)),
        }
    }
}

impl<S: State<Machine = Machine>> Qp<'_, S> {
    /// The state the type says, checked against the executor's.
    fn state(&self) -> QpState {
        assert_eq!(*self.exec.state.borrow(), S::RAW, "type and device agree");
        S::RAW
    }
}

fn rst2init() -> Rst2init {
    Rst2init {
        pkey_index: 3,
        vhca_port_num: 1,
        rre: true,
        rwe: false,
        rae: true,
        pm_state: QpPmState::Migrated,
        counter_set_id: 0,
    }
}

fn init2rtr() -> Init2rtr {
    Init2rtr {
        mtu: QpMtu::Mtu1k,
        log_msg_max: 30,
        remote_qpn: 0xabc,
        next_rcv_psn: 77,
        log_rra_max: 2,
        min_rnr_nak: 12,
        rmac_47_32: 0x0202,
        rmac_31_0: 0x0304_0506,
        rgid_rip: [0xfe; 16],
        src_addr_index: 0,
        hop_limit: 64,
        tclass: 0,
        flow_label: 0,
        udp_sport: 0xc000,
        dscp: 0,
        eth_prio: 0,
        vhca_port_num: 1,
        optional: Init2rtrOptional::default(),
    }
}

fn rtr2rts() -> Rtr2rts {
    Rtr2rts {
        next_send_psn: 99,
        retry_count: 7,
        rnr_retry: 7,
        log_sra_max: 2,
        ack_timeout: 14,
        optional: Rtr2rtsOptional::default(),
    }
}

#[test]
fn a_qp_walks_the_state_machine() {
    let exec = Executor::new();
    let qp: Qp<'_, Rst> = Qp {
        qpn: 0x42,
        exec: &exec,
        state: PhantomData,
    };
    assert_eq!(qp.state(), QpState::Rst);
    let qp: Qp<'_, Init> = qp.rst2init(rst2init()).map_err(|(e, _)| e).unwrap();
    assert_eq!(qp.state(), QpState::Init);
    let qp: Qp<'_, Init> = qp
        .init2init(Init2init {
            optional: Init2initOptional {
                rwe: Some(true),
                ..Default::default()
            },
        })
        .map_err(|(e, _)| e)
        .unwrap();
    let qp: Qp<'_, Rtr> = qp.init2rtr(init2rtr()).map_err(|(e, _)| e).unwrap();
    let qp: Qp<'_, Rts> = qp.rtr2rts(rtr2rts()).map_err(|(e, _)| e).unwrap();
    assert_eq!(qp.state(), QpState::Rts);
    let qp: Qp<'_, Rts> = qp
        .rts2rts(Rts2rts {
            optional: Rts2rtsOptional {
                min_rnr_nak: Some(5),
                secondary_address_path: Some(Ads::zeroed()),
                ..Default::default()
            },
        })
        .map_err(|(e, _)| e)
        .unwrap();
    // Any state may go to ERR and back to RST; the generic `apply` works as the methods do.
    let qp: Qp<'_, ErrState> = qp.to_err().map_err(|(e, _)| e).unwrap();
    assert_eq!(qp.state(), QpState::Err);
    let qp: Qp<'_, Rst> = qp
        .apply(mlx5_prm::qp_machine::ToRst)
        .map_err(|(e, _)| e)
        .unwrap();
    assert_eq!(qp.state(), QpState::Rst);
    assert_eq!(exec.inputs.borrow().len(), 7);
}

#[test]
fn a_transition_writes_exactly_its_fields() {
    let exec = Executor::new();
    let qp: Qp<'_, Rst> = Qp {
        qpn: 0x42,
        exec: &exec,
        state: PhantomData,
    };
    let qp = qp.rst2init(rst2init()).map_err(|(e, _)| e).unwrap();
    let sent = exec.inputs.borrow()[0].clone();
    let i = Rst2initQpIn::new_checked(&sent[..]).unwrap();
    assert_eq!(i.opcode(), Rst2initQp::OPCODE);
    assert_eq!(i.qpn(), 0x42);
    let c = i.qpc();
    assert_eq!(c.primary_address_path().pkey_index(), 3);
    assert_eq!(c.primary_address_path().vhca_port_num(), 1);
    assert_eq!((c.rre(), c.rwe(), c.rae()), (true, false, true));
    assert_eq!(c.pm_state(), Ok(QpPmState::Migrated));
    // Nothing else: the rest of the input is zero but for these fields.
    let mut expected = Rst2initQpIn::zeroed();
    expected.set_opcode(Rst2initQp::OPCODE);
    expected.set_qpn(0x42);
    {
        let mut q = expected.qpc_mut();
        q.primary_address_path_mut().set_pkey_index(3);
        q.primary_address_path_mut().set_vhca_port_num(1);
        q.set_rre(true);
        q.set_rae(true);
        q.set_pm_state(QpPmState::Migrated);
    }
    assert_eq!(&sent[..Rst2initQpIn::SIZE], &expected.storage()[..]);

    // Optional fields set their mask bits, and only those given.
    let qp = qp.init2rtr(init2rtr()).map_err(|(e, _)| e).unwrap();
    let sent = exec.inputs.borrow()[1].clone();
    let i = Init2rtrQpIn::new_checked(&sent[..]).unwrap();
    assert_eq!(i.opt_param_mask(), 0);
    assert_eq!(i.qpc().remote_qpn(), 0xabc);
    assert_eq!(i.qpc().primary_address_path().rgid_rip(), [0xfe; 16]);
    let qp = qp.rtr2rts(rtr2rts()).map_err(|(e, _)| e).unwrap();
    let _qp = qp
        .rts2rts(Rts2rts {
            optional: Rts2rtsOptional {
                rwe: Some(true),
                min_rnr_nak: Some(9),
                ..Default::default()
            },
        })
        .map_err(|(e, _)| e)
        .unwrap();
    let sent = exec.inputs.borrow()[3].clone();
    let i = Rts2rtsQpIn::new_checked(&sent[..]).unwrap();
    assert_eq!(
        u64::from(i.opt_param_mask()),
        QP_OPT_RWE | QP_OPT_RNR_TIMEOUT
    );
    assert!(i.qpc().rwe());
    assert_eq!(i.qpc().min_rnr_nak(), 9);
}

#[test]
fn a_value_too_wide_is_refused_before_anything_is_sent() {
    let exec = Executor::new();
    let qp: Qp<'_, Rst> = Qp {
        qpn: 0x42,
        exec: &exec,
        state: PhantomData,
    };
    let mut args = rst2init();
    args.vhca_port_num = 0xff; // an 8-bit field: fits
    let qp = qp.rst2init(args).map_err(|(e, _)| e).unwrap();
    let qp = qp.init2rtr(init2rtr()).map_err(|(e, _)| e).unwrap();
    let mut args = rtr2rts();
    args.retry_count = 8; // 3 bits
    let (e, qp) = qp.rtr2rts(args).err().expect("refused");
    assert_eq!(
        e,
        Refused::Overflow(Overflow {
            field: "retry_count",
            value: 8,
            max: 7
        })
    );
    // The QP came back in its state; nothing was sent.
    assert_eq!(qp.state(), QpState::Rtr);
    assert_eq!(exec.inputs.borrow().len(), 2);
    // A QP number too wide for its 24 bits is refused the same way.
    let big: Qp<'_, Rtr> = Qp {
        qpn: 1 << 24,
        exec: &exec,
        state: PhantomData,
    };
    let (e, _) = big.rtr2rts(rtr2rts()).err().expect("refused");
    assert!(matches!(
        e,
        Refused::Overflow(Overflow { field: "qpn", .. })
    ));
}

#[test]
fn sqer_goes_back_to_rts_with_its_optional_mask() {
    // The device (not the driver) moves a QP to SQER; a handle in SQER is what a driver
    // gets from a query. SQERR2RTS accepts the RNR timeout and access bits.
    let exec = Executor::new();
    *exec.state.borrow_mut() = QpState::Sqer;
    let qp: Qp<'_, Sqer> = Qp {
        qpn: 5,
        exec: &exec,
        state: PhantomData,
    };
    let qp: Qp<'_, Rts> = qp
        .sqer2rts(Sqer2rts {
            optional: mlx5_prm::qp_machine::Sqer2rtsOptional {
                min_rnr_nak: Some(3),
                rre: Some(true),
                ..Default::default()
            },
        })
        .map_err(|(e, _)| e)
        .unwrap();
    assert_eq!(qp.state(), QpState::Rts);
    let row = <Sqer2rts as Transition<Sqer>>::ROW;
    assert_eq!((row.name, row.opcode), ("sqer2rts", 0x506));
    assert_eq!(row.allowed_mask(), 0x4e);
}

#[test]
fn states_carry_their_hardware_numbers() {
    assert_eq!(Rst::RAW.raw(), 0);
    assert_eq!(Rts::RAW.raw(), 3);
    assert_eq!(Sqer::RAW.raw(), 4);
    assert_eq!(ErrState::RAW.raw(), 6);
    assert_eq!(mlx5_prm::qp_machine::Sqd::RAW.raw(), 7);
    assert_eq!(<ErrState as State>::NAME, "err");
}

#[test]
fn the_device_refuses_what_the_types_would_not_allow() {
    // The executor enforces the same table at run time: a handle whose type disagrees with
    // the device (the QP went to ERR behind its back) is refused and given back.
    let exec = Executor::new();
    let qp: Qp<'_, Rst> = Qp {
        qpn: 1,
        exec: &exec,
        state: PhantomData,
    };
    let qp = qp.rst2init(rst2init()).map_err(|(e, _)| e).unwrap();
    *exec.state.borrow_mut() = QpState::Err;
    let (e, _qp) = qp.init2rtr(init2rtr()).err().expect("refused");
    assert_eq!(e, Refused::BadState(QpState::Err));
}

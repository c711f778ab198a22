//! The QP as a handle of the typestate generated from the spec's state machine
//! (`mlx5_prm::qp_machine`, from `spec/qp_states.yaml`).
//!
//! The generator emits the states (`Rst`, `Init`, `Rtr`, `Rts`, `Sqer`, `ErrState`, ...), one
//! argument type per transition holding exactly the fields the transition requires (and an
//! `optional` group whose fields set their mask bits), and the `Transitions` trait with one
//! method per transition, callable only on the states the transition leaves. This file is all
//! the driver adds: [`Handle::apply`] runs the transition's command with the QP's number and
//! the fields the argument writes, and returns the QP in the state the transition reaches, or
//! the error with the QP unchanged. A transition added to the spec gets its method with no
//! change here. A transition that reaches RST (whatever state it leaves) also starts the
//! driver's queues afresh, as the device starts its own.

use super::Qp;
use crate::backend::Backend;
use crate::error::Error;
use mlx5_prm::qp_machine::Machine;
use mlx5_prm::rt::typestate::{Handle, State, Transition};
use mlx5_prm::rt::View;
use mlx5_prm::QpState;

/// Where every QP transition command's input keeps its opcode (`0x00[31:16]`) and the QP's
/// number (`0x08[23:0]`); checked against each command's layout by the tests below.
const OPCODE: std::ops::Range<usize> = 0..2;
const QPN: std::ops::Range<usize> = 9..12;

/// The input about to be sent runs a transition of the QP state machine from `from` to `to`
/// on QP `qpn`, whatever type described it: an input rewritten to another command (one that
/// could name host memory) or another QP (one with another owner) is refused unsent.
fn check_sent(input: &[u8], qpn: u32, from: QpState, to: QpState) -> Result<(), Error> {
    let refuse = |why: String| Error::InvalidArgument {
        what: "QP transition",
        why,
    };
    let opcode = match input.get(OPCODE) {
        Some(&[hi, lo]) => u16::from_be_bytes([hi, lo]),
        _ => return Err(refuse("its input has no room for an opcode".into())),
    };
    let machine = <Machine as mlx5_prm::rt::typestate::Machine>::TABLE;
    let edge = machine
        .transitions
        .iter()
        .any(|t| t.opcode == opcode && t.starts_in(from) && t.to == to);
    if !edge {
        return Err(refuse(format!(
            "opcode {opcode:#x} is no transition of the QP state machine from {from:?} to {to:?}"
        )));
    }
    let named = match input.get(QPN) {
        Some(&[a, b, c]) => u32::from_be_bytes([0, a, b, c]),
        _ => return Err(refuse("its input has no room for a QP number".into())),
    };
    if named != qpn {
        return Err(refuse(format!(
            "the input names QP {named:#x}, not this QP ({qpn:#x})"
        )));
    }
    Ok(())
}

/// A refused transition: the error, and the QP back in the state it was in.
pub type NotMoved<'h, B, S> = (Error, Qp<'h, B, S>);

impl<'h, B: Backend, S: State<Machine = Machine>> Handle for Qp<'h, B, S> {
    type Machine = Machine;
    type State = S;
    type Next<T: State<Machine = Machine>> = Qp<'h, B, T>;
    type Error = NotMoved<'h, B, S>;

    /// Runs transition `args` (its command, this QP's number, the fields it carries); a value
    /// too wide for its field is refused before anything is sent. Once the device has moved
    /// the QP to RST, the driver's queues start afresh too (counters, doorbell record, the
    /// work posted discarded: see [`Qp::take_discarded`]); a refused move changes nothing.
    fn apply<T: Transition<S>>(mut self, args: T) -> Result<Qp<'h, B, T::To>, NotMoved<'h, B, S>> {
        let qpn = self.qpn();
        let (from, to) = (S::RAW, <T::To as State>::RAW);
        // `Transition` is a public trait: a type from outside could name any command and
        // write any input. What is sent is checked as bytes, after `write`, before sending.
        let checked = |input: &mut <T::Command as mlx5_prm::rt::Command>::Input<&mut [u8]>| {
            args.write(qpn, input)?;
            check_sent(input.storage(), qpn, from, to)
        };
        // SAFETY: `check_sent` lets only a command of the spec's QP state machine through, one
        // that moves this QP (which the handle owns) from its state to `T::To`. Such a command
        // changes QPC fields of the transition's list (path, timers, numbers, rights; no host
        // address, ring, record or CQ), so the device is given no memory, and the QP's memory
        // stays with the handle whatever state it reaches.
        let sent = unsafe { self.hca().run_extra::<T::Command>(T::OP_MOD, 0, 0, checked) };
        match sent {
            Ok(_) => {
                if <T::To as State>::RAW == QpState::Rst {
                    self.inner.reset();
                }
                Ok(self.into_state())
            }
            Err(e) => Err((e, self)),
        }
    }
}

impl<B: Backend, S: State<Machine = Machine>> Qp<'_, B, S> {
    /// The state the QP's type says it is in (what [`Qp::query_state`] asks the device).
    pub fn state(&self) -> QpState {
        S::RAW
    }
}

/// A peer's MAC address as INIT2RTR's address path holds it: its first two bytes
/// (`rmac_47_32`) and its last four (`rmac_31_0`), for
/// [`Init2rtr`](mlx5_prm::qp_machine::Init2rtr).
pub fn rmac_fields(mac: [u8; 6]) -> (u16, u32) {
    let [a, b, c, d, e, f] = mac;
    (u16::from_be_bytes([a, b]), u32::from_be_bytes([c, d, e, f]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use mlx5_prm::cmd::{
        CreateMkey, Init2initQp, Init2rtrQp, Qp2err, Qp2rst, Rst2initQp, Rtr2rtsQp, Rts2rtsQp,
        Sqerr2rtsQp,
    };
    use mlx5_prm::rt::Command;

    /// The input of command `$c` with QP number 0xabcdef, as its generated setter writes it.
    macro_rules! input_of {
        ($c:ty) => {{
            let size = <<$c as Command>::Input<&[u8]> as View<&[u8]>>::SIZE;
            let mut buf = vec![0u8; size];
            <$c>::input(&mut buf[..], 0).unwrap().set_qpn(0xab_cdef);
            (<$c>::OPCODE, buf)
        }};
    }

    #[test]
    fn every_transition_command_keeps_its_opcode_and_qpn_where_the_check_reads_them() {
        let inputs = [
            input_of!(Rst2initQp),
            input_of!(Init2initQp),
            input_of!(Init2rtrQp),
            input_of!(Rtr2rtsQp),
            input_of!(Rts2rtsQp),
            input_of!(Sqerr2rtsQp),
            input_of!(Qp2err),
            input_of!(Qp2rst),
        ];
        let table = <Machine as mlx5_prm::rt::typestate::Machine>::TABLE;
        for t in table.transitions {
            let Some((opcode, buf)) = inputs.iter().find(|(op, _)| *op == t.opcode) else {
                panic!(
                    "transition {} ({:#x}) is not checked here",
                    t.name, t.opcode
                );
            };
            assert_eq!(buf[OPCODE], opcode.to_be_bytes(), "{}", t.name);
            assert_eq!(buf[QPN], [0xab, 0xcd, 0xef], "{}", t.name);
        }
    }

    #[test]
    fn only_this_qps_move_between_the_types_states_is_sent() {
        let (_, rst2init) = input_of!(Rst2initQp);
        let (_, to_rst) = input_of!(Qp2rst);
        // CREATE_MKEY, whose input has other bytes where a transition's QP number is.
        let mut mkey = rst2init.clone();
        mkey[OPCODE].copy_from_slice(&CreateMkey::OPCODE.to_be_bytes());
        let qpn = 0xab_cdef;
        use QpState::{Init, Rst, Rts};
        assert!(check_sent(&rst2init, qpn, Rst, Init).is_ok());
        assert!(check_sent(&to_rst, qpn, Rts, Rst).is_ok());
        let short = rst2init[..1].to_vec();
        for (input, qpn, from, to, why) in [
            (&rst2init, qpn, Rts, Init, "not from this state"),
            (&rst2init, qpn, Rst, Rst, "not to the type's state"),
            (&to_rst, qpn, Rts, Rts, "a reset the type does not see"),
            (&rst2init, 7, Rst, Init, "another QP"),
            (&mkey, qpn, Rst, Init, "not a QP transition"),
            (&short, qpn, Rst, Init, "too short"),
        ] {
            let err = check_sent(input, qpn, from, to).expect_err(why);
            assert!(matches!(err, Error::InvalidArgument { .. }), "{why}: {err}");
        }
    }
}

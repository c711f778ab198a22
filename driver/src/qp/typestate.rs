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
use mlx5_prm::QpState;

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
        let sent = self
            .hca()
            .run_extra::<T::Command>(T::OP_MOD, 0, 0, |input| Ok(args.write(qpn, input)?));
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

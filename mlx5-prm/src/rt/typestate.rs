//! Typestate from the spec's state machines: each state is a zero-sized type, each transition
//! a type holding exactly the fields the transition takes, and a handle in state `S` can be
//! moved only by a transition that starts in `S`, into the state it ends in.
//!
//! The generator emits, per state machine `m` (module `m_machine`): `Machine`, one marker per
//! state implementing [`State`], one argument type per transition implementing
//! [`Transition`] for each state it leaves, and the extension trait `Transitions` with one
//! method per transition. A driver implements [`Handle`] once for its own handle type, and
//! gets every method; a transition added to the spec adds its method with no code by hand.
//!
//! ```
//! use core::marker::PhantomData;
//! use mlx5_prm::qp_machine::{Init, Rst, Rst2init, Transitions as _};
//! use mlx5_prm::rt::typestate::{Handle, State, Transition};
//! use mlx5_prm::rt::{Command, Overflow};
//! use mlx5_prm::QpPmState;
//!
//! /// A QP handle that only records the input of its last transition.
//! struct Qp<S> { qpn: u32, last: Vec<u8>, state: PhantomData<S> }
//!
//! impl<S: State<Machine = mlx5_prm::qp_machine::Machine>> Handle for Qp<S> {
//!     type Machine = mlx5_prm::qp_machine::Machine;
//!     type State = S;
//!     type Next<T: State<Machine = Self::Machine>> = Qp<T>;
//!     type Error = Overflow;
//!     fn apply<T: Transition<S>>(self, args: T) -> Result<Qp<T::To>, Overflow> {
//!         let mut buf = vec![0u8; 0x200];
//!         {
//!             let mut input = T::Command::input(&mut buf[..], T::OP_MOD).unwrap();
//!             args.write(self.qpn, &mut input)?;
//!         }
//!         Ok(Qp { qpn: self.qpn, last: buf, state: PhantomData })
//!     }
//! }
//!
//! let qp: Qp<Rst> = Qp { qpn: 7, last: Vec::new(), state: PhantomData };
//! let qp: Qp<Init> = qp
//!     .rst2init(Rst2init {
//!         pkey_index: 0,
//!         vhca_port_num: 1,
//!         rre: true,
//!         rwe: true,
//!         rae: false,
//!         pm_state: QpPmState::Migrated,
//!         counter_set_id: 0,
//!     })
//!     .unwrap();
//! assert_eq!(qp.last[0..2], [0x05, 0x02]); // RST2INIT_QP's opcode, 0x502
//! ```
//!
//! A transition that does not start in the handle's state does not compile, and the error
//! says so:
//!
//! ```compile_fail,E0277
//! # use core::marker::PhantomData;
//! # use mlx5_prm::qp_machine::{Rst, Rtr2rts, Transitions as _};
//! # use mlx5_prm::rt::typestate::{Handle, State, Transition};
//! # use mlx5_prm::rt::{Command, Overflow};
//! # struct Qp<S>(PhantomData<S>);
//! # impl<S: State<Machine = mlx5_prm::qp_machine::Machine>> Handle for Qp<S> {
//! #     type Machine = mlx5_prm::qp_machine::Machine;
//! #     type State = S;
//! #     type Next<T: State<Machine = Self::Machine>> = Qp<T>;
//! #     type Error = Overflow;
//! #     fn apply<T: Transition<S>>(self, _: T) -> Result<Qp<T::To>, Overflow> { Ok(Qp(PhantomData)) }
//! # }
//! let qp: Qp<Rst> = Qp(PhantomData);
//! // error[E0277]: `Rtr2rts` is not a transition from state `Rst`
//! let _ = qp.rtr2rts(Rtr2rts { next_send_psn: 0, retry_count: 7, rnr_retry: 7,
//!     log_sra_max: 0, ack_timeout: 14, optional: Default::default() });
//! ```

use super::{sm, BytesMut, Command, Overflow};

/// A state machine of the spec, as a type.
pub trait Machine: 'static {
    /// The enum of its states, as the device reports them.
    type State: Copy + PartialEq + 'static;
    /// The number of the object its transitions move (a QP number), as every transition's
    /// input holds it (the spec's `object_field`); `()` when the machine names none.
    type Object: Copy;
    /// The machine as a table (the same data the device model validates commands with).
    const TABLE: &'static sm::StateMachine<Self::State>;
}

/// A state of a machine, as a zero-sized type.
pub trait State: 'static {
    /// The machine it belongs to.
    type Machine: Machine;
    /// The state's value, as the device reports it.
    const RAW: <Self::Machine as Machine>::State;
    /// Its name as the spec writes it.
    const NAME: &'static str;
}

/// A transition that starts in state `S`: a value holding the fields the transition requires
/// (and, in its `optional` field, those it may set), which it writes into its command's
/// input.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a transition from state `{S}`",
    label = "`{Self}` does not start in `{S}`",
    note = "a transition exists only on the states it leaves in the spec's state machine"
)]
pub trait Transition<S: State>: Sized {
    /// The state it reaches.
    type To: State<Machine = S::Machine>;
    /// The command that performs it.
    type Command: Command;
    /// The op_mod the command is sent with.
    const OP_MOD: <Self::Command as Command>::OpMod;
    /// Its row of the machine's table.
    const ROW: &'static sm::Transition<<S::Machine as Machine>::State>;

    /// Writes the object number, every required field, and each optional field that is
    /// given (setting its bit of the optional-parameter mask) into `input`, whose header the
    /// command has written. A value too wide for its field is an error, with nothing sent.
    fn write<B: BytesMut>(
        &self,
        object: <S::Machine as Machine>::Object,
        input: &mut <Self::Command as Command>::Input<B>,
    ) -> Result<(), Overflow>;
}

/// A driver's handle to an object in a state: implemented once, it gets the generated
/// `Transitions` methods of its machine (one per transition, each only where the handle's
/// state is one the transition leaves).
pub trait Handle: Sized {
    /// The machine the handle's object follows.
    type Machine: Machine;
    /// The state the handle is in.
    type State: State<Machine = Self::Machine>;
    /// The same handle in another state.
    type Next<T: State<Machine = Self::Machine>>;
    /// What a refused transition returns (a driver may give the handle back inside it).
    type Error;

    /// Runs transition `args` (its command, with the fields it carries) and returns the
    /// handle in the transition's target state.
    fn apply<T: Transition<Self::State>>(self, args: T) -> Result<Self::Next<T::To>, Self::Error>;
}

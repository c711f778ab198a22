//! State machines as data: which command moves an object (a QP, say) from which states to
//! which state, which fields of the command's input the move requires, and which it may set
//! under which bit of the optional-parameter mask. Generated from the spec's
//! `state_machines:`; the driver uses the table to build its typestate API and the device
//! model to validate the commands it receives.

/// A field of a command's input, by path and absolute position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldRef {
    /// Dotted path in the input (`qpc.primary_address_path.pkey_index`).
    pub path: &'static str,
    /// Absolute MSB-first bit offset in the input.
    pub bit_offset: usize,
    /// Width in bits.
    pub width: u32,
}

/// A field a transition may set, and the mask bit that says it is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptionalField {
    /// The field.
    pub field: FieldRef,
    /// The mask bit's name.
    pub bit: &'static str,
    /// The mask bit's value.
    pub mask: u64,
}

/// One transition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transition<S: 'static> {
    /// Name as the spec writes it.
    pub name: &'static str,
    /// States it leaves; empty means any state.
    pub from: &'static [S],
    /// The state it reaches.
    pub to: S,
    /// The command's name.
    pub command: &'static str,
    /// The command's opcode.
    pub opcode: u16,
    /// Fields the command's input must carry.
    pub requires: &'static [FieldRef],
    /// Fields it may set, each under its mask bit.
    pub optional: &'static [OptionalField],
}

impl<S: PartialEq + Copy> Transition<S> {
    /// True when the transition may start in `state`.
    pub fn starts_in(&self, state: S) -> bool {
        self.from.is_empty() || self.from.contains(&state)
    }

    /// Every mask bit this transition accepts.
    pub fn allowed_mask(&self) -> u64 {
        self.optional.iter().fold(0, |m, o| m | o.mask)
    }
}

/// A whole state machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateMachine<S: 'static> {
    /// Name as the spec writes it.
    pub name: &'static str,
    /// The input field holding the optional-parameter mask, if the machine has one.
    pub mask_field: Option<FieldRef>,
    /// Every transition, in spec order.
    pub transitions: &'static [Transition<S>],
}

impl<S: PartialEq + Copy> StateMachine<S> {
    /// The transition a command performs, if the command is one of this machine's.
    pub fn by_opcode(&self, opcode: u16) -> Option<&'static Transition<S>> {
        self.transitions.iter().find(|t| t.opcode == opcode)
    }

    /// The transition from `from` to `to`, preferring one that names `from` over one from any
    /// state.
    pub fn between(&self, from: S, to: S) -> Option<&'static Transition<S>> {
        let mut candidates = self
            .transitions
            .iter()
            .filter(|t| t.to == to && t.starts_in(from));
        let first = candidates.next()?;
        Some(if first.from.is_empty() {
            candidates.find(|t| !t.from.is_empty()).unwrap_or(first)
        } else {
            first
        })
    }

    /// The transition named `name`.
    pub fn transition(&self, name: &str) -> Option<&'static Transition<S>> {
        self.transitions.iter().find(|t| t.name == name)
    }
}

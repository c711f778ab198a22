//! The Ethernet path: SQ objects transmit SEND WQEs with an Ethernet segment (inline headers,
//! then gathered data) as frames on the port ([`tx`]), and frames that arrive on the port are
//! steered through the NIC receive flow tables to a TIR, its RQ, and a receive WQE ([`rx`]).

mod rx;
mod tx;

pub(crate) use rx::receive;
pub(crate) use tx::run;

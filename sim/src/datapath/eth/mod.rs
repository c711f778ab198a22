//! The Ethernet path: SQ objects transmit SEND and LSO WQEs with an Ethernet segment
//! ([`eseg`]: inline headers or a VLAN tag to insert, then gathered data) as frames on the
//! port ([`tx`], segmentation in [`lso`]), and frames that arrive on the port are steered
//! through the NIC receive flow tables to a TIR, its RQ, and a receive WQE ([`rx`]).

mod eseg;
mod lso;
mod rx;
mod tx;

pub(crate) use lso::LOG_MAX_LSO;
pub(crate) use rx::receive;
pub(crate) use tx::{count_sent_roce, run, PORT_QUEUE_BUDGET};

//! The queues and CQs with work the device does on its own (see [`kick`](super::kick)): QPs
//! waiting on receiver-not-ready or in ERR, SQ and RQ objects in ERR, SQs whose run stopped
//! with the port's queue full, CQs with a moderation timer running. The data path adds a queue when it starts needing such work (every move to
//! ERR, every RNR wait, every timer start goes through it); `kick` visits only these and
//! drops the ones that no longer need it (moved on, destroyed), so a BAR write costs
//! O(pending), not O(objects).

use std::collections::BTreeSet;

/// Numbers of the objects with device work pending, each kind in handle order (the order
/// `kick` visits them in, as it did scanning every object).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Pending {
    pub qps: BTreeSet<u32>,
    pub sqs: BTreeSet<u32>,
    /// SQs whose run stopped because the frames queued at the port reached the budget
    /// (`eth::tx::PORT_QUEUE_BUDGET`); they continue once the frames have left.
    pub tx: BTreeSet<u32>,
    pub rqs: BTreeSet<u32>,
    pub cqs: BTreeSet<u32>,
    /// RC QPs on RoCE with packets in flight or an RNR wait: their timers run.
    pub roce: BTreeSet<u32>,
}

impl Pending {
    /// True when nothing may be pending.
    pub fn is_empty(&self) -> bool {
        self.qps.is_empty()
            && self.sqs.is_empty()
            && self.tx.is_empty()
            && self.rqs.is_empty()
            && self.cqs.is_empty()
            && self.roce.is_empty()
    }

    /// How many objects are listed.
    pub fn len(&self) -> usize {
        self.qps.len()
            + self.sqs.len()
            + self.tx.len()
            + self.rqs.len()
            + self.cqs.len()
            + self.roce.len()
    }
}

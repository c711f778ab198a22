//! How many objects of each kind the device holds: after a driver's teardown every count is
//! back to zero, so a test catches a leaked object as it catches leaked pages.

use crate::model::Model;

/// Live objects by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Objects {
    /// UAR pages (ALLOC_UAR).
    pub uars: usize,
    /// Protection domains (ALLOC_PD).
    pub pds: usize,
    /// Transport domains (ALLOC_TRANSPORT_DOMAIN).
    pub transport_domains: usize,
    /// Event queues.
    pub eqs: usize,
    /// Completion queues.
    pub cqs: usize,
    /// Memory keys.
    pub mkeys: usize,
    /// Queue pairs.
    pub qps: usize,
    /// Ethernet send queues.
    pub sqs: usize,
    /// Ethernet receive queues.
    pub rqs: usize,
    /// Transport interface send objects.
    pub tises: usize,
    /// Transport interface receive objects.
    pub tirs: usize,
    /// RQ tables.
    pub rqts: usize,
    /// Queue counter sets.
    pub q_counters: usize,
    /// Flow tables.
    pub flow_tables: usize,
    /// Flow groups.
    pub flow_groups: usize,
    /// Flow table entries, over all tables.
    pub flow_entries: usize,
}

impl Objects {
    /// Sum over every kind.
    pub fn total(&self) -> usize {
        self.uars
            + self.pds
            + self.transport_domains
            + self.eqs
            + self.cqs
            + self.mkeys
            + self.qps
            + self.sqs
            + self.rqs
            + self.tises
            + self.tirs
            + self.rqts
            + self.q_counters
            + self.flow_tables
            + self.flow_groups
            + self.flow_entries
    }

    pub(crate) fn of(m: &Model) -> Objects {
        Objects {
            uars: m.uars.len(),
            pds: m.pds.len(),
            transport_domains: m.tds.len(),
            eqs: m.eqs.len(),
            cqs: m.cqs.len(),
            mkeys: m.mkeys.len(),
            qps: m.qps.len(),
            sqs: m.sqs.len(),
            rqs: m.rqs.len(),
            tises: m.tises.len(),
            tirs: m.tirs.len(),
            rqts: m.rqts.len(),
            flow_tables: m.flow.tables.len(),
            flow_groups: m.flow.groups.len(),
            flow_entries: m.flow.tables.iter().map(|(_, t)| t.entries.len()).sum(),
            q_counters: m.qcounters.len(),
        }
    }
}

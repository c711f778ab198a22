//! NIC receive steering: a parsed frame's key through the flow tables to the TIRs it goes to.
//!
//! Entries are tried in index order under their group's compiled criteria (see
//! [`matcher`](super::matcher), copied into each entry); the first that matches decides (drop, or forward to its
//! destinations, which may be further tables); an entry that only allows is passed over; with
//! no match the table's miss action applies (default: drop).

use crate::exec::flow::{Dest, ACTION_DROP, ACTION_FWD};
use crate::model::Model;
use crate::stackvec::StackVec;

/// Nesting of flow tables the steering follows before giving up (loops are dropped).
const MAX_STEERING_DEPTH: u32 = 16;

/// Where a frame goes: (TIR, flow tag of the entry that sent it there); usually one.
pub(crate) type Destinations = StackVec<(u32, u32), 4>;

/// Steers `key` through flow table `table` (and tables it forwards or misses to), adding the
/// TIRs the frame goes to to `out`.
pub(crate) fn steer(m: &Model, table: u32, key: &[u8], depth: u32, out: &mut Destinations) {
    if depth > MAX_STEERING_DEPTH {
        return;
    }
    let Ok(t) = m.flow.tables.get(table) else {
        return;
    };
    for fte in t.entries.values() {
        if !fte.criteria.matches(key, &fte.masked) {
            continue;
        }
        if fte.action & ACTION_DROP != 0 {
            return;
        }
        if fte.action & ACTION_FWD != 0 {
            for d in &fte.dests {
                match *d {
                    Dest::Tir(tir) => out.push((tir, fte.flow_tag)),
                    Dest::Table(next) => steer(m, next, key, depth + 1, out),
                }
            }
            return;
        }
    }
    if let Some(miss) = t.miss {
        steer(m, miss, key, depth + 1, out);
    }
}

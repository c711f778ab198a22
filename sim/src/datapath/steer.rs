//! NIC receive steering: a parsed frame's key through the flow tables to the TIRs it goes to.
//!
//! Entries are tried in index order under their group's compiled criteria (see
//! [`matcher`](super::matcher), copied into each entry); the first that matches decides (drop, or forward to its
//! destinations, which may be further tables); an entry that only allows is passed over; with
//! no match the table's miss action applies (default: drop). A frame that reaches no TIR
//! because a table it reached had no match and nowhere to miss to is a steering discard, the
//! count the vNIC reports as nic_receive_steering_discard (a drop entry is a rule's decision,
//! not a discard).
//!
//! The commands keep the table graph loop-free (a table forwards or misses only to tables of a
//! higher level, `exec/flow.rs`), but a loop-free graph can still fan out: k table
//! destinations per table over n levels are k^n paths. The walk is bounded anyway, as the
//! steering runs under the model's lock on input a guest controls: each table is walked at
//! most once per frame (a table reached again adds nothing new: the same key takes the same
//! way through it), at most [`MAX_TABLES`] tables and [`MAX_ENTRIES`] entries are looked at,
//! and at most [`MAX_DESTINATIONS`] TIRs collected; past a bound the frame goes only where the
//! walk got so far.

use crate::exec::flow::{Dest, ACTION_DROP, ACTION_FWD};
use crate::model::Model;
use crate::stackvec::StackVec;

/// Distinct tables one frame's walk visits.
pub(crate) const MAX_TABLES: usize = 64;
/// Entries one frame's walk matches the key against.
pub(crate) const MAX_ENTRIES: u32 = 1 << 16;
/// TIRs one frame goes to.
pub(crate) const MAX_DESTINATIONS: usize = 64;

/// Where a frame goes: (TIR, flow tag of the entry that sent it there); usually one.
pub(crate) type Destinations = StackVec<(u32, u32), 4>;

/// What one frame's walk has used of its bounds, and whether it ended at a plain miss.
struct Walk {
    visited: [u32; MAX_TABLES],
    tables: usize,
    entries: u32,
    missed: bool,
}

/// Steers `key` from flow table `root` (and the tables it forwards or misses to), adding the
/// TIRs the frame goes to to `out`. True when some table the walk reached matched nothing and
/// had no table to miss to (a steering discard, if no TIR was found either).
pub(crate) fn steer(m: &Model, root: u32, key: &[u8], out: &mut Destinations) -> bool {
    let mut walk = Walk {
        visited: [0; MAX_TABLES],
        tables: 0,
        entries: 0,
        missed: false,
    };
    walk.table(m, root, key, out);
    walk.missed
}

impl Walk {
    fn table(&mut self, m: &Model, table: u32, key: &[u8], out: &mut Destinations) {
        if self.tables == MAX_TABLES || self.visited[..self.tables].contains(&table) {
            return;
        }
        self.visited[self.tables] = table;
        self.tables += 1;
        let Ok(t) = m.flow.tables.get(table) else {
            return;
        };
        for fte in t.entries.values() {
            if self.entries == MAX_ENTRIES {
                return;
            }
            self.entries += 1;
            if !fte.criteria.matches(key, &fte.masked) {
                continue;
            }
            if fte.action & ACTION_DROP != 0 {
                return;
            }
            if fte.action & ACTION_FWD != 0 {
                for d in &fte.dests {
                    match *d {
                        Dest::Tir(tir) if out.len() < MAX_DESTINATIONS => {
                            out.push((tir, fte.flow_tag))
                        }
                        Dest::Tir(_) => {}
                        Dest::Table(next) => self.table(m, next, key, out),
                    }
                }
                return;
            }
        }
        match t.miss {
            Some(miss) => self.table(m, miss, key, out),
            None => self.missed = true,
        }
    }
}

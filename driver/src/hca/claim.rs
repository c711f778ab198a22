//! What of a device only one resource may hold at a time, and the claims on it.
//!
//! The NIC receive steering starts at one root flow table per function: the Ethernet queues
//! make theirs the root (SET_FLOW_TABLE_ROOT), so a second set of queues on the same HCA would
//! take steering away from the first without either noticing. Creating queues claims the root
//! first (before any command); the claim goes when the queues are dropped, after their
//! objects are destroyed.

use crate::error::{Error, Result};
use std::sync::atomic::{AtomicBool, Ordering};

/// Flags of the HCA's exclusive parts (one, for now).
#[derive(Debug, Default)]
pub(crate) struct Exclusive {
    rx_root: AtomicBool,
}

/// A held claim; dropping it frees the part.
#[derive(Debug)]
pub(crate) struct Claim<'h> {
    flag: &'h AtomicBool,
}

impl Exclusive {
    /// Claims the NIC receive root flow table for a set of Ethernet queues.
    pub(crate) fn rx_root(&self) -> Result<Claim<'_>> {
        self.rx_root
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .map_err(|_| Error::Claimed {
                what: "the NIC receive root flow table",
                holder: "other Ethernet queues",
            })?;
        Ok(Claim {
            flag: &self.rx_root,
        })
    }
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        self.flag.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_claim_at_a_time_and_free_again_after_it() {
        let e = Exclusive::default();
        let first = e.rx_root().unwrap();
        assert!(matches!(e.rx_root(), Err(Error::Claimed { .. })));
        drop(first);
        let _again = e.rx_root().unwrap();
    }
}

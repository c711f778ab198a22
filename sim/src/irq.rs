//! Interrupts the model raises: a count per MSI-X vector (for tests and reports), and the
//! vectors raised during the current session of the model, which the device hands to the
//! host's interrupt sink once the model's lock is released
//! ([`Device::set_interrupt_sink`](crate::Device::set_interrupt_sink)).
//!
//! Every interrupt the model raises goes through [`Interrupts::raise`]: an armed EQ that
//! receives an EQE, or an EQ armed over entries already waiting. MSI-X masking and pending
//! bits are the host's (a vfio-user server keeps them); the model only says "vector v fired".

use std::collections::BTreeMap;
use std::sync::Arc;

/// What the host does when the model raises MSI-X vector `v` (for a vfio-user server:
/// signal the vector's eventfd, or latch it while the vector is masked). Called outside the
/// model's lock, from whichever thread the model did the work on; it must not block for long.
pub type InterruptSink = Arc<dyn Fn(u16) + Send + Sync>;

/// Interrupt counts and the vectors not yet handed to the sink.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Interrupts {
    /// Interrupts raised, by vector.
    counts: BTreeMap<u16, u64>,
    /// Vectors raised since the sink was last called, each once, in the order first raised.
    /// At most one entry per EQ's vector, so short.
    pending: Vec<u16>,
}

impl Interrupts {
    /// Raises vector `v`.
    pub fn raise(&mut self, v: u16) {
        *self.counts.entry(v).or_default() += 1;
        if !self.pending.contains(&v) {
            self.pending.push(v);
        }
    }

    /// Interrupts raised on vector `v` so far.
    pub fn count(&self, v: u16) -> u64 {
        self.counts.get(&v).copied().unwrap_or(0)
    }

    /// True when vectors wait for the sink.
    #[inline]
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// The vectors waiting for the sink; none wait afterwards.
    pub fn take_pending(&mut self) -> Vec<u16> {
        std::mem::take(&mut self.pending)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_pending_once_per_vector() {
        let mut i = Interrupts::default();
        i.raise(3);
        i.raise(0);
        i.raise(3);
        assert_eq!((i.count(3), i.count(0), i.count(1)), (2, 1, 0));
        assert!(i.has_pending());
        assert_eq!(i.take_pending(), vec![3, 0]);
        assert!(!i.has_pending());
        assert_eq!(i.count(3), 2, "counts stay");
    }
}

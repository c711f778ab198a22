//! Queue counter sets: the device's per-queue event counts (ALLOC_Q_COUNTER), which Linux reads
//! for `ethtool -S` (rx_out_of_buffer) and `rdma statistic` (out_of_sequence,
//! local_ack_timeout_err, duplicate_request, ...). A QP or RQ counts into the set its context
//! names in `counter_set_id` (for an RC QP: at RST2INIT, or later with RTS2RTS).
//!
//! The counts are listed by the names the spec gives the fields of QUERY_Q_COUNTER's output,
//! which are the names Linux prints, so nothing here repeats a name or an offset by hand.

use crate::backend::Backend;
use crate::error::Result;
use crate::hca::Hca;
use crate::undo::{Kind, Object};
use mlx5_prm::cmd::{AllocQCounter, QueryQCounter};
use mlx5_prm::QueryQCounterOut;

/// A queue counter set of HCA `'h`, freed (DEALLOC_Q_COUNTER) on drop.
pub struct QCounter<'h, B: Backend> {
    object: Object<'h, B>,
    id: u8,
}

impl<B: Backend> std::fmt::Debug for QCounter<'_, B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QCounter").field("id", &self.id).finish()
    }
}

impl<'h, B: Backend> QCounter<'h, B> {
    /// A new set, every count zero.
    pub fn alloc(hca: &'h Hca<B>) -> Result<QCounter<'h, B>> {
        // SAFETY: a counter set names no memory; its object deallocates it once, on drop.
        let id = unsafe { hca.run::<AllocQCounter>(0, |_| {}) }?.counter_set_id();
        Ok(QCounter {
            object: Object::new(hca, Kind::QCounter(id), Vec::new()),
            id,
        })
    }

    /// The set's id: what a queue's context names in `counter_set_id`.
    pub fn id(&self) -> u8 {
        self.id
    }

    /// The counts now; `clear` zeroes them after reading, in the same command.
    pub fn query(&self, clear: bool) -> Result<QCounts> {
        let out = self.object.hca().query::<QueryQCounter>(0, |i| {
            i.set_counter_set_id(self.id);
            i.set_clear(clear);
        })?;
        Ok(QCounts { out })
    }
}

/// One reading of a queue counter set.
#[derive(Debug, Clone)]
pub struct QCounts {
    out: QueryQCounterOut<Vec<u8>>,
}

impl QCounts {
    /// The typed output, for the counts by accessor (`counts.view().out_of_sequence()`).
    pub fn view(&self) -> QueryQCounterOut<&[u8]> {
        QueryQCounterOut::new_unchecked(&self.out.storage()[..])
    }

    /// Every count with its name, in the order of the output layout.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, u32)> + '_ {
        let bytes = self.out.storage();
        QueryQCounterOut::<[u8; 256]>::FIELDS
            .iter()
            .filter(|f| f.width == 32 && f.bit_offset >= 128 && f.bit_offset % 32 == 0)
            .filter_map(move |f| {
                let at = f.bit_offset / 8;
                let word = bytes.get(at..at + 4)?;
                Some((f.name, u32::from_be_bytes(word.try_into().ok()?)))
            })
    }

    /// The count called `name` (the output field's name), if there is one.
    pub fn get(&self, name: &str) -> Option<u32> {
        self.iter().find(|&(n, _)| n == name).map(|(_, v)| v)
    }

    /// The counts that are not zero.
    pub fn nonzero(&self) -> impl Iterator<Item = (&'static str, u32)> + '_ {
        self.iter().filter(|&(_, v)| v != 0)
    }
}

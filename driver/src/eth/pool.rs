//! The packet buffer pool, in the manner of ixy's and DPDK's mempools: fixed-size buffers in
//! one registered region and a stack of the free ones. A [`Packet`] is one buffer's ownership:
//! it reads and writes its buffer by itself and puts it back on the stack when dropped. The
//! queues take packets out of the program's hands (sent packets until their send completion)
//! and hand out new ones (received packets), without ever running a packet's drop in between.
//!
//! The pool is for one thread: its free stack is a plain `Vec` in an `UnsafeCell` (no lock,
//! no atomic on the data path), so `Pool` is not `Sync` and packets and queues that borrow it
//! stay on the thread that made them. Each thread makes its own pool and queues from a shared
//! `&Hca` (which is `Sync`).

use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::hca::Hca;
use crate::mr::{Access, Region};
use mlx5_prm::rt::{BytesMut, DeviceBytes};
use std::cell::UnsafeCell;
use std::ptr::NonNull;

/// Fixed-size packet buffers in one registered region of HCA `'h`, and the free ones.
pub struct Pool<'h, B: Backend> {
    bufs: Buffers,
    region: Region<'h, B>,
}

/// What packets and the queues need of a pool, whatever the backend: where the buffers are
/// and which are free.
pub(crate) struct Buffers {
    /// The region's first byte (valid while the pool, which holds the region, lives).
    va: NonNull<u8>,
    /// Each buffer's IO address as a WQE holds it (big-endian), so posting a buffer is one
    /// load and one store.
    pub(crate) wire: Box<[u64]>,
    pub(crate) lkey: u32,
    pub(crate) buf_size: u32,
    pub(crate) count: u32,
    /// The free buffers' indices. Reached only through [`Buffers::free`]; every index below
    /// `count` is in exactly one place: here, a packet, or a queue's slot table.
    free: UnsafeCell<Vec<u32>>,
}

impl Buffers {
    /// The free stack.
    ///
    /// # Safety
    ///
    /// No other reference to the stack may be live while the one returned is: the caller
    /// drops no [`Packet`] and calls nothing that reaches the stack meanwhile. (The pool is
    /// not `Sync`, so no other thread can.)
    #[allow(clippy::mut_from_ref)]
    #[inline(always)]
    pub(crate) unsafe fn free(&self) -> &mut Vec<u32> {
        // SAFETY: the caller keeps this the only reference (see above).
        unsafe { &mut *self.free.get() }
    }

    /// Free buffers now.
    pub(crate) fn free_len(&self) -> usize {
        // SAFETY: a read of the length with no other reference live.
        unsafe { self.free().len() }
    }

    /// Bytes `at .. at + len` of buffer `index` (both inside the buffer).
    #[inline(always)]
    pub(crate) fn bytes(&self, index: u32, at: usize, len: usize) -> DeviceBytes<'_> {
        debug_assert!(index < self.count && at + len <= self.buf_size as usize);
        let offset = index as usize * self.buf_size as usize + at;
        // SAFETY: `index < count` and `at + len <= buf_size` (every index comes from this
        // pool; callers clamp `at` and `len`), so the range is inside the region, which lives
        // as long as `self` (the pool holds both).
        unsafe { DeviceBytes::new(self.va.as_ptr().add(offset), len) }
    }

    /// A packet handle for buffer `index`, holding `len` bytes.
    #[inline(always)]
    pub(crate) fn packet(&self, index: u32, len: u32) -> Packet<'_> {
        Packet {
            pool: self,
            index,
            len,
        }
    }
}

impl<'h, B: Backend> Pool<'h, B> {
    /// Registers `buffers` buffers of `buf_size` bytes (64..=65536) on `hca`, all free.
    pub fn new(hca: &'h Hca<B>, buffers: u32, buf_size: u32) -> Result<Pool<'h, B>> {
        if !(64..=1 << 16).contains(&buf_size) || buffers == 0 || buffers > 1 << 24 {
            return Err(Error::InvalidArgument {
                what: "pool",
                why: format!(
                    "{buffers} buffers of {buf_size} bytes (64..=65536 bytes, 1..=2^24 buffers)"
                ),
            });
        }
        let bytes = buffers as usize * buf_size as usize;
        let access = Access {
            local_write: true,
            ..Access::default()
        };
        let region = Region::register(hca, bytes, access)?;
        let (base, size) = (region.addr(), u64::from(buf_size));
        let bufs = Buffers {
            va: region.va(),
            // One entry per buffer.
            wire: (0..u64::from(buffers))
                .map(|i| (base + i * size).to_be())
                .collect(),
            lkey: region.lkey(),
            buf_size,
            count: buffers,
            // Lowest index on top, for readable tests; capacity for all, so a push never
            // allocates.
            free: UnsafeCell::new((0..buffers).rev().collect()),
        };
        Ok(Pool { bufs, region })
    }

    /// The HCA it belongs to.
    pub fn hca(&self) -> &'h Hca<B> {
        self.region.hca()
    }

    /// A free buffer, with length 0.
    pub fn alloc(&self) -> Option<Packet<'_>> {
        // SAFETY: no packet is dropped while the stack is borrowed.
        let index = unsafe { self.bufs.free() }.pop()?;
        Some(self.bufs.packet(index, 0))
    }

    /// Moves up to `n` free buffers into `out` (length 0); returns how many.
    #[inline(never)]
    pub fn alloc_batch<'p>(&'p self, out: &mut Vec<Packet<'p>>, n: usize) -> usize {
        // SAFETY: no packet is dropped while the stack is borrowed (`out` only grows).
        let free = unsafe { self.bufs.free() };
        let take = n.min(free.len());
        let from = free.len() - take;
        out.reserve(take);
        // Written straight into the spare capacity, the length set once: a loop with no
        // length to keep up (as `extend` keeps one) compiles to a few stores per packet.
        let start = out.len();
        for (slot, &i) in out.spare_capacity_mut().iter_mut().zip(&free[from..]) {
            slot.write(self.bufs.packet(i, 0));
        }
        // SAFETY: the `take` slots after the old length were just written (`reserve` made
        // room for them, and `free[from..]` has exactly `take` entries).
        unsafe { out.set_len(start + take) };
        free.truncate(from);
        take
    }

    /// Gives every packet of `pkts` back, leaving `pkts` empty: the buffers of this pool's
    /// packets go onto the free stack in one copy, without a drop per packet. (A packet of
    /// another pool goes back to its own pool, as when it drops.)
    #[inline(never)]
    pub fn free_batch(&self, pkts: &mut Vec<Packet<'_>>) {
        let me: *const Buffers = &self.bufs;
        // SAFETY: no packet is dropped while the stack is borrowed (the packets are either
        // forgotten below, not dropped, or cleared after the borrow's last use).
        let free = unsafe { self.bufs.free() };
        let (start, n) = (free.len(), pkts.len());
        // The stack has room for every buffer of the pool (see `Pool::new`), so this only
        // compares; it keeps the writes below in bounds whatever happens.
        free.reserve(n);
        // Every index is copied past the stack's end and the packets' pools compared in the
        // same pass, with no early exit, so that the loop vectorises; the copies count only
        // if every packet is this pool's (the usual case).
        let mut foreign = 0;
        for (slot, p) in free.spare_capacity_mut().iter_mut().zip(pkts.iter()) {
            slot.write(p.index);
            // Not zero when the addresses differ (an address compare without a branch).
            foreign |= (p.pool as *const Buffers).addr() ^ me.addr();
        }
        if foreign != 0 {
            // Each goes back to its own pool, one drop at a time.
            pkts.clear();
            return;
        }
        // SAFETY: the `n` slots after the old length were just written (room reserved above).
        unsafe { free.set_len(start + n) };
        // SAFETY: each packet's buffer is on the stack now, which is all its drop would have
        // done; the handles are forgotten without it. (`Packet` owns nothing else.)
        unsafe { pkts.set_len(0) };
    }

    /// Buffers free now (not posted, sent or handed out).
    pub fn free_buffers(&self) -> usize {
        self.bufs.free_len()
    }

    /// Buffers in the pool.
    pub fn buffers(&self) -> usize {
        self.bufs.count as usize
    }

    /// Bytes per buffer.
    pub fn buf_size(&self) -> usize {
        self.bufs.buf_size as usize
    }

    /// What the queues need.
    pub(crate) fn bufs(&self) -> &Buffers {
        &self.bufs
    }

    /// Quarantine the buffers' memory when the pool goes (a queue that had buffers posted
    /// could not be destroyed, so the device may still write them).
    pub(crate) fn taint(&self) {
        self.region.taint();
    }
}

/// A packet buffer of a [`Pool`], with the length of the frame it holds. Neither `Clone` nor
/// `Copy`: the handle is the buffer's ownership, and dropping it returns the buffer.
pub struct Packet<'p> {
    pool: &'p Buffers,
    index: u32,
    len: u32,
}

impl std::fmt::Debug for Packet<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Packet")
            .field("index", &self.index)
            .field("len", &self.len)
            .finish()
    }
}

impl<'p> Packet<'p> {
    /// Length of the frame in bytes.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// True for an empty packet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Sets the frame's length (checked against the buffer size when sent).
    pub fn set_len(&mut self, len: usize) {
        self.len = u32::try_from(len).unwrap_or(u32::MAX);
    }

    /// Bytes per buffer.
    pub fn capacity(&self) -> usize {
        self.pool.buf_size as usize
    }

    /// The frame: the buffer's first `len` bytes (at most the buffer's size).
    pub fn data(&self) -> DeviceBytes<'_> {
        let len = self.len.min(self.pool.buf_size) as usize;
        self.pool.bytes(self.index, 0, len)
    }

    /// Writes `frame` into the buffer and sets the length; a frame longer than the buffer is
    /// refused.
    pub fn write(&mut self, frame: &[u8]) -> Result<()> {
        if frame.len() > self.pool.buf_size as usize {
            return Err(Error::InvalidArgument {
                what: "packet write",
                why: format!(
                    "{}-byte frame in a {}-byte buffer",
                    frame.len(),
                    self.pool.buf_size
                ),
            });
        }
        self.pool
            .bytes(self.index, 0, frame.len())
            .write_bytes(0, frame);
        self.len = frame.len() as u32;
        Ok(())
    }

    /// The pool's buffers (for the queues' check that a packet is theirs).
    #[inline(always)]
    pub(crate) fn buffers(&self) -> &'p Buffers {
        self.pool
    }

    /// The buffer's index in its pool.
    #[inline(always)]
    pub(crate) fn index(&self) -> u32 {
        self.index
    }

    /// The raw length (as set; not clamped).
    #[inline(always)]
    pub(crate) fn raw_len(&self) -> u32 {
        self.len
    }
}

impl Drop for Packet<'_> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: nothing else holds the stack while a packet drops (see `Buffers::free`).
        unsafe { self.pool.free() }.push(self.index);
    }
}

//! What a host outside the model needs to present the device to a guest (a vfio-user server):
//! DMA memory mapped from outside, BAR accesses of any size at any offset, an interrupt sink,
//! and a reset.
//!
//! # BAR accesses
//!
//! BAR 0 is byte-addressed and its registers are big-endian, as on the adapter: the 4 bytes
//! of the register at `o` are `read32(o).to_be_bytes()`. [`Device::bar_read`] and
//! [`Device::bar_write`] take the value of the `size` bytes at `offset` read as one
//! big-endian number (so `bar_read(o, 4) == read32(o)`, and `bar_read(o, 1)` is the byte at
//! `o`, the register's most significant one when `o` is 4-aligned); the `_bytes` forms take
//! the bytes themselves, as a vfio-user region access carries them.
//!
//! - Sizes 1, 2, 4 and 8, naturally aligned, inside the BAR. Anything else reads all ones and
//!   is dropped when written, and is counted in [`Device::bad_bar_accesses`]: a PCIe completer
//!   answers a request it cannot serve with Unsupported Request, which the root complex turns
//!   into all ones for the CPU, so all ones is what a driver sees from a failed read (mlx5_core
//!   treats an all-ones firmware revision as a dead device, never as data).
//! - The initialization segment: a 1- or 2-byte read returns those bytes of the dword (with
//!   the dword's read side effects: the health counter and the initializing poll count); a 1-
//!   or 2-byte write is a read-modify-write of the dword at the command queue address (0x10,
//!   0x14); at the command doorbell (0x18) a partial vector has no meaning: dropped and
//!   counted; elsewhere the segment is read-only and the write is dropped, as a full one is. An 8-byte access is two dword accesses, the lower offset first (it holds the
//!   high half).
//! - UAR pages: doorbells are 32 or 64 bits wide (EQ doorbells, CQ arm, send doorbells and
//!   BlueFlame words); 1- and 2-byte writes there are dropped and counted. Reads return 0.
//! - Unused BAR space (between the initialization segment and the first UAR page, where a
//!   server may put the MSI-X table and PBA; see [`BAR_SPARE`]) reads 0; writes that reach
//!   the model there are dropped and counted.

use crate::bar::{self, Target};
use crate::device::{Device, UarWrite};
use crate::dma::DmaError;
use crate::irq::InterruptSink;
use crate::worker::Job;
use mlx5_prm::InitialSeg;
use std::ops::Range;
use std::sync::atomic::Ordering;

/// BAR 0 offsets the model never decodes, between the end of the initialization segment and
/// the first UAR page ALLOC_UAR hands out: room for a server's MSI-X table and PBA.
pub const BAR_SPARE: Range<usize> = 0x5000..(bar::FIRST_UAR as usize * bar::UAR_PAGE_SIZE);

/// The registers of the initialization segment the driver writes besides the doorbell: the
/// command queue address, high and low (with its read-only size and stride bits).
const CMDQ_ADDR: [usize; 2] = [
    InitialSeg::CMDQ_PHY_ADDR_63_32.bit_offset / 8,
    (InitialSeg::CMDQ_PHY_ADDR_31_12.bit_offset / 8) & !3,
];

/// The command doorbell register.
const CMD_DOORBELL: usize = InitialSeg::COMMAND_DOORBELL_VECTOR.bit_offset / 8;

/// All ones in the low `size` bytes.
fn ones(size: usize) -> u64 {
    u64::MAX >> (64 - 8 * size.clamp(1, 8))
}

/// True for the access sizes a BAR takes.
fn valid_size(size: usize) -> bool {
    matches!(size, 1 | 2 | 4 | 8)
}

impl Device {
    /// Maps `len` bytes of host memory at `ptr` at IOVAs `iova .. iova + len` of a device built
    /// with [`DmaBacking::External`](crate::DmaBacking::External) (a guest's DMA_MAP). IOVA,
    /// host address and length must be multiples of 4 KiB; overlapping an existing mapping is
    /// refused ([`DmaError::Overlap`]). The model reaches the memory only inside mapped
    /// regions: any other IOVA is a DMA fault (counted in [`Device::dma_faults`], answered the
    /// way the PRM answers one: an error CQE, a bad-parameter status, a delivery error).
    ///
    /// # Safety
    /// The memory must stay valid for reads and writes until an [`Device::unmap_dma`] covering
    /// it (or [`Device::unmap_all_dma`]) has returned, or until the device and every handle to
    /// its DMA space are dropped. See [`DmaSpace::map`](crate::DmaSpace::map).
    // The one unsafe entry point outside `dma`: the host vouches for memory the model cannot
    // check.
    #[allow(unsafe_code)]
    pub unsafe fn map_dma(&self, iova: u64, ptr: *mut u8, len: usize) -> Result<(), DmaError> {
        // SAFETY: forwarded from this function's contract.
        unsafe { self.core.dma.map(iova, ptr, len) }
    }

    /// [`Device::map_dma`] for memory the device may only read (a guest's `DMA_TO_DEVICE`
    /// mapping behind an IOMMU): reads succeed, a write there is a DMA fault.
    ///
    /// # Safety
    /// As for [`Device::map_dma`], but the model only reads the memory (it may be mapped
    /// read-only in this process).
    #[allow(unsafe_code)]
    pub unsafe fn map_dma_read_only(
        &self,
        iova: u64,
        ptr: *mut u8,
        len: usize,
    ) -> Result<(), DmaError> {
        // SAFETY: forwarded from this function's contract.
        unsafe { self.core.dma.map_read_only(iova, ptr, len) }
    }

    /// Unmaps the regions mapped inside `iova .. iova + len` (a guest's DMA_UNMAP) and returns
    /// the bytes unmapped. It returns only when no model thread can still touch that memory:
    /// it waits for the work the model is doing (a doorbell, a command, an event) to finish,
    /// and every later access sees the memory gone. The host may munmap it right after. A
    /// region the range cuts through fails the call ([`DmaError::PartialUnmap`]); nothing is
    /// unmapped then.
    pub fn unmap_dma(&self, iova: u64, len: u64) -> Result<usize, DmaError> {
        self.core.dma.unmap(iova, len)
    }

    /// Unmaps every region (a disconnect), like [`Device::unmap_dma`] over all IOVAs.
    pub fn unmap_all_dma(&self) -> Result<usize, DmaError> {
        self.core.dma.unmap_all()
    }

    /// Sets the function called with an MSI-X vector each time the model raises it (an armed
    /// EQ received an EQE, or was armed over waiting entries). It runs after the model's lock is
    /// released, on the thread that did the work (the caller of a BAR write in inline mode, the
    /// firmware thread in threaded mode). Masking and pending bits are the caller's business.
    /// [`Device::interrupts`] keeps counting either way.
    pub fn set_interrupt_sink(&self, sink: InterruptSink) {
        self.core.sink.set(Some(sink));
    }

    /// Removes the interrupt sink.
    pub fn clear_interrupt_sink(&self) {
        self.core.sink.set(None);
    }

    /// Puts the function back into its power-on state, as a function level reset or a
    /// DEVICE_RESET does: the initialization segment as at power-on (no command queue address,
    /// `initializing` again as [`FwReady`](crate::FwReady) says, healthy), the HCA disabled,
    /// no objects, no firmware pages held, no EQs, no interrupt state, every count the model
    /// keeps at zero and the capabilities as configured. What the host attached stays: the DMA
    /// space and its mappings (unmap them with [`Device::unmap_all_dma`] if the reset means
    /// they are gone), link, wire, loopback, capture, fault injection, interrupt sink and
    /// [`Device::bad_bar_accesses`]. In threaded mode the writes queued before are served
    /// first; the reset is done when this returns.
    pub fn reset(&self) {
        match &self.worker {
            Some(worker) => {
                worker.control(Job::Reset);
                worker.sync();
            }
            None => self.core.reset(),
        }
    }

    /// BAR accesses the device could not decode: sizes other than 1, 2, 4 and 8, unaligned or
    /// out-of-range offsets, partial writes of doorbells, writes to unused BAR space (see the
    /// module doc). Counted since the device was created.
    pub fn bad_bar_accesses(&self) -> u64 {
        self.core.bad_bar.load(Ordering::Relaxed)
    }

    /// BAR writes dropped because the firmware thread's queue stayed full for longer than the
    /// writer may wait (threaded mode: the thread made no progress for 100 ms with 1024 writes
    /// queued). Always 0 in inline mode.
    pub fn dropped_bar_writes(&self) -> u64 {
        self.worker.as_ref().map_or(0, |w| w.dropped())
    }

    fn bad_bar(&self) {
        self.core.bad_bar.fetch_add(1, Ordering::Relaxed);
    }

    /// Reads `size` bytes (1, 2, 4 or 8) of BAR 0 at `offset`, as one big-endian number (see
    /// the module doc). A bad access reads all ones and is counted.
    pub fn bar_read(&self, offset: usize, size: usize) -> u64 {
        let target = valid_size(size)
            .then(|| bar::decode(offset, size))
            .flatten();
        let Some(target) = target else {
            self.bad_bar();
            return ones(size);
        };
        let Target::InitSeg(off) = target else {
            return 0;
        };
        match size {
            8 => (u64::from(self.read32(off)) << 32) | u64::from(self.read32(off + 4)),
            4 => self.read32(off).into(),
            _ => {
                let dword = off & !3;
                let shift = 8 * (4 - (off - dword) - size);
                (u64::from(self.read32(dword)) >> shift) & ones(size)
            }
        }
    }

    /// Writes the low `size` bytes (1, 2, 4 or 8) of `value` to BAR 0 at `offset`, `value`
    /// being their big-endian number (see the module doc). A bad access is dropped and counted.
    pub fn bar_write(&self, offset: usize, size: usize, value: u64) {
        let target = valid_size(size)
            .then(|| bar::decode(offset, size))
            .flatten();
        match (size, target) {
            (_, None) | (_, Some(Target::Hole)) => self.bad_bar(),
            (8, Some(_)) => self.write64(offset, value),
            (4, Some(_)) => self.write32(offset, value as u32),
            (_, Some(Target::Uar { .. })) => self.bad_bar(),
            (_, Some(Target::InitSeg(off))) => {
                let dword = off & !3;
                if !CMDQ_ADDR.contains(&dword) {
                    // The doorbell: a partial vector has no meaning. Elsewhere the segment is
                    // read-only for the driver, and a full-width write is dropped too.
                    if dword == CMD_DOORBELL {
                        self.bad_bar();
                    }
                    return;
                }
                let shift = 8 * (4 - (off - dword) - size);
                let mask = (ones(size) as u32) << shift;
                {
                    // One lock for the read and the write, so that two partial writes of one
                    // register do not undo each other.
                    let mut regs = self.core.regs();
                    let old = regs.read(dword);
                    let new = (old & !mask) | (((value as u32) << shift) & mask);
                    regs.write(dword, new);
                }
                self.after_write(UarWrite::Other);
            }
        }
    }

    /// Reads `out.len()` bytes (1, 2, 4 or 8) of BAR 0 at `offset` into `out`, in BAR order (see
    /// [`Device::bar_read`]).
    pub fn bar_read_bytes(&self, offset: usize, out: &mut [u8]) {
        let size = out.len();
        let v = self.bar_read(offset, size);
        if valid_size(size) {
            out.copy_from_slice(&v.to_be_bytes()[8 - size..]);
        } else {
            out.fill(0xff);
        }
    }

    /// Writes `data` (1, 2, 4 or 8 bytes, in BAR order) to BAR 0 at `offset` (see
    /// [`Device::bar_write`]).
    pub fn bar_write_bytes(&self, offset: usize, data: &[u8]) {
        let size = data.len();
        if !valid_size(size) {
            self.bad_bar();
            return;
        }
        let mut b = [0u8; 8];
        b[8 - size..].copy_from_slice(data);
        self.bar_write(offset, size, u64::from_be_bytes(b));
    }
}

//! BAR0 mapped into the process: register accesses through the runtime's [`MmioPtr`]
//! (volatile, big-endian dwords), 64-bit doorbells as one volatile store.

use super::device::RegionInfo;
use super::error::VfioError;
use crate::backend::Mmio;
use mlx5_prm::rt::{Mmio32, MmioPtr};
use nix::sys::mman::{mmap, munmap, MapFlags, ProtFlags};
use std::fs::File;
use std::num::NonZeroUsize;
use std::ptr::NonNull;

/// A mapped BAR0. Unmapped on drop.
#[derive(Debug)]
pub struct Bar {
    base: NonNull<u8>,
    len: usize,
    regs: MmioPtr,
}

// SAFETY: the mapping is device memory reached only through volatile accesses, which may
// come from any thread (as with the model's register file).
unsafe impl Send for Bar {}
// SAFETY: as above; no Rust reference into the mapping is ever formed.
unsafe impl Sync for Bar {}

impl Bar {
    /// Maps region `r` of the device descriptor `file`.
    pub fn map(file: &File, r: RegionInfo, name: &str) -> Result<Bar, VfioError> {
        let unsupported = |what: String| VfioError::Unsupported {
            addr: name.to_owned(),
            what,
        };
        let len = usize::try_from(r.size)
            .ok()
            .and_then(NonZeroUsize::new)
            .ok_or_else(|| unsupported(format!("BAR0 of {:#x} bytes", r.size)))?;
        let offset = i64::try_from(r.offset)
            .map_err(|_| unsupported(format!("BAR0 at descriptor offset {:#x}", r.offset)))?;
        // SAFETY: a new shared mapping of the device's region; nothing else is at the address
        // the kernel picks.
        let base = unsafe {
            mmap(
                None,
                len,
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_SHARED,
                file,
                offset,
            )
        }
        .map_err(|errno| VfioError::Ioctl {
            what: format!("mmap of BAR0 ({len} bytes) of {name}"),
            errno,
        })?;
        let base = base.cast::<u8>();
        // SAFETY: the mapping is `len` bytes, page aligned, valid until `drop` unmaps it, and
        // reached only through volatile accesses.
        let regs = unsafe { MmioPtr::new(base.as_ptr(), len.get()) };
        Ok(Bar {
            base,
            len: len.get(),
            regs,
        })
    }

    fn inside(&self, offset: usize, width: usize) -> bool {
        offset % width == 0 && offset.checked_add(width).is_some_and(|end| end <= self.len)
    }
}

impl Mmio for Bar {
    fn len(&self) -> usize {
        self.len
    }

    fn read32(&self, offset: usize) -> u32 {
        if !self.inside(offset, 4) {
            return u32::MAX;
        }
        self.regs.read32(offset)
    }

    unsafe fn write32(&self, offset: usize, value: u32) {
        if self.inside(offset, 4) {
            self.regs.write32(offset, value);
        }
    }

    unsafe fn write64(&self, offset: usize, value: u64) {
        if self.inside(offset, 8) {
            // SAFETY: in bounds and 8-byte aligned (checked); one volatile store, so the
            // doorbell reaches the device as one transaction.
            unsafe {
                self.base
                    .as_ptr()
                    .add(offset)
                    .cast::<u64>()
                    .write_volatile(value.to_be())
            }
        }
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `map`, unmapped once; `regs` goes with `self`.
        if let Err(e) = unsafe { munmap(self.base.cast(), self.len) } {
            log::warn!("unmapping BAR0: {e}");
        }
    }
}

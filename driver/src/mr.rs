//! Memory regions: DMA memory registered with the device under a memory key, so work
//! requests can name it (lkey) and a peer can reach it (rkey).
//!
//! A [`Region`] is either in the driver's hands — readable and writable through
//! [`Region::bytes`] — or posted to a queue. Posting moves it into the queue; it comes back
//! with the work request's completion, so the program cannot touch memory the device may be
//! writing (`ui-tests/tests/driver/region_posted.rs` is the compile-fail case). A region borrows
//! the HCA that registered it; dropping it destroys the key and frees the memory (or
//! quarantines it, if the destroy fails).

use crate::backend::{Backend, DmaAlloc};
use crate::error::{Error, Result};
use crate::hca::Hca;
use crate::undo::{Kind, Object};
use mlx5_prm::cmd::CreateMkey;
use mlx5_prm::rt::DeviceBytes;

/// What a region lets the local side and the peer do.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Access {
    /// The device may write it for local work (receives, RDMA READ responses).
    pub local_write: bool,
    /// A peer may read it (RDMA READ).
    pub remote_read: bool,
    /// A peer may write it (RDMA WRITE).
    pub remote_write: bool,
    /// A peer may run atomics on it.
    pub remote_atomic: bool,
}

/// Registered DMA memory of HCA `'h`.
pub struct Region<'h, B: Backend> {
    // Boxed: requests carry regions by value into a send queue's slot table and back out
    // with their completion, and an 8-byte handle moves in one store where the parts (the
    // object with its memory, key and length: 64 bytes) took eight.
    parts: Box<Parts<'h, B>>,
}

/// What a [`Region`] holds.
struct Parts<'h, B: Backend> {
    object: Object<'h, B>,
    key: u32,
    len: usize,
    /// The buffer's IO address, kept beside the key and length: a work request reads all
    /// three, and this saves it going through the object's list of memory.
    addr: u64,
}

impl<B: Backend> std::fmt::Debug for Region<'_, B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Region")
            .field("key", &format_args!("{:#x}", self.parts.key))
            .field("addr", &format_args!("{:#x}", self.addr()))
            .field("len", &self.parts.len)
            .finish()
    }
}

impl<'h, B: Backend> Region<'h, B> {
    /// Allocates `len` bytes and registers them (physical-address mode: the IO address is the
    /// key's start address).
    pub fn register(hca: &'h Hca<B>, len: usize, access: Access) -> Result<Region<'h, B>> {
        let Some(bytes) = len.max(1).checked_next_multiple_of(4096) else {
            return Err(Error::InvalidArgument {
                what: "region",
                why: format!("{len} bytes"),
            });
        };
        // Until the key exists the memory is only the driver's: freed (dropped) on error.
        let buf = hca.backend().dma().alloc(bytes, 4096)?;
        let (pd, iova) = (hca.info().pd, buf.iova());
        let variant = hca.next_key_variant();
        // SAFETY: the key covers `buf` alone (`len` is at most its size), which the key's
        // object keeps until DESTROY_MKEY succeeds (quarantined otherwise).
        let out = unsafe {
            hca.run_extra::<CreateMkey>(0, 0, 0, |i| {
                let mut c = i.memory_key_mkey_entry_mut();
                c.set_access_mode_1_0(0);
                c.set_access_mode_4_2(0);
                c.set_lr(true);
                c.set_lw(access.local_write);
                c.set_rr(access.remote_read);
                c.set_rw(access.remote_write);
                c.set_a(access.remote_atomic);
                c.try_set_qpn(0xff_ffff)?;
                c.set_mkey_7_0(variant);
                c.try_set_pd(pd)?;
                c.set_start_addr(iova);
                c.set_len(len as u64);
                Ok(())
            })
        }?;
        let index = out.mkey_index();
        Ok(Region {
            parts: Box::new(Parts {
                object: Object::new(hca, Kind::Mkey(index), vec![buf]),
                key: (index << 8) | u32::from(variant),
                len,
                addr: iova,
            }),
        })
    }

    /// The HCA it belongs to.
    pub fn hca(&self) -> &'h Hca<B> {
        self.parts.object.hca()
    }

    /// The key work requests name the region by (local key).
    pub fn lkey(&self) -> u32 {
        self.parts.key
    }

    /// The key a peer names it by (remote key; the same key here).
    pub fn rkey(&self) -> u32 {
        self.parts.key
    }

    /// The IO address of the first byte.
    pub fn addr(&self) -> u64 {
        self.parts.addr
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.parts.len
    }

    /// True for an empty region.
    pub fn is_empty(&self) -> bool {
        self.parts.len == 0
    }

    /// The bytes, while the region is in the driver's hands.
    pub fn bytes(&self) -> DeviceBytes<'_> {
        self.parts.object.memory(0).slice(0, self.parts.len)
    }

    /// Bytes `at .. at + len` of the region.
    ///
    /// # Panics
    ///
    /// If the range is not inside the region.
    pub fn slice(&self, at: usize, len: usize) -> DeviceBytes<'_> {
        assert!(
            at <= self.parts.len && len <= self.parts.len - at,
            "region slice {at}+{len} beyond {}",
            self.parts.len
        );
        self.parts.object.memory(0).slice(at, len)
    }

    /// The host address of the first byte (for the packet pool's word access).
    pub(crate) fn va(&self) -> std::ptr::NonNull<u8> {
        self.parts.object.memory(0).va()
    }

    /// Quarantine the memory when the region goes, whatever the key's destroy says (a queue
    /// that had it posted could not be destroyed).
    pub(crate) fn taint(&self) {
        self.parts.object.taint();
    }

    /// Destroys the key and frees the memory; if the destroy fails the memory is quarantined
    /// and the error returned. (Dropping the region does the same, logging the failure.)
    pub fn deregister(mut self) -> Result<()> {
        self.parts.object.destroy()
    }
}

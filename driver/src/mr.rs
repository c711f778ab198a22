//! Memory regions: DMA memory registered with the device under a memory key, so work
//! requests can name it (lkey) and a peer can reach it (rkey).
//!
//! A [`Region`] is either in the driver's hands — readable and writable through
//! [`Region::bytes`] — or posted to a queue. Posting moves it into the queue; it comes back
//! with the work request's completion. The device writes posted memory, so the type system
//! keeps the program from touching it meanwhile:
//!
//! ```compile_fail,E0382
//! # use mlx5_driver::mr::Region;
//! # fn post(_: Region) {}
//! fn misuse(region: Region) {
//!     post(region);            // ownership passes to the queue...
//!     let _ = region.bytes();  // ...so the region cannot be read (or freed) until it returns
//! }
//! ```

use crate::backend::{Backend, DmaAlloc, DmaBuf};
use crate::error::Result;
use crate::hca::Hca;
use mlx5_prm::cmd::{CreateMkey, DestroyMkey};
use mlx5_prm::rt::DeviceBytes;
use mlx5_prm::CreateMkeyOut;

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

/// Registered DMA memory.
#[derive(Debug)]
pub struct Region {
    buf: DmaBuf,
    key: u32,
    len: usize,
}

/// The low byte of every key this driver makes (the "variant" part of an mkey).
const KEY_BYTE: u8 = 0x5a;

impl Region {
    /// Allocates `len` bytes and registers them (physical-address mode: the IO address is the
    /// key's start address).
    pub fn register<B: Backend>(hca: &mut Hca<B>, len: usize, access: Access) -> Result<Region> {
        let buf = hca
            .backend()
            .dma()
            .alloc(len.max(1).div_ceil(4096) * 4096, 4096)?;
        let (pd, iova) = (hca.info().pd, buf.iova());
        let result = hca.run::<CreateMkey>(0, |i| {
            let mut c = i.memory_key_mkey_entry_mut();
            c.set_access_mode_1_0(0);
            c.set_access_mode_4_2(0);
            c.set_lr(true);
            c.set_lw(access.local_write);
            c.set_rr(access.remote_read);
            c.set_rw(access.remote_write);
            c.set_a(access.remote_atomic);
            c.set_qpn(0xff_ffff);
            c.set_mkey_7_0(KEY_BYTE);
            c.set_pd(pd);
            c.set_start_addr(iova);
            c.set_len(len as u64);
        });
        let out = match result {
            Ok(out) => out,
            Err(e) => {
                hca.backend().dma().free(buf);
                return Err(e);
            }
        };
        let index = CreateMkeyOut::new_checked(&out[..])?.mkey_index();
        Ok(Region {
            buf,
            key: (index << 8) | u32::from(KEY_BYTE),
            len,
        })
    }

    /// The key work requests name the region by (local key).
    pub fn lkey(&self) -> u32 {
        self.key
    }

    /// The key a peer names it by (remote key; the same key here).
    pub fn rkey(&self) -> u32 {
        self.key
    }

    /// The IO address of the first byte.
    pub fn addr(&self) -> u64 {
        self.buf.iova()
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for an empty region.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes, while the region is in the driver's hands.
    pub fn bytes(&self) -> DeviceBytes<'_> {
        self.buf.slice(0, self.len)
    }

    /// Bytes `at .. at + len` of the region.
    ///
    /// # Panics
    ///
    /// If the range is not inside the region.
    pub fn slice(&self, at: usize, len: usize) -> DeviceBytes<'_> {
        assert!(
            at <= self.len && len <= self.len - at,
            "region slice {at}+{len} beyond {}",
            self.len
        );
        self.buf.slice(at, len)
    }

    /// Destroys the key and frees the memory.
    pub fn deregister<B: Backend>(
        self,
        hca: &mut Hca<B>,
    ) -> std::result::Result<(), (crate::Error, Region)> {
        let index = self.key >> 8;
        match hca.run::<DestroyMkey>(0, |i| i.set_mkey_index(index)) {
            Ok(_) => {
                hca.backend().dma().free(self.buf);
                Ok(())
            }
            Err(e) => Err((e, self)),
        }
    }
}

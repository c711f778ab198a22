//! A minimal host for the tests: it posts hand-built commands to the model through its public
//! API exactly as a driver would (entry and mailboxes in DMA memory, doorbell, ownership poll)
//! and can corrupt any part of a submission.

#![allow(dead_code)]

pub mod dp;
pub mod eth;
pub mod flow;
pub mod linux;
pub mod linux_flow;
pub mod rc_wqe;
pub mod rx;
pub mod tx;
pub mod wq;

use mlx5_prm::rt::{Bytes, Command, View};
use mlx5_prm::{cmd, CmdIfBox, CmdQueueEntry};
use mlx5_sim::{Config, Device, DmaBacking, DmaRegion, Mode, RcTransport};
use std::cell::Cell;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Block spacing of the test's mailbox chains: the 1 KiB alignment next pointers need.
pub const BLOCK_STRIDE: u64 = 1024;
pub const DATA: usize = 512;

/// What came back from one command.
#[derive(Debug, Clone)]
pub struct Reply {
    /// Delivery status from the entry (0 = delivered).
    pub delivery: u8,
    /// The output: 16 inline bytes plus the mailbox part, `output_length` bytes (at least 16).
    pub out: Vec<u8>,
}

impl Reply {
    pub fn status(&self) -> u8 {
        self.out[0]
    }

    pub fn syndrome(&self) -> u32 {
        u32::from_be_bytes([self.out[4], self.out[5], self.out[6], self.out[7]])
    }

    /// Panics unless the command was delivered and succeeded.
    #[track_caller]
    pub fn ok(self) -> Reply {
        assert_eq!(self.delivery, 0, "delivery status");
        assert_eq!(
            (self.status(), self.syndrome()),
            (0, 0),
            "status/syndrome {:?}",
            mlx5_sim::syndrome::describe(self.syndrome())
        );
        self
    }

    /// Asserts a failed command's status and syndrome.
    #[track_caller]
    pub fn fails(&self, status: u8, syndrome: u32) {
        assert_eq!(self.delivery, 0, "delivery status");
        assert_eq!(
            (self.status(), self.syndrome()),
            (status, syndrome),
            "got {:?}",
            mlx5_sim::syndrome::describe(self.syndrome())
        );
    }
}

/// Ways to corrupt a submission.
#[derive(Debug, Clone, Default)]
pub struct Tweak {
    /// Token written into every mailbox block instead of the entry's.
    pub block_token: Option<u8>,
    /// `(block index, number)`: write this block number into that input block.
    pub block_number: Option<(usize, u32)>,
    /// Entry type byte.
    pub entry_type: Option<u8>,
    /// input_length field (the real input is still what is sent).
    pub input_length: Option<u32>,
    /// Extra low bits ORed into the input mailbox pointer.
    pub in_ptr_bits: u32,
    /// Drop the input chain after this many blocks.
    pub truncate_in_chain: Option<usize>,
    /// Point the first input block at an unmapped IOVA.
    pub unmapped_in_chain: bool,
    /// Leave ownership clear (software-owned entry).
    pub software_owned: bool,
}

/// Guest RAM for a device with external DMA: one host buffer mapped at [`GUEST_IOVA`], handed
/// out by a bump allocator (regions are never reused), as a vfio-user server maps a guest's
/// memory and the guest's driver allocates inside it.
pub struct Guest {
    ptr: *mut u8,
    layout: std::alloc::Layout,
    next: Cell<usize>,
}

/// Where the test's guest RAM is mapped.
pub const GUEST_IOVA: u64 = 0x4000_0000;
/// Its size.
pub const GUEST_SIZE: usize = 64 << 20;

impl Guest {
    fn new() -> Guest {
        let layout = std::alloc::Layout::from_size_align(GUEST_SIZE, 1 << 21).unwrap();
        // SAFETY: non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        assert!(!ptr.is_null());
        Guest {
            ptr,
            layout,
            next: Cell::new(0),
        }
    }

    /// `len` bytes aligned to `align` (at least a page), with a guard page after.
    pub fn alloc(&self, len: usize, align: usize) -> DmaRegion {
        let len = len.next_multiple_of(4096);
        let at = self.next.get().next_multiple_of(align.max(4096));
        assert!(at + len <= GUEST_SIZE, "guest RAM exhausted");
        self.next.set(at + len + 4096);
        DmaRegion {
            // SAFETY: inside the buffer.
            va: unsafe { self.ptr.add(at) },
            iova: GUEST_IOVA + at as u64,
            len,
        }
    }
}

// SAFETY: the buffer is owned by the Guest alone; moving it moves nothing tied to a thread.
unsafe impl Send for Guest {}

impl Drop for Guest {
    fn drop(&mut self) {
        // SAFETY: allocated with this layout in `new`; the device unmapped it first (Host's
        // drop).
        unsafe { std::alloc::dealloc(self.ptr, self.layout) };
    }
}

/// The host side of one device.
pub struct Host {
    pub dev: Arc<Device>,
    pub cmdq: DmaRegion,
    token: Cell<u8>,
    /// Guest RAM, for a device with external DMA.
    pub guest: Option<Guest>,
}

impl Drop for Host {
    fn drop(&mut self) {
        if self.guest.is_some() {
            self.dev.unmap_all_dma().unwrap();
        }
    }
}

impl Host {
    /// A device with `config`, its command queue programmed.
    pub fn new(mut config: Config) -> Host {
        if dp::transport() == RcTransport::Roce {
            config.rc_transport = RcTransport::Roce;
        }
        let external = config.dma == DmaBacking::External;
        let dev = Device::new(config);
        let guest = external.then(|| {
            let g = Guest::new();
            // SAFETY: the buffer lives in the Host, which unmaps it before freeing it.
            unsafe { dev.map_dma(GUEST_IOVA, g.ptr, GUEST_SIZE) }.unwrap();
            g
        });
        let mut host = Host {
            dev,
            cmdq: DmaRegion {
                va: std::ptr::null_mut(),
                iova: 0,
                len: 0,
            },
            token: Cell::new(0),
            guest,
        };
        host.cmdq = host.alloc(4096, 4096);
        host.dev.write32(0x10, (host.cmdq.iova >> 32) as u32);
        host.dev.write32(0x14, host.cmdq.iova as u32);
        host
    }

    /// A device whose DMA memory is guest RAM mapped from outside.
    pub fn external(mode: Mode) -> Host {
        Host::new(Config {
            mode,
            dma: DmaBacking::External,
            ..Config::default()
        })
    }

    /// Frees what [`Host::alloc`] gave (guest RAM is never reused).
    pub fn free(&self, r: &DmaRegion) {
        if self.guest.is_none() {
            self.dev.dma().free(r.iova).unwrap();
        }
    }

    /// DMA memory for the device: allocated by the model, or carved out of guest RAM.
    pub fn alloc(&self, len: usize, align: usize) -> DmaRegion {
        match &self.guest {
            Some(g) => g.alloc(len, align),
            None => self.dev.dma().alloc(len, align).unwrap(),
        }
    }

    /// A new driver on the same device: a fresh command queue page, programmed as at load.
    pub fn reattach(mut old: Host) -> Host {
        // The guest RAM (if any) moves to the new host; the old one then unmaps nothing.
        let mut host = Host {
            dev: old.dev.clone(),
            cmdq: old.cmdq,
            token: Cell::new(old.token.get()),
            guest: old.guest.take(),
        };
        host.cmdq = host.alloc(4096, 4096);
        host.dev.write32(0x10, (host.cmdq.iova >> 32) as u32);
        host.dev.write32(0x14, host.cmdq.iova as u32);
        host
    }

    pub fn inline() -> Host {
        Host::new(Config::default())
    }

    pub fn threaded() -> Host {
        Host::new(Config {
            mode: Mode::Threaded,
            ..Config::default()
        })
    }

    fn next_token(&self) -> u8 {
        let t = self.token.get().wrapping_add(1).max(1);
        self.token.set(t);
        t
    }

    /// Allocates a chain of `n` blocks (1 KiB apart in one region); returns the region.
    fn chain(
        &self,
        n: usize,
        token: u8,
        data: &[u8],
        tweak: &Tweak,
        input: bool,
    ) -> Option<DmaRegion> {
        if n == 0 {
            return None;
        }
        let dma = self.dev.dma();
        let region = self.alloc(n * BLOCK_STRIDE as usize, 4096);
        for i in 0..n {
            let mut block = CmdIfBox::zeroed();
            let start = (i * DATA).min(data.len());
            let end = (start + DATA).min(data.len());
            block.storage_mut()[..end - start].copy_from_slice(&data[start..end]);
            let last = input && tweak.truncate_in_chain == Some(i + 1);
            if i + 1 < n && !last {
                let next = region.iova + (i as u64 + 1) * BLOCK_STRIDE;
                block.set_next_pointer_63_32((next >> 32) as u32);
                block.set_next_pointer_31_10((next as u32) >> 10);
            }
            let number = match tweak.block_number {
                Some((at, n)) if input && at == i => n,
                _ => i as u32,
            };
            block.set_block_number(number);
            block.set_token(tweak.block_token.unwrap_or(token));
            dma.write(region.iova + i as u64 * BLOCK_STRIDE, block.storage())
                .unwrap();
        }
        Some(region)
    }

    /// Posts `input` in `slot` with room for `out_len` output bytes, rings the doorbell and
    /// waits for the entry; `None` if it is never returned.
    pub fn submit(&self, slot: u32, input: &[u8], out_len: usize, tweak: &Tweak) -> Option<Reply> {
        let dma = self.dev.dma();
        let token = self.next_token();
        let in_rest = input.get(16..).unwrap_or(&[]);
        let in_chain = self.chain(in_rest.len().div_ceil(DATA), token, in_rest, tweak, true);
        let out_chain = self.chain(
            out_len.saturating_sub(16).div_ceil(DATA),
            token,
            &[],
            tweak,
            false,
        );
        let mut e = CmdQueueEntry::zeroed();
        e.set_type_raw(tweak.entry_type.unwrap_or(7));
        e.set_input_length(tweak.input_length.unwrap_or(input.len() as u32));
        let mut inline = [0u8; 16];
        let n = input.len().min(16);
        inline[..n].copy_from_slice(&input[..n]);
        e.set_command_input_inline_data(&inline);
        if let Some(r) = &in_chain {
            let iova = if tweak.unmapped_in_chain {
                0x7_0000_0000
            } else {
                r.iova
            };
            e.set_input_mailbox_pointer_63_32((iova >> 32) as u32);
            e.set_input_mailbox_pointer_31_9((iova as u32) >> 9);
        }
        if let Some(r) = &out_chain {
            e.set_output_mailbox_pointer_63_32((r.iova >> 32) as u32);
            e.set_output_mailbox_pointer_31_9((r.iova as u32) >> 9);
        }
        e.set_output_length(out_len as u32);
        e.set_token(token);
        e.set_ownership(!tweak.software_owned);
        let mut raw = *e.storage();
        if tweak.in_ptr_bits != 0 {
            let low =
                u32::from_be_bytes([raw[0xc], raw[0xd], raw[0xe], raw[0xf]]) | tweak.in_ptr_bits;
            raw[0xc..0x10].copy_from_slice(&low.to_be_bytes());
        }
        let entry = self.cmdq.iova + u64::from(slot) * 64;
        dma.write(entry, &raw).unwrap();
        self.dev.write32(0x18, 1 << slot);
        let returned = self.wait(entry);
        let reply = returned.then(|| {
            let mut raw = [0u8; 64];
            // Dword loads: the device writes the ownership dword with a 4-byte store.
            assert!(dma.read_dwords(entry, &mut raw));
            let e = CmdQueueEntry::new_unchecked(&raw[..]);
            let mut out = vec![0u8; out_len.max(16)];
            out[..16].copy_from_slice(&e.command_output_inline_data());
            if let Some(r) = &out_chain {
                for (i, chunk) in out[16..].chunks_mut(DATA).enumerate() {
                    dma.read(r.iova + i as u64 * BLOCK_STRIDE, chunk).unwrap();
                }
            }
            Reply {
                delivery: e.status_raw(),
                out,
            }
        });
        for r in in_chain.iter().chain(out_chain.iter()) {
            self.free(r);
        }
        reply
    }

    /// Waits for the entry at `entry` to return to software (at once in inline mode).
    fn wait(&self, entry: u64) -> bool {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            self.dev.sync();
            // The dword the device clears ownership in, as wide as it writes it.
            if self.owner_dword(entry + 0x3c) & 1 == 0 {
                std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
                return true;
            }
            if Instant::now() > deadline || self.dev.config().mode == Mode::Inline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Posts raw `input` in slot 0.
    pub fn exec(&self, input: &[u8], out_len: usize) -> Reply {
        self.submit(0, input, out_len, &Tweak::default())
            .expect("the entry came back")
    }

    /// Builds command `C`'s input (its layout plus `extra_in` bytes) with `fill`, and runs it
    /// with room for its output layout plus `extra_out` bytes.
    pub fn run<C: Command>(
        &self,
        op_mod: C::OpMod,
        extra_in: usize,
        extra_out: usize,
        fill: impl FnOnce(&mut C::Input<&mut [u8]>),
    ) -> Reply {
        let mut buf = vec![0u8; in_size::<C>() + extra_in];
        let mut input = C::input(&mut buf[..], op_mod).unwrap();
        fill(&mut input);
        drop(input);
        self.exec(&buf, out_size::<C>() + extra_out)
    }

    /// Runs `C` with a zeroed input but for the header.
    pub fn simple<C: Command>(&self, op_mod: C::OpMod) -> Reply {
        self.run::<C>(op_mod, 0, 0, |_| {})
    }

    /// Allocates `n` pages and gives them with MANAGE_PAGES; returns their addresses.
    pub fn give_pages(&self, n: usize) -> Vec<u64> {
        if n == 0 {
            return Vec::new();
        }
        let region = self.alloc(n * 4096, 4096);
        let pages: Vec<u64> = (0..n as u64).map(|i| region.iova + i * 4096).collect();
        self.give(&pages).ok();
        pages
    }

    /// MANAGE_PAGES give of `pages`.
    pub fn give(&self, pages: &[u64]) -> Reply {
        self.run::<cmd::ManagePages>(cmd::ManagePagesOpMod::Give, pages.len() * 8, 0, |i| {
            i.set_input_num_entries(pages.len() as u32);
            for (k, &p) in pages.iter().enumerate() {
                i.set_pas(k, p).unwrap();
            }
        })
    }

    /// MANAGE_PAGES take of `n` pages.
    pub fn take(&self, n: usize) -> Reply {
        self.run::<cmd::ManagePages>(cmd::ManagePagesOpMod::Take, 0, n * 8, |i| {
            i.set_input_num_entries(n as u32)
        })
    }

    /// QUERY_PAGES for a stage.
    pub fn query_pages(&self, stage: cmd::QueryPagesOpMod) -> i32 {
        let r = self.simple::<cmd::QueryPages>(stage).ok();
        mlx5_prm::QueryPagesOut::new_unchecked(&r.out[..]).num_pages() as i32
    }

    /// ENABLE_HCA, ISSI 1, boot and init pages, INIT_HCA.
    pub fn bring_up(&self) {
        self.simple::<cmd::EnableHca>(0).ok();
        self.simple::<cmd::QueryIssi>(0).ok();
        self.run::<cmd::SetIssi>(0, 0, 0, |i| i.set_current_issi(1))
            .ok();
        let boot = self.query_pages(cmd::QueryPagesOpMod::Boot);
        self.give_pages(boot as usize);
        let init = self.query_pages(cmd::QueryPagesOpMod::Init);
        self.give_pages(init as usize);
        self.simple::<cmd::InitHca>(0).ok();
    }

    pub fn alloc_uar(&self) -> u32 {
        let r = self.simple::<cmd::AllocUar>(0).ok();
        mlx5_prm::AllocUarOut::new_unchecked(&r.out[..]).uar()
    }

    pub fn alloc_pd(&self) -> u32 {
        let r = self.simple::<cmd::AllocPd>(0).ok();
        mlx5_prm::AllocPdOut::new_unchecked(&r.out[..]).pd()
    }

    pub fn alloc_td(&self) -> u32 {
        let r = self.simple::<cmd::AllocTransportDomain>(0).ok();
        mlx5_prm::AllocTransportDomainOut::new_unchecked(&r.out[..]).transport_domain()
    }

    /// CREATE_EQ of 2^log_size entries subscribed to `bitmask` (word 0), ring initialised
    /// with owner 1 as drivers do. Returns the EQ number and the ring.
    pub fn create_eq(&self, log_size: u8, bitmask: u64, uar: u32, intr: u16) -> (u8, DmaRegion) {
        let bytes = 64usize << log_size;
        let ring = self.alloc(bytes, 4096);
        for i in 0..(bytes / 64) as u64 {
            self.dev
                .dma()
                .write(ring.iova + i * 64 + 0x3f, &[1])
                .unwrap();
        }
        let pages = bytes.div_ceil(4096);
        let r = self
            .run::<cmd::CreateEq>(0, pages * 8, 0, |i| {
                let mut c = i.eq_context_entry_mut();
                c.set_log_eq_size(log_size);
                c.set_uar_page(uar);
                c.set_intr(intr);
                i.set_event_bitmask(0, bitmask).unwrap();
                for p in 0..pages {
                    i.set_pas(p, ring.iova + p as u64 * 4096).unwrap();
                }
            })
            .ok();
        (
            mlx5_prm::CreateEqOut::new_unchecked(&r.out[..]).eq_number(),
            ring,
        )
    }

    /// CREATE_CQ of 2^log_size 64-byte CQEs reporting to `eqn`. Returns the CQ number.
    pub fn create_cq(&self, eqn: u8, uar: u32, log_size: u8) -> u32 {
        let bytes = 64usize << log_size;
        let ring = self.alloc(bytes, 4096);
        let dbr = self.alloc(64, 64);
        let pages = bytes.div_ceil(4096);
        let r = self
            .run::<cmd::CreateCq>(0, pages * 8, 0, |i| {
                let mut c = i.cq_context_mut();
                c.set_log_cq_size(log_size);
                c.set_uar_page(uar);
                c.set_c_eqn_or_apu_element(eqn.into());
                c.set_dbr_addr(dbr.iova);
                for p in 0..pages {
                    i.set_pas(p, ring.iova + p as u64 * 4096).unwrap();
                }
            })
            .ok();
        mlx5_prm::CreateCqOut::new_unchecked(&r.out[..]).cqn()
    }

    /// The big-endian dword at `iova` (4-byte aligned), read with one 4-byte load: the width
    /// the device writes the dword holding an owner bit with. Read first, then (once it says
    /// the entry is handed over) an acquire fence, then the rest: the protocol drivers follow,
    /// and in the threaded mode the only one without a data race against the model's thread.
    pub fn owner_dword(&self, iova: u64) -> u32 {
        let mut b = [0u8; 4];
        self.dev.dma().read(iova, &mut b).unwrap();
        u32::from_be_bytes(b)
    }

    /// Whether the EQE at `index` of a ring carries owner bit `pass`; if so, an acquire fence
    /// follows, and [`Host::eqe`] may read it.
    pub fn eqe_ready(&self, ring: &DmaRegion, index: u64, pass: bool) -> bool {
        let owner = self.owner_dword(ring.iova + index * 64 + 0x3c) & 1 == 1;
        if owner == pass {
            std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
        }
        owner == pass
    }

    /// Reads the EQE at `index` of a ring (after [`Host::eqe_ready`] when the device may be
    /// writing it).
    pub fn eqe(&self, ring: &DmaRegion, index: u64) -> mlx5_prm::Eqe {
        let mut e = mlx5_prm::Eqe::zeroed();
        // Dword loads: the device writes the owner dword with a 4-byte store.
        assert!(self
            .dev
            .dma()
            .read_dwords(ring.iova + index * 64, e.storage_mut()));
        e
    }
}

pub fn in_size<C: Command>() -> usize {
    <C::Input<&'static [u8]> as View<&'static [u8]>>::SIZE
}

pub fn out_size<C: Command>() -> usize {
    <C::Output<&'static [u8]> as View<&'static [u8]>>::SIZE
}

/// Reads a big-endian u32 at `at`.
pub fn be32(b: &[u8], at: usize) -> u32 {
    b.read_be32(at)
}

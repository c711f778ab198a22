//! A device over guest RAM of the test's own, driven through its command queue like a driver
//! does, with what the RoCE tests and the `roce_rx` fuzz target need: bring-up, the port's
//! RoCE address, an EQ, CQs, a queue counter set, an RC QP (its counter set given at
//! CREATE_QP, which the common harness's `Node::qp` has no way to do), memory keys, and a
//! link that keeps every frame the device sends.
//!
//! Guest RAM sits between two guard areas holding canary bytes (`sim/tests/support/guest_ram.rs`,
//! shared with `sim/tests/drive`): a DMA write outside guest RAM shows as a changed canary.
//! The RAM is one per thread and reused, cleared for each rig, so a fuzz input does not pay
//! for a fresh allocation.

#![allow(dead_code)]

use mlx5_prm::rt::{Command, View};
use mlx5_prm::{cmd, CmdQueueEntry};
use mlx5_sim::{Config, Device, DmaBacking, Link, RcTransport};
use std::cell::Cell;
use std::sync::{Arc, Mutex};

#[path = "../support/command.rs"]
mod command;
#[path = "../support/guest_ram.rs"]
mod guest_ram;

use command::CommandArea;
use guest_ram::GuestRam as Ram;
pub use guest_ram::{is_canary, CANARY, RAM};

/// Where guest RAM is mapped.
pub const BASE: u64 = 0x10_0000;
const CMDQ: u64 = BASE;
const OUT_BOXES: u64 = BASE + 0x3000;
const AREA: CommandArea = CommandArea {
    cmdq: CMDQ,
    in_boxes: BASE + 0x1000,
    out_boxes: OUT_BOXES,
    boxes: 8,
};
/// Where the bump allocator starts.
const HEAP: u64 = BASE + 0x8000;

thread_local! {
    static RAM_OF_THREAD: Ram = Ram::new();
}

/// A link keeping the frames the device sends.
#[derive(Default)]
pub struct Tap(Mutex<Vec<Vec<u8>>>);

impl Link for Tap {
    fn transmit(&self, frame: &[u8]) {
        self.0.lock().unwrap().push(frame.to_vec());
    }
}

impl Tap {
    /// The frames sent since the last call.
    pub fn take(&self) -> Vec<Vec<u8>> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

/// What a command returned: status, syndrome, output (inline part and mailboxes).
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u8,
    pub syndrome: u32,
    pub out: Vec<u8>,
}

impl Reply {
    #[track_caller]
    pub fn ok(self) -> Vec<u8> {
        assert_eq!((self.status, self.syndrome), (0, 0), "command failed");
        self.out
    }
}

/// One device on RoCE over this thread's guest RAM. Runs `body` with it (the RAM is the
/// thread's, so the rig lives only inside the call).
pub fn with_rig<R>(body: impl FnOnce(&Rig) -> R) -> R {
    RAM_OF_THREAD.with(|ram| {
        let rig = Rig::new(ram);
        body(&rig)
    })
}

pub struct Rig {
    pub dev: Arc<Device>,
    pub tap: Arc<Tap>,
    ram: *const Ram,
    next: Cell<u64>,
    token: Cell<u8>,
}

impl Drop for Rig {
    fn drop(&mut self) {
        let _ = self.dev.unmap_all_dma();
    }
}

impl Rig {
    fn new(ram: &Ram) -> Rig {
        let dev = Device::new(Config {
            dma: DmaBacking::External,
            rc_transport: RcTransport::Roce,
            boot_pages: 2,
            init_pages: 2,
            regular_pages: 4,
            ..Config::default()
        });
        ram.clear();
        // SAFETY: the Ram is the thread's and outlives the rig, which unmaps it when dropped.
        unsafe { dev.map_dma(BASE, ram.mapped(), RAM) }.unwrap();
        dev.write32(0x10, (CMDQ >> 32) as u32);
        dev.write32(0x14, CMDQ as u32);
        let tap = Arc::new(Tap::default());
        dev.attach_link(tap.clone());
        Rig {
            dev,
            tap,
            ram,
            next: Cell::new(HEAP),
            token: Cell::new(0),
        }
    }

    /// No DMA write left guest RAM.
    pub fn guards_intact(&self) -> bool {
        // SAFETY: the Ram outlives the rig (see `with_rig`).
        unsafe { &*self.ram }.guards_intact()
    }

    /// `len` bytes of guest RAM, page aligned (never reused).
    pub fn alloc(&self, len: usize) -> u64 {
        let at = self.next.get();
        let len = (len as u64).next_multiple_of(4096);
        assert!(at + len <= BASE + RAM as u64, "guest RAM exhausted");
        self.next.set(at + len);
        at
    }

    pub fn write(&self, iova: u64, data: &[u8]) {
        self.dev.dma().write(iova, data).unwrap();
    }

    pub fn read(&self, iova: u64, len: usize) -> Vec<u8> {
        let mut v = vec![0u8; len];
        self.dev.dma().read(iova, &mut v).unwrap();
        v
    }

    /// Posts `input` in slot 0 with its mailboxes and room for `out_len` bytes of output.
    pub fn exec(&self, input: &[u8], out_len: usize) -> Reply {
        let token = self.token.get().wrapping_add(1).max(1);
        self.token.set(token);
        assert!(input.len() <= AREA.max_len() && out_len <= AREA.max_len());
        AREA.post(input, out_len, token, |at, b| self.write(at, b));
        self.dev.write32(0x18, 1);
        let back = self.read(CMDQ, 64);
        let e = CmdQueueEntry::new_unchecked(&back[..]);
        assert!(!e.ownership(), "the command came back");
        assert_eq!(e.status_raw(), 0, "delivery status");
        let mut out = vec![0u8; out_len.max(16)];
        out[..16].copy_from_slice(&e.command_output_inline_data());
        for (i, chunk) in out[16..].chunks_mut(512).enumerate() {
            let b = self.read(OUT_BOXES + i as u64 * 1024, chunk.len());
            chunk.copy_from_slice(&b);
        }
        Reply {
            status: out[0],
            syndrome: u32::from_be_bytes([out[4], out[5], out[6], out[7]]),
            out,
        }
    }

    /// Builds command `C`'s input (its layout and `extra_in` bytes) with `fill` and runs it.
    pub fn run<C: Command>(
        &self,
        op_mod: C::OpMod,
        extra_in: usize,
        fill: impl FnOnce(&mut C::Input<&mut [u8]>),
    ) -> Reply {
        let in_size = <C::Input<&[u8]> as View<&[u8]>>::SIZE;
        let out_size = <C::Output<&[u8]> as View<&[u8]>>::SIZE;
        let mut buf = vec![0u8; in_size + extra_in];
        let mut input = C::input(&mut buf[..], op_mod).unwrap();
        fill(&mut input);
        drop(input);
        self.exec(&buf, out_size)
    }

    /// ENABLE_HCA, ISSI 1, boot and init pages, INIT_HCA.
    pub fn bring_up(&self) {
        self.run::<cmd::EnableHca>(0, 0, |_| {}).ok();
        self.run::<cmd::SetIssi>(0, 0, |i| i.set_current_issi(1))
            .ok();
        for stage in [cmd::QueryPagesOpMod::Boot, cmd::QueryPagesOpMod::Init] {
            let out = self.run::<cmd::QueryPages>(stage, 0, |_| {}).ok();
            let n = mlx5_prm::QueryPagesOut::new_unchecked(&out[..]).num_pages() as usize;
            let pages = self.alloc(n * 4096);
            self.run::<cmd::ManagePages>(cmd::ManagePagesOpMod::Give, n * 8, |i| {
                i.set_input_num_entries(n as u32);
                for k in 0..n {
                    i.set_pas(k, pages + k as u64 * 4096).unwrap();
                }
            })
            .ok();
        }
        self.run::<cmd::InitHca>(0, 0, |_| {}).ok();
    }
}

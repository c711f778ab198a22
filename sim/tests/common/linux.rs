//! A host that drives the model the way Linux 6.12's `mlx5_core` does (read from the kernel's
//! `main.c`, `cmd.c`, `eq.c`, `pagealloc.c`, `fw.c`; see docs/linux-probe.md), written from
//! the PRM's side: the same commands in the same order with the same inputs, MANAGE_PAGES in
//! the last command slot, the command EQ created in polling mode, then every command completed
//! by its EQE on the command EQ, found by the owner-bit rule, with the EQ re-armed after each
//! pass as the interrupt handler does.

use super::{Host, Reply, Tweak};
use mlx5_prm::rt::Command;
use mlx5_prm::{cmd, CmdHcaCap, CmdInterCompEvent, Eqe, EventType, PagesReqEvent};
use mlx5_sim::{Config, DmaRegion};
use std::cell::{Cell, RefCell};

/// The slot Linux keeps for MANAGE_PAGES: the last of the 32.
pub const PAGES_SLOT: u32 = 31;
/// The MSI-X vector of the control EQs (command, async, pages).
pub const CTRL_VECTOR: u16 = 0;
/// Pages Linux asks back per MANAGE_PAGES take at unload: what fits 12 mailbox blocks.
pub const RECLAIM_BATCH: usize = 768;

/// One event queue as the driver keeps it: ring, size, consumer index.
pub struct Ring {
    pub eqn: u8,
    pub ring: DmaRegion,
    pub log_size: u8,
    pub ci: Cell<u32>,
}

/// What the async EQ subscribes to: the kernel's MLX5_ASYNC_EVENT_MASK (no vport manager, no
/// optional events on this profile).
pub fn async_event_mask() -> u64 {
    [
        EventType::PathMig,
        EventType::CommEst,
        EventType::SqDrained,
        EventType::CqError,
        EventType::WqCatasError,
        EventType::PathMigFailed,
        EventType::WqInvalReqError,
        EventType::WqAccessError,
        EventType::PortChange,
        EventType::SrqCatasError,
        EventType::SrqLastWqe,
        EventType::SrqRqLimit,
    ]
    .iter()
    .fold(0, |m, t| m | 1u64 << t.raw())
}

/// The EQ size Linux asks for `nent` entries: order_base_2(nent + 128 spare entries).
pub fn log_eq_size(nent: u32) -> u8 {
    (nent + 128).next_power_of_two().trailing_zeros() as u8
}

/// The host.
pub struct Linux {
    pub host: Host,
    pub uar: Cell<u32>,
    /// The command EQ, once the driver uses events.
    pub cmd_eq: RefCell<Option<Ring>>,
    /// Pages the driver lent, in the order given.
    pub pages: RefCell<Vec<u64>>,
}

impl Linux {
    pub fn new(config: Config) -> Linux {
        Linux::attach(Host::new(config))
    }

    /// A driver taking over `host` (for a second load on the same device).
    pub fn attach(host: Host) -> Linux {
        Linux {
            host,
            uar: Cell::new(0),
            cmd_eq: RefCell::new(None),
            pages: RefCell::new(Vec::new()),
        }
    }

    /// Runs command `C` in `slot` as the driver does: in polling mode the entry's ownership,
    /// in event mode also the completion EQE on the command EQ (and its interrupt), after
    /// which the EQ is re-armed with the new consumer index.
    pub fn exec_in<C: Command>(
        &self,
        slot: u32,
        op_mod: C::OpMod,
        extra_in: usize,
        extra_out: usize,
        fill: impl FnOnce(&mut C::Input<&mut [u8]>),
    ) -> Reply {
        let mut buf = vec![0u8; super::in_size::<C>() + extra_in];
        let mut input = C::input(&mut buf[..], op_mod).unwrap();
        fill(&mut input);
        drop(input);
        let out_len = super::out_size::<C>() + extra_out;
        let before = self.host.dev.interrupts(CTRL_VECTOR);
        let reply = self
            .host
            .submit(slot, &buf, out_len, &Tweak::default())
            .expect("the entry came back");
        if let Some(eq) = self.cmd_eq.borrow().as_ref() {
            assert!(
                self.host.dev.interrupts(CTRL_VECTOR) > before,
                "the completion raised the armed command EQ's vector"
            );
            let eqes = self.poll(eq);
            assert_eq!(eqes.len(), 1, "one completion EQE");
            assert_eq!(eqes[0].event_type(), Ok(EventType::Cmd));
            let ev = CmdInterCompEvent::new_unchecked(&eqes[0].storage()[0x20..0x3c]);
            assert_eq!(ev.command_completion_vector(), 1 << slot, "the slot's bit");
            self.arm(eq);
        }
        reply
    }

    /// [`Linux::exec_in`] in slot 0 (the driver's first free regular slot).
    pub fn exec<C: Command>(
        &self,
        op_mod: C::OpMod,
        extra_in: usize,
        extra_out: usize,
        fill: impl FnOnce(&mut C::Input<&mut [u8]>),
    ) -> Reply {
        self.exec_in::<C>(0, op_mod, extra_in, extra_out, fill)
    }

    /// A command with a zeroed input but for the header.
    pub fn simple<C: Command>(&self, op_mod: C::OpMod) -> Reply {
        self.exec::<C>(op_mod, 0, 0, |_| {})
    }

    /// Reads the valid EQEs of `eq` from its consumer index on (owner bit equal to the pass
    /// parity of the index), advancing the index.
    pub fn poll(&self, eq: &Ring) -> Vec<Eqe> {
        let mut out = Vec::new();
        let size = 1u32 << eq.log_size;
        loop {
            let ci = eq.ci.get();
            let index = u64::from(ci & (size - 1));
            if !self
                .host
                .eqe_ready(&eq.ring, index, (ci >> eq.log_size) & 1 == 1)
            {
                return out;
            }
            out.push(self.host.eqe(&eq.ring, index));
            eq.ci.set(ci.wrapping_add(1));
        }
    }

    /// The arm doorbell at UAR + 0x40: eqn << 24 | consumer index.
    pub fn arm(&self, eq: &Ring) {
        let offset = self.uar.get() as usize * 4096 + 0x40;
        self.host
            .dev
            .write32(offset, u32::from(eq.eqn) << 24 | (eq.ci.get() & 0xff_ffff));
    }

    /// CREATE_EQ as `create_map_eq` builds it: 2^log_size entries with owner 1, 4 KiB pages,
    /// uar_page, intr = the control vector, the event mask in word 0.
    pub fn create_eq(&self, nent: u32, mask: u64) -> Ring {
        let log_size = log_eq_size(nent);
        let bytes = 64usize << log_size;
        let dma = self.host.dev.dma();
        let ring = self.host.alloc(bytes, 4096);
        let init: Vec<u8> = (0..bytes).map(|i| u8::from(i % 64 == 63)).collect();
        dma.write(ring.iova, &init).unwrap();
        let pages = bytes / 4096;
        let uar = self.uar.get();
        let r = self
            .exec::<cmd::CreateEq>(0, pages * 8, 0, |i| {
                let mut c = i.eq_context_entry_mut();
                c.set_log_eq_size(log_size);
                c.set_uar_page(uar);
                c.set_intr(CTRL_VECTOR);
                c.set_log_page_size(0);
                i.set_event_bitmask(0, mask).unwrap();
                for p in 0..pages {
                    i.set_pas(p, ring.iova + p as u64 * 4096).unwrap();
                }
            })
            .ok();
        let eqn = mlx5_prm::CreateEqOut::new_unchecked(&r.out[..]).eq_number();
        let eq = Ring {
            eqn,
            ring,
            log_size,
            ci: Cell::new(0),
        };
        // mlx5_eq_enable: consumer index 0 and armed.
        self.arm(&eq);
        eq
    }

    /// From now on commands complete through `eq` (mlx5_cmd_use_events).
    pub fn use_events(&self, eq: Ring) {
        *self.cmd_eq.borrow_mut() = Some(eq);
    }

    /// Back to polling (mlx5_cmd_use_polling); returns the command EQ.
    pub fn use_polling(&self) -> Ring {
        self.cmd_eq.borrow_mut().take().expect("event mode")
    }

    /// MANAGE_PAGES give of `n` new pages, in the pages slot.
    pub fn give(&self, n: usize) -> Reply {
        let region = self.host.alloc(n.max(1) * 4096, 4096);
        let list: Vec<u64> = (0..n as u64).map(|i| region.iova + i * 4096).collect();
        let r = self.exec_in::<cmd::ManagePages>(
            PAGES_SLOT,
            cmd::ManagePagesOpMod::Give,
            n * 8,
            0,
            |i| {
                i.set_input_num_entries(n as u32);
                for (k, &p) in list.iter().enumerate() {
                    i.set_pas(k, p).unwrap();
                }
            },
        );
        if r.status() == 0 {
            self.pages.borrow_mut().extend(list);
        }
        r
    }

    /// MANAGE_PAGES take of up to `n` pages, in the pages slot; returns the pages returned,
    /// after checking each was lent.
    pub fn take(&self, n: usize) -> Vec<u64> {
        let r = self
            .exec_in::<cmd::ManagePages>(PAGES_SLOT, cmd::ManagePagesOpMod::Take, 0, n * 8, |i| {
                i.set_input_num_entries(n as u32)
            })
            .ok();
        let out = mlx5_prm::ManagePagesOut::new_unchecked(&r.out[..]);
        let k = out.output_num_entries() as usize;
        assert!(k <= n, "never more than asked for");
        let back: Vec<u64> = out.pas_iter().take(k).collect();
        let mut lent = self.pages.borrow_mut();
        for p in &back {
            let at = lent
                .iter()
                .position(|q| q == p)
                .expect("a page the driver lent");
            lent.swap_remove(at);
        }
        back
    }

    /// QUERY_PAGES then MANAGE_PAGES give (mlx5_satisfy_startup_pages): `boot` or init.
    pub fn satisfy_startup_pages(&self, boot: bool) -> i32 {
        let stage = if boot {
            cmd::QueryPagesOpMod::Boot
        } else {
            cmd::QueryPagesOpMod::Init
        };
        let r = self
            .exec::<cmd::QueryPages>(stage, 0, 0, |i| i.set_embedded_cpu_function(false))
            .ok();
        let q = mlx5_prm::QueryPagesOut::new_unchecked(&r.out[..]);
        assert_eq!(q.function_id(), 0);
        let n = q.num_pages() as i32;
        if n > 0 {
            self.give(n as usize).ok();
        }
        n
    }

    /// QUERY_HCA_CAP of one page, raw (op_mod = type << 1 | current).
    pub fn query_cap_raw(&self, op_mod: u16) -> Reply {
        let mut buf = vec![0u8; super::in_size::<cmd::QueryHcaCap>()];
        buf[..2].copy_from_slice(&cmd::QueryHcaCap::OPCODE.to_be_bytes());
        buf[6..8].copy_from_slice(&op_mod.to_be_bytes());
        self.host.exec(&buf, super::out_size::<cmd::QueryHcaCap>())
    }

    /// The general page, current (`true`) or maximum.
    pub fn general(&self, current: bool) -> CmdHcaCap {
        let op = if current {
            cmd::QueryHcaCapOpMod::GeneralCur
        } else {
            cmd::QueryHcaCapOpMod::GeneralMax
        };
        let r = self.simple::<cmd::QueryHcaCap>(op).ok();
        let mut c = CmdHcaCap::zeroed();
        c.storage_mut().copy_from_slice(&r.out[0x10..0x110]);
        c
    }

    /// The page-request EQE's data: (release_all, function_id, num_pages).
    pub fn page_request(e: &Eqe) -> (bool, u16, i32) {
        assert_eq!(e.event_type(), Ok(EventType::PageRequest));
        let ev = PagesReqEvent::new_unchecked(&e.storage()[0x20..0x3c]);
        assert!(!ev.ec_function());
        (ev.release_all(), ev.function_id(), ev.num_pages() as i32)
    }
}

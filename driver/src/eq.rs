//! The asynchronous event queue: a ring of 64-byte EQEs the device writes, read by the
//! owner-bit rule, and armed through the EQ doorbell of a UAR page.

use crate::backend::{Backend, Barriers, DmaAlloc, DmaBuf, Mmio};
use crate::cmd::CmdQueue;
use crate::error::Result;
use crate::ring::low_bits;
use mlx5_prm::cmd::{CreateEq, DestroyEq};
use mlx5_prm::rt::View;
use mlx5_prm::{
    CreateEqOut, Eqe, EventType, PagesReqEvent, PpsEvent, UarPage, UarPageEqArmWord,
    UarPageEqUpdateWord,
};
use std::mem::ManuallyDrop;

/// Bytes per EQE.
const EQE: usize = 64;
/// The consumer index as the EQ doorbells carry it: modulo 2^24 (the fields' width).
const CI_MASK: u32 = low_bits(UarPage::EQ_ARM_CI);
const _: () = assert!(UarPage::EQ_UPDATE_CI.width == UarPage::EQ_ARM_CI.width);

/// An event the driver acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// The device wants `n` more pages (positive) or returns `-n` (negative).
    PageRequest {
        /// The function concerned.
        function_id: u16,
        /// Signed page count.
        num_pages: i32,
    },
    /// A port changed state; `sub_type` is the new state (the PRM's port change subtype).
    PortChange {
        /// Port number, from 1.
        port: u8,
        /// The event's sub-type.
        sub_type: u8,
    },
    /// A CQ went to error: the device had a completion for it and no room (`syndrome` 1,
    /// overrun) or could not write its ring (2, access violation). It writes no more CQEs;
    /// the queues that complete to it must be recreated (e.g.
    /// [`EthQueues::recover`](crate::eth::EthQueues::recover)).
    CqError {
        /// The CQ.
        cqn: u32,
        /// The PRM's `cq_error_syndrome`, raw.
        syndrome: u8,
    },
    /// A CQ armed for notification has a new completion (the CQ must be armed again for the
    /// next one).
    Completion {
        /// The CQ.
        cqn: u32,
    },
    /// Commands completed (slot bitmask).
    CommandCompletion {
        /// Completed slots.
        vector: u32,
    },
    /// A PPS pin saw (input) or emitted (output) a pulse, and the pin's events are on
    /// (MTPPSE); convert with [`Clock::pps_event`](crate::clock::Clock::pps_event).
    Pps {
        /// The pin.
        pin: u8,
        /// When, in the device's clock format (internal timer ticks, or real-time seconds
        /// and nanoseconds).
        time_stamp: u64,
    },
    /// Any other event, by type.
    Other {
        /// The raw event type.
        event_type: u8,
    },
}

/// An EQ and its ring.
///
/// The ring is freed only after DESTROY_EQ succeeded ([`EventQueue::destroy`]): dropped any
/// other way (a plain drop, [`EventQueue::abandon`], an unwinding owner) the EQ still exists in
/// the device, which writes an EQE into the ring on its next event, so the ring goes to
/// quarantine.
pub struct EventQueue {
    /// Taken out only by `drop`.
    ring: ManuallyDrop<DmaBuf>,
    log_size: u8,
    eqn: u8,
    uar_offset: usize,
    consumer: u32,
    /// DESTROY_EQ succeeded: the device no longer writes the ring, which may be freed.
    destroyed: bool,
}

impl Drop for EventQueue {
    fn drop(&mut self) {
        // SAFETY: `ring` is taken once, here, and never used again.
        let ring = unsafe { ManuallyDrop::take(&mut self.ring) };
        if !self.destroyed {
            ring.quarantine();
        }
    }
}

impl EventQueue {
    /// Creates an EQ of `1 << log_size` entries on UAR page `uar` that receives `events`.
    pub fn create<B: Backend>(
        be: &B,
        cmdq: &mut CmdQueue,
        uar: u32,
        log_size: u8,
        events: &[EventType],
    ) -> Result<EventQueue> {
        let bytes = (EQE << log_size).max(4096);
        let ring = be.dma().alloc(bytes, 4096)?;
        // Owner bits start at 1: on the first pass the device writes 0 into valid entries.
        for i in 0..(1usize << log_size) {
            let mut e = Eqe::new_unchecked(ring.slice(i * EQE, EQE));
            e.set_owner(true);
        }
        let pages: Vec<u64> = (0..bytes / 4096)
            .map(|p| ring.iova() + (p * 4096) as u64)
            .collect();
        let mask = events.iter().fold(0u64, |m, e| m | 1u64 << e.raw());
        // On failure the EQ does not exist, if the device told the truth: the ring is freed
        // when the command never reached it, quarantined otherwise (a device that made the
        // EQ and reported a failure writes events to it on its own).
        // SAFETY: the only memory the command gives the device is `ring`, which is kept until
        // DESTROY_EQ succeeds (the EventQueue's drop quarantines it otherwise) and freed below
        // only when the command never reached the device.
        let out = unsafe {
            cmdq.run::<CreateEq, _, _>(be, 0, pages.len() * 8, 0, |i| {
                let mut ctx = i.eq_context_entry_mut();
                ctx.try_set_log_eq_size(log_size)?;
                ctx.try_set_uar_page(uar)?;
                ctx.set_log_page_size(0);
                i.set_event_bitmask(0, mask)?;
                for (k, p) in pages.iter().enumerate() {
                    i.set_pas(k, *p)?;
                }
                Ok(())
            })
        };
        let out = match out {
            Ok(out) => out,
            Err(e) => {
                if e.reached_device() {
                    ring.quarantine();
                }
                return Err(e);
            }
        };
        // The EQ exists from here on: should its number not be readable, the ring is the
        // device's for good.
        let eqn = match CreateEqOut::new_checked(&out[..]) {
            Ok(view) => view.eq_number(),
            Err(e) => {
                ring.quarantine();
                return Err(e.into());
            }
        };
        let eq = EventQueue {
            ring: ManuallyDrop::new(ring),
            log_size,
            eqn,
            uar_offset: uar as usize * 4096,
            consumer: 0,
            destroyed: false,
        };
        eq.arm(be);
        Ok(eq)
    }

    /// The EQ number.
    pub fn eqn(&self) -> u8 {
        self.eqn
    }

    /// Tells the device how far the driver has read and asks for the next interrupt (the arm
    /// doorbell).
    pub fn arm<B: Backend>(&self, be: &B) {
        let word = UarPageEqArmWord::new()
            .eq_arm_eqn(self.eqn)
            .eq_arm_ci(self.consumer & CI_MASK);
        B::Barriers::to_device();
        // SAFETY: the EQ's arm doorbell: the device may write the entries read so far again,
        // all in the ring this value keeps (or quarantines).
        unsafe {
            be.mmio()
                .write32(self.uar_offset + UarPageEqArmWord::OFFSET, word.bits())
        };
    }

    /// Tells the device how far the driver has read without arming (the update doorbell), so
    /// that it may reuse those entries while the driver reads on.
    fn update<B: Backend>(&self, be: &B) {
        let word = UarPageEqUpdateWord::new()
            .eq_update_eqn(self.eqn)
            .eq_update_ci(self.consumer & CI_MASK);
        B::Barriers::to_device();
        // SAFETY: as for the arm doorbell.
        unsafe {
            be.mmio()
                .write32(self.uar_offset + UarPageEqUpdateWord::OFFSET, word.bits())
        };
    }

    /// Reads the EQEs the device has written since the last call, at most one ring's worth
    /// (a device that keeps writing cannot hold the caller here; the rest waits for the next
    /// call), then re-arms. Every half ring read, the consumer index goes to the device with
    /// the update doorbell, so that it need not stop for want of free entries.
    pub fn poll<B: Backend>(&mut self, be: &B) -> Vec<Event> {
        let mut events = Vec::new();
        let n = 1u32 << self.log_size;
        let half = (n / 2).max(1);
        for read in 1..=n {
            let at = (self.consumer & (n - 1)) as usize * EQE;
            let eqe = Eqe::new_unchecked(self.ring.slice(at, EQE));
            // Valid when the owner bit equals the pass parity of the consumer index.
            let pass = (self.consumer >> self.log_size) & 1 == 1;
            if eqe.owner() != pass {
                break;
            }
            B::Barriers::from_device();
            let data = eqe.event_data();
            let event = match eqe.event_type() {
                Ok(EventType::PageRequest) => {
                    // Laid out as pages_req_event, which is not a member of the union.
                    let p = PagesReqEvent::new_unchecked(data.into_inner());
                    Event::PageRequest {
                        function_id: p.function_id(),
                        num_pages: p.num_pages() as i32,
                    }
                }
                Ok(EventType::PortChange) => Event::PortChange {
                    port: data.port_state_change_event().port_num(),
                    sub_type: eqe.event_sub_type(),
                },
                Ok(EventType::CqError) => {
                    let e = data.cq_error();
                    Event::CqError {
                        cqn: e.cqn(),
                        syndrome: e.syndrome_raw(),
                    }
                }
                Ok(EventType::Comp) => Event::Completion {
                    cqn: data.comp_event().cq_number(),
                },
                Ok(EventType::Cmd) => Event::CommandCompletion {
                    vector: data.cmd_inter_comp_event().command_completion_vector(),
                },
                Ok(EventType::PpsEvent) => {
                    // Laid out as pps_event, not a member of the union either.
                    let p = PpsEvent::new_unchecked(data.into_inner());
                    Event::Pps {
                        pin: p.pin(),
                        time_stamp: p.time_stamp(),
                    }
                }
                _ => Event::Other {
                    event_type: eqe.event_type_raw(),
                },
            };
            events.push(event);
            self.consumer = self.consumer.wrapping_add(1);
            if read % half == 0 && read < n {
                self.update(be);
            }
        }
        if !events.is_empty() {
            self.arm(be);
        }
        events
    }

    /// Destroys the EQ and frees its ring. If DESTROY_EQ fails the device may still write the
    /// ring, so it goes to quarantine (on drop).
    pub fn destroy<B: Backend>(mut self, be: &B, cmdq: &mut CmdQueue) -> Result<()> {
        let eqn = self.eqn;
        // SAFETY: destroys the EQ this value owns (through the queue that made it, as
        // `CmdQueue::new` requires); its ring is freed only once the device confirmed it.
        let r = unsafe {
            cmdq.run::<DestroyEq, _, _>(be, 0, 0, 0, |i| {
                i.set_eq_number(eqn);
                Ok(())
            })
        };
        self.destroyed = r.is_ok();
        r.map(drop)
    }

    /// Gives the EQ up without a command (the device may still write the ring): quarantined,
    /// as a plain drop does; the name says so at the call site.
    pub fn abandon(self) {
        drop(self);
    }
}

const _: () = assert!(<Eqe<[u8; 64]> as View<[u8; 64]>>::SIZE == EQE);

//! Event queues as the device drives them: writing 64-byte EQEs into the ring in DMA memory
//! with the pass-parity owner bit, following the consumer index the driver reports through the
//! EQ doorbells, arming (which gates only the interrupt, never the write), and detecting
//! overrun.
//!
//! Asynchronous events (page requests, port changes, command completions, PPS events) go to
//! the EQ that subscribes to their type in its event bitmask (the lowest-numbered one if
//! several do);
//! completion events go to the EQ a CQ names, whatever its bitmask. A command's completion is
//! announced only on an EQ that already took command events when the command was handed to
//! the device: the CREATE_EQ that creates that EQ, and any command before it, completes by
//! ownership alone, as Linux (which polls those) expects.
//!
//! Every interrupt the device raises goes through [`raise_interrupt`]: an armed EQ that gets
//! an EQE raises its MSI-X vector (`eqc.intr`) once and disarms until the driver arms it again.

use crate::dma::DmaSpace;
use crate::model::Model;
use crate::pages::Stage;
use crate::pas::PageList;
use mlx5_prm::rt::BytesMut as _;
use mlx5_prm::{
    CmdInterCompEvent, CompEvent, Eqc, Eqe, EventType, PagesReqEvent, PortChangeSubtype,
    PortStateChangeEvent,
};
use std::sync::atomic::{fence, Ordering};

/// Size of one EQE.
pub(crate) const EQE_SIZE: u64 = mlx5_prm::EQE_SIZE;
/// Offset of the event data in an EQE.
const EVENT_DATA: usize = Eqe::EVENT_DATA.bit_offset / 8;
/// Length of the event data.
const EVENT_DATA_LEN: usize = 28;
/// Byte holding the owner bit; written last.
const OWNER_BYTE: usize = Eqe::OWNER.bit_offset / 8;

/// One event queue.
#[derive(Debug, Clone)]
pub(crate) struct Eq {
    /// The context as created (QUERY_EQ fills in the live fields).
    pub ctx: Eqc,
    /// Subscribed event types: bit n of word n / 64.
    pub bitmask: [u64; 4],
    pub ring: PageList,
    pub log_size: u8,
    pub uar: u32,
    pub intr: u16,
    /// Overrun ignore: keep writing over unconsumed entries.
    pub oi: bool,
    /// Entries written so far (the owner bit of entry p is (p >> log_size) & 1).
    pub producer: u32,
    /// Consumer index last reported by a doorbell (24 bits).
    pub consumer: u32,
    /// Armed: the next EQE raises an interrupt.
    pub armed: bool,
    /// EQEs dropped because the ring was full.
    pub overruns: u64,
}

impl Eq {
    /// True when the EQ subscribes to `event_type`.
    pub fn subscribed(&self, event_type: u8) -> bool {
        self.bitmask[usize::from(event_type / 64)] >> (event_type % 64) & 1 == 1
    }

    /// Entries written and not yet consumed.
    pub fn outstanding(&self) -> u32 {
        self.producer.wrapping_sub(self.consumer) & 0xff_ffff
    }
}

/// What became of an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Posted {
    /// Written to the ring.
    Written,
    /// No EQ takes this event.
    NoEq,
    /// The ring was full and the EQ does not ignore overruns: dropped and counted.
    Overrun,
    /// The ring's page is no longer mapped: dropped and counted as a DMA fault.
    DmaFault,
}

/// Writes one EQE into EQ `eqn` and raises its interrupt if armed.
fn write(
    m: &mut Model,
    dma: &DmaSpace,
    eqn: u32,
    event_type: u8,
    sub_type: u8,
    data: &[u8],
) -> Posted {
    let Ok(eq) = m.eqs.get_mut(eqn) else {
        return Posted::NoEq;
    };
    let size = 1u32 << eq.log_size;
    if !eq.oi && eq.outstanding() >= size {
        eq.overruns += 1;
        return Posted::Overrun;
    }
    let slot = u64::from(eq.producer & (size - 1));
    let window = eq
        .ring
        .addr(slot * EQE_SIZE, EQE_SIZE)
        .and_then(|addr| dma.window(addr, EQE_SIZE as usize));
    let Some(mut window) = window else {
        m.dma_faults += 1;
        return Posted::DmaFault;
    };
    let mut eqe = Eqe::zeroed();
    eqe.set_event_type_raw(event_type);
    eqe.set_event_sub_type(sub_type);
    eqe.set_owner((eq.producer >> eq.log_size) & 1 == 1);
    let bytes = eqe.storage_mut();
    let n = data.len().min(EVENT_DATA_LEN);
    bytes[EVENT_DATA..EVENT_DATA + n].copy_from_slice(&data[..n]);
    // The body first, then (after a barrier) the dword with the owner bit, so the driver never
    // sees a valid owner bit over a stale body. A whole dword, as the driver polls it: a
    // byte store racing its dword load would be a data race between two threads of this
    // process (the model's threaded mode; `mlx5_prm::rt::shared`).
    let last = OWNER_BYTE & !3;
    window.write_bytes(0, &bytes[..last]);
    fence(Ordering::Release);
    let mut dword = [0u8; 4];
    dword.copy_from_slice(&bytes[last..last + 4]);
    window.write_be32(last, u32::from_be_bytes(dword));
    eq.producer = eq.producer.wrapping_add(1);
    if eq.armed {
        eq.armed = false;
        let vector = eq.intr;
        raise_interrupt(m, vector);
    }
    Posted::Written
}

/// The device raises MSI-X vector `vector`: the one place interrupts come from, counted per
/// vector (and delivered wherever the device's interrupt sink sends them).
pub(crate) fn raise_interrupt(m: &mut Model, vector: u16) {
    m.interrupts.raise(vector);
}

/// The EQ that takes command-completion events now, if any (the lowest-numbered subscriber).
pub(crate) fn command_eq(m: &Model) -> Option<u32> {
    m.eqs
        .iter()
        .find(|(_, eq)| eq.subscribed(EventType::Cmd.raw()))
        .map(|(n, _)| n)
}

/// Posts an asynchronous event to the first EQ subscribed to its type.
pub(crate) fn post(
    m: &mut Model,
    dma: &DmaSpace,
    event_type: u8,
    sub_type: u8,
    data: &[u8],
) -> Posted {
    let eqn = m
        .eqs
        .iter()
        .find(|(_, eq)| eq.subscribed(event_type))
        .map(|(n, _)| n);
    match eqn {
        Some(eqn) => write(m, dma, eqn, event_type, sub_type, data),
        None => Posted::NoEq,
    }
}

/// A page-request event: the device wants `num_pages` more pages (negative: offers them back).
pub(crate) fn page_request(m: &mut Model, dma: &DmaSpace, num_pages: i32) -> Posted {
    m.pages.request(num_pages);
    post_page_request(m, dma, num_pages, false)
}

/// Writes a page-request EQE for function 0 without changing the demand: `num_pages` more
/// (or back), or, with `release_all`, the news that the device let go of all its pages.
pub(crate) fn post_page_request(
    m: &mut Model,
    dma: &DmaSpace,
    num_pages: i32,
    release_all: bool,
) -> Posted {
    let mut data = [0u8; EVENT_DATA_LEN];
    let mut ev = PagesReqEvent::new_unchecked(&mut data[..]);
    ev.set_ec_function(false);
    ev.set_release_all(release_all);
    ev.set_function_id(0);
    ev.set_num_pages(num_pages as u32);
    post(m, dma, EventType::PageRequest.raw(), 0, &data)
}

/// An EQ for page requests was just created: if the device still wants regular pages (Linux
/// never asks for them with QUERY_PAGES), it asks for them now.
pub(crate) fn announce_page_demand(m: &mut Model, dma: &DmaSpace) -> Posted {
    let wanted = m.pages.wanted(Stage::Regular);
    if wanted == 0 {
        return Posted::NoEq;
    }
    post_page_request(m, dma, wanted, false)
}

/// A port state change event for `port` (numbered from 1).
pub(crate) fn port_change(m: &mut Model, dma: &DmaSpace, port: u8, up: bool) -> Posted {
    // Every change of the operational state comes through here: the physical layer counters
    // count the downs and the up time.
    m.port.counters.link_changed(up);
    let mut data = [0u8; EVENT_DATA_LEN];
    PortStateChangeEvent::new_unchecked(&mut data[..]).set_port_num(port & 0xf);
    let sub = if up {
        PortChangeSubtype::Active
    } else {
        PortChangeSubtype::Down
    };
    post(m, dma, EventType::PortChange.raw(), sub.raw(), &data)
}

/// A command-completion event for the entries in `vector`, on EQ `eqn` (the command EQ as it
/// was when the entries were handed over: see [`command_eq`]). Nothing if that EQ is gone.
pub(crate) fn command_completion(m: &mut Model, dma: &DmaSpace, eqn: u32, vector: u32) -> Posted {
    let mut data = [0u8; EVENT_DATA_LEN];
    CmdInterCompEvent::new_unchecked(&mut data[..]).set_command_completion_vector(vector);
    write(m, dma, eqn, EventType::Cmd.raw(), 0, &data)
}

/// A completion event for CQ `cqn`, if the CQ is armed: written to the CQ's EQ, and the CQ
/// disarms until the driver arms it again.
pub(crate) fn completion(m: &mut Model, dma: &DmaSpace, cqn: u32) -> Posted {
    let Ok(cq) = m.cqs.get_mut(cqn) else {
        return Posted::NoEq;
    };
    if !cq.armed {
        return Posted::NoEq;
    }
    cq.armed = false;
    let eqn = cq.eqn;
    let mut data = [0u8; EVENT_DATA_LEN];
    CompEvent::new_unchecked(&mut data[..]).set_cq_number(cqn);
    write(m, dma, eqn, EventType::Comp.raw(), 0, &data)
}

/// An EQ doorbell write to UAR page `uar`: `value` is eqn << 24 | consumer index. Updates the
/// consumer index and, for the arm doorbell, arms the EQ, which fires at once if entries are
/// already waiting. Doorbells for unknown EQs, or through another UAR page than the EQ's, are
/// ignored.
pub(crate) fn eq_doorbell(m: &mut Model, uar: u32, value: u32, arm: bool) {
    let (eqn, ci) = (value >> 24, value & 0xff_ffff);
    let Ok(eq) = m.eqs.get_mut(eqn) else {
        return;
    };
    if eq.uar != uar {
        return;
    }
    eq.consumer = ci;
    if arm {
        eq.armed = true;
        if eq.outstanding() > 0 {
            eq.armed = false;
            let vector = eq.intr;
            raise_interrupt(m, vector);
        }
    }
}

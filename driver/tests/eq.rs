//! The async EQ's doorbells as the device receives them: the words the driver builds with the
//! generated word builders (`UarPageEqArmWord`, `UarPageEqUpdateWord`) carry the EQ number and
//! the consumer index where the model decodes them, the update doorbell goes out every half
//! ring while a poll reads on, and a full ring is read in one poll with nothing lost.

use mlx5_driver::backend::sim::{SimBackend, SimDma};
use mlx5_driver::backend::{Backend, Mmio};
use mlx5_driver::eq::Event;
use mlx5_driver::{Hca, HcaConfig};
use mlx5_prm::{UarPageEqArmWord, UarPageEqUpdateWord};
use mlx5_sim::{Config, Device};
use std::cell::RefCell;
use std::sync::Arc;

/// The model's backend, recording every 32-bit MMIO write (offset, value).
struct Recording {
    inner: SimBackend,
    writes: RefCell<Vec<(usize, u32)>>,
}

impl Mmio for Recording {
    fn len(&self) -> usize {
        self.inner.mmio().len()
    }
    fn read32(&self, offset: usize) -> u32 {
        self.inner.mmio().read32(offset)
    }
    unsafe fn write32(&self, offset: usize, value: u32) {
        self.writes.borrow_mut().push((offset, value));
        // SAFETY: forwarded; the driver's promise.
        unsafe { self.inner.mmio().write32(offset, value) }
    }
    unsafe fn write64(&self, offset: usize, value: u64) {
        // SAFETY: forwarded; the driver's promise.
        unsafe { self.inner.mmio().write64(offset, value) }
    }
}

impl Backend for Recording {
    type Mmio = Self;
    type Dma = SimDma;
    type Events = <SimBackend as Backend>::Events;
    type Barriers = <SimBackend as Backend>::Barriers;
    fn mmio(&self) -> &Self {
        self
    }
    fn dma(&self) -> &SimDma {
        self.inner.dma()
    }
    fn events(&self) -> &Self::Events {
        self.inner.events()
    }
}

const LOG_EQ: u8 = 3;

fn up() -> (Hca<Recording>, Arc<Device>) {
    let (inner, device) = SimBackend::new(Config::default());
    let backend = Recording {
        inner,
        writes: RefCell::new(Vec::new()),
    };
    let config = HcaConfig {
        eq_log_size: LOG_EQ,
        ..HcaConfig::default()
    };
    (Hca::bring_up(backend, &config).unwrap(), device)
}

/// The EQ doorbells written since the last call: `(arm, eqn, consumer index)` each.
fn eq_doorbells(hca: &Hca<Recording>) -> Vec<(bool, u32, u32)> {
    let uar_page = hca.info().uar as usize * 4096;
    hca.backend()
        .writes
        .borrow_mut()
        .drain(..)
        .filter_map(|(offset, value)| {
            let arm = match offset.checked_sub(uar_page) {
                Some(UarPageEqArmWord::OFFSET) => true,
                Some(UarPageEqUpdateWord::OFFSET) => false,
                _ => return None,
            };
            // Decoded by hand, the way the model reads them (EQN in the top byte).
            Some((arm, value >> 24, value & 0xff_ffff))
        })
        .collect()
}

#[test]
fn a_full_ring_is_read_in_one_poll_with_an_update_halfway_and_an_arm_at_the_end() {
    let (hca, device) = up();
    let entries = 1u32 << LOG_EQ;
    let eqn = u32::from(hca.info().eqn);
    eq_doorbells(&hca);
    for round in 0..3 {
        for k in 0..entries {
            device.raise_port_change(1, k % 2 == 0);
        }
        let events = hca.poll_events().unwrap();
        assert_eq!(events.len(), entries as usize, "round {round}");
        assert!(events
            .iter()
            .all(|e| matches!(e, Event::PortChange { port: 1, .. })));
        let rung = eq_doorbells(&hca);
        assert_eq!(rung.len(), 2, "round {round}: {rung:x?}");
        let (update, arm) = (rung[0], rung[1]);
        assert_eq!((update.0, update.1), (false, eqn), "{rung:x?}");
        assert_eq!((arm.0, arm.1), (true, eqn), "{rung:x?}");
        assert_eq!(arm.2 - update.2, entries / 2, "halfway, then the end");
        assert_eq!(device.eq_overruns(hca.info().eqn), Some(0));
    }
}

#[test]
fn a_poll_with_nothing_new_rings_nothing_and_a_short_batch_only_arms() {
    let (hca, device) = up();
    eq_doorbells(&hca);
    assert!(hca.poll_events().unwrap().is_empty());
    assert!(eq_doorbells(&hca).is_empty());
    device.raise_port_change(1, false);
    assert_eq!(hca.poll_events().unwrap().len(), 1);
    let rung = eq_doorbells(&hca);
    assert_eq!(rung.len(), 1, "{rung:x?}");
    assert!(rung[0].0, "the arm doorbell");
}

/// An EQ dropped without DESTROY_EQ still exists in the device, which writes its ring on the
/// next event: the ring must go to quarantine, not back to the allocator (where the model's
/// next EQE would hit freed memory, a DMA fault).
#[test]
fn an_eq_dropped_without_destroy_keeps_its_ring_in_quarantine() {
    use mlx5_driver::backend::DmaAlloc;
    use mlx5_driver::cmd::CmdQueue;
    use mlx5_driver::eq::EventQueue;
    use mlx5_driver::pages::Pages;
    use mlx5_prm::cmd::{AllocUar, EnableHca, InitHca, QueryPagesOpMod};
    use mlx5_prm::{AllocUarOut, EventType};
    use std::time::Duration;

    let (be, device) = SimBackend::new(Config::default());
    let dma = be.dma().clone();
    // SAFETY: a model of its own, driven by this queue alone, with this backend only.
    let mut q = unsafe { CmdQueue::new(&be, Duration::from_millis(500), 16) }.unwrap();
    let mut pages = Pages::new(1 << 16);
    // SAFETY: ENABLE_HCA, and INIT_HCA and ALLOC_UAR below, name no memory, and nothing is
    // torn down (the queue and the pages are quarantined when they drop).
    unsafe { q.run::<EnableHca, _, _>(&be, 0, 0, 0, |_| Ok(())) }.unwrap();
    pages.satisfy(&be, &mut q, QueryPagesOpMod::Boot).unwrap();
    pages.satisfy(&be, &mut q, QueryPagesOpMod::Init).unwrap();
    // SAFETY: as above.
    unsafe { q.run::<InitHca, _, _>(&be, 0, 0, 0, |_| Ok(())) }.unwrap();
    pages
        .satisfy(&be, &mut q, QueryPagesOpMod::Regular)
        .unwrap();
    // SAFETY: as above.
    let out = unsafe { q.run::<AllocUar, _, _>(&be, 0, 0, 0, |_| Ok(())) }.unwrap();
    let uar = AllocUarOut::new_checked(&out[..]).unwrap().uar();

    let before = dma.quarantined();
    let eq = EventQueue::create(&be, &mut q, uar, 4, &[EventType::PortChange]).unwrap();
    drop(eq);
    let after = dma.quarantined();
    assert_eq!(
        after.buffers,
        before.buffers + 1,
        "the ring of an EQ the device still has must be quarantined"
    );
    device.raise_port_change(1, false);
    assert_eq!(
        device.dma_faults(),
        0,
        "the device wrote an EQE to freed memory"
    );
}

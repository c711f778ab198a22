//! Bring-up and teardown on the device model, inline and threaded: the exact command
//! sequence, the capabilities found, and every firmware page given back.

mod common;

use common::bring_up_sequence;
use mlx5_driver::backend::sim::SimBackend;
use mlx5_driver::{Hca, HcaConfig};
use mlx5_prm::cmd::*;
use mlx5_prm::rt::Command;
use mlx5_sim::{Config, Mode};

fn run(mode: Mode) {
    let (backend, device) = SimBackend::new(Config {
        mode,
        ..Config::default()
    });
    let hca = Hca::bring_up(backend, &HcaConfig::default()).expect("bring-up");
    let sent: Vec<(u16, u16)> = device
        .commands()
        .iter()
        .map(|c| (c.opcode, c.op_mod))
        .collect();
    assert_eq!(sent, bring_up_sequence());
    assert!(device.commands().iter().all(|c| c.status == 0));
    let caps = hca.info().caps();
    assert_eq!(caps.num_ports(), 1);
    assert!(caps.log_max_qp() >= 16);
    assert_eq!(device.pages_held(), hca.pages_held());
    assert!(hca.pages_held() > 0);
    hca.teardown().expect("teardown");
    assert_eq!(device.pages_held(), 0, "every firmware page comes back");
    let after: Vec<u16> = device
        .commands()
        .iter()
        .skip(sent.len())
        .map(|c| c.opcode)
        .collect();
    let take = ManagePages::OPCODE;
    assert_eq!(
        after
            .iter()
            .copied()
            .filter(|&o| o != take)
            .collect::<Vec<_>>(),
        [
            DeallocTransportDomain::OPCODE,
            DeallocPd::OPCODE,
            DestroyEq::OPCODE,
            DeallocUar::OPCODE,
            TeardownHca::OPCODE,
            DisableHca::OPCODE
        ]
    );
    assert!(
        after.contains(&take),
        "pages are taken back before DISABLE_HCA"
    );
    assert_eq!(device.dma().allocated(), 0, "every DMA buffer is freed");
}

#[test]
fn inline_bring_up_and_teardown() {
    run(Mode::Inline);
}

#[test]
fn threaded_bring_up_and_teardown() {
    run(Mode::Threaded);
}

#[test]
fn commands_complete_by_event_once_the_eq_exists() {
    let (backend, device) = SimBackend::new(Config::default());
    let hca = Hca::bring_up(backend, &HcaConfig::default()).unwrap();
    assert!(hca.event_mode());
    let before = device.commands().len();
    hca.query::<QueryAdapter>(0, |_| {})
        .expect("completes by event");
    assert_eq!(device.commands().len(), before + 1);
    // Completion events are consumed by the command path, not reported as events.
    assert!(hca.poll_events().unwrap().is_empty());
    hca.teardown().unwrap();
}

#[test]
fn dropping_the_handle_tears_down() {
    let (backend, device) = SimBackend::new(Config::default());
    {
        let _hca = Hca::bring_up(backend, &HcaConfig::default()).unwrap();
    }
    assert_eq!(device.pages_held(), 0);
    assert_eq!(
        device.commands().last().map(|c| c.opcode),
        Some(DisableHca::OPCODE)
    );
}

#[test]
fn page_requests_arriving_later_are_served() {
    let (backend, device) = SimBackend::new(Config::default());
    let hca = Hca::bring_up(backend, &HcaConfig::default()).unwrap();
    let before = device.pages_held();
    device.request_pages(10);
    device.request_pages(-4);
    let events = hca.poll_events().unwrap();
    assert_eq!(events.len(), 2);
    assert_eq!(device.pages_held(), before + 6);
    assert_eq!(hca.pages_held(), before + 6);
    hca.teardown().unwrap();
    assert_eq!(device.pages_held(), 0);
}

/// The model behind a BAR0 that ends early: what a wrongly sized or truncated mapping would
/// show the driver.
struct ShortBar(SimBackend, usize);

impl mlx5_driver::backend::Mmio for ShortBar {
    fn len(&self) -> usize {
        self.1
    }
    fn read32(&self, offset: usize) -> u32 {
        self.0.read32(offset)
    }
    unsafe fn write32(&self, offset: usize, value: u32) {
        // SAFETY: forwarded; the driver's promise.
        unsafe { self.0.write32(offset, value) }
    }
    unsafe fn write64(&self, offset: usize, value: u64) {
        // SAFETY: forwarded; the driver's promise.
        unsafe { self.0.write64(offset, value) }
    }
}

impl mlx5_driver::backend::Backend for ShortBar {
    type Mmio = Self;
    type Dma = <SimBackend as mlx5_driver::backend::Backend>::Dma;
    type Events = SimBackend;
    type Barriers = mlx5_driver::backend::ModelBarriers;
    fn mmio(&self) -> &Self {
        self
    }
    fn dma(&self) -> &Self::Dma {
        mlx5_driver::backend::Backend::dma(&self.0)
    }
    fn events(&self) -> &SimBackend {
        &self.0
    }
}

/// A UAR page past the end of BAR0 is refused at ALLOC_UAR (its doorbells would be lost),
/// and the half-made HCA is taken down.
#[test]
fn a_uar_page_past_the_bar_is_an_error() {
    let (backend, device) = SimBackend::new(Config::default());
    let e = Hca::bring_up(ShortBar(backend, 2 * 4096), &HcaConfig::default())
        .err()
        .expect("bring-up must fail");
    let text = e.to_string();
    assert!(
        text.contains("alloc_uar") && text.contains("past the end of BAR0 (8192 bytes)"),
        "{text}"
    );
    assert_eq!(
        device.pages_held(),
        0,
        "the failed bring-up gave every page back"
    );
}

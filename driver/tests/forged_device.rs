//! The driver against a device whose writes are forged (`backend::forge`): command outputs,
//! delivery status, tokens, mailboxes, CQEs, EQEs, page-request counts and the
//! initialization segment, at random points. Whatever is forged, the driver must not panic,
//! must not allocate without bound (a counting allocator checks the largest allocation and
//! the peak), must fail with typed errors that name what failed, and must leave nothing
//! mapped outside its quarantine at teardown (see `forged/mod.rs`).
//!
//! The property test runs a few dozen cases in the suite; `PROPTEST_CASES` asks for more, and
//! `FORGE_STATS=1` (with `--no-capture`) prints one line per case: how far it got, the errors
//! and forgeries, and the device's accesses to unmapped memory (which a device that reports a
//! failure it did not have can always cause: the driver frees, and unmaps, what it gave).

mod forged;

use mlx5_driver::backend::forge::{Plan, Sites};
use mlx5_prm::cmd::{CreateCq, ManagePages, QueryPages};
use mlx5_prm::rt::Command;
use mlx5_prm::{CreateCqOut, ManagePagesOut, QueryPagesOut};
use proptest::prelude::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Counts live heap bytes, their peak, and the largest single allocation.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static LARGEST: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed to the system allocator unchanged; the counters are atomics.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(live, Ordering::Relaxed);
        LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's layout, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(live, Ordering::Relaxed);
        LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's layout, passed on.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` came from `alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// The largest allocation a run may make: a mailbox chain or a ring, never sized by a count
/// the device gave.
const LARGEST_ALLOWED: usize = 8 << 20;
/// The peak of live heap bytes (the model's DMA memory included): the page limit plus room.
const PEAK_ALLOWED: usize = forged::MAX_PAGES * 4096 + (192 << 20);

/// The tests share the allocator's counters (`cargo test` runs them on threads of one
/// process): one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn check(decisions: Vec<u8>, sites: Sites) -> Result<forged::Outcome, TestCaseError> {
    check_run(sites, || forged::run(decisions, sites))
}

fn check_planned(plans: Vec<Plan>) -> Result<forged::Outcome, TestCaseError> {
    check_run(Sites(0), || {
        forged::run_planned(Vec::new(), Sites(0), plans)
    })
}

/// Runs `run` alone, with the allocator's counters reset, and checks what it saw.
fn check_run(
    sites: Sites,
    run: impl FnOnce() -> forged::Outcome,
) -> Result<forged::Outcome, TestCaseError> {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    LARGEST.store(0, Ordering::Relaxed);
    PEAK.store(LIVE.load(Ordering::Relaxed), Ordering::Relaxed);
    let base = LIVE.load(Ordering::Relaxed);
    let out = run();
    if std::env::var_os("FORGE_STATS").is_some() {
        eprintln!(
            "stats: sites {:2} forged {:3} errors {:2} received {} completions {} dma faults {} first {:?} {:?}",
            sites.0,
            out.forged,
            out.errors.len(),
            out.received,
            out.completions,
            out.dma_faults,
            out.errors.first(),
            out.recent.first()
        );
    }
    let (largest, peak) = (
        LARGEST.load(Ordering::Relaxed),
        PEAK.load(Ordering::Relaxed) - base,
    );
    prop_assert!(
        out.findings.is_empty(),
        "{:#?}\nerrors: {:#?}\nlast forgeries: {:#?}",
        out.findings,
        out.errors,
        out.recent
    );
    prop_assert!(
        largest <= LARGEST_ALLOWED,
        "an allocation of {largest} bytes; last forgeries: {:#?}",
        out.recent
    );
    prop_assert!(
        peak <= PEAK_ALLOWED,
        "peak heap {peak} bytes; last forgeries: {:#?}",
        out.recent
    );
    Ok(out)
}

/// Decision bytes: mostly 0 (leave the write alone), one in `1..=64` not, so that some runs
/// go deep enough to meet forgeries at every stage.
fn decisions() -> impl Strategy<Value = Vec<u8>> {
    (1u32..=64).prop_flat_map(|rarity| {
        let byte = (0..rarity, any::<u8>()).prop_map(|(r, b)| if r == 0 { b } else { 0 });
        proptest::collection::vec(byte, 0..4096)
    })
}

fn sites() -> impl Strategy<Value = Sites> {
    (1u8..32).prop_map(Sites)
}

/// Without forgeries every step works (so the property below checks something): the one
/// error is the page request beyond the limit the scenario makes on purpose.
#[test]
fn the_scenario_works_on_an_honest_device() {
    let out = check(Vec::new(), Sites::ALL).unwrap();
    assert_eq!(out.forged, 0);
    assert_eq!(out.errors.len(), 1, "{:#?}", out.errors);
    assert!(out.errors[0].contains("the limit is"), "{:#?}", out.errors);
    assert_eq!((out.received, out.completions), (8, 3), "{out:?}");
}

/// The fuzz target's seeds (`fuzz/seeds/forged_device`, decoded as the target decodes its
/// input), the regressions it found among them, run clean.
#[test]
fn fuzz_seeds_run_clean() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/forged_device");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).expect("the seeds") {
        let path = entry.expect("a seed").path();
        let data = std::fs::read(&path).expect("readable");
        let (sites, decisions) = forged::decode(&data);
        let out = forged::run(decisions, sites);
        assert!(out.findings.is_empty(), "{}: {out:#?}", path.display());
        n += 1;
    }
    assert!(n >= 15, "{n} seeds");
}

/// The forge looks at a ring from the entry after the last new one and stops at the first
/// unchanged entry; on an honest device that finds every new CQE and EQE that comparing the
/// whole ring on every look finds.
#[test]
fn looking_from_the_cursor_misses_no_entry() {
    let cursor = forged::run_swept(Vec::new(), Sites::ALL, Vec::new(), None);
    let whole = forged::run_swept(Vec::new(), Sites::ALL, Vec::new(), Some(1));
    assert!(whole.entries > 20, "{whole:?}");
    assert_eq!(cursor.entries, whole.entries);
    // A forgery on every new entry: both ways forge as many.
    let every = vec![1u8; 1 << 16];
    let cursor = forged::run_swept(every.clone(), Sites::CQE, Vec::new(), None);
    let whole = forged::run_swept(every, Sites::CQE, Vec::new(), Some(1));
    assert!(cursor.forged > 0);
    assert_eq!(
        (cursor.entries, cursor.forged),
        (whole.entries, whole.forged)
    );
}

/// A MANAGE_PAGES that gives pages and says it failed (status or delivery status), though
/// the device took them: the driver must not free them while the device may hold them. It
/// asks for them back at teardown (here they all come back and are freed; a device that kept
/// them would have them quarantined).
#[test]
fn pages_given_in_a_command_that_says_it_failed_are_not_freed_under_the_device() {
    let opcode = ManagePages::OPCODE;
    for plan in [
        Plan::Output {
            opcode,
            nth: 0,
            at: 0,
            bytes: vec![0x03],
        },
        Plan::Delivery {
            opcode,
            nth: 0,
            status: 0x02,
        },
    ] {
        let out = check_planned(vec![plan.clone()]).unwrap();
        assert!(
            out.errors[0].contains("manage_pages"),
            "{plan:?}: {:#?}",
            out.errors
        );
    }
    // The same after bring-up, on a page request.
    let plan = Plan::Output {
        opcode,
        nth: 3,
        at: 0,
        bytes: vec![0x03],
    };
    let out = check_planned(vec![plan]).unwrap();
    assert!(
        out.errors
            .iter()
            .any(|e| e.contains("page request: manage_pages")),
        "{:#?}",
        out.errors
    );
}

/// Named hostile values, each answered by a typed error that names the command, with nothing
/// allocated for an absurd count and nothing left behind.
#[test]
fn named_forgeries_give_typed_errors() {
    let byte = |f: mlx5_prm::rt::Field| f.bit_offset / 8;
    let cases = [
        // QUERY_PAGES (boot) asking for 2^31 - 1 pages: refused before anything is allocated.
        (
            Plan::Output {
                opcode: QueryPages::OPCODE,
                nth: 0,
                at: byte(QueryPagesOut::NUM_PAGES),
                bytes: 0x7fff_ffffu32.to_be_bytes().to_vec(),
            },
            "asked for 2147483647 firmware pages",
        ),
        // MANAGE_PAGES (take, the scenario's page request of -4) returning 2^32 - 1 entries.
        (
            Plan::Output {
                opcode: ManagePages::OPCODE,
                nth: 4,
                at: byte(ManagePagesOut::OUTPUT_NUM_ENTRIES),
                bytes: vec![0xff; 4],
            },
            "manage_pages: the device returned an invalid value: returned 4294967295 pages",
        ),
        // CREATE_CQ (the RC one) naming a CQ that does not exist: the QP on it is refused; the
        // CQ's destroy fails, so its ring is kept (quarantined), and the EQ the real CQ still
        // uses cannot go either.
        (
            Plan::Output {
                opcode: CreateCq::OPCODE,
                nth: 2,
                at: byte(CreateCqOut::CQN),
                bytes: vec![0xff; 3],
            },
            "create_qp (opcode 0x500, op_mod 0x0) failed: status 0x05 (bad_res_err)",
        ),
    ];
    for (plan, expected) in cases {
        let out = check_planned(vec![plan.clone()]).unwrap();
        assert!(
            out.errors.iter().any(|e| e.contains(expected)),
            "{plan:?}: {:#?}",
            out.errors
        );
    }
}

/// A page-request EQE forged to ask for 2^31 - 1 pages, or to return 2^31 of them: the
/// request is refused before anything is allocated, the return is cut to what the device
/// holds, and each ends in a typed error; teardown takes every page back.
#[test]
fn page_request_events_with_absurd_counts_are_refused() {
    use mlx5_driver::backend::forge::ForgeBackend;
    use mlx5_driver::backend::sim::SimBackend;
    use mlx5_driver::{Error, Hca, HcaConfig};
    use mlx5_prm::{Eqe, PagesReqEvent};

    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (sim, dev) = SimBackend::new(mlx5_sim::Config::default());
    let hca = Hca::bring_up(
        ForgeBackend::new(sim, Vec::new(), Sites(0)),
        &HcaConfig::default(),
    )
    .unwrap();
    let at = (Eqe::EVENT_DATA.bit_offset + PagesReqEvent::NUM_PAGES.bit_offset) / 8;
    let held = hca.pages_held();
    // More than the device may hold.
    hca.backend().plan(Plan::Eqe {
        at,
        bytes: i32::MAX.to_be_bytes().to_vec(),
    });
    let largest = LARGEST.load(Ordering::Relaxed);
    LARGEST.store(0, Ordering::Relaxed);
    dev.request_pages(1);
    hca.backend().settle();
    match hca.poll_events() {
        Err(Error::PageLimit { requested, .. }) => assert_eq!(requested, i32::MAX as u64),
        other => panic!("{other:?}"),
    }
    assert!(
        LARGEST.load(Ordering::Relaxed) < 1 << 20,
        "allocated for the request"
    );
    LARGEST.fetch_max(largest, Ordering::Relaxed);
    assert_eq!(hca.pages_held(), held);
    // Returning more than it holds: only what it holds is asked back.
    hca.backend().plan(Plan::Eqe {
        at,
        bytes: i32::MIN.to_be_bytes().to_vec(),
    });
    dev.request_pages(-1);
    hca.backend().settle();
    let _ = hca.poll_events();
    assert!(hca.pages_held() <= held);
    assert_eq!(hca.backend().journal().forged().1, 2, "both EQEs forged");
    hca.teardown().unwrap();
    assert_eq!(dev.pages_held(), 0);
}

/// A CREATE_EQ that made the EQ and reports a failure (status or delivery status): the device
/// writes events to the EQ on its own (here the completions of the commands that undo the
/// bring-up), so its ring must not be freed under it.
#[test]
fn an_eq_whose_create_says_it_failed_keeps_its_ring() {
    use mlx5_prm::cmd::CreateEq;
    for plan in [
        Plan::Output {
            opcode: CreateEq::OPCODE,
            nth: 0,
            at: 0,
            bytes: vec![0x03],
        },
        Plan::Delivery {
            opcode: CreateEq::OPCODE,
            nth: 0,
            status: 0x02,
        },
    ] {
        let out = check_planned(vec![plan.clone()]).unwrap();
        assert!(out.errors[0].contains("create_eq"), "{:#?}", out.errors);
        assert_eq!(out.dma_faults, 0, "{plan:?}: the device wrote a freed ring");
    }
}

/// A device that answers every command with another page request (here the model, re-armed
/// after each command by its command observer) must not hold `poll_events` in a loop: one
/// call serves a bounded number of requests, the rest wait for the next.
#[test]
fn a_device_that_asks_for_pages_after_every_command_cannot_hold_the_event_poll() {
    use mlx5_driver::backend::sim::SimBackend;
    use mlx5_driver::hca::MAX_PAGE_REQUESTS;
    use mlx5_driver::{Hca, HcaConfig};
    use std::sync::atomic::AtomicU32;
    use std::sync::{Arc, Weak};

    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (be, dev) = SimBackend::new(mlx5_sim::Config::default());
    let hca = Hca::bring_up(be, &HcaConfig::default()).unwrap();
    // Re-armed after each command, up to a bound so that a driver without one still ends.
    let rearmed = Arc::new(AtomicU32::new(0));
    let (weak, count): (Weak<mlx5_sim::Device>, _) = (Arc::downgrade(&dev), rearmed.clone());
    dev.set_command_observer(Some(Arc::new(move |_| {
        if count.fetch_add(1, Ordering::Relaxed) < 5000 {
            if let Some(d) = weak.upgrade() {
                d.faults().page_request_storm(1, 1);
            }
        }
    })));
    dev.request_pages(1);
    dev.faults().page_request_storm(1, 1);
    let before = hca.commands_run();
    let served = hca.poll_events().unwrap();
    let sent = hca.commands_run() - before;
    assert!(
        sent <= MAX_PAGE_REQUESTS as u64 && served.len() <= MAX_PAGE_REQUESTS,
        "one poll sent {sent} commands and returned {} events",
        served.len()
    );
    // The next call goes on where this one stopped.
    let more = hca.poll_events().unwrap();
    assert!(!more.is_empty());
    dev.set_command_observer(None);
    hca.teardown().unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 48,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn forged_device_memory_is_survived(decisions in decisions(), sites in sites()) {
        check(decisions, sites)?;
    }
}

/// The forging wrapper passes the quarantine through: after a function reset, what a failed
/// destroy left there is released to the model's allocator and unmapped (`teardown.rs` checks
/// the same without the wrapper).
#[test]
fn the_wrapper_releases_the_quarantine_after_a_function_reset() {
    use mlx5_driver::backend::forge::ForgeBackend;
    use mlx5_driver::backend::sim::SimBackend;
    use mlx5_driver::backend::{Backend, DmaAlloc};
    use mlx5_driver::cq::Cq;
    use mlx5_driver::{Hca, HcaConfig};
    use mlx5_prm::cmd::DestroyCq;

    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (sim, dev) = SimBackend::new(mlx5_sim::Config::default());
    let config = HcaConfig {
        cmd_timeout: std::time::Duration::from_millis(30),
        ..HcaConfig::default()
    };
    let hca = Hca::bring_up(ForgeBackend::new(sim, Vec::new(), Sites(0)), &config).unwrap();
    let cq = Cq::create(&hca, 6).unwrap();
    dev.faults()
        .fail_command(DestroyCq::OPCODE, 0x6, 0xbad0_0006);
    drop(cq);
    let q = hca.quarantined();
    assert!(q.buffers > 0, "the CQ's ring is kept");
    let mapped = dev.dma().regions();
    dev.faults().clear();
    dev.reset();
    // SAFETY: the function reset took every object and page from the device; it writes none
    // of the quarantined memory any more.
    unsafe { hca.backend().dma().release_quarantine() };
    assert_eq!(hca.quarantined().buffers, 0);
    assert_eq!(
        dev.dma().regions(),
        mapped - q.buffers,
        "released but still mapped"
    );
    drop(hca);
    assert_eq!(dev.dma().regions(), 0);
}

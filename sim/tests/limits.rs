//! What a guest can make the model keep is bounded: the command log is a ring, the firmware
//! thread's queue of BAR writes is bounded without blocking the writer forever, and what
//! objects keep (their own size and what they hold of the guest's choosing) is under one
//! budget.

mod common;

use common::dp::Node;
use common::eth::Eth;
use common::wq::Wq;
use common::Host;
use mlx5_prm::cmd;
use mlx5_prm::rt::BytesMut;
use mlx5_prm::{FlowTableType, RqState};
use mlx5_sim::syndrome as syn;
use mlx5_sim::{Link, COMMAND_LOG, STORAGE_BUDGET};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

#[test]
fn the_command_log_keeps_the_most_recent_commands() {
    let host = Host::inline();
    host.simple::<cmd::QueryIssi>(0).ok();
    let extra = 10;
    // ENABLE_HCA fails after the first (already enabled) but is recorded: the cheapest
    // command to repeat, all inline.
    for _ in 0..COMMAND_LOG + extra {
        host.simple::<cmd::EnableHca>(0);
    }
    let log = host.dev.commands();
    assert_eq!(log.len(), COMMAND_LOG);
    assert_eq!(
        host.dev.commands_executed(),
        (COMMAND_LOG + extra + 1) as u64
    );
    assert!(
        log.iter().all(|r| r.opcode == 0x104),
        "the oldest went first"
    );
}

/// A link whose first frame blocks the firmware thread (the thread that transmits it) until
/// the test opens the gate.
#[derive(Default)]
struct Gate {
    open: Mutex<bool>,
    cv: Condvar,
    frames: Mutex<u32>,
}

impl Link for Gate {
    fn transmit(&self, _frame: &[u8]) {
        *self.frames.lock().unwrap() += 1;
        let mut open = self.open.lock().unwrap();
        while !*open {
            open = self.cv.wait(open).unwrap();
        }
    }
}

#[test]
fn a_stuck_firmware_thread_neither_grows_the_queue_nor_blocks_writes_forever() {
    let e = Eth::new(Node::new(Host::threaded()), &[[2, 0, 0, 0, 0, 1]]);
    let dev = e.n.dev().clone();
    let gate = Arc::new(Gate::default());
    dev.attach_link(gate.clone());
    let mut hdr = [0u8; 18];
    hdr[..6].copy_from_slice(&[2, 0, 0, 0, 0, 9]);
    e.send(&hdr, 0, 46);
    let t = Instant::now();
    while *gate.frames.lock().unwrap() == 0 {
        assert!(t.elapsed() < Duration::from_secs(10), "no frame sent");
        std::thread::sleep(Duration::from_millis(1));
    }
    // The firmware thread is stuck in the link. EQ doorbells of an EQ that does not exist fill
    // the queue, then each further write waits 100 ms for room and is dropped.
    let uar = e.n.uar as usize * 4096 + 0x48;
    let queue = 1024;
    let t = Instant::now();
    for ci in 0..queue + 3 {
        dev.write32(uar, 0xee00_0000 | ci as u32);
    }
    let waited = t.elapsed();
    assert_eq!(dev.dropped_bar_writes(), 3);
    assert!(
        waited >= Duration::from_millis(300) && waited < Duration::from_secs(5),
        "{waited:?}"
    );
    *gate.open.lock().unwrap() = true;
    gate.cv.notify_all();
    dev.sync();
    assert_eq!(dev.dropped_bar_writes(), 3);
    assert_eq!(dev.tx_frames(), 1);
}

#[test]
fn a_bar_write_visits_only_the_queues_with_work_pending() {
    let e = Eth::new(Node::inline(), &[[2, 0, 0, 0, 0, 1]]);
    let dev = e.n.dev().clone();
    // Many idle CQs: nothing for the device to do on its own.
    let cqs: Vec<_> = (0..200).map(|_| e.n.cq(2, false)).collect();
    dev.tick();
    assert_eq!((dev.objects().cqs, dev.pending_work()), (202, 0));
    // An RQ in ERR: its posted receives are flushed at every visit, so it stays listed ...
    e.post_recv(0, 2048);
    let to = |from: RqState, to: RqState| {
        e.n.host
            .run::<cmd::ModifyRq>(0, 0, 0, |i| {
                i.set_rqn(e.rqn);
                i.set_rq_state(from);
                i.ctx_mut().set_state(to);
            })
            .ok();
    };
    to(RqState::Rdy, RqState::Err);
    assert_eq!(dev.pending_work(), 1);
    e.post_recv(2048, 2048);
    dev.tick();
    assert!(
        e.rcq.poll().is_some() && e.rcq.poll().is_some(),
        "both receives flushed"
    );
    assert_eq!(dev.pending_work(), 1);
    // ... until it leaves ERR: the next visit drops it.
    to(RqState::Err, RqState::Rst);
    dev.tick();
    assert_eq!(dev.pending_work(), 0);
    drop(cqs);
}

const LIM: u8 = 0x8;

/// CREATE_MKEY (MTT) in `pd` with `octwords` octwords of translations, as many as its context's
/// translations_octword_size says.
fn create_mkey(host: &Host, pd: u32, octwords: u32) -> common::Reply {
    host.run::<cmd::CreateMkey>(0, octwords as usize * 16, 0, |i| {
        let mut m = i.memory_key_mkey_entry_mut();
        m.set_pd(pd);
        m.set_access_mode_1_0(1);
        m.set_translations_octword_size(octwords);
        i.set_translations_octword_actual_size(octwords);
    })
}

fn destroy_mkey(host: &Host, index: u32) {
    host.run::<cmd::DestroyMkey>(0, 0, 0, |i| i.set_mkey_index(index))
        .ok();
}

/// Creates mkeys until the storage budget refuses one, largest first (16 MiB, then smaller,
/// down to one octword), so that less than one mkey of one octword is left; returns their
/// indices and the bytes of translations they hold.
fn fill_with_mkeys(host: &Host, pd: u32) -> (Vec<u32>, u64) {
    let (mut keys, mut bytes) = (Vec::new(), 0u64);
    for log in (0..=20).rev().step_by(4) {
        let octwords = 1u32 << log;
        let most = STORAGE_BUDGET / (u64::from(octwords) * 16) + 1;
        let mut refused = false;
        for _ in 0..most {
            let r = create_mkey(host, pd, octwords);
            if r.status() != 0 {
                r.fails(LIM, syn::STORAGE_BUDGET_EXHAUSTED);
                refused = true;
                break;
            }
            keys.push(mlx5_prm::CreateMkeyOut::new_unchecked(&r.out[..]).mkey_index());
            bytes += u64::from(octwords) * 16;
        }
        assert!(refused, "{octwords} octwords: no refusal past the budget");
    }
    (keys, bytes)
}

/// CREATE_CQ of 2^10 64-byte CQEs (16 pages) whose page list names the page at `page` 16
/// times: a list of the guest's choosing, as long as the ring needs.
fn create_cq(host: &Host, eqn: u8, uar: u32, page: u64, dbr: u64) -> common::Reply {
    host.run::<cmd::CreateCq>(0, 16 * 8, 0, |i| {
        let mut c = i.cq_context_mut();
        c.set_log_cq_size(10);
        c.set_uar_page(uar);
        c.set_c_eqn_or_apu_element(eqn.into());
        c.set_dbr_addr(dbr);
        for p in 0..16 {
            i.set_pas(p, page).unwrap();
        }
    })
}

/// CREATE_RQ of 64 WQEs of 64 bytes (one page) completing into `cqn`.
fn create_rq(host: &Host, cqn: u32, pd: u32, dbr: u64) -> u32 {
    let ring = host.alloc(4096, 4096).iova;
    let wq = Wq { cqn, pd, dbr, ring };
    common::eth::id_at(&host.exec(&wq.create_rq(|_| {}), 16).ok())
}

/// CREATE_RQT of `n` entries, all `rqn`.
fn create_rqt(host: &Host, rqn: u32, n: u16) -> common::Reply {
    host.run::<cmd::CreateRqt>(0, usize::from(n) * 4, 0, |i| {
        let mut c = i.rqt_context_mut();
        c.set_rqt_max_size(n);
        c.set_rqt_actual_size(n);
        for k in 0..usize::from(n) {
            i.storage_mut().write_be32(0x110 + 4 * k, rqn);
        }
    })
}

/// What objects keep of a guest's choosing (translations, page lists, RQT entries) is bounded
/// by one budget for the whole model: past it a create or resize is refused with LIM, a
/// destroy makes room again, and a teardown gives all of it back.
#[test]
fn guest_sized_storage_is_bounded_model_wide() {
    let host = Host::inline();
    host.bring_up();
    let uar = host.alloc_uar();
    let pd = host.alloc_pd();
    let (eqn, _ring) = host.create_eq(4, 0, uar, 0);
    let cqn = host.create_cq(eqn, uar, 6);
    let page = host.alloc(4096, 4096);
    let dbr = host.alloc(64, 64);
    let rq = create_rq(&host, cqn, pd, dbr.iova + 8);
    let table = host
        .run::<cmd::CreateFlowTable>(0, 0, 0, |i| {
            i.set_table_type(FlowTableType::NicRx);
            i.flow_table_context_mut().set_log_size(4);
        })
        .ok();
    let table = common::eth::id_at(&table);
    let (keys, bytes) = fill_with_mkeys(&host, pd);
    let used = host.dev.storage_used();
    assert!(bytes < used && used <= STORAGE_BUDGET && used > STORAGE_BUDGET - 1024);
    // What is left is less than a PD's slot: nothing more fits.
    fill_with_pds(&host);

    // Full: every kind of guest-sized list is refused, and a resize that grows one.
    create_cq(&host, eqn, uar, page.iova, dbr.iova).fails(LIM, syn::STORAGE_BUDGET_EXHAUSTED);
    create_rqt(&host, rq, 4).fails(LIM, syn::STORAGE_BUDGET_EXHAUSTED);
    host.run::<cmd::ModifyCq>(cmd::ModifyCqOpMod::ResizeCq, 16 * 8, 0, |i| {
        i.set_cqn(cqn);
        i.modify_field_select_resize_field_select_mut()
            .resize_field_select_mut()
            .set_resize_field_select(0x1);
        i.cq_context_mut().set_log_cq_size(10);
        for p in 0..16 {
            i.set_pas(p, page.iova).unwrap();
        }
    })
    .fails(LIM, syn::STORAGE_BUDGET_EXHAUSTED);
    // A flow group keeps its match criteria (destination MAC: 6 mask bytes).
    host.run::<cmd::CreateFlowGroup>(0, 0, 0, |i| {
        i.set_table_type(FlowTableType::NicRx);
        i.set_table_id(table);
        i.set_end_flow_index(15);
        i.set_match_criteria_enable(1);
        i.match_criteria_mut().storage_mut()[..6].fill(0xff);
    })
    .fails(LIM, syn::STORAGE_BUDGET_EXHAUSTED);

    // A destroy makes room; what was refused now fits, and the room is taken again.
    destroy_mkey(&host, keys[0]);
    let cq = create_cq(&host, eqn, uar, page.iova, dbr.iova).ok();
    let rqt = common::eth::id_at(&create_rqt(&host, rq, 4).ok());
    create_mkey(&host, pd, 1 << 20).fails(LIM, syn::STORAGE_BUDGET_EXHAUSTED);
    host.run::<cmd::DestroyRqt>(0, 0, 0, |i| i.set_rqtn(rqt))
        .ok();
    let cqn2 = mlx5_prm::CreateCqOut::new_unchecked(&cq.out[..]).cqn();
    host.run::<cmd::DestroyCq>(0, 0, 0, |i| i.set_cqn(cqn2))
        .ok();
    create_mkey(&host, pd, 1 << 20).ok();

    // A teardown drops every object and gives their storage back.
    host.run::<cmd::TeardownHca>(0, 0, 0, |_| {}).ok();
    assert_eq!(host.dev.objects().total(), 0);
    assert_eq!(host.dev.storage_used(), 0, "all of it, nothing else left");
    host.simple::<cmd::InitHca>(0).ok();
    let pd = host.alloc_pd();
    let (_, again) = fill_with_mkeys(&host, pd);
    assert!(again > bytes, "more room than with the other objects");
}

/// Allocates PDs until the storage budget refuses one; returns them.
fn fill_with_pds(host: &Host) -> Vec<u32> {
    // Every object costs more than 64 bytes (its slot and the table's bookkeeping).
    let most = STORAGE_BUDGET / 64;
    let mut pds = Vec::new();
    loop {
        let r = host.simple::<cmd::AllocPd>(0);
        if r.status() != 0 {
            r.fails(LIM, syn::STORAGE_BUDGET_EXHAUSTED);
            return pds;
        }
        pds.push(mlx5_prm::AllocPdOut::new_unchecked(&r.out[..]).pd());
        assert!(pds.len() as u64 <= most, "no refusal after {most} PDs");
    }
}

/// Every object costs the budget its own size, not only the lists it keeps: a guest
/// allocating PDs (the smallest objects, with nothing of its choosing in them) is refused
/// with LIM long before the capabilities' 2^24; a dealloc makes room for one more, and a
/// teardown for all of them again.
#[test]
fn small_objects_are_charged_their_size() {
    let host = Host::inline();
    host.bring_up();
    let pds = fill_with_pds(&host);
    assert!(
        pds.len() > 1 << 20 && pds.len() < 1 << 21,
        "{} PDs",
        pds.len()
    );
    let used = host.dev.storage_used();
    assert!(used <= STORAGE_BUDGET && used > STORAGE_BUDGET - 128);
    host.run::<cmd::DeallocPd>(0, 0, 0, |i| i.set_pd(pds[7]))
        .ok();
    assert!(host.dev.storage_used() < used);
    host.alloc_pd();
    assert_eq!(host.dev.storage_used(), used);
    assert!(fill_with_pds(&host).is_empty());
    host.run::<cmd::TeardownHca>(0, 0, 0, |_| {}).ok();
    assert_eq!(host.dev.storage_used(), 0);
}

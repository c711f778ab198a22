//! The host-facing API a vfio-user server builds on: guest memory mapped as the DMA space,
//! BAR accesses of every size, the interrupt sink, and reset.

mod common;

use common::{Host, Tweak, GUEST_IOVA, GUEST_SIZE};
use mlx5_prm::cmd;
use mlx5_prm::rt::Command;
use mlx5_prm::{CmdDeliveryStatus as D, EventType};
use mlx5_sim::{syndrome as syn, Config, Device, DmaBacking, DmaError, Mode, BAR_SPARE};
use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

const PAGE_REQUEST: u64 = 1 << 0x0b;
const BAD_PARAM: u8 = mlx5_prm::CmdStatus::BadParamErr as u8;
const BAD_SYS_STATE: u8 = mlx5_prm::CmdStatus::BadSysStateErr as u8;

/// Page-aligned host memory the test owns, freed on drop (after the device unmapped it).
struct Buf {
    ptr: *mut u8,
    layout: Layout,
}

impl Buf {
    fn new(len: usize) -> Buf {
        let layout = Layout::from_size_align(len, 4096).unwrap();
        // SAFETY: non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        assert!(!ptr.is_null());
        Buf { ptr, layout }
    }

    fn byte(&self, at: usize) -> u8 {
        assert!(at < self.layout.size());
        // SAFETY: inside the buffer; the device may write it, hence volatile.
        unsafe { self.ptr.add(at).read_volatile() }
    }

    fn snapshot(&self) -> Vec<u8> {
        (0..self.layout.size()).map(|i| self.byte(i)).collect()
    }
}

impl Drop for Buf {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.ptr, self.layout) };
    }
}

fn external() -> Arc<Device> {
    Device::new(Config {
        dma: DmaBacking::External,
        ..Config::default()
    })
}

#[test]
fn guest_memory_carries_bring_up_commands_and_events() {
    let host = Host::external(Mode::Inline);
    assert_eq!(host.dev.dma().alloc(4096, 4096), Err(DmaError::External));
    assert_eq!(host.dev.dma().free(GUEST_IOVA), Err(DmaError::External));
    host.bring_up();
    let uar = host.alloc_uar();
    let (_eqn, ring) = host.create_eq(2, PAGE_REQUEST, uar, 3);
    host.dev.request_pages(5);
    let e = host.eqe(&ring, 0);
    assert_eq!(e.event_type(), Ok(EventType::PageRequest));
    // The EQE is in the host's buffer itself: its owner byte, read through the host address.
    // SAFETY: inside guest RAM, which stays mapped while `host` lives.
    let owner = unsafe { ring.va.add(0x3f).read_volatile() };
    assert_eq!(owner & 1, 0, "first pass: owner 0");
    assert_eq!(host.dev.dma_faults(), 0);
    assert!(host.dev.pages_held() > 0);
}

#[test]
fn iovas_outside_every_region_are_dma_faults() {
    let host = Host::external(Mode::Inline);
    host.simple::<cmd::EnableHca>(0).ok();
    // A mailbox just past the end of guest RAM: the delivery error for an unreachable block.
    let give = {
        let mut b = vec![0u8; 16 + 8 * 100];
        cmd::ManagePages::input(&mut b[..], cmd::ManagePagesOpMod::Give).unwrap();
        b
    };
    let wild = Tweak {
        unmapped_in_chain: true,
        ..Tweak::default()
    };
    assert_eq!(
        host.submit(0, &give, 16, &wild).unwrap().delivery,
        D::FwErr as u8
    );
    assert_eq!(host.dev.dma_faults(), 1);
    // A page given by its host address is no IOVA of the guest.
    let host_addr = host.guest.as_ref().unwrap().alloc(4096, 4096).va as u64;
    host.give(&[host_addr]).fails(BAD_PARAM, syn::PAGE_UNMAPPED);
    host.give(&[GUEST_IOVA + GUEST_SIZE as u64])
        .fails(BAD_PARAM, syn::PAGE_UNMAPPED);
    // A command queue outside guest RAM: the doorbell finds no entry to serve or answer.
    let outside = GUEST_IOVA + GUEST_SIZE as u64 + 0x10_0000;
    host.dev.write32(0x10, (outside >> 32) as u32);
    host.dev.write32(0x14, outside as u32);
    host.dev.write32(0x18, 1);
    assert_eq!(host.dev.dma_faults(), 2);
    assert_eq!(host.dev.commands().len(), 3, "nothing more ran");
}

#[test]
fn mappings_are_checked_and_unmapped_whole() {
    let dev = external();
    let a = Buf::new(0x4000);
    let b = Buf::new(0x1000);
    // SAFETY: (every map below) the buffers outlive `dev`'s use of them; everything mapped
    // is unmapped before they are dropped.
    unsafe {
        dev.map_dma(0x10_0000, a.ptr, 0x4000).unwrap();
        assert_eq!(
            dev.map_dma(0x10_3000, b.ptr, 0x1000),
            Err(DmaError::Overlap(0x10_0000))
        );
        assert_eq!(
            dev.map_dma(0x0f_f000, b.ptr, 0x2000),
            Err(DmaError::Overlap(0x10_0000))
        );
        for (iova, ptr, len) in [
            (0x20_0800, b.ptr, 0x1000),
            (0x20_0000, b.ptr.add(8), 0x1000),
            (0x20_0000, b.ptr, 0x800),
            (0x20_0000, b.ptr, 0),
            (0x20_0000, std::ptr::null_mut(), 0x1000),
            (!0xfff, b.ptr, 0x2000),
        ] {
            assert!(
                matches!(
                    dev.map_dma(iova, ptr, len),
                    Err(DmaError::BadMapping { .. })
                ),
                "{iova:#x} {len:#x}"
            );
        }
        dev.map_dma(0x10_4000, b.ptr, 0x1000).unwrap();
    }
    assert_eq!(dev.dma().mapped(), 0x5000);
    assert_eq!(dev.dma().allocated(), 0, "nothing of the model's own");
    assert_eq!(
        dev.unmap_dma(0x10_1000, 0x1000),
        Err(DmaError::PartialUnmap(0x10_0000))
    );
    assert_eq!(
        dev.unmap_dma(0x10_0000, 0x4800),
        Err(DmaError::PartialUnmap(0x10_4000))
    );
    assert_eq!(dev.dma().regions(), 2, "a refused unmap unmaps nothing");
    assert_eq!(dev.unmap_dma(0x10_0000, 0x4000), Ok(0x4000));
    assert_eq!(
        dev.unmap_dma(0x10_0000, 0x4000),
        Ok(0),
        "nothing left there"
    );
    assert_eq!(dev.unmap_all_dma(), Ok(0x1000));
    assert_eq!(dev.dma().regions(), 0);
    // A device with memory of its own maps nothing from outside.
    let own = Device::new(Config::default());
    // SAFETY: refused before anything is mapped.
    let r = unsafe { own.map_dma(0x10_0000, a.ptr, 0x1000) };
    assert_eq!(r, Err(DmaError::NotExternal));
    assert_eq!(own.unmap_dma(0, u64::MAX), Err(DmaError::NotExternal));
}

/// Writes an ENABLE_HCA entry at `at` of `buf` and returns its bytes.
fn enable_hca_entry(buf: &Buf, at: usize, token: u8) {
    let mut e = mlx5_prm::CmdQueueEntry::zeroed();
    e.set_type_raw(7);
    e.set_input_length(16);
    e.set_output_length(16);
    let mut inline = [0u8; 16];
    inline[..2].copy_from_slice(&cmd::EnableHca::OPCODE.to_be_bytes());
    e.set_command_input_inline_data(&inline);
    e.set_token(token);
    e.set_ownership(true);
    for (i, b) in e.storage().iter().enumerate() {
        // SAFETY: inside the buffer; volatile as the device may write it.
        unsafe { buf.ptr.add(at + i).write_volatile(*b) };
    }
}

#[test]
fn an_iova_mapped_again_reaches_the_new_memory() {
    let dev = external();
    let (a, b) = (Buf::new(0x1000), Buf::new(0x1000));
    let iova = 0x8000_0000u64;
    // SAFETY: unmapped below before the buffers are dropped.
    unsafe { dev.map_dma(iova, a.ptr, 0x1000) }.unwrap();
    dev.write32(0x10, (iova >> 32) as u32);
    dev.write32(0x14, iova as u32);
    enable_hca_entry(&a, 0, 1);
    dev.write32(0x18, 1);
    assert_eq!(a.byte(0x3f), 0, "served: ownership back, status OK");
    assert_eq!(dev.unmap_dma(iova, 0x1000), Ok(0x1000));
    // SAFETY: as above.
    unsafe { dev.map_dma(iova, b.ptr, 0x1000) }.unwrap();
    enable_hca_entry(&b, 0, 2);
    let before = a.snapshot();
    dev.write32(0x18, 1);
    // The second ENABLE_HCA fails (already enabled) but is delivered: into `b`, not `a`.
    assert_eq!(b.byte(0x3f), 0);
    assert_eq!(b.byte(0x20), BAD_SYS_STATE);
    assert_eq!(a.snapshot(), before, "the old memory is not touched");
    dev.unmap_all_dma().unwrap();
}

#[test]
fn unmap_returns_only_when_the_model_is_done_with_the_memory() {
    for round in 0..20u8 {
        let dev = Device::new(Config {
            mode: Mode::Threaded,
            dma: DmaBacking::External,
            ..Config::default()
        });
        let q = Buf::new(0x1000);
        let iova = 0x8000_0000u64;
        // SAFETY: unmapped below before `q` is dropped.
        unsafe { dev.map_dma(iova, q.ptr, 0x1000) }.unwrap();
        dev.write32(0x10, (iova >> 32) as u32);
        dev.write32(0x14, iova as u32);
        for slot in 0..32 {
            enable_hca_entry(&q, slot * 64, round.wrapping_add(slot as u8).max(1));
        }
        // The firmware thread serves the 32 entries one lock at a time while this thread
        // unmaps the queue under it.
        dev.write32(0x18, u32::MAX);
        std::thread::sleep(Duration::from_micros(u64::from(round) * 10));
        assert_eq!(dev.unmap_dma(iova, 0x1000), Ok(0x1000));
        let after = q.snapshot();
        dev.sync();
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(
            q.snapshot(),
            after,
            "round {round}: written after unmap returned"
        );
        let served = (0..32).filter(|s| q.byte(s * 64 + 0x3f) & 1 == 0).count() as u64;
        assert_eq!(served + dev.dma_faults(), 32, "round {round}");
    }
}

#[test]
fn bar_reads_of_every_size() {
    let dev = Device::new(Config::default());
    let fw = dev.read32(0);
    assert_eq!(dev.bar_read(0, 4), u64::from(fw));
    for i in 0..4 {
        assert_eq!(
            dev.bar_read(i, 1),
            u64::from(fw.to_be_bytes()[i]),
            "byte {i}"
        );
    }
    assert_eq!(dev.bar_read(2, 2), u64::from(fw & 0xffff));
    assert_eq!(
        dev.bar_read(0, 8),
        (u64::from(fw) << 32) | u64::from(dev.read32(4))
    );
    let mut b = [0u8; 4];
    dev.bar_read_bytes(0, &mut b);
    assert_eq!(b, fw.to_be_bytes(), "BAR order: big-endian register bytes");
    // cmd_interface_rev (0x04 bits 31:16) is 5: the byte at 0x05.
    assert_eq!(dev.bar_read(5, 1), 5);
    // UAR pages and spare space read 0; nothing counted so far.
    assert_eq!(dev.bar_read(8 * 4096, 8), 0);
    assert_eq!(dev.bar_read(BAR_SPARE.start, 4), 0);
    assert_eq!(dev.bad_bar_accesses(), 0);
    // Unaligned, wrong size, out of range: all ones, counted.
    assert_eq!(dev.bar_read(1, 4), 0xffff_ffff);
    assert_eq!(dev.bar_read(3, 2), 0xffff);
    assert_eq!(dev.bar_read(4, 8), u64::MAX);
    assert_eq!(dev.bar_read(0, 3), 0xff_ffff);
    assert_eq!(dev.bar_read(Device::BAR_SIZE, 1), 0xff);
    assert_eq!(dev.bar_read(usize::MAX, 8), u64::MAX);
    let mut odd = [0u8; 16];
    dev.bar_read_bytes(0, &mut odd);
    assert_eq!(odd, [0xff; 16]);
    assert_eq!(dev.bad_bar_accesses(), 7);
}

#[test]
fn bar_writes_of_every_size() {
    let host = Host::inline();
    let dev = &host.dev;
    let iova = host.cmdq.iova;
    // The command queue address written byte by byte (read-modify-write of each dword) ...
    dev.write32(0x10, 0);
    dev.write32(0x14, 0);
    assert_eq!((dev.read32(0x10), dev.read32(0x14) & !0xff), (0, 0));
    for (i, byte) in iova.to_be_bytes().iter().enumerate() {
        if i < 4 {
            dev.bar_write(0x10 + i, 1, u64::from(*byte));
        }
    }
    dev.bar_write(0x14, 2, iova >> 16 & 0xffff);
    dev.bar_write(0x16, 2, iova & 0xf000);
    assert_eq!(dev.read32(0x10), (iova >> 32) as u32);
    assert_eq!(
        dev.read32(0x14) & !0xfff,
        iova as u32 & !0xfff,
        "address bits"
    );
    assert_eq!(dev.read32(0x14) & 0xff, 0x56, "read-only geometry kept");
    assert_eq!(dev.bad_bar_accesses(), 0);
    // ... and then a command, rung by a 4-byte write given as bytes.
    host.simple::<cmd::EnableHca>(0).ok();
    let n = dev.commands().len();
    // A partial doorbell, partial UAR writes, spare space and bad sizes are dropped, counted.
    dev.bar_write(0x1b, 1, 1);
    dev.bar_write(8 * 4096 + 0x40, 2, 0);
    dev.bar_write(8 * 4096 + 0x20, 1, 0);
    dev.bar_write(BAR_SPARE.start, 4, 0xdead_beef);
    dev.bar_write(0x10, 3, 0);
    dev.bar_write(0x12, 4, 0);
    dev.bar_write(Device::BAR_SIZE - 4, 8, 0);
    dev.bar_write_bytes(0x10, &[0; 5]);
    assert_eq!(dev.bad_bar_accesses(), 8);
    assert_eq!(dev.commands().len(), n, "no doorbell rang");
    assert_eq!(dev.read32(0x10), (iova >> 32) as u32, "address unchanged");
    // An 8-byte write of the address is two dword writes, high first.
    dev.bar_write(0x10, 8, 0);
    assert_eq!(dev.read32(0x10), 0);
    dev.bar_write_bytes(0x10, &iova.to_be_bytes());
    assert_eq!(dev.read32(0x10), (iova >> 32) as u32);
    let ring = 1u32.to_be_bytes();
    let mut e = [0u8; 64];
    host.dev.dma().read(iova, &mut e).unwrap();
    e[0x3f] |= 1;
    host.dev.dma().write(iova, &e).unwrap();
    dev.bar_write_bytes(0x18, &ring);
    assert_eq!(dev.commands().len(), n + 1, "the doorbell rang");
}

/// Vectors the sink saw, and what the device answered from inside the sink.
#[derive(Default)]
struct Seen {
    vectors: Mutex<Vec<u16>>,
    calls: AtomicU64,
}

#[test]
fn interrupts_reach_the_sink_outside_the_lock() {
    let host = Host::inline();
    host.bring_up();
    let uar = host.alloc_uar();
    let (eqn, _ring) = host.create_eq(4, PAGE_REQUEST, uar, 5);
    let seen = Arc::new(Seen::default());
    let (s, dev) = (seen.clone(), Arc::downgrade(&host.dev));
    host.dev.set_interrupt_sink(Arc::new(move |v| {
        // Calls back into the device: only possible once the model's lock is released.
        if let Some(dev) = dev.upgrade() {
            dev.pages_held();
        }
        s.vectors.lock().unwrap().push(v);
        s.calls.fetch_add(1, Ordering::Relaxed);
    }));
    // Arm the EQ (UAR + 0x40), then an event fires it once.
    let arm = |ci: u32| {
        host.dev
            .write32(uar as usize * 4096 + 0x40, (u32::from(eqn) << 24) | ci)
    };
    arm(0);
    let (tx, rx) = mpsc::channel();
    let dev = host.dev.clone();
    std::thread::spawn(move || {
        dev.request_pages(3);
        dev.request_pages(4);
        tx.send(()).unwrap();
    });
    rx.recv_timeout(Duration::from_secs(10))
        .expect("the sink deadlocked on the model's lock");
    assert_eq!(*seen.vectors.lock().unwrap(), vec![5], "fired once per arm");
    // Arming over an entry already waiting fires at once.
    arm(1);
    assert_eq!(*seen.vectors.lock().unwrap(), vec![5, 5]);
    assert_eq!(host.dev.interrupts(5), 2);
    host.dev.clear_interrupt_sink();
    arm(2);
    host.dev.request_pages(5);
    assert_eq!(seen.calls.load(Ordering::Relaxed), 2, "no sink, no call");
    assert_eq!(host.dev.interrupts(5), 3, "still counted");
}

#[test]
fn reset_returns_to_power_on_and_keeps_the_mappings() {
    for mode in [Mode::Inline, Mode::Threaded] {
        let host = Host::external(mode);
        host.bring_up();
        let uar = host.alloc_uar();
        let (eqn, _ring) = host.create_eq(4, PAGE_REQUEST, uar, 2);
        host.dev
            .write32(uar as usize * 4096 + 0x40, u32::from(eqn) << 24);
        host.dev.sync();
        host.dev.request_pages(1);
        host.dev.sync();
        assert!(host.dev.pages_held() > 0 && host.dev.objects().eqs == 1);
        assert_eq!(host.dev.interrupts(2), 1);
        let regions = host.dev.dma().regions();
        host.dev.reset();
        assert_eq!(host.dev.pages_held(), 0, "{mode:?}");
        assert_eq!(host.dev.objects(), mlx5_sim::Objects::default());
        assert_eq!(host.dev.interrupts(2), 0);
        assert_eq!(host.dev.commands().len(), 0);
        assert_eq!(
            (host.dev.read32(0x10), host.dev.read32(0x14) & !0xff),
            (0, 0),
            "no command queue address"
        );
        assert_eq!(host.dev.read32(0x14) & 0xff, 0x56);
        assert_eq!(host.dev.dma().regions(), regions, "mappings stay");
        // The driver starts again from the top: ENABLE_HCA succeeds once more.
        host.dev.write32(0x10, (host.cmdq.iova >> 32) as u32);
        host.dev.write32(0x14, host.cmdq.iova as u32);
        host.bring_up();
        assert!(host.dev.pages_held() > 0);
    }
}

#[test]
fn a_wired_peer_s_sink_runs_outside_both_locks() {
    use common::dp::{Node, Pair, Ring};
    use common::rc_wqe::Wqe;
    let (na, nb) = (Node::inline(), Node::inline());
    let _wire = mlx5_sim::Wire::connect(na.dev(), nb.dev());
    let p = Pair::new(&na, &nb, (true, true, true), 7);
    let r = nb.alloc(1 << 16);
    let key = nb.mkey(nb.pd, r.iova, 1 << 16, "lw");
    p.b.post_recv(&[(4096, key, r.iova)]);
    // b's receive CQ armed, and b's EQ (vector 0) armed: the SEND from a interrupts b.
    p.rcq_b.arm(false);
    nb.dev()
        .write32(nb.uar as usize * 4096 + 0x40, u32::from(nb.eqn) << 24);
    let seen = Arc::new(AtomicU64::new(0));
    let (s, a) = (seen.clone(), Arc::downgrade(na.dev()));
    nb.dev().set_interrupt_sink(Arc::new(move |_| {
        // Reaches into the other device: only possible once its lock is released too.
        if let Some(a) = a.upgrade() {
            a.pages_held();
        }
        s.fetch_add(1, Ordering::Relaxed);
    }));
    let wqe = Wqe::new(mlx5_prm::SendOpcode::Send, p.a.qpn, true)
        .inline(b"hello")
        .build();
    // Posted without the UAR write, which another thread then does: the doorbell value is
    // the WQE's first 8 bytes, at the first BlueFlame register half of a's UAR page.
    p.a.post(&wqe, Ring::Silent);
    let first8 = u64::from_be_bytes(wqe[..8].try_into().unwrap());
    let (dev, at) = (na.dev().clone(), na.uar as usize * 4096 + 0x800);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        dev.write64(at, first8);
        tx.send(()).unwrap();
    });
    rx.recv_timeout(Duration::from_secs(10))
        .expect("the peer's sink deadlocked on this device's lock");
    assert_eq!(seen.load(Ordering::Relaxed), 1);
    assert_eq!(nb.dev().interrupts(0), 1);
}

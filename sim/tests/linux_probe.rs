//! Linux 6.12's `mlx5_core` probe and unload, command by command, on the device a Linux guest
//! gets (`Config::linux_probe_only`), driven from the PRM's side by `common::linux` and
//! checked at each step against what the kernel reads (docs/linux-probe.md has the list and
//! the kernel functions). Then the same driver loads again on the same device.

mod common;

use common::linux::Linux;
use common::linux_flow::{probe, unload};
use mlx5_prm::rt::{Command, MmioBytes};
use mlx5_prm::{cmd, InitialSeg};
use mlx5_sim::{CommandTrace, Config, Mode};
use std::sync::{Arc, Mutex};

fn probe_unload_probe(config: Config) {
    let l = Linux::new(config);
    let traces: Arc<Mutex<Vec<CommandTrace>>> = Arc::default();
    let sink = traces.clone();
    l.host
        .dev
        .set_command_observer(Some(Arc::new(move |t: &CommandTrace| {
            sink.lock().unwrap().push(t.clone())
        })));

    let (async_eq, pages_eq) = probe(&l, true);
    // Mid-run the device wants more pages, then offers some back.
    l.host.dev.request_pages(100);
    let e = l.poll(&pages_eq);
    assert_eq!(Linux::page_request(&e[0]).2, 100);
    l.give(100).ok();
    l.host.dev.request_pages(-30);
    let e = l.poll(&pages_eq);
    let n = Linux::page_request(&e[0]).2;
    assert_eq!(l.take(n.unsigned_abs() as usize).len(), 30);
    l.arm(&pages_eq);
    unload(&l, async_eq, pages_eq);

    let first = traces.lock().unwrap().len();
    assert_eq!(first, l.host.dev.commands().len(), "every command traced");
    assert!(l.host.dev.unimplemented_commands().commands.is_empty());

    // modprobe again, same device (cmdq programmed anew as mlx5_cmd_enable does).
    let again = Linux::attach(common::Host::reattach(l.host));
    let (async_eq, pages_eq) = probe(&again, false);
    unload(&again, async_eq, pages_eq);
    let all = traces.lock().unwrap();
    assert!(all.len() > first);
    assert!(all.iter().all(|t| t.delivery == 0 && t.status == 0));
    let create_eq = all
        .iter()
        .find(|t| t.opcode == cmd::CreateEq::OPCODE)
        .unwrap();
    assert_eq!(
        create_eq.input.len(),
        0x110 + 8 * 8,
        "the whole input, mailboxes included"
    );
    let caps = all
        .iter()
        .find(|t| t.opcode == cmd::QueryHcaCap::OPCODE)
        .unwrap();
    assert_eq!(caps.output.len(), 0x1010, "the whole output");
    assert!(again.host.dev.unimplemented_commands().commands.is_empty());
}

#[test]
fn linux_probe_unload_and_reload_inline() {
    probe_unload_probe(Config::linux_probe_only());
}

/// As the vfio-user server runs the model: threaded, on guest RAM mapped from outside.
#[test]
fn linux_probe_unload_and_reload_on_guest_memory() {
    probe_unload_probe(Config {
        mode: Mode::Threaded,
        dma: mlx5_sim::DmaBacking::External,
        ..Config::linux_probe_only()
    });
}

#[test]
fn linux_probe_unload_and_reload_threaded() {
    probe_unload_probe(Config {
        mode: Mode::Threaded,
        ..Config::linux_probe_only()
    });
}

/// A fatal health syndrome on a probed device, and Linux's recovery from it: the driver sees
/// rfr with a syndrome (`mlx5_health_check_fatal_sensors`), stops sending commands, asks
/// firmware to reset itself (`reset_fw_if_needed`: NIC interface 7), waits for the interface
/// to read disabled, checks the device is alive again (`wait_vital`) and loads anew.
#[test]
fn fatal_error_then_software_reset_and_reload() {
    let l = Linux::new(Config::linux_probe_only());
    let (_async_eq, _pages_eq) = probe(&l, true);
    let dev = l.host.dev.clone();
    assert!(dev.pages_held() > 0);
    dev.inject_health_error(mlx5_sim::HealthError {
        syndrome: 0x7,
        ext_synd: 0x1234,
        irisc_index: 2,
        severity: 2,
        reset_required: true,
    });
    let seg = InitialSeg::new_unchecked(MmioBytes::new(&*dev, InitialSeg::SIZE));
    let h = seg.health_buffer();
    assert_eq!(h.synd_raw(), 0x7);
    assert!(h.rfr() && h.valid());
    assert_eq!(
        (h.severity(), h.ext_synd(), h.irisc_index()),
        (2, 0x1234, 2)
    );
    assert_ne!(h.fw_version(), u32::MAX, "PCI still answers");
    assert_eq!(seg.health_syndrome_raw(), 0x7);
    let frozen = seg.health_counter();
    std::thread::sleep(mlx5_sim::HEALTH_COUNTER_PERIOD * 3);
    assert_eq!(seg.health_counter(), frozen, "the counter stopped");
    assert!(seg.fw_reset_supported());

    // mlx5_set_nic_state(SW_RESET): the address bits kept, the interface bits set to 7.
    let l_sz = dev.read32(0x14);
    dev.write32(0x14, (l_sz & 0xffff_f000) | 7 << 8);
    assert_eq!(
        dev.read32(0x14) >> 8 & 7,
        1,
        "disabled once firmware has reset"
    );
    assert_eq!(seg.health_buffer().synd_raw(), 0);
    assert!(!seg.health_buffer().rfr());
    assert_eq!(dev.pages_held(), 0, "firmware forgot the pages it held");
    assert_eq!(dev.objects().total(), 0);
    // wait_vital: non-zero and changing.
    let a = seg.health_counter();
    std::thread::sleep(mlx5_sim::HEALTH_COUNTER_PERIOD * 3);
    let b = seg.health_counter();
    assert!(a != 0 && b != a);

    // mlx5_load_one: the command interface anew (which sets the interface back to full
    // driver), then the whole probe but init_once.
    let again = Linux::attach(common::Host::reattach(l.host));
    assert_eq!(dev.read32(0x14) >> 8 & 7, 0);
    let (async_eq, pages_eq) = probe(&again, false);
    unload(&again, async_eq, pages_eq);
}

/// The shutdown path (`mlx5_try_fast_unload`): TEARDOWN_HCA prepare-fast completes by event
/// like any command, then the NIC interface set to disabled tears the function down and
/// reads back disabled. A forced teardown (polled, with the EQs still there) raises no event.
#[test]
fn fast_and_forced_teardown() {
    let l = Linux::new(Config::linux_probe_only());
    let (_async_eq, _pages_eq) = probe(&l, true);
    let r = l
        .exec::<cmd::TeardownHca>(0, 0, 0, |i| {
            i.set_profile(mlx5_prm::TeardownHcaProfile::PrepareFastTeardown)
        })
        .ok();
    assert!(!mlx5_prm::TeardownHcaOut::new_unchecked(&r.out[..]).state());
    assert!(l.host.dev.objects().eqs > 0, "nothing torn down yet");
    let dev = l.host.dev.clone();
    let l_sz = dev.read32(0x14);
    dev.write32(0x14, (l_sz & 0xffff_f000) | 1 << 8);
    assert_eq!(dev.read32(0x14) >> 8 & 7, 1);
    assert_eq!(dev.objects().total(), 0);

    let l = Linux::new(Config::linux_probe_only());
    let (_async_eq, _pages_eq) = probe(&l, true);
    let cmd_eq = l.use_polling();
    let r = l
        .exec::<cmd::TeardownHca>(0, 0, 0, |i| {
            i.set_profile(mlx5_prm::TeardownHcaProfile::ForceClose)
        })
        .ok();
    assert!(!mlx5_prm::TeardownHcaOut::new_unchecked(&r.out[..]).state());
    assert!(
        l.poll(&cmd_eq).is_empty(),
        "no completion event after a forced teardown"
    );
    assert_eq!(l.host.dev.objects().total(), 0);
}

/// The exact command list of one probe and unload on this profile, as docs/linux-probe.md
/// lists it (opcode, op_mod), the regular pages given right after the pages EQ exists.
const PROBE_AND_UNLOAD: &[(u16, u16)] = &[
    (0x104, 0),   // ENABLE_HCA
    (0x10a, 0),   // QUERY_ISSI
    (0x10b, 0),   // SET_ISSI 1
    (0x107, 1),   // QUERY_PAGES boot
    (0x108, 1),   // MANAGE_PAGES give
    (0x805, 1),   // ACCESS_REG read DTOR
    (0x805, 0),   // ACCESS_REG write HOST_ENDIANNESS
    (0x100, 0x1), // QUERY_HCA_CAP general, current
    (0x100, 0x0), // QUERY_HCA_CAP general, maximum
    (0x109, 0x0), // SET_HCA_CAP general
    (0x100, 0x7), // QUERY_HCA_CAP atomic, current
    (0x100, 0x6), // QUERY_HCA_CAP atomic, maximum
    (0x107, 2),   // QUERY_PAGES init
    (0x108, 1),   // MANAGE_PAGES give
    (0x102, 0),   // INIT_HCA
    (0x10d, 0),   // SET_DRIVER_VERSION
    (0x100, 0x1), // QUERY_HCA_CAP general, current
    (0x100, 0x7), // QUERY_HCA_CAP atomic, current
    (0x805, 1),   // ACCESS_REG read PCAM
    (0x805, 1),   // ACCESS_REG read MCAM group 0
    (0x805, 1),   // ACCESS_REG read MCAM group 2
    (0x805, 1),   // ACCESS_REG read MCAM group 3
    (0x805, 1),   // ACCESS_REG read QCAM
    (0x101, 0),   // QUERY_ADAPTER
    (0x802, 0),   // ALLOC_UAR
    (0x301, 0),   // CREATE_EQ command EQ (polled)
    (0x301, 0),   // CREATE_EQ async EQ (event mode from here)
    (0x301, 0),   // CREATE_EQ pages EQ
    (0x108, 1),   // MANAGE_PAGES give (the page request on the new pages EQ)
    (0x302, 0),   // DESTROY_EQ pages EQ
    (0x302, 0),   // DESTROY_EQ async EQ
    (0x302, 0),   // DESTROY_EQ command EQ (polled)
    (0x803, 0),   // DEALLOC_UAR
    (0x103, 0),   // TEARDOWN_HCA graceful
    (0x108, 2),   // MANAGE_PAGES take (768 asked; all 128 come back)
    (0x105, 0),   // DISABLE_HCA
];

#[test]
fn the_documented_command_list() {
    let l = Linux::new(Config::linux_probe_only());
    let (async_eq, pages_eq) = probe(&l, true);
    unload(&l, async_eq, pages_eq);
    let ran: Vec<(u16, u16)> = l
        .host
        .dev
        .commands()
        .iter()
        .map(|c| (c.opcode, c.op_mod))
        .collect();
    assert_eq!(ran, PROBE_AND_UNLOAD);
    assert_eq!(PROBE_AND_UNLOAD.len(), 36);
}

//! The initialization segment and a whole bring-up and teardown, as a driver runs them.

mod common;

use common::Host;
use mlx5_prm::cmd;
use mlx5_prm::rt::MmioBytes;
use mlx5_prm::{
    AccessRegisterOut, CmdHcaCap, HcaPortType, InitialSeg, ManagePagesOut, PaosPortStatus, PaosReg,
    QueryAdapterOut, QueryIssiOut, QuerySpecialContextsOut,
};
use mlx5_sim::{Config, Device, FwReady};
use std::time::Duration;

#[test]
fn initialization_segment_reset_values() {
    let dev = Device::new(Config::default());
    // Through the generated register view, as a driver reads it.
    let seg = InitialSeg::new_unchecked(MmioBytes::new(&*dev, InitialSeg::SIZE));
    assert_eq!(seg.cmd_interface_rev(), 5);
    assert_eq!((seg.fw_rev_major(), seg.fw_rev_minor()), (16, 35));
    assert_eq!((seg.log_cmdq_size(), seg.log_cmdq_stride()), (5, 6));
    assert!(!seg.initializing());
    let c = seg.health_counter();
    std::thread::sleep(mlx5_sim::HEALTH_COUNTER_PERIOD * 2);
    assert!(
        seg.health_counter() > c,
        "the health counter runs on the clock"
    );
    assert_eq!(seg.health_syndrome_raw(), 0);
    assert_eq!(seg.health_buffer().fw_version(), (35 << 16) | 16);
    assert_eq!(
        dev.read32(0x1001),
        u32::MAX,
        "unaligned read fails like PCIe"
    );
    assert_eq!(dev.read32(Device::BAR_SIZE), u32::MAX);
    assert_eq!(dev.read32(8 * 4096), 0, "UAR pages read 0");
}

#[test]
fn command_queue_address_is_programmed_and_kept() {
    let host = Host::inline();
    let iova = host.cmdq.iova;
    assert_eq!(host.dev.read32(0x10), (iova >> 32) as u32);
    assert_eq!(host.dev.read32(0x14), (iova as u32 & !0xfff) | 0x56);
}

#[test]
fn firmware_ready_after_polls() {
    let host = Host::new(Config {
        fw_ready: FwReady::AfterPolls(3),
        ..Config::default()
    });
    // Doorbells rung while firmware initializes are ignored.
    let r = host.submit(0, &enable_hca(), 16, &Default::default());
    assert!(r.is_none(), "no command runs while initializing");
    for _ in 0..3 {
        assert_eq!(host.dev.read32(0x1fc) >> 31, 1);
    }
    assert_eq!(host.dev.read32(0x1fc) >> 31, 0);
    host.simple::<cmd::EnableHca>(0).ok();
}

#[test]
// Under Miri: a wall-clock deadline (30 ms), which the interpreter's slowness passes before
// the first read.
#[cfg_attr(miri, ignore)]
fn firmware_ready_after_time_and_never() {
    let dev = Device::new(Config {
        fw_ready: FwReady::After(Duration::from_millis(30)),
        ..Config::default()
    });
    assert_eq!(dev.read32(0x1fc) >> 31, 1);
    std::thread::sleep(Duration::from_millis(40));
    assert_eq!(dev.read32(0x1fc) >> 31, 0);

    let host = Host::new(Config {
        fw_ready: FwReady::Never,
        ..Config::default()
    });
    for _ in 0..100 {
        assert_eq!(host.dev.read32(0x1fc) >> 31, 1);
    }
    assert!(host
        .submit(0, &enable_hca(), 16, &Default::default())
        .is_none());
}

fn enable_hca() -> Vec<u8> {
    let mut buf = vec![0u8; 16];
    <cmd::EnableHca as mlx5_prm::rt::Command>::input(&mut buf[..], 0).unwrap();
    buf
}

#[test]
fn full_bring_up_and_teardown() {
    let host = Host::inline();
    let dev = &host.dev;

    host.simple::<cmd::EnableHca>(0).ok();
    let r = host.simple::<cmd::QueryIssi>(0).ok();
    let issi = QueryIssiOut::new_unchecked(&r.out[..]);
    assert_eq!((issi.current_issi(), issi.supported_issi_dw0()), (0, 0b11));
    host.run::<cmd::SetIssi>(0, 0, 0, |i| i.set_current_issi(1))
        .ok();
    let r = host.simple::<cmd::QueryIssi>(0).ok();
    assert_eq!(QueryIssiOut::new_unchecked(&r.out[..]).current_issi(), 1);

    // Boot pages: asked for, given, then no longer asked for.
    assert_eq!(host.query_pages(cmd::QueryPagesOpMod::Boot), 16);
    let boot = host.give_pages(16);
    assert_eq!(host.query_pages(cmd::QueryPagesOpMod::Boot), 0);
    assert_eq!(dev.pages_held(), 16);

    // The general capabilities (a 0x1010-byte output: mailbox chain of 8 blocks).
    let r = host
        .simple::<cmd::QueryHcaCap>(cmd::QueryHcaCapOpMod::GeneralCur)
        .ok();
    assert_eq!(r.out.len(), 0x1010);
    let cap = CmdHcaCap::new_unchecked(&r.out[0x10..0x110]);
    assert_eq!(cap.log_max_qp(), 18);
    assert_eq!(cap.port_type(), Ok(HcaPortType::Ethernet));

    // Access register before INIT_HCA (Linux writes the host endianness register).
    let r = host
        .run::<cmd::AccessRegister>(cmd::AccessRegisterOpMod::Read, 16, 16, |i| {
            i.set_register_id(0x5006);
            i.set_register_data(0, 1 << 16).unwrap();
        })
        .ok();
    let out = AccessRegisterOut::new_unchecked(&r.out[..]);
    assert_eq!(out.register_data_len(), 4);
    let paos = PaosReg::new_unchecked(&r.out[0x10..0x20]);
    assert_eq!(paos.oper_status(), Ok(PaosPortStatus::Up));

    assert_eq!(host.query_pages(cmd::QueryPagesOpMod::Init), 32);
    let init = host.give_pages(32);
    host.simple::<cmd::InitHca>(0).ok();
    let mut version = [0u8; 64];
    version[..24].copy_from_slice(b"mlx5-sim test driver 0.1");
    host.run::<cmd::SetDriverVersion>(0, 0, 0, |i| i.set_driver_version(&version))
        .ok();
    assert_eq!(
        dev.driver_version().as_deref(),
        Some("mlx5-sim test driver 0.1")
    );

    let r = host.simple::<cmd::QueryAdapter>(0).ok();
    let a = QueryAdapterOut::new_unchecked(&r.out[..]);
    assert_eq!(&a.query_adapter_struct().vsd_contd_psid(), mlx5_sim::PSID);
    let r = host.simple::<cmd::QuerySpecialContexts>(0).ok();
    assert_eq!(
        QuerySpecialContextsOut::new_unchecked(&r.out[..]).resd_lkey(),
        mlx5_sim::RESD_LKEY
    );

    let uar = host.alloc_uar();
    assert_eq!(uar, mlx5_sim::FIRST_UAR);
    let pd = host.alloc_pd();
    let td = host.alloc_td();
    assert!(dev.objects().total() == 3);
    host.run::<cmd::DeallocPd>(0, 0, 0, |i| i.set_pd(pd)).ok();
    host.run::<cmd::DeallocTransportDomain>(0, 0, 0, |i| i.set_transport_domain(td))
        .ok();
    host.run::<cmd::DeallocUar>(0, 0, 0, |i| i.set_uar(uar))
        .ok();
    assert_eq!(dev.objects().total(), 0);

    host.run::<cmd::TeardownHca>(0, 0, 0, |i| {
        i.set_profile(mlx5_prm::TeardownHcaProfile::GracefulClose)
    })
    .ok();
    // Take every page back, in two chunks; each is one the driver gave.
    let r = host.take(30).ok();
    let out = ManagePagesOut::new_unchecked(&r.out[..]);
    assert_eq!(out.output_num_entries(), 30);
    let mut returned: Vec<u64> = out.pas_iter().collect();
    let r = host.take(18).ok();
    returned.extend(ManagePagesOut::new_unchecked(&r.out[..]).pas_iter());
    returned.sort_unstable();
    let mut given: Vec<u64> = boot.into_iter().chain(init).collect();
    given.sort_unstable();
    assert_eq!(returned, given);
    assert_eq!(dev.pages_held(), 0);
    host.simple::<cmd::DisableHca>(0).ok();

    let log: Vec<u16> = dev.commands().iter().map(|c| c.opcode).collect();
    assert_eq!(log[..3], [0x104, 0x10a, 0x10b]);
    assert!(dev.commands().iter().all(|c| c.status == 0));
    assert_eq!(dev.dma_faults(), 0);
}

#[test]
fn a_second_enable_after_disable_starts_over() {
    let host = Host::inline();
    host.bring_up();
    host.run::<cmd::TeardownHca>(0, 0, 0, |_| {}).ok();
    let held = host.dev.pages_held();
    host.take(held).ok();
    host.simple::<cmd::DisableHca>(0).ok();
    host.bring_up();
    assert_eq!(host.dev.pages_held(), 48);
}

/// A prepared fast teardown that the driver then did not finish (a graceful or forced
/// TEARDOWN_HCA came instead) is forgotten: setting the NIC interface to disabled later, on a
/// new function, does not tear that one down.
#[test]
fn an_unfinished_fast_teardown_is_forgotten() {
    use mlx5_prm::TeardownHcaProfile as P;
    let host = Host::inline();
    let dev = host.dev.clone();
    let teardown = |profile: P| {
        host.run::<cmd::TeardownHca>(0, 0, 0, |i| i.set_profile(profile))
            .ok();
    };
    let leave = || {
        teardown(P::GracefulClose);
        host.take(dev.pages_held()).ok();
        host.simple::<cmd::DisableHca>(0).ok();
    };
    for instead in [P::GracefulClose, P::ForceClose] {
        host.bring_up();
        teardown(P::PrepareFastTeardown);
        teardown(instead);
        host.take(dev.pages_held()).ok();
        host.simple::<cmd::DisableHca>(0).ok();
        host.bring_up();
        host.alloc_pd();
        let l_sz = dev.read32(0x14);
        dev.write32(0x14, (l_sz & 0xffff_f000) | 1 << 8);
        assert_eq!(
            dev.objects().pds,
            1,
            "{instead:?}: the new function was torn down"
        );
        leave();
    }
}

//! The steps of Linux 6.12's `mlx5_core` probe and unload (`mlx5_function_enable`,
//! `mlx5_function_open`, `mlx5_init_once`, `mlx5_load`, `mlx5_unload`,
//! `mlx5_function_teardown`), each checking what the kernel reads at that point; shared by the
//! Linux tests.

use super::linux::{async_event_mask, Linux, Ring, RECLAIM_BATCH};
use mlx5_prm::rt::MmioBytes;
use mlx5_prm::{
    cmd, AccessRegisterId, AtomicCaps, AtomicEndiannessMode, CmdHcaCap, DtorReg, EventType,
    HcaCmdifChecksum, HcaPortType, InitialSeg, McamReg, PcamReg, QcamReg, QueryAdapterOut,
    QueryIssiOut, TimeoutUnit,
};
use mlx5_sim::PSID;

/// The driver version string Linux sends ("Linux,mlx5_core,6.12.117").
const DRIVER_VERSION: &[u8] = b"Linux,mlx5_core,6.12.117";

/// ACCESS_REGISTER read of `reg` with `image` as input (the indexing fields); returns the
/// register image of the output.
pub fn read_reg(l: &Linux, reg: AccessRegisterId, image: &[u8]) -> Vec<u8> {
    let r = l
        .exec::<cmd::AccessRegister>(
            cmd::AccessRegisterOpMod::Read,
            image.len(),
            image.len(),
            |i| {
                i.set_register_id(reg.raw());
                for (k, w) in image.chunks(4).enumerate() {
                    i.set_register_data(k, u32::from_be_bytes(w.try_into().unwrap()))
                        .unwrap();
                }
            },
        )
        .ok();
    r.out[0x10..0x10 + image.len()].to_vec()
}

/// mlx5_function_enable: firmware version, command interface, ENABLE_HCA, ISSI, boot pages,
/// DTOR.
pub fn function_enable(l: &Linux) {
    let seg = InitialSeg::new_unchecked(MmioBytes::new(&*l.host.dev, InitialSeg::SIZE));
    assert_eq!(
        (
            seg.fw_rev_major(),
            seg.fw_rev_minor(),
            seg.fw_rev_subminor()
        ),
        (16, 35, 1000)
    );
    assert!(!seg.initializing());
    assert_eq!(seg.cmd_interface_rev(), 5);
    assert!(seg.log_cmdq_size() + seg.log_cmdq_stride() <= 12);
    assert!(!seg.embedded_cpu());
    // Timeouts reported: Linux takes them and will read DTOR.
    assert_ne!(seg.cmd_q_init_to(), 0);
    assert_eq!(seg.cmd_exec_to(), 1 << 29 | 60, "60 seconds");

    l.exec::<cmd::EnableHca>(0, 0, 0, |i| i.set_embedded_cpu_function(false))
        .ok();
    let r = l.simple::<cmd::QueryIssi>(0).ok();
    let issi = QueryIssiOut::new_unchecked(&r.out[..]);
    assert_ne!(issi.supported_issi_dw0() & 0b10, 0, "ISSI 1 offered");
    l.exec::<cmd::SetIssi>(0, 0, 0, |i| i.set_current_issi(1))
        .ok();
    assert!(l.satisfy_startup_pages(true) > 0);

    let dtor = read_reg(l, AccessRegisterId::Dtor, &[0; 0x40]);
    let dtor = DtorReg::new_unchecked(&dtor[..]);
    let health = dtor.health_poll_to();
    assert_eq!(
        (health.to_multiplier(), health.to_value()),
        (Ok(TimeoutUnit::Milliseconds), 2000)
    );
    assert_eq!(dtor.reclaim_pages_to().to_value(), 5000);
}

/// handle_hca_cap: the general page, current then maximum, and the current page with Linux's
/// changes; returns the maximum values.
pub fn set_general_caps(l: &Linux) -> CmdHcaCap {
    let cur = l.general(true);
    let max = l.general(false);
    let mut set = cur;
    set.set_pkey_table_size(mlx5_prm::HcaPkeyTableSize::Entries128);
    set.set_log_max_qp(max.log_max_qp().min(18));
    set.set_cmdif_checksum(HcaCmdifChecksum::Disabled);
    set.set_log_uar_page_sz(0);
    set.set_cache_line_128byte(false);
    if max.num_vhca_ports() != 0 {
        set.set_num_vhca_ports(max.num_vhca_ports());
    }
    assert!(max.release_all_pages() && !cur.release_all_pages());
    set.set_release_all_pages(true);
    if max.mkey_by_name() {
        set.set_mkey_by_name(true);
    }
    l.exec::<cmd::SetHcaCap>(cmd::SetHcaCapOpMod::General, 0, 0, |i| {
        i.capability_mut().storage_mut()[..CmdHcaCap::SIZE].copy_from_slice(set.storage());
    })
    .ok();
    max
}

/// The general maximum values a 6.12 probe branches on, on this profile.
pub fn check_general(max: &CmdHcaCap) {
    assert_eq!(max.port_type(), Ok(HcaPortType::Ib), "no Ethernet driver");
    assert!(!max.eth_net_offloads() && !max.roce() && !max.nic_flow_table());
    assert!(max.atomic() && !max.pg() && !max.hca_cap_2());
    assert!(max.pcam_reg() && max.mcam_reg() && max.qcam_reg());
    assert!(max.driver_version() && max.sw_owner_id());
    assert!(!max.page_request_disable(), "a pages EQ is wanted");
    assert!(!max.vport_group_manager() && !max.eswitch_manager());
    assert!(!max.port_selection_cap() && !max.vhca_state() && !max.fpga() && !max.qos());
    assert!(!max.debug() && !max.device_memory() && !max.event_cap());
    assert_eq!(max.num_ports(), 1);
    assert_ne!(max.device_frequency_khz(), 0, "else Linux warns");
    // Async EQ of 8192 + 128 entries.
    assert!(max.log_max_eq_sz() >= 14);
    assert!(max.max_num_eqs() >= 8);
    assert!(max.force_teardown() && max.fast_teardown());
}

/// The atomic page, current then maximum; byte order fixed, so Linux sets nothing.
pub fn atomic_caps(l: &Linux) -> AtomicCaps {
    let mut pages = [AtomicCaps::zeroed(), AtomicCaps::zeroed()];
    for (k, op) in [
        cmd::QueryHcaCapOpMod::AtomicCur,
        cmd::QueryHcaCapOpMod::AtomicMax,
    ]
    .into_iter()
    .enumerate()
    {
        let r = l.simple::<cmd::QueryHcaCap>(op).ok();
        pages[k].storage_mut().copy_from_slice(&r.out[0x10..0x110]);
    }
    let cur = pages[0];
    assert!(!cur.supported_atomic_req_8b_endianness_mode_1());
    assert_eq!(
        cur.atomic_req_8b_endianness_mode(),
        Ok(AtomicEndiannessMode::BigEndian)
    );
    assert_eq!(cur.atomic_operations() & 0b11, 0b11);
    assert_ne!(cur.atomic_size_qp() & 1 << 3, 0, "8-byte operands");
    cur
}

/// mlx5_query_hca_caps: the current pages, then PCAM, MCAM (groups 0, 2, 3) and QCAM.
pub fn query_hca_caps(l: &Linux) {
    let cur = l.general(true);
    assert_eq!(cur.cmdif_checksum(), Ok(HcaCmdifChecksum::Disabled));
    assert!(cur.release_all_pages() && cur.mkey_by_name());
    assert_eq!(cur.log_max_qp(), 18);
    let r = l
        .simple::<cmd::QueryHcaCap>(cmd::QueryHcaCapOpMod::AtomicCur)
        .ok();
    assert_eq!(
        AtomicCaps::new_unchecked(&r.out[0x10..0x110]).atomic_operations(),
        0b11
    );

    let pcam = read_reg(l, AccessRegisterId::Pcam, &[0; 0x50]);
    let pcam = PcamReg::new_unchecked(&pcam[..]);
    let regs = pcam.port_access_reg_cap_mask();
    let regs = regs.regs_5000_to_507f();
    // PMLP (bit 2), PMTU (3), PTYS (4), PAOS (6), PFCC (7), PPCNT (8); PCAM itself (127).
    assert_eq!(regs.port_access_reg_cap_mask_07_to_00(), 0b1101_1100);
    assert_eq!(regs.port_access_reg_cap_mask_127_to_96(), 1 << 31);
    assert!(regs.ppcnt() && !regs.pbmc() && !regs.pptb());
    let features = pcam.feature_cap_mask();
    let features = features.enhanced_features();
    assert!(features.ptys_connector_type() && !features.ptys_extended_ethernet());

    for group in [0u8, 2, 3] {
        let mut input = [0u8; 0x48];
        input[3] = group;
        let mcam = read_reg(l, AccessRegisterId::Mcam, &input);
        let mcam = McamReg::new_unchecked(&mcam[..]);
        assert_eq!(mcam.access_reg_group(), group);
        // Nothing Linux would start more machinery for: no tracer, hwmon, firmware reset,
        // PTP adjustment, SyncE.
        assert!(
            mcam.storage()[0x08..0x48].iter().all(|&b| b == 0),
            "group {group}"
        );
    }
    let qcam = read_reg(l, AccessRegisterId::Qcam, &[0; 0x48]);
    let qcam = QcamReg::new_unchecked(&qcam[..]);
    let mask = qcam.qos_access_reg_cap_mask();
    let mask = mask.reg_cap();
    assert!(!mask.qpts() && !mask.qpdpm());
    assert_eq!(mask.qcam_access_reg_cap_mask_127_to_20(127 - 0x19), Some(1));
}

/// mlx5_function_open: host endianness, capabilities, init pages, INIT_HCA, driver version,
/// the capability query of the running function.
pub fn function_open(l: &Linux) {
    l.exec::<cmd::AccessRegister>(cmd::AccessRegisterOpMod::Write, 16, 16, |i| {
        i.set_register_id(AccessRegisterId::HostEndianness.raw());
        i.set_register_data(0, 0).unwrap();
    })
    .ok();
    let max = set_general_caps(l);
    check_general(&max);
    atomic_caps(l);
    assert!(l.satisfy_startup_pages(false) > 0);
    l.exec::<cmd::InitHca>(0, 0, 0, |i| {
        for k in 0..4 {
            i.set_sw_owner_id(k, 0x1234_0000 + k as u32).unwrap();
        }
    })
    .ok();
    l.exec::<cmd::SetDriverVersion>(0, 0, 0, |i| {
        let mut v = [0u8; 64];
        v[..DRIVER_VERSION.len()].copy_from_slice(DRIVER_VERSION);
        i.set_driver_version(&v);
    })
    .ok();
    assert_eq!(
        l.host.dev.driver_version().as_deref(),
        Some("Linux,mlx5_core,6.12.117")
    );
    query_hca_caps(l);
}

/// The whole probe: function setup, init_once (QUERY_ADAPTER), load (UAR, the three EQs).
/// Returns the async and pages EQs.
pub fn probe(l: &Linux, first: bool) -> (Ring, Ring) {
    function_enable(l);
    function_open(l);
    if first {
        let r = l.simple::<cmd::QueryAdapter>(0).ok();
        let a = QueryAdapterOut::new_unchecked(&r.out[..]);
        assert_eq!(&a.query_adapter_struct().vsd_contd_psid(), PSID);
        assert_eq!(a.query_adapter_struct().ieee_vendor_id(), 0x02c9);
    }
    let r = l.simple::<cmd::AllocUar>(0).ok();
    l.uar
        .set(mlx5_prm::AllocUarOut::new_unchecked(&r.out[..]).uar());

    // The command EQ is created while commands are polled; its own CREATE_EQ is not
    // announced on it.
    let cmd_eq = l.create_eq(256, 1 << EventType::Cmd.raw());
    assert!(
        l.poll(&cmd_eq).is_empty(),
        "no stale completion on the new EQ"
    );
    l.use_events(cmd_eq);
    let async_eq = l.create_eq(8192, async_event_mask());
    let pages_eq = l.create_eq(1, 1 << EventType::PageRequest.raw());
    // The device asks for its regular pages on the new pages EQ; the driver gives them
    // (pages_work_handler), in the pages slot, completed by event.
    let reqs = l.poll(&pages_eq);
    assert_eq!(reqs.len(), 1);
    let (release_all, func, n) = Linux::page_request(&reqs[0]);
    assert_eq!((release_all, func), (false, 0));
    assert_eq!(n, 64);
    l.give(n as usize).ok();
    l.arm(&pages_eq);
    assert!(l.poll(&async_eq).is_empty());
    (async_eq, pages_eq)
}

/// mlx5_unload and mlx5_function_teardown: the EQs (the command EQ last, in polling mode),
/// the UAR, TEARDOWN_HCA, the pages back in batches of 768, DISABLE_HCA.
pub fn unload(l: &Linux, async_eq: Ring, pages_eq: Ring) {
    for eq in [pages_eq, async_eq] {
        l.exec::<cmd::DestroyEq>(0, 0, 0, |i| i.set_eq_number(eq.eqn))
            .ok();
    }
    let cmd_eq = l.use_polling();
    l.exec::<cmd::DestroyEq>(0, 0, 0, |i| i.set_eq_number(cmd_eq.eqn))
        .ok();
    let uar = l.uar.get();
    l.exec::<cmd::DeallocUar>(0, 0, 0, |i| i.set_uar(uar)).ok();
    l.exec::<cmd::TeardownHca>(0, 0, 0, |i| {
        i.set_profile(mlx5_prm::TeardownHcaProfile::GracefulClose)
    })
    .ok();
    let held = l.pages.borrow().len();
    assert_eq!(l.host.dev.pages_held(), held);
    let mut rounds = 0;
    while !l.pages.borrow().is_empty() {
        let back = l.take(RECLAIM_BATCH);
        assert!(!back.is_empty(), "progress in every round");
        rounds += 1;
    }
    assert_eq!(rounds, held.div_ceil(RECLAIM_BATCH));
    assert_eq!(l.host.dev.pages_held(), 0, "nothing left to return");
    l.exec::<cmd::DisableHca>(0, 0, 0, |i| i.set_embedded_cpu_function(false))
        .ok();
    assert_eq!(l.host.dev.pages_held(), 0);
    assert_eq!(
        l.host.dev.objects().total(),
        0,
        "{:?}",
        l.host.dev.objects()
    );
}

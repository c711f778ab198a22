//! A port on the device model: state, link modes, MTU, pause and module, through the typed
//! register access; and the errors a bad request gets, each naming the register.

use mlx5_driver::backend::sim::SimBackend;
use mlx5_driver::eq::Event;
use mlx5_driver::module::{DecodeOptions, ModuleError};
use mlx5_driver::port::{link_modes, OperState};
use mlx5_driver::{Error, Hca, HcaConfig};
use mlx5_prm::reg::{Mcia, Paos, Pcam};

fn hca() -> Hca<SimBackend> {
    let (backend, _device) = SimBackend::new(mlx5_sim::Config::default());
    Hca::bring_up(backend, &HcaConfig::default()).expect("bring-up")
}

/// The register, command status and syndrome an error carries.
fn register_error(e: &Error) -> (&'static str, u8, u32) {
    match e {
        Error::Register {
            register, source, ..
        } => match **source {
            Error::Command {
                status, syndrome, ..
            } => (register, status, syndrome),
            ref other => panic!("not a command error: {other}"),
        },
        other => panic!("not a register error: {other}"),
    }
}

#[test]
fn state_follows_paos_writes_and_raises_port_change() {
    let hca = hca();
    let port = hca.port(1);
    let s = port.state().unwrap();
    assert!(s.admin_up);
    assert_eq!(s.oper, OperState::Up);
    let down = port.set_admin(false).unwrap();
    assert_eq!((down.admin_up, down.oper), (false, OperState::Down));
    assert_eq!(port.link().unwrap().speed_mbps, None, "no speed while down");
    let events = hca.poll_events().unwrap();
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::PortChange { port: 1, .. })),
        "{events:?}"
    );
    let up = port.set_admin(true).unwrap();
    assert_eq!(up.oper, OperState::Up);
}

#[test]
fn link_names_modes_as_ethtool_does() {
    let hca = hca();
    let link = hca.port(1).link().unwrap();
    assert!(!link.extended);
    assert_eq!(link.speed_mbps, Some(100_000));
    let active = link.active.unwrap();
    assert_eq!(active.name, "eth_100gbase_sr4");
    assert_eq!(active.ethtool, ["100000baseSR4/Full"]);
    let supported: Vec<&str> = link.supported.iter().map(|m| m.name).collect();
    assert_eq!(
        supported,
        [
            "eth_40gbase_cr4",
            "eth_10gbase_cr",
            "eth_10gbase_sr",
            "eth_50gbase_sr2",
            "eth_100gbase_cr4",
            "eth_100gbase_sr4",
            "eth_25gbase_cr",
            "eth_25gbase_sr",
            "eth_50gbase_cr2",
        ]
    );
    assert_eq!(link.unknown_bits, 0);
    assert_eq!(link.connector, "fibre");
    assert_eq!(link.autoneg.status, "link_up");

    // Advertising only 25GBASE-SR brings the link to 25G.
    let m = link_modes::by_name("25000baseSR", false).unwrap();
    let link = hca.port(1).set_advertised(&[m]).unwrap();
    assert_eq!(link.speed_mbps, Some(25_000));
    assert_eq!(link.advertised, [m]);
    // A mode the port does not support is the device's BAD_PARAM, named.
    let kx = link_modes::by_name("eth_1000base_kx", false).unwrap();
    let e = hca.port(1).set_advertised(&[kx]).unwrap_err();
    assert_eq!(register_error(&e).0, "ptys");
    // An extended mode on a legacy port is refused before anything is sent.
    let ext = link_modes::by_name("ext_sgmii_100m", true).unwrap();
    assert!(matches!(
        hca.port(1).set_advertised(&[ext]),
        Err(Error::InvalidArgument { .. })
    ));
}

#[test]
fn mtu_and_pause() {
    let hca = hca();
    let port = hca.port(1);
    let mtu = port.mtu().unwrap();
    assert_eq!((mtu.max, mtu.admin, mtu.oper), (9978, 1522, 1522));
    let mtu = port.set_mtu(9000).unwrap();
    assert_eq!((mtu.admin, mtu.oper), (9000, 9000));
    let e = port.set_mtu(10_000).unwrap_err();
    let (register, status, _) = register_error(&e);
    assert_eq!((register, status), ("pmtu", 0x3), "BAD_PARAM: {e}");
    let text = e.to_string();
    assert!(
        text.starts_with("write of register pmtu (id 0x5003) failed: access_register"),
        "{text}"
    );
    let pause = port.pause().unwrap();
    assert!(!pause.tx && !pause.rx, "{pause:?}");
    let pause = port.set_pause(true, false).unwrap();
    assert!(pause.tx && !pause.rx, "{pause:?}");
    assert_eq!(port.pause().unwrap(), pause);
}

#[test]
fn a_port_the_device_lacks_is_its_bad_param() {
    let hca = hca();
    let e = hca.port(2).state().unwrap_err();
    assert_eq!((register_error(&e).0, register_error(&e).1), ("paos", 0x3));
    assert!(hca.port(2).link().is_err());
    // Raw typed access says the same.
    assert!(hca.read_reg::<Paos>(|r| r.set_local_port(2)).is_err());
    assert!(hca.read_reg::<Pcam>(|_| {}).is_ok());
}

#[test]
fn module_decodes_the_models_qsfp28() {
    let hca = hca();
    let port = hca.port(1);
    assert_eq!(port.module_number().unwrap(), 0);
    let module = port.module(&DecodeOptions::default()).unwrap();
    let text = module.to_string();
    for want in [
        "QSFP28",
        "MLX5-PRM MODEL",
        "PRM-QSFP28-SR4",
        "MDL0000000001",
    ] {
        assert!(text.contains(want), "{want} in\n{text}");
    }
    let mut reader = port.module_reader().unwrap();
    let _ = mlx5_driver::module::read_module(&mut reader, &DecodeOptions::default()).unwrap();
    assert!(reader.reads() <= 16, "{} MCIA reads", reader.reads());
}

#[test]
fn an_empty_cage_is_not_present() {
    let hca = hca();
    // Module 7 has no cage on the model: MCIA's register status 3.
    let mut reader = mlx5_driver::port::McIaReader::new(&hca, 7);
    let e = mlx5_driver::module::read_module(&mut reader, &DecodeOptions::default()).unwrap_err();
    assert!(matches!(e, ModuleError::NotPresent), "{e}");
    // A read longer than MCIA carries in one access is the model's BAD_PARAM.
    let e = hca
        .read_reg::<Mcia>(|r| {
            r.set_i2c_device_address(0x50);
            r.set_size(100);
        })
        .unwrap_err();
    assert_eq!(register_error(&e).0, "mcia");
}

#[test]
fn fec_per_speed_group_and_active() {
    use mlx5_driver::port::FecChoice;
    use mlx5_prm::PplmFecMode;
    let hca = hca();
    let port = hca.port(1);
    let fec = port.fec().unwrap();
    // 100GBASE-SR4 runs RS(528,514) (Clause 91) when the firmware chooses.
    assert_eq!(fec.active.unwrap().name, "rs_528_514");
    assert_eq!(fec.active.unwrap().ethtool, "rs");
    let names =
        |g: usize| -> Vec<&str> { fec.groups[g].supported.iter().map(|m| m.name).collect() };
    assert_eq!(names(0), ["no_fec", "firecode"]);
    assert_eq!(names(3), ["no_fec", "rs_528_514"]);
    assert!(fec.groups.iter().all(|g| g.chosen.is_none()));

    // Off: chosen for every group (all can go without FEC); active at once.
    let off = port.set_fec(FecChoice::Mode(PplmFecMode::NoFec)).unwrap();
    assert_eq!(off.active.unwrap().name, "no_fec");
    assert!(off
        .groups
        .iter()
        .all(|g| g.chosen.map(|m| m.name) == Some("no_fec")));
    // FireCode: chosen where it can be (not at 100 Gb/s, whose group goes back to auto).
    let fc = port
        .set_fec(FecChoice::Mode(PplmFecMode::Firecode))
        .unwrap();
    assert_eq!(fc.groups[3].chosen, None);
    assert_eq!(fc.active.unwrap().name, "rs_528_514");
    let m = mlx5_driver::port::link_modes::by_name("eth_25gbase_sr", false).unwrap();
    port.set_advertised(&[m]).unwrap();
    assert_eq!(
        port.fec().unwrap().active.unwrap().name,
        "firecode",
        "25G runs the chosen FireCode"
    );
    // A mode no group can use is refused before anything is sent; auto clears the choices.
    assert!(matches!(
        port.set_fec(FecChoice::Mode(PplmFecMode::Llrs2722571)),
        Err(Error::InvalidArgument { .. })
    ));
    let auto = port.set_fec(FecChoice::Auto).unwrap();
    assert!(auto.groups.iter().all(|g| g.chosen.is_none()));
    // Down: nothing active.
    port.set_admin(false).unwrap();
    assert_eq!(port.fec().unwrap().active, None);
    // The model refuses two modes at once for a group (raw write).
    let e = hca
        .write_reg::<mlx5_prm::reg::Pplm>(|r| {
            r.set_local_port(1);
            r.set_fec_override_admin_25g(0b11);
        })
        .unwrap_err();
    assert_eq!(register_error(&e).0, "pplm");
}

#[test]
fn a_link_lost_with_the_port_up_says_why() {
    let (backend, device) = SimBackend::new(mlx5_sim::Config::default());
    let hca = Hca::bring_up(backend, &HcaConfig::default()).expect("bring-up");
    let port = hca.port(1);
    assert_eq!(port.link_down_reason().unwrap(), None, "up: no issue");
    port.set_admin(false).unwrap();
    assert_eq!(
        port.link_down_reason().unwrap(),
        None,
        "taken down on purpose: no issue"
    );
    port.set_admin(true).unwrap();
    device.raise_port_change(1, false);
    let why = port.link_down_reason().unwrap().expect("a reason");
    assert_eq!(
        (why.opcode, why.state, why.substate),
        (1024, Some("No cable"), None)
    );
    assert_eq!(why.to_string(), "No cable");
    let autoneg = mlx5_driver::port::LinkDownReason::from_opcode(2).unwrap();
    assert_eq!(autoneg.to_string(), "Autoneg, No partner detected");
    assert_eq!(
        mlx5_driver::port::LinkDownReason::from_opcode(777)
            .unwrap()
            .to_string(),
        "status opcode 777"
    );
}

#[test]
fn the_cage_can_be_emptied_and_refilled() {
    let (backend, device) = SimBackend::new(mlx5_sim::Config::default());
    let hca = Hca::bring_up(backend, &HcaConfig::default()).expect("bring-up");
    let port = hca.port(1);
    device.unplug_module();
    let e = port.module(&DecodeOptions::default()).unwrap_err();
    assert!(matches!(e, ModuleError::NotPresent), "{e}");
    assert_eq!(port.state().unwrap().oper, OperState::Down);
    assert_eq!(
        port.link_down_reason().unwrap().unwrap().to_string(),
        "No cable"
    );

    // Another module: the model's QSFP28 with a new vendor name and check code.
    let mut lower = [0u8; 128];
    lower[0] = 0x11;
    let mut page0 = [0u8; 128];
    page0[0] = 0x11;
    page0[148 - 128..164 - 128].copy_from_slice(b"SOMEONE ELSE    ");
    page0[191 - 128] = page0[..191 - 128]
        .iter()
        .fold(0u8, |a, &b| a.wrapping_add(b));
    device.plug_module(mlx5_sim::ModuleEeprom::from_pages(
        lower,
        [(0, page0), (3, [0u8; 128])],
    ));
    assert_eq!(port.state().unwrap().oper, OperState::Up);
    let m = port.module(&DecodeOptions::default()).unwrap();
    assert_eq!(m.vendor_name, "SOMEONE ELSE");
    // A module whose check code is wrong: a typed error, or decoded when asked not to check.
    page0[191 - 128] ^= 0xff;
    device.plug_module(mlx5_sim::ModuleEeprom::from_pages(
        lower,
        [(0, page0), (3, [0u8; 128])],
    ));
    let e = port.module(&DecodeOptions::default()).unwrap_err();
    assert!(matches!(e, ModuleError::Checksum { .. }), "{e}");
    let lenient = DecodeOptions {
        verify_checksums: false,
    };
    assert_eq!(port.module(&lenient).unwrap().vendor_name, "SOMEONE ELSE");
    // A module without page 03h (thresholds) is a page the read is refused for.
    device.plug_module(mlx5_sim::ModuleEeprom::from_pages(lower, [(0, page0)]));
    let e = port.module(&lenient).unwrap_err();
    assert!(matches!(e, ModuleError::Refused { .. }), "{e}");
}

/// `RegisterInfo` is a plain struct and `AccessReg` a public trait, so a caller can describe a
/// register the spec does not have (or give one of its ids another size or direction). Only
/// the spec's registers, at their size and in a direction it allows, reach the device.
#[test]
fn a_register_the_spec_lacks_is_refused_unsent() {
    use mlx5_prm::rt::{RegAccess, RegisterInfo};

    let (backend, device) = SimBackend::new(mlx5_sim::Config::default());
    let hca = Hca::bring_up(backend, &HcaConfig::default()).expect("bring-up");
    let paos = mlx5_prm::reg::by_name("paos").unwrap();
    let made_up = |id: u16, size: usize, access: RegAccess| -> &'static RegisterInfo {
        Box::leak(Box::new(RegisterInfo {
            id,
            size,
            access,
            ..*paos
        }))
    };
    let ppcnt = mlx5_prm::reg::by_name("ppcnt").unwrap();
    let sent = device.commands().len();
    for (reg, why) in [
        (
            made_up(0x9040, paos.size, RegAccess::ReadWrite),
            "no such register",
        ),
        (
            made_up(paos.id, paos.size + 4, RegAccess::ReadWrite),
            "another size",
        ),
        (
            made_up(ppcnt.id, ppcnt.size, RegAccess::ReadWrite),
            "read-only",
        ),
    ] {
        let image = vec![0u8; reg.size];
        match hca.access_reg_raw(reg, true, &image) {
            Err(Error::Register { source, .. }) => assert!(
                matches!(*source, Error::InvalidArgument { .. }),
                "{why}: {source}"
            ),
            other => panic!("{why}: {other:?}"),
        }
    }
    assert_eq!(device.commands().len(), sent, "nothing reached the device");
    // The spec's own register still goes through.
    let mut image = vec![0u8; paos.size];
    image[1] = 1; // local_port 1
    hca.access_reg_raw(paos, false, &image).unwrap();
}

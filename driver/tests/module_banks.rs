//! CMIS banks through MCIA: the register has no bank field, so the MCIA reader refuses any
//! bank but 0 with `ModuleError::BankUnsupported` (never bank 0's bytes for another bank), and
//! the CMIS decoder, given such a reader and a module advertising two banks of lane pages,
//! reports the eight lanes of bank 0. On the device model, end to end (so only with feature
//! `sim`).

use mlx5_driver::backend::sim::SimBackend;
use mlx5_driver::module::{read_module, DecodeOptions, EepromAddr, EepromReader, ModuleError};
use mlx5_driver::{Hca, HcaConfig};
use mlx5_sim::ModuleEeprom;

/// A paged CMIS 5.0 QSFP-DD whose page 01h advertises two banks of lane pages (byte 142
/// bits 1..0 = 1); page 11h (bank 0) carries eight tx power readings.
fn qsfp_dd_two_banks() -> ModuleEeprom {
    let mut lower = [0u8; 128];
    lower[..4].copy_from_slice(&[0x18, 0x50, 0x00, 0x06]); // QSFP-DD, CMIS 5.0, paged, ready
    let mut p0 = [0u8; 128];
    p0[0] = 0x18;
    p0[129 - 128..129 - 128 + 11].copy_from_slice(b"ACME OPTICS");
    let mut p1 = [0u8; 128];
    p1[142 - 128] = 0x01; // banks 0 and 1
    p1[160 - 128] = 0x0f; // bias, tx and rx power monitored
    let p2 = [0u8; 128];
    let mut p11 = [0u8; 128];
    for lane in 0..8usize {
        let at = 154 - 128 + 2 * lane;
        p11[at..at + 2].copy_from_slice(&(8000 + 250 * lane as u16).to_be_bytes());
    }
    ModuleEeprom::from_pages(lower, [(0, p0), (1, p1), (2, p2), (0x11, p11)])
}

fn hca_with(module: ModuleEeprom) -> Hca<SimBackend> {
    let (backend, device) = SimBackend::new(mlx5_sim::Config::default());
    device.plug_module(module);
    Hca::bring_up(backend, &HcaConfig::default()).expect("bring-up")
}

const LENIENT: DecodeOptions = DecodeOptions {
    verify_checksums: false,
};

#[test]
fn mcia_refuses_banks_other_than_0() {
    let hca = hca_with(qsfp_dd_two_banks());
    let port = hca.port(1);
    let mut reader = port.module_reader().unwrap();
    let mut buf = [0u8; 8];
    let bank0 = EepromAddr {
        i2c_address: 0x50,
        page: 0x11,
        bank: 0,
        offset: 154,
    };
    reader.read(bank0, &mut buf).unwrap();
    assert_eq!(&buf[..2], &8000u16.to_be_bytes());
    let before = reader.reads();
    let bank1 = EepromAddr { bank: 1, ..bank0 };
    let e = reader.read(bank1, &mut buf).unwrap_err();
    assert!(
        matches!(e, ModuleError::BankUnsupported { at } if at == bank1),
        "{e}"
    );
    assert_eq!(reader.reads(), before, "no MCIA access for it");
    assert_eq!(
        e.to_string(),
        "module EEPROM read at I2C 0x50 bank 1 page 0x11 offset 154: bank 1 cannot be addressed \
         (MCIA has no bank field; only bank 0 can be read)"
    );
}

#[test]
fn a_cmis_module_with_two_banks_decodes_bank_0() {
    let hca = hca_with(qsfp_dd_two_banks());
    let module = hca.port(1).module(&LENIENT).unwrap();
    assert_eq!(module.vendor_name, "ACME OPTICS");
    let monitors = module.monitors.expect("paged memory has monitors");
    assert_eq!(monitors.lanes.len(), 8, "the lanes of bank 0");
    let tx: Vec<f64> = monitors
        .lanes
        .iter()
        .map(|l| l.tx_power_mw.unwrap())
        .collect();
    assert_eq!(tx[0], 0.8);
    assert_eq!(tx[7], 0.9750);
    // The same decoder over a reader that holds both banks would read bank 1 (see
    // module_decode.rs); through MCIA the read of bank 1 was refused, not faked.
    let mut reader = hca.port(1).module_reader().unwrap();
    let again = read_module(&mut reader, &LENIENT).unwrap();
    assert_eq!(again.monitors.unwrap().lanes.len(), 8);
}

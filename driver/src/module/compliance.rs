//! The specification compliance codes: the bit fields of SFF-8636 bytes 131-138 and SFF-8472
//! bytes 3-10, and the SFF-8024 extended compliance code that both point to (SFF-8636 byte
//! 192 when bit 7 of byte 131 is set, SFF-8472 byte 36).
//!
//! Each bit that is set contributes one name, in the order the bytes and bits appear (most
//! significant bit first), the order `ethtool -m` prints them in.

/// One named bit: (byte index within the compliance field, bit number, name).
type Bit = (usize, u8, &'static str);

/// SFF-8636 bytes 131..=138 (index 0 is byte 131). Bit 7 of byte 131 is not a name: it says
/// the extended code in byte 192 applies.
const SFF8636_BITS: &[Bit] = &[
    (0, 6, "10G Ethernet: 10G Base-LRM"),
    (0, 5, "10G Ethernet: 10G Base-LR"),
    (0, 4, "10G Ethernet: 10G Base-SR"),
    (0, 3, "40G Ethernet: 40G Base-CR4"),
    (0, 2, "40G Ethernet: 40G Base-SR4"),
    (0, 1, "40G Ethernet: 40G Base-LR4"),
    (0, 0, "40G Ethernet: 40G Active Cable (XLPPI)"),
    (1, 3, "40G OTN (OTU3B/OTU3C)"),
    (1, 2, "SONET: OC-48, long reach"),
    (1, 1, "SONET: OC-48, intermediate reach"),
    (1, 0, "SONET: OC-48, short reach"),
    (2, 6, "SAS 12.0G"),
    (2, 5, "SAS 6.0G"),
    (2, 4, "SAS 3.0G"),
    (3, 3, "Ethernet: 1000BASE-T"),
    (3, 2, "Ethernet: 1000BASE-CX"),
    (3, 1, "Ethernet: 1000BASE-LX"),
    (3, 0, "Ethernet: 1000BASE-SX"),
    (4, 7, "FC: very long distance (V)"),
    (4, 6, "FC: short distance (S)"),
    (4, 5, "FC: intermediate distance (I)"),
    (4, 4, "FC: long distance (L)"),
    (4, 3, "FC: medium distance (M)"),
    (4, 1, "FC: Longwave laser (LC)"),
    (4, 0, "FC: Electrical inter-enclosure (EL)"),
    (5, 7, "FC: Electrical intra-enclosure (EL)"),
    (5, 6, "FC: Shortwave laser w/o OFC (SN)"),
    (5, 5, "FC: Shortwave laser with OFC (SL)"),
    (5, 4, "FC: Longwave laser (LL)"),
    (6, 7, "FC: Twin Axial Pair (TW)"),
    (6, 6, "FC: Twisted Pair (TP)"),
    (6, 5, "FC: Miniature Coax (MI)"),
    (6, 4, "FC: Video Coax (TV)"),
    (6, 3, "FC: Multimode, 62.5um (M6)"),
    (6, 2, "FC: Multimode, 50um (M5)"),
    (6, 1, "FC: Multimode, 50um (OM3)"),
    (6, 0, "FC: Single Mode (SM)"),
    (7, 7, "FC: 1200 MBytes/sec"),
    (7, 6, "FC: 800 MBytes/sec"),
    (7, 5, "FC: 1600 MBytes/sec"),
    (7, 4, "FC: 400 MBytes/sec"),
    (7, 2, "FC: 200 MBytes/sec"),
    (7, 0, "FC: 100 MBytes/sec"),
];

/// SFF-8472 bytes 3..=10 (index 0 is byte 3).
const SFF8472_BITS: &[Bit] = &[
    (0, 7, "10G Ethernet: 10G Base-ER"),
    (0, 6, "10G Ethernet: 10G Base-LRM"),
    (0, 5, "10G Ethernet: 10G Base-LR"),
    (0, 4, "10G Ethernet: 10G Base-SR"),
    (0, 3, "Infiniband: 1X SX"),
    (0, 2, "Infiniband: 1X LX"),
    (0, 1, "Infiniband: 1X Copper Active"),
    (0, 0, "Infiniband: 1X Copper Passive"),
    (1, 7, "ESCON: ESCON MMF, 1310nm LED"),
    (1, 6, "ESCON: ESCON SMF, 1310nm Laser"),
    (1, 5, "SONET: OC-192, short reach"),
    (1, 4, "SONET: SONET reach specifier bit 1"),
    (1, 3, "SONET: SONET reach specifier bit 2"),
    (1, 2, "SONET: OC-48, long reach"),
    (1, 1, "SONET: OC-48, intermediate reach"),
    (1, 0, "SONET: OC-48, short reach"),
    (2, 6, "SONET: OC-12, single mode, long reach"),
    (2, 5, "SONET: OC-12, single mode, inter. reach"),
    (2, 4, "SONET: OC-12, short reach"),
    (2, 2, "SONET: OC-3, single mode, long reach"),
    (2, 1, "SONET: OC-3, single mode, inter. reach"),
    (2, 0, "SONET: OC-3, short reach"),
    (3, 7, "Ethernet: BASE-PX"),
    (3, 6, "Ethernet: BASE-BX10"),
    (3, 5, "Ethernet: 100BASE-FX"),
    (3, 4, "Ethernet: 100BASE-LX/LX10"),
    (3, 3, "Ethernet: 1000BASE-T"),
    (3, 2, "Ethernet: 1000BASE-CX"),
    (3, 1, "Ethernet: 1000BASE-LX"),
    (3, 0, "Ethernet: 1000BASE-SX"),
    (4, 7, "FC: very long distance (V)"),
    (4, 6, "FC: short distance (S)"),
    (4, 5, "FC: intermediate distance (I)"),
    (4, 4, "FC: long distance (L)"),
    (4, 3, "FC: medium distance (M)"),
    (4, 2, "FC: Shortwave laser, linear Rx (SA)"),
    (4, 1, "FC: Longwave laser (LC)"),
    (4, 0, "FC: Electrical inter-enclosure (EL)"),
    (5, 7, "FC: Electrical intra-enclosure (EL)"),
    (5, 6, "FC: Shortwave laser w/o OFC (SN)"),
    (5, 5, "FC: Shortwave laser with OFC (SL)"),
    (5, 4, "FC: Longwave laser (LL)"),
    (5, 3, "Active Cable"),
    (5, 2, "Passive Cable"),
    (5, 1, "FC: Copper FC-BaseT"),
    (6, 7, "FC: Twin Axial Pair (TW)"),
    (6, 6, "FC: Twisted Pair (TP)"),
    (6, 5, "FC: Miniature Coax (MI)"),
    (6, 4, "FC: Video Coax (TV)"),
    (6, 3, "FC: Multimode, 62.5um (M6)"),
    (6, 2, "FC: Multimode, 50um (M5)"),
    (6, 0, "FC: Single Mode (SM)"),
    (7, 7, "FC: 1200 MBytes/sec"),
    (7, 6, "FC: 800 MBytes/sec"),
    (7, 4, "FC: 400 MBytes/sec"),
    (7, 2, "FC: 200 MBytes/sec"),
    (7, 0, "FC: 100 MBytes/sec"),
];

/// The names of the bits set in `bytes` according to `table`.
fn names(table: &[Bit], bytes: &[u8]) -> Vec<&'static str> {
    table
        .iter()
        .filter(|(i, bit, _)| bytes.get(*i).is_some_and(|b| b & (1 << bit) != 0))
        .map(|(_, _, name)| *name)
        .collect()
}

/// The compliance names of an SFF-8636 module: `bytes` are bytes 131..=138, `extended` is
/// byte 192 (used only when bit 7 of byte 131 says so).
pub(crate) fn sff8636(bytes: &[u8], extended: u8) -> Vec<&'static str> {
    let mut out = Vec::new();
    if bytes.first().is_some_and(|b| b & 0x80 != 0) {
        out.push(extended_name(extended));
    }
    out.extend(names(SFF8636_BITS, bytes));
    out
}

/// The compliance names of an SFF-8472 module: `bytes` are bytes 3..=10, `extended` is byte
/// 36 (0 means none).
pub(crate) fn sff8472(bytes: &[u8], extended: u8) -> Vec<&'static str> {
    let mut out = names(SFF8472_BITS, bytes);
    if extended != 0 {
        out.push(extended_name(extended));
    }
    out
}

/// The SFF-8024 extended specification compliance code (table 4-4).
pub fn extended_name(code: u8) -> &'static str {
    match code {
        0x00 => "unspecified",
        0x01 => "100G Ethernet: 100G AOC or 25GAUI C2M AOC with worst BER of 5x10^(-5)",
        0x02 => "100G Ethernet: 100G Base-SR4 or 25GBase-SR",
        0x03 => "100G Ethernet: 100G Base-LR4 or 25GBase-LR",
        0x04 => "100G Ethernet: 100G Base-ER4 or 25GBase-ER",
        0x05 => "100G Ethernet: 100G Base-SR10",
        0x06 => "100G Ethernet: 100G CWDM4 MSA with FEC",
        0x07 => "100G Ethernet: 100G PSM4 Parallel SMF",
        0x08 => "100G Ethernet: 100G ACC or 25GAUI C2M ACC with worst BER of 5x10^(-5)",
        0x09 => "100G Ethernet: 100G CWDM4 MSA without FEC",
        0x0b => "100G Ethernet: 100G Base-CR4 or 25G Base-CR CA-L",
        0x0c => "25G Ethernet: 25G Base-CR CA-S",
        0x0d => "25G Ethernet: 25G Base-CR CA-N",
        0x10 => "40G Ethernet: 40G Base-ER4",
        0x11 => "4x10G Ethernet: 10G Base-SR",
        0x12 => "40G Ethernet: 40G PSM4 Parallel SMF",
        0x13 => "Ethernet: G959.1 profile P1I1-2D1 (10709 MBd, 2km, 1310nm SM)",
        0x14 => "Ethernet: G959.1 profile P1S1-2D2 (10709 MBd, 40km, 1550nm SM)",
        0x15 => "Ethernet: G959.1 profile P1L1-2D2 (10709 MBd, 80km, 1550nm SM)",
        0x16 => "10G Ethernet: 10G Base-T with SFI electrical interface",
        0x17 => "100G Ethernet: 100G CLR4",
        0x18 => "100G Ethernet: 100G AOC or 25GAUI C2M AOC with worst BER of 10^(-12)",
        0x19 => "100G Ethernet: 100G ACC or 25GAUI C2M ACC with worst BER of 10^(-12)",
        0x1a => "100GE-DWDM2 (2 wavelengths on a 1550 nm DWDM grid, up to 80 km)",
        0x1b => "100G 1550nm WDM (4 wavelengths)",
        0x1c => "10GBASE-T Short Reach (30 meters)",
        0x1d => "5GBASE-T",
        0x1e => "2.5GBASE-T",
        0x1f => "40G SWDM4",
        0x20 => "100G SWDM4",
        0x21 => "100G PAM4 BiDi",
        0x22 => "4WDM-10 MSA (10km 100G CWDM4 with RS(528,514) FEC in the host)",
        0x23 => "4WDM-20 MSA (20km 100GBASE-LR4 with RS(528,514) FEC in the host)",
        0x24 => "4WDM-40 MSA (40km, APD receiver, RS(528,514) FEC in the host)",
        0x25 => "100GBASE-DR (clause 140), CAUI-4 (no FEC)",
        0x26 => "100G-FR or 100GBASE-FR1 (clause 140), CAUI-4 (no FEC)",
        0x27 => "100G-LR or 100GBASE-LR1 (clause 140), CAUI-4 (no FEC)",
        0x30 => "Active Copper Cable with 50GAUI, 100GAUI-2 or 200GAUI-4 C2M, BER 10^(-6) or below",
        0x31 => {
            "Active Optical Cable with 50GAUI, 100GAUI-2 or 200GAUI-4 C2M, BER 10^(-6) or below"
        }
        0x32 => {
            "Active Copper Cable with 50GAUI, 100GAUI-2 or 200GAUI-4 C2M, BER 2.6x10^(-4) or below"
        }
        0x33 => {
            "Active Optical Cable with 50GAUI, 100GAUI-2 or 200GAUI-4 C2M, BER 2.6x10^(-4) or below"
        }
        0x40 => "50GBASE-CR, 100GBASE-CR2, or 200GBASE-CR4",
        0x41 => "50GBASE-SR, 100GBASE-SR2, or 200GBASE-SR4",
        0x42 => "50GBASE-FR or 200GBASE-DR4",
        0x43 => "200GBASE-FR4",
        0x44 => "200G 1550 nm PSM4",
        0x45 => "50GBASE-LR",
        0x46 => "200GBASE-LR4",
        0x50 => "64GFC EA",
        0x51 => "64GFC SW",
        0x52 => "64GFC LW",
        0x53 => "128GFC EA",
        0x54 => "128GFC SW",
        0x55 => "128GFC LW",
        _ => "reserved or unknown extended compliance code",
    }
}

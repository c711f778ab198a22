//! Names for the code values that SFF-8024 assigns and the management specifications
//! reference: module identifiers, connectors, encodings, revision bytes, transmitter
//! technologies, and the CMIS media types, module states and application interface codes.
//!
//! Every function takes any byte: a value the tables do not list gets a "reserved or unknown"
//! (or vendor-specific) name rather than an error, since modules in the field carry codes
//! newer than any decoder.

/// Which management interface a module identifier implies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub enum Family {
    /// SFF-8636 (and SFF-8436): QSFP, QSFP+, QSFP28.
    Sff8636,
    /// SFF-8472: SFP, SFP+, SFP28 (two I2C addresses, A0h and A2h).
    Sff8472,
    /// CMIS: QSFP-DD, OSFP, QSFP+ or later with CMIS.
    Cmis,
}

impl Family {
    /// The management interface of a module with identifier byte `id`, or `None` when this
    /// decoder does not handle the identifier.
    pub fn of(id: u8) -> Option<Family> {
        match id {
            0x0c | 0x0d | 0x11 => Some(Family::Sff8636),
            0x03 => Some(Family::Sff8472),
            0x18 | 0x19 | 0x1e => Some(Family::Cmis),
            _ => None,
        }
    }
}

/// The SFF-8024 name of an identifier byte (byte 0 of every management interface).
pub fn identifier_name(id: u8) -> &'static str {
    match id {
        0x00 => "no module present, unknown, or unspecified",
        0x01 => "GBIC",
        0x02 => "module soldered to motherboard",
        0x03 => "SFP",
        0x04 => "300 pin XBI",
        0x05 => "XENPAK",
        0x06 => "XFP",
        0x07 => "XFF",
        0x08 => "XFP-E",
        0x09 => "XPAK",
        0x0a => "X2",
        0x0b => "DWDM-SFP",
        0x0c => "QSFP",
        0x0d => "QSFP+",
        0x0e => "CXP",
        0x0f => "Shielded Mini Multilane HD 4X",
        0x10 => "Shielded Mini Multilane HD 8X",
        0x11 => "QSFP28",
        0x12 => "CXP2/CXP28",
        0x13 => "CDFP Style 1/Style 2",
        0x14 => "Shielded Mini Multilane HD 4X Fanout Cable",
        0x15 => "Shielded Mini Multilane HD 8X Fanout Cable",
        0x16 => "CDFP Style 3",
        0x17 => "microQSFP",
        0x18 => "QSFP-DD Double Density 8X Pluggable Transceiver",
        0x19 => "OSFP 8X Pluggable Transceiver",
        0x1b => "DSFP Dual Small Form Factor Pluggable Transceiver",
        0x1e => "QSFP+ or later with CMIS",
        0x1f => "SFP-DD with CMIS",
        0x20 => "SFP+ with CMIS",
        0x80..=0xff => "vendor specific",
        _ => "reserved or unknown",
    }
}

/// The SFF-8024 name of a connector byte.
pub fn connector_name(code: u8) -> &'static str {
    match code {
        0x00 => "unknown or unspecified",
        0x01 => "SC",
        0x02 => "Fibre Channel Style 1 copper",
        0x03 => "Fibre Channel Style 2 copper",
        0x04 => "BNC/TNC",
        0x05 => "Fibre Channel coaxial headers",
        0x06 => "FibreJack",
        0x07 => "LC",
        0x08 => "MT-RJ",
        0x09 => "MU",
        0x0a => "SG",
        0x0b => "Optical pigtail",
        0x0c => "MPO 1x12",
        0x0d => "MPO 2x16",
        0x20 => "HSSDC II",
        0x21 => "Copper pigtail",
        0x22 => "RJ45",
        0x23 => "No separable connector",
        0x24 => "MXC 2x16",
        0x25 => "CS optical connector",
        0x26 => "Mini CS optical connector",
        0x27 => "MPO 2x12",
        0x28 => "MPO 1x16",
        0x80..=0xff => "vendor specific",
        _ => "reserved or unknown",
    }
}

/// The name of an encoding byte. Codes 4 to 6 mean different things in SFF-8472 and in
/// SFF-8636, so the family decides.
pub fn encoding_name(code: u8, family: Family) -> &'static str {
    let sfp = family == Family::Sff8472;
    match code {
        0x00 => "unspecified",
        0x01 => "8B/10B",
        0x02 => "4B/5B",
        0x03 => "NRZ",
        0x04 if sfp => "Manchester",
        0x04 => "SONET Scrambled",
        0x05 if sfp => "SONET Scrambled",
        0x05 => "64B/66B",
        0x06 if sfp => "64B/66B",
        0x06 => "Manchester",
        0x07 => "256B/257B (transcoded FEC-enabled data)",
        0x08 => "PAM4",
        _ => "reserved or unknown",
    }
}

/// What an SFF-8636 revision compliance byte (lower page byte 1) says.
pub fn sff8636_revision_name(code: u8) -> &'static str {
    match code {
        0x00 => "revision not specified",
        0x01 => "SFF-8436 Rev 4.8 or earlier",
        0x02 => "SFF-8436 Rev 4.8 or earlier, bytes 186-189 as SFF-8636",
        0x03 => "SFF-8636 Rev 1.3 or earlier",
        0x04 => "SFF-8636 Rev 1.4",
        0x05 => "SFF-8636 Rev 1.5",
        0x06 => "SFF-8636 Rev 2.0",
        0x07 => "SFF-8636 Rev 2.5/2.6/2.7",
        0x08 => "SFF-8636 Rev 2.8/2.9/2.10",
        _ => "unallocated",
    }
}

/// What an SFF-8472 compliance byte (A0h byte 94) says.
pub fn sff8472_revision_name(code: u8) -> &'static str {
    match code {
        0x00 => "digital diagnostics not included",
        0x01 => "SFF-8472 Rev 9.3",
        0x02 => "SFF-8472 Rev 9.5",
        0x03 => "SFF-8472 Rev 10.2",
        0x04 => "SFF-8472 Rev 10.4",
        0x05 => "SFF-8472 Rev 11.0",
        0x06 => "SFF-8472 Rev 11.3",
        0x07 => "SFF-8472 Rev 11.4",
        0x08 => "SFF-8472 Rev 12.0 or later",
        _ => "unallocated",
    }
}

/// The transmitter technology of SFF-8636 byte 147 (upper nibble) and CMIS page 00h byte
/// 212: both use the same sixteen codes. Codes 0x0a and up are copper.
pub fn transmitter_technology_name(code: u8) -> &'static str {
    match code {
        0x00 => "850 nm VCSEL",
        0x01 => "1310 nm VCSEL",
        0x02 => "1550 nm VCSEL",
        0x03 => "1310 nm FP",
        0x04 => "1310 nm DFB",
        0x05 => "1550 nm DFB",
        0x06 => "1310 nm EML",
        0x07 => "1550 nm EML",
        0x08 => "Others/Undefined",
        0x09 => "1490 nm DFB",
        0x0a => "Copper cable, unequalized",
        0x0b => "Copper cable, passive equalized",
        0x0c => "Copper cable, near and far end limiting active equalizers",
        0x0d => "Copper cable, far end limiting active equalizers",
        0x0e => "Copper cable, near end limiting active equalizers",
        0x0f => "Copper cable, linear active equalizers",
        _ => "reserved or unknown",
    }
}

/// The CMIS module state (lower page byte 3, bits 3..1).
pub fn cmis_module_state_name(state: u8) -> &'static str {
    match state {
        0x01 => "ModuleLowPwr",
        0x02 => "ModulePwrUp",
        0x03 => "ModuleReady",
        0x04 => "ModulePwrDn",
        0x05 => "ModuleFault",
        _ => "reserved or unknown",
    }
}

/// The CMIS media type (lower page byte 85): it selects which SFF-8024 table the media
/// interface codes of the application descriptors come from.
pub fn cmis_media_type_name(code: u8) -> &'static str {
    match code {
        0x00 => "undefined",
        0x01 => "optical interfaces: MMF",
        0x02 => "optical interfaces: SMF",
        0x03 => "passive copper cables",
        0x04 => "active cables",
        0x05 => "BASE-T",
        0x40..=0x8f => "custom",
        _ => "reserved or unknown",
    }
}

/// The SFF-8024 host electrical interface code of a CMIS application descriptor.
pub fn host_interface_name(code: u8) -> &'static str {
    match code {
        0x00 => "undefined",
        0x01 => "1000BASE-CX",
        0x02 => "XAUI",
        0x03 => "XFI",
        0x04 => "SFI",
        0x05 => "25GAUI C2M",
        0x06 => "XLAUI C2M",
        0x07 => "XLPPI",
        0x08 => "LAUI-2 C2M",
        0x09 => "50GAUI-2 C2M",
        0x0a => "50GAUI-1 C2M",
        0x0b => "CAUI-4 C2M",
        0x0c => "100GAUI-4 C2M",
        0x0d => "100GAUI-2 C2M",
        0x0e => "200GAUI-8 C2M",
        0x0f => "200GAUI-4 C2M",
        0x10 => "400GAUI-16 C2M",
        0x11 => "400GAUI-8 C2M",
        0x13 => "10GBASE-CX4",
        0x14 => "25GBASE-CR CA-L",
        0x15 => "25GBASE-CR CA-S",
        0x16 => "25GBASE-CR CA-N",
        0x17 => "40GBASE-CR4",
        0x18 => "50GBASE-CR",
        0x1a => "100GBASE-CR10",
        0x1b => "100GBASE-CR4",
        0x1c => "100GBASE-CR2",
        0x1d => "200GBASE-CR4",
        0x1e => "400G CR8",
        0xc0..=0xfe => "custom",
        _ => "reserved or unknown",
    }
}

/// The SFF-8024 media interface code of a CMIS application descriptor, read in the table
/// that the media type selects.
pub fn media_interface_name(media_type: u8, code: u8) -> &'static str {
    let name = match media_type {
        0x01 => mmf_interface(code),
        0x02 => smf_interface(code),
        0x03 => match code {
            0x01 => Some("Copper cable"),
            _ => None,
        },
        0x04 => match code {
            0x01 => Some("Active Cable assembly with BER < 1e-12"),
            0x02 => Some("Active Cable assembly with BER < 5e-5"),
            0x03 => Some("Active Cable assembly with BER < 2.6e-4"),
            0x04 => Some("Active Cable assembly with BER < 1e-6"),
            _ => None,
        },
        _ => None,
    };
    match (name, code) {
        (Some(n), _) => n,
        (None, 0x00) => "undefined",
        (None, 0xc0..=0xfe) => "custom",
        (None, _) => "reserved or unknown",
    }
}

/// Multimode fibre media interface codes.
fn mmf_interface(code: u8) -> Option<&'static str> {
    Some(match code {
        0x01 => "10GBASE-SW",
        0x02 => "10GBASE-SR",
        0x03 => "25GBASE-SR",
        0x04 => "40GBASE-SR4",
        0x05 => "40GE SWDM4",
        0x06 => "40GE BiDi",
        0x07 => "50GBASE-SR",
        0x08 => "100GBASE-SR10",
        0x09 => "100GBASE-SR4",
        0x0a => "100GE SWDM4",
        0x0b => "100GE BiDi",
        0x0c => "100GBASE-SR2",
        0x0d => "100G-SR",
        0x0e => "200GBASE-SR4",
        0x0f => "400GBASE-SR16",
        0x10 => "400GBASE-SR8",
        0x11 => "400G-SR4",
        0x12 => "800G-SR8",
        _ => return None,
    })
}

/// Single-mode fibre media interface codes.
fn smf_interface(code: u8) -> Option<&'static str> {
    Some(match code {
        0x01 => "10GBASE-LW",
        0x02 => "10GBASE-EW",
        0x03 => "10G-ZW",
        0x04 => "10GBASE-LR",
        0x05 => "10GBASE-ER",
        0x06 => "10G-ZR",
        0x07 => "25GBASE-LR",
        0x08 => "25GBASE-ER",
        0x09 => "40GBASE-LR4",
        0x0a => "40GBASE-FR",
        0x0b => "50GBASE-FR",
        0x0c => "50GBASE-LR",
        0x0d => "100GBASE-LR4",
        0x0e => "100GBASE-ER4",
        0x0f => "100G PSM4",
        0x10 => "100G CWDM4-OCP",
        0x11 => "100G CWDM4",
        0x12 => "100G 4WDM-10",
        0x13 => "100G 4WDM-20",
        0x14 => "100G 4WDM-40",
        0x15 => "100GBASE-DR",
        0x16 => "100G-FR/100GBASE-FR1",
        0x17 => "100G-LR/100GBASE-LR1",
        0x18 => "200GBASE-DR4",
        0x19 => "200GBASE-FR4",
        0x1a => "200GBASE-LR4",
        0x1b => "400GBASE-FR8",
        0x1c => "400GBASE-LR8",
        0x1d => "400GBASE-DR4",
        0x1e => "400G-FR4",
        0x1f => "400G-LR4-10",
        _ => return None,
    })
}

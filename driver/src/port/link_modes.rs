//! The Ethernet link modes of PTYS's protocol masks, with the speed each runs at and the
//! names `ethtool` prints for it. Bit numbers come from the spec's `eth_link_mode` and
//! `ext_eth_link_mode` enums; the `ethtool` names are the link modes Linux's mlx5e reports for
//! each bit (several for the extended modes, which name a lane rate rather than a medium).

use mlx5_prm::{EthLinkMode as L, ExtEthLinkMode as X};

/// One link mode of a PTYS mask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct LinkMode {
    /// The spec's name of the bit (`eth_100gbase_sr4`).
    pub name: &'static str,
    /// The bit number in its mask.
    pub bit: u8,
    /// True for a bit of the extended masks (`ext_eth_proto_*`).
    pub extended: bool,
    /// Speed in Mb/s.
    pub speed_mbps: u32,
    /// The link modes `ethtool` shows for it (`100000baseSR4/Full`); empty where Linux maps
    /// the bit to none.
    pub ethtool: &'static [&'static str],
}

const fn legacy(mode: L, speed_mbps: u32, ethtool: &'static [&'static str]) -> LinkMode {
    LinkMode {
        name: mode.spec_name(),
        bit: mode.raw(),
        extended: false,
        speed_mbps,
        ethtool,
    }
}

const fn ext(mode: X, speed_mbps: u32, ethtool: &'static [&'static str]) -> LinkMode {
    LinkMode {
        name: mode.spec_name(),
        bit: mode.raw(),
        extended: true,
        speed_mbps,
        ethtool,
    }
}

/// The modes of the legacy masks (`eth_proto_*`).
pub const LEGACY: &[LinkMode] = &[
    legacy(L::Eth1000baseCxSgmii, 1_000, &["1000baseKX/Full"]),
    legacy(L::Eth1000baseKx, 1_000, &["1000baseKX/Full"]),
    legacy(L::Eth10gbaseCx4, 10_000, &["10000baseKX4/Full"]),
    legacy(L::Eth10gbaseKx4, 10_000, &["10000baseKX4/Full"]),
    legacy(L::Eth10gbaseKr, 10_000, &["10000baseKR/Full"]),
    legacy(L::Eth20gbaseKr2, 20_000, &["20000baseKR2/Full"]),
    legacy(L::Eth40gbaseCr4, 40_000, &["40000baseCR4/Full"]),
    legacy(L::Eth40gbaseKr4, 40_000, &["40000baseKR4/Full"]),
    legacy(L::Eth56gbaseR4, 56_000, &["56000baseKR4/Full"]),
    legacy(L::Eth10gbaseCr, 10_000, &["10000baseKR/Full"]),
    legacy(L::Eth10gbaseSr, 10_000, &["10000baseKR/Full"]),
    legacy(L::Eth10gbaseErLr, 10_000, &["10000baseKR/Full"]),
    legacy(L::Eth40gbaseSr4, 40_000, &["40000baseSR4/Full"]),
    legacy(L::Eth40gbaseLr4Er4, 40_000, &["40000baseLR4/Full"]),
    legacy(L::Eth50gbaseSr2, 50_000, &["50000baseSR2/Full"]),
    legacy(L::Eth100gbaseCr4, 100_000, &["100000baseCR4/Full"]),
    legacy(L::Eth100gbaseSr4, 100_000, &["100000baseSR4/Full"]),
    legacy(L::Eth100gbaseKr4, 100_000, &["100000baseKR4/Full"]),
    legacy(L::Eth100gbaseLr4Er4, 100_000, &["100000baseLR4_ER4/Full"]),
    legacy(L::Eth100baseTx, 100, &[]),
    legacy(L::Eth1000baseT, 1_000, &[]),
    legacy(L::Eth10gbaseT, 10_000, &["10000baseT/Full"]),
    legacy(L::Eth25gbaseCr, 25_000, &["25000baseCR/Full"]),
    legacy(L::Eth25gbaseKr, 25_000, &["25000baseKR/Full"]),
    legacy(L::Eth25gbaseSr, 25_000, &["25000baseSR/Full"]),
    legacy(L::Eth50gbaseCr2, 50_000, &["50000baseCR2/Full"]),
    legacy(L::Eth50gbaseKr2, 50_000, &["50000baseKR2/Full"]),
];

/// The modes of the extended masks (`ext_eth_proto_*`).
pub const EXTENDED: &[LinkMode] = &[
    ext(X::ExtSgmii100m, 100, &["100baseT/Full"]),
    ext(
        X::Ext1000baseXSgmii,
        1_000,
        &["1000baseT/Full", "1000baseKX/Full", "1000baseX/Full"],
    ),
    ext(X::Ext5gbaseR, 5_000, &["5000baseT/Full"]),
    ext(
        X::Ext10gbaseXfiXaui1,
        10_000,
        &[
            "10000baseT/Full",
            "10000baseKR/Full",
            "10000baseCR/Full",
            "10000baseSR/Full",
            "10000baseLR/Full",
            "10000baseER/Full",
        ],
    ),
    ext(
        X::Ext40gbaseXlaui4Xlppi4,
        40_000,
        &[
            "40000baseKR4/Full",
            "40000baseCR4/Full",
            "40000baseSR4/Full",
            "40000baseLR4/Full",
        ],
    ),
    ext(
        X::Ext25gaui125gbaseCrKr,
        25_000,
        &["25000baseCR/Full", "25000baseKR/Full", "25000baseSR/Full"],
    ),
    ext(
        X::Ext50gaui2Laui250gbaseCr2Kr2,
        50_000,
        &[
            "50000baseCR2/Full",
            "50000baseKR2/Full",
            "50000baseSR2/Full",
        ],
    ),
    ext(
        X::Ext50gaui1Laui150gbaseCrKr,
        50_000,
        &[
            "50000baseKR/Full",
            "50000baseSR/Full",
            "50000baseCR/Full",
            "50000baseLR_ER_FR/Full",
            "50000baseDR/Full",
        ],
    ),
    ext(
        X::ExtCaui4100gbaseCr4Kr4,
        100_000,
        &[
            "100000baseKR4/Full",
            "100000baseSR4/Full",
            "100000baseCR4/Full",
            "100000baseLR4_ER4/Full",
        ],
    ),
    ext(
        X::Ext100gaui2100gbaseCr2Kr2,
        100_000,
        &[
            "100000baseKR2/Full",
            "100000baseSR2/Full",
            "100000baseCR2/Full",
            "100000baseLR2_ER2_FR2/Full",
            "100000baseDR2/Full",
        ],
    ),
    ext(
        X::Ext100gaui1100gbaseCrKr,
        100_000,
        &[
            "100000baseKR/Full",
            "100000baseSR/Full",
            "100000baseLR_ER_FR/Full",
            "100000baseDR/Full",
            "100000baseCR/Full",
        ],
    ),
    ext(
        X::Ext200gaui4200gbaseCr4Kr4,
        200_000,
        &[
            "200000baseKR4/Full",
            "200000baseSR4/Full",
            "200000baseLR4_ER4_FR4/Full",
            "200000baseDR4/Full",
            "200000baseCR4/Full",
        ],
    ),
    ext(
        X::Ext200gaui2200gbaseCr2Kr2,
        200_000,
        &[
            "200000baseKR2/Full",
            "200000baseSR2/Full",
            "200000baseLR2_ER2_FR2/Full",
            "200000baseDR2/Full",
            "200000baseCR2/Full",
        ],
    ),
    ext(X::Ext200gaui1200gbaseCr1Kr1, 200_000, &[]),
    ext(X::Ext400gaui8400gbaseCr8, 400_000, &[]),
    ext(
        X::Ext400gaui4400gbaseCr4Kr4,
        400_000,
        &[
            "400000baseKR4/Full",
            "400000baseSR4/Full",
            "400000baseLR4_ER4_FR4/Full",
            "400000baseDR4/Full",
            "400000baseCR4/Full",
        ],
    ),
    ext(X::Ext400gaui2400gbaseCr2Kr2, 400_000, &[]),
    ext(X::Ext800gaui8800gbaseCr8Kr8, 800_000, &[]),
    ext(X::Ext800gaui4800gbaseCr4Kr4, 800_000, &[]),
    ext(X::Ext1600gaui81600gbaseCr8Kr8, 1_600_000, &[]),
];

/// The modes whose bits are set in `mask` (of the extended masks when `extended`), in bit
/// order. Bits no mode names are left out; [`unnamed_bits`] reports them.
pub fn modes(mask: u32, extended: bool) -> Vec<LinkMode> {
    let table = if extended { EXTENDED } else { LEGACY };
    let mut out: Vec<LinkMode> = table
        .iter()
        .filter(|m| mask & (1 << m.bit) != 0)
        .copied()
        .collect();
    out.sort_by_key(|m| m.bit);
    out
}

/// The bits of `mask` that name no mode of its table.
pub fn unnamed_bits(mask: u32, extended: bool) -> u32 {
    let table = if extended { EXTENDED } else { LEGACY };
    table.iter().fold(mask, |m, mode| m & !(1 << mode.bit))
}

/// The mask of `modes` (all of one kind: legacy or extended).
pub fn mask(modes: &[LinkMode]) -> u32 {
    modes.iter().fold(0, |m, mode| m | 1 << mode.bit)
}

/// The modes a name stands for: the spec's name of one bit (`eth_100gbase_sr4`), or an
/// `ethtool` link mode (`10000baseKR/Full`, case-insensitive, `/Full` optional), which
/// several bits may map to (Linux shows 10GBASE-CR, -SR and -ER all as `10000baseKR/Full`).
pub fn matching(name: &str, extended: bool) -> Vec<LinkMode> {
    let table = if extended { EXTENDED } else { LEGACY };
    let wanted = name.trim().to_ascii_lowercase();
    let wanted_full = if wanted.ends_with("/full") {
        wanted.clone()
    } else {
        format!("{wanted}/full")
    };
    table
        .iter()
        .copied()
        .filter(|m| {
            m.name == wanted
                || m.ethtool
                    .iter()
                    .any(|e| e.to_ascii_lowercase() == wanted_full)
        })
        .collect()
}

/// The first mode [`matching`] finds.
pub fn by_name(name: &str, extended: bool) -> Option<LinkMode> {
    matching(name, extended).into_iter().next()
}

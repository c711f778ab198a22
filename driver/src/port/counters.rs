//! PPCNT: a port's counters by group, each 64-bit counter put together from its high and
//! low halves, named as the spec names it and, where Linux's mlx5e shows it in `ethtool -S`,
//! by that name too (`tx_packets_phy`, `rx_prio0_bytes`, …). The fields come from the
//! group's generated layout table, so every counter the spec defines is reported; the bit
//! error rates follow from the statistical group.

use super::Port;
use crate::backend::Backend;
use crate::error::Result;
use mlx5_prm::reg::Ppcnt;
use mlx5_prm::rt::reflect::{read_bits, LayoutAccess};
use mlx5_prm::PpcntCounterGroup as G;

/// A PPCNT counter group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub enum CounterGroup {
    /// IEEE 802.3 MAC counters.
    Ieee8023,
    /// RFC 2863 interface counters.
    Rfc2863,
    /// RFC 2819 RMON statistics.
    Rfc2819,
    /// RFC 3635 Ethernet-like error counters.
    Rfc3635,
    /// Extended Ethernet counters.
    EthernetExtended,
    /// The counters of one priority (0..=7).
    PerPriority(u8),
    /// Physical layer counters.
    PhysicalLayer,
    /// Physical layer statistical counters (bits received, errors before and after FEC).
    PhysicalLayerStatistical,
}

impl CounterGroup {
    /// Every group, with the priorities of the per-priority group.
    pub fn all() -> Vec<CounterGroup> {
        let mut v = vec![
            CounterGroup::Ieee8023,
            CounterGroup::Rfc2863,
            CounterGroup::Rfc2819,
            CounterGroup::Rfc3635,
            CounterGroup::EthernetExtended,
        ];
        v.extend((0..8).map(CounterGroup::PerPriority));
        v.extend([
            CounterGroup::PhysicalLayer,
            CounterGroup::PhysicalLayerStatistical,
        ]);
        v
    }

    /// The short name tools take (`ieee_802_3`, `prio3`, `phy`, …).
    pub fn name(&self) -> String {
        match self {
            CounterGroup::Ieee8023 => "ieee_802_3".into(),
            CounterGroup::Rfc2863 => "rfc_2863".into(),
            CounterGroup::Rfc2819 => "rfc_2819".into(),
            CounterGroup::Rfc3635 => "rfc_3635".into(),
            CounterGroup::EthernetExtended => "ethernet_extended".into(),
            CounterGroup::PerPriority(p) => format!("prio{p}"),
            CounterGroup::PhysicalLayer => "phy".into(),
            CounterGroup::PhysicalLayerStatistical => "phy_statistical".into(),
        }
    }

    /// The group a name ([`CounterGroup::name`], or the spec's enum name) stands for.
    pub fn parse(name: &str) -> Option<CounterGroup> {
        if let Some(p) = name.strip_prefix("prio") {
            return p
                .parse::<u8>()
                .ok()
                .filter(|&p| p < 8)
                .map(CounterGroup::PerPriority);
        }
        Some(match name {
            "ieee_802_3" | "802_3" => CounterGroup::Ieee8023,
            "rfc_2863" | "2863" => CounterGroup::Rfc2863,
            "rfc_2819" | "2819" | "rmon" => CounterGroup::Rfc2819,
            "rfc_3635" | "3635" => CounterGroup::Rfc3635,
            "ethernet_extended" | "ext" => CounterGroup::EthernetExtended,
            "phy" | "physical_layer" => CounterGroup::PhysicalLayer,
            "phy_statistical" | "physical_layer_statistical" => {
                CounterGroup::PhysicalLayerStatistical
            }
            _ => return None,
        })
    }

    fn raw(&self) -> (G, u8) {
        match *self {
            CounterGroup::Ieee8023 => (G::Ieee8023, 0),
            CounterGroup::Rfc2863 => (G::Rfc2863, 0),
            CounterGroup::Rfc2819 => (G::Rfc2819, 0),
            CounterGroup::Rfc3635 => (G::Rfc3635, 0),
            CounterGroup::EthernetExtended => (G::EthernetExtended, 0),
            CounterGroup::PerPriority(p) => (G::PerPriority, p),
            CounterGroup::PhysicalLayer => (G::PhysicalLayer, 0),
            CounterGroup::PhysicalLayerStatistical => (G::PhysicalLayerStatistical, 0),
        }
    }

    /// The layout of the group's counter set.
    fn table(&self) -> &'static LayoutAccess {
        match self {
            CounterGroup::Ieee8023 => &mlx5_prm::ETH_802_3_CNTRS_GRP_DATA_LAYOUT_ACCESS,
            CounterGroup::Rfc2863 => &mlx5_prm::ETH_2863_CNTRS_GRP_DATA_LAYOUT_ACCESS,
            CounterGroup::Rfc2819 => &mlx5_prm::ETH_2819_CNTRS_GRP_DATA_LAYOUT_ACCESS,
            CounterGroup::Rfc3635 => &mlx5_prm::ETH_3635_CNTRS_GRP_DATA_LAYOUT_ACCESS,
            CounterGroup::EthernetExtended => &mlx5_prm::ETH_EXTENDED_CNTRS_GRP_DATA_LAYOUT_ACCESS,
            CounterGroup::PerPriority(_) => &mlx5_prm::ETH_PER_PRIO_GRP_DATA_LAYOUT_ACCESS,
            CounterGroup::PhysicalLayer => &mlx5_prm::PHYS_LAYER_CNTRS_ACCESS,
            CounterGroup::PhysicalLayerStatistical => {
                &mlx5_prm::PHYS_LAYER_STATISTICAL_CNTRS_ACCESS
            }
        }
    }

    /// The `ethtool -S` name Linux gives counter `name` of this group, if it shows it.
    fn ethtool_name(&self, name: &str) -> Option<String> {
        let fixed = |table: &[(&str, &str)]| {
            table
                .iter()
                .find(|(spec, _)| *spec == name)
                .map(|(_, e)| e.to_string())
        };
        match self {
            CounterGroup::Ieee8023 => fixed(ETHTOOL_802_3),
            CounterGroup::Rfc2863 => fixed(ETHTOOL_2863),
            CounterGroup::Rfc2819 => fixed(ETHTOOL_2819),
            CounterGroup::EthernetExtended => fixed(ETHTOOL_EXT),
            CounterGroup::PhysicalLayer => fixed(ETHTOOL_PHY),
            CounterGroup::PhysicalLayerStatistical => fixed(ETHTOOL_PHY_STATISTICAL),
            CounterGroup::PerPriority(p) => ETHTOOL_PER_PRIO
                .iter()
                .find(|(spec, _)| *spec == name)
                .map(|(_, e)| e.replace("{}", &p.to_string())),
            CounterGroup::Rfc3635 => None,
        }
    }
}

/// `ethtool -S` names of the IEEE 802.3 group (Linux's mlx5e, `en_stats.c`).
const ETHTOOL_802_3: &[(&str, &str)] = &[
    ("a_frames_transmitted_ok", "tx_packets_phy"),
    ("a_frames_received_ok", "rx_packets_phy"),
    ("a_frame_check_sequence_errors", "rx_crc_errors_phy"),
    ("a_octets_transmitted_ok", "tx_bytes_phy"),
    ("a_octets_received_ok", "rx_bytes_phy"),
    ("a_multicast_frames_xmitted_ok", "tx_multicast_phy"),
    ("a_broadcast_frames_xmitted_ok", "tx_broadcast_phy"),
    ("a_multicast_frames_received_ok", "rx_multicast_phy"),
    ("a_broadcast_frames_received_ok", "rx_broadcast_phy"),
    ("a_in_range_length_errors", "rx_in_range_len_errors_phy"),
    ("a_out_of_range_length_field", "rx_out_of_range_len_phy"),
    ("a_frame_too_long_errors", "rx_oversize_pkts_phy"),
    ("a_symbol_error_during_carrier", "rx_symbol_err_phy"),
    ("a_mac_control_frames_transmitted", "tx_mac_control_phy"),
    ("a_mac_control_frames_received", "rx_mac_control_phy"),
    ("a_unsupported_opcodes_received", "rx_unsupported_op_phy"),
    ("a_pause_mac_ctrl_frames_received", "rx_pause_ctrl_phy"),
    ("a_pause_mac_ctrl_frames_transmitted", "tx_pause_ctrl_phy"),
];

const ETHTOOL_2863: &[(&str, &str)] = &[
    ("if_in_discards", "rx_discards_phy"),
    ("if_out_discards", "tx_discards_phy"),
    ("if_out_errors", "tx_errors_phy"),
];

const ETHTOOL_2819: &[(&str, &str)] = &[
    ("ether_stats_undersize_pkts", "rx_undersize_pkts_phy"),
    ("ether_stats_fragments", "rx_fragments_phy"),
    ("ether_stats_jabbers", "rx_jabbers_phy"),
    ("ether_stats_pkts64octets", "rx_64_bytes_phy"),
    ("ether_stats_pkts65to127octets", "rx_65_to_127_bytes_phy"),
    ("ether_stats_pkts128to255octets", "rx_128_to_255_bytes_phy"),
    ("ether_stats_pkts256to511octets", "rx_256_to_511_bytes_phy"),
    (
        "ether_stats_pkts512to1023octets",
        "rx_512_to_1023_bytes_phy",
    ),
    (
        "ether_stats_pkts1024to1518octets",
        "rx_1024_to_1518_bytes_phy",
    ),
    (
        "ether_stats_pkts1519to2047octets",
        "rx_1519_to_2047_bytes_phy",
    ),
    (
        "ether_stats_pkts2048to4095octets",
        "rx_2048_to_4095_bytes_phy",
    ),
    (
        "ether_stats_pkts4096to8191octets",
        "rx_4096_to_8191_bytes_phy",
    ),
    (
        "ether_stats_pkts8192to10239octets",
        "rx_8192_to_10239_bytes_phy",
    ),
];

const ETHTOOL_EXT: &[(&str, &str)] = &[("rx_buffer_almost_full", "rx_buffer_passed_thres_phy")];

const ETHTOOL_PHY: &[(&str, &str)] = &[("link_down_events", "link_down_events_phy")];

const ETHTOOL_PHY_STATISTICAL: &[(&str, &str)] = &[
    ("phy_symbol_errors", "rx_pcs_symbol_err_phy"),
    ("phy_corrected_bits", "rx_corrected_bits_phy"),
    ("phy_corrected_bits_lane0", "rx_err_lane_0_phy"),
    ("phy_corrected_bits_lane1", "rx_err_lane_1_phy"),
    ("phy_corrected_bits_lane2", "rx_err_lane_2_phy"),
    ("phy_corrected_bits_lane3", "rx_err_lane_3_phy"),
];

/// The per-priority names, `{}` standing for the priority.
const ETHTOOL_PER_PRIO: &[(&str, &str)] = &[
    ("rx_octets", "rx_prio{}_bytes"),
    ("rx_frames", "rx_prio{}_packets"),
    ("rx_discards", "rx_prio{}_discards"),
    ("tx_octets", "tx_prio{}_bytes"),
    ("tx_frames", "tx_prio{}_packets"),
    ("rx_pause", "rx_prio{}_pause"),
    ("rx_pause_duration", "rx_prio{}_pause_duration"),
    ("tx_pause", "tx_prio{}_pause"),
    ("tx_pause_duration", "tx_prio{}_pause_duration"),
    ("rx_pause_transition", "rx_prio{}_pause_transition"),
];

/// One counter.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Counter {
    /// The spec's name, without `_high`/`_low` (`a_frames_transmitted_ok`).
    pub name: &'static str,
    /// The name `ethtool -S` shows it by on Linux, if it shows it.
    pub ethtool: Option<String>,
    /// Its value.
    pub value: u64,
}

/// The counters of one group.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Counters {
    /// The group.
    pub group: CounterGroup,
    /// Every counter of its layout, in layout order.
    pub counters: Vec<Counter>,
}

impl Counters {
    /// The counter the spec calls `name`, or `ethtool -S` does.
    pub fn get(&self, name: &str) -> Option<u64> {
        self.counters
            .iter()
            .find(|c| c.name == name || c.ethtool.as_deref() == Some(name))
            .map(|c| c.value)
    }
}

/// The counters of a counter set laid out by `table`: `x_high` and `x_low` pairs as one
/// 64-bit `x`, other numbers as they are; reserved fields left out.
fn decode(group: CounterGroup, table: &'static LayoutAccess, set: &[u8]) -> Vec<Counter> {
    let mut out = Vec::new();
    for f in table.fields {
        if f.name.starts_with("reserved") || f.count != 1 || !f.is_scalar() {
            continue;
        }
        let read = |bit: usize| read_bits(set, bit, f.width).unwrap_or(0);
        let (name, value) = if let Some(base) = f.name.strip_suffix("_high") {
            let low = table.field(&format!("{base}_low"));
            let low = low.map_or(0, |l| read_bits(set, l.bit_offset, l.width).unwrap_or(0));
            (base, read(f.bit_offset) << 32 | low)
        } else if f.name.ends_with("_low")
            && table
                .field(&format!("{}_high", f.name.trim_end_matches("_low")))
                .is_some()
        {
            continue;
        } else {
            (f.name, read(f.bit_offset))
        };
        out.push(Counter {
            name,
            ethtool: group.ethtool_name(name),
            value,
        });
    }
    out
}

/// Bit error rates from the statistical group, as `mlxlink` reports them.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct BitErrorRate {
    /// Bits received since the group was cleared.
    pub received_bits: u64,
    /// Bits the FEC corrected.
    pub corrected_bits: u64,
    /// Errors left after the FEC.
    pub symbol_errors: u64,
    /// Errors before the FEC per bit received (corrected plus uncorrected); `None` before
    /// any bit arrived.
    pub raw: Option<f64>,
    /// Errors after the FEC per bit received: the effective BER.
    pub effective: Option<f64>,
    /// With no error yet, the rate cannot be above one error in the bits received: `1 /
    /// received_bits` (what a BER of 0 really says).
    pub bound: Option<f64>,
}

impl<B: Backend> Port<'_, B> {
    /// The counters of `group`; `clear` zeroes the group on the device after reading it.
    pub fn counters(&self, group: CounterGroup, clear: bool) -> Result<Counters> {
        let (grp, prio) = group.raw();
        let image = self.hca.read_reg::<Ppcnt>(|r| {
            r.set_local_port(self.local_port);
            r.set_grp(grp);
            r.set_prio_tc(prio);
            r.set_clr(clear);
        })?;
        let set = image.counter_set();
        Ok(Counters {
            group,
            counters: decode(group, group.table(), set.storage()),
        })
    }

    /// Bit error rates of the port's physical layer (the statistical group).
    pub fn bit_error_rate(&self) -> Result<BitErrorRate> {
        let c = self.counters(CounterGroup::PhysicalLayerStatistical, false)?;
        let received_bits = c.get("phy_received_bits").unwrap_or(0);
        let corrected_bits = c.get("phy_corrected_bits").unwrap_or(0);
        let symbol_errors = c.get("phy_symbol_errors").unwrap_or(0);
        let per_bit = |n: u64| (received_bits > 0).then(|| n as f64 / received_bits as f64);
        Ok(BitErrorRate {
            received_bits,
            corrected_bits,
            symbol_errors,
            raw: per_bit(corrected_bits.saturating_add(symbol_errors)),
            effective: per_bit(symbol_errors),
            bound: per_bit(1).filter(|_| symbol_errors == 0),
        })
    }
}

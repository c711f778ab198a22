//! PPCNT, the port's counters by group (what `ethtool -S` shows with the `_phy` suffix).
//!
//! The model's port counts what it carries: the IEEE 802.3, RFC 2863, RFC 2819 and per-priority
//! groups report the frames sent and received on the wire while the port is up, with octets
//! counting the 4-byte FCS a real wire carries; RFC 2819 sorts received frames by length.
//! Every frame is untagged, so all traffic is priority 0's. The port drops nothing itself (it
//! never runs out of buffer space), so if_in_discards stays 0: frames the function does not
//! take are counted where their reason is (`exec/counters.rs`). The wire never corrupts a bit,
//! so the error counters (RFC 3635, symbol errors, FEC corrections) stay 0, while the physical
//! layer groups count what does happen: the time since their clear, link down events, and the
//! bits received at the line rate while the link was up. The per-traffic-class groups read as
//! zeros. `clr` zeroes the group it reads, not the others: each group keeps the counts it was
//! last cleared at.

use crate::exec::counters::{Counts, Since, Traffic};
use crate::fail::{ensure, Fail, Outcome};
use crate::model::{Port, ETH_PROTO_OPER};
use crate::syndrome as s;
use mlx5_prm::{
    Eth2819CntrsGrpDataLayout, Eth2863CntrsGrpDataLayout, Eth8023CntrsGrpDataLayout,
    EthExtendedCntrsGrpDataLayout, EthPerPrioGrpDataLayout, PhysLayerCntrs,
    PhysLayerStatisticalCntrs, PpcntCounterGroup, PpcntReg,
};

/// The counter groups of the PRM's enum that take a priority or traffic class in prio_tc.
fn per_priority(group: PpcntCounterGroup) -> bool {
    matches!(
        group,
        PpcntCounterGroup::PerPriority
            | PpcntCounterGroup::PerTrafficClass
            | PpcntCounterGroup::PerTrafficClassCongestion
    )
}

/// The slot of [`crate::exec::counters::PortCounters`] a group keeps its clear point in, for
/// the groups the model counts.
fn slot(group: PpcntCounterGroup) -> Option<usize> {
    Some(match group {
        PpcntCounterGroup::Ieee8023 => 0,
        PpcntCounterGroup::Rfc2863 => 1,
        PpcntCounterGroup::EthernetExtended => 2,
        PpcntCounterGroup::Rfc2819 => 3,
        PpcntCounterGroup::Rfc3635 => 4,
        PpcntCounterGroup::PerPriority => 5,
        PpcntCounterGroup::PhysicalLayer => 6,
        PpcntCounterGroup::PhysicalLayerStatistical => 7,
        _ => return None,
    })
}

/// The PTYS bit of the mode the link runs in, as PTYS reports it; `None` while down.
pub(crate) fn oper_mode(port: &Port) -> Option<u32> {
    if !port.oper_up() {
        return None;
    }
    let mode = if port.eth_proto_admin & ETH_PROTO_OPER != 0 {
        ETH_PROTO_OPER
    } else {
        1 << (31 - port.eth_proto_admin.leading_zeros().min(31))
    };
    Some(mode.trailing_zeros())
}

/// The speed the link runs at (Mb/s), as PTYS reports its mode: 0 while down.
fn line_rate_mbps(port: &Port) -> u64 {
    let Some(mode) = oper_mode(port) else {
        return 0;
    };
    // The bits of the modes the model supports (model.rs ETH_PROTO_CAPABILITY).
    match mode {
        6 => 40_000,
        12 | 13 => 10_000,
        18 | 30 => 50_000,
        20 | 21 => 100_000,
        27 | 29 => 25_000,
        _ => 0,
    }
}

/// PPCNT: the group in grp (of priority prio_tc for the per-priority groups), cleared
/// afterwards when clr is set.
pub(super) fn ppcnt(port: &mut Port, image: &mut [u8]) -> Outcome<()> {
    let r = PpcntReg::new_unchecked(&*image);
    ensure(r.local_port() == 1, Fail::bad_param(s::REG_BAD_PORT))?;
    let group = r.grp().map_err(|_| Fail::bad_param(s::PPCNT_BAD_GROUP))?;
    let prio = r.prio_tc();
    ensure(
        !per_priority(group) || prio < 8,
        Fail::bad_param(s::PPCNT_BAD_GROUP),
    )?;
    let clear = r.clr();
    let rate = line_rate_mbps(port);
    let mut r = PpcntReg::new_unchecked(image);
    r.set_clr(false);
    let mut set = r.counter_set_mut();
    let raw = set.storage_mut();
    raw.fill(0);
    let Some(slot) = slot(group) else {
        return Ok(());
    };
    let since = port.counters.since(slot);
    let c = &since.counts;
    match group {
        PpcntCounterGroup::Ieee8023 => {
            ieee_802_3(&mut Eth8023CntrsGrpDataLayout::new_unchecked(raw), c)
        }
        PpcntCounterGroup::Rfc2863 => {
            rfc_2863(&mut Eth2863CntrsGrpDataLayout::new_unchecked(raw), c)
        }
        PpcntCounterGroup::EthernetExtended => {
            extended(&mut EthExtendedCntrsGrpDataLayout::new_unchecked(raw), c)
        }
        PpcntCounterGroup::Rfc2819 => {
            rfc_2819(&mut Eth2819CntrsGrpDataLayout::new_unchecked(raw), c)
        }
        PpcntCounterGroup::PerPriority if prio == 0 => {
            per_prio(&mut EthPerPrioGrpDataLayout::new_unchecked(raw), c)
        }
        PpcntCounterGroup::PhysicalLayer => phys(&mut PhysLayerCntrs::new_unchecked(raw), &since),
        PpcntCounterGroup::PhysicalLayerStatistical => phys_statistical(
            &mut PhysLayerStatisticalCntrs::new_unchecked(raw),
            &since,
            rate,
        ),
        // RFC 3635 (errors) and priorities other than 0: nothing happened.
        _ => {}
    }
    if clear {
        port.counters.clear(slot);
    }
    Ok(())
}

/// Splits a 64-bit count into the high and low halves the groups carry.
fn halves(v: u64) -> (u32, u32) {
    ((v >> 32) as u32, v as u32)
}

/// Writes count `v` into a group's `hi`/`lo` pair of fields through view `g`.
macro_rules! put {
    ($g:ident, $hi:ident, $lo:ident, $v:expr) => {{
        let (h, l) = halves($v);
        $g.$hi(h);
        $g.$lo(l);
    }};
}

fn total(t: &[Traffic; 3]) -> Traffic {
    t.iter().fold(Traffic::default(), |a, b| Traffic {
        packets: a.packets.wrapping_add(b.packets),
        octets: a.octets.wrapping_add(b.octets),
    })
}

fn ieee_802_3(g: &mut Eth8023CntrsGrpDataLayout<&mut [u8]>, c: &Counts) {
    let (rx, tx) = (total(&c.traffic.rx), total(&c.traffic.tx));
    put!(
        g,
        set_a_frames_transmitted_ok_high,
        set_a_frames_transmitted_ok_low,
        tx.packets
    );
    put!(
        g,
        set_a_frames_received_ok_high,
        set_a_frames_received_ok_low,
        rx.packets
    );
    put!(
        g,
        set_a_octets_transmitted_ok_high,
        set_a_octets_transmitted_ok_low,
        tx.octets
    );
    put!(
        g,
        set_a_octets_received_ok_high,
        set_a_octets_received_ok_low,
        rx.octets
    );
    put!(
        g,
        set_a_multicast_frames_xmitted_ok_high,
        set_a_multicast_frames_xmitted_ok_low,
        c.traffic.tx[1].packets
    );
    put!(
        g,
        set_a_broadcast_frames_xmitted_ok_high,
        set_a_broadcast_frames_xmitted_ok_low,
        c.traffic.tx[2].packets
    );
    put!(
        g,
        set_a_multicast_frames_received_ok_high,
        set_a_multicast_frames_received_ok_low,
        c.traffic.rx[1].packets
    );
    put!(
        g,
        set_a_broadcast_frames_received_ok_high,
        set_a_broadcast_frames_received_ok_low,
        c.traffic.rx[2].packets
    );
}

/// The extended Ethernet group: of its counters the model has RoCE packets dropped for their
/// ICRC (no transmit waits, no receive buffer pressure).
fn extended(g: &mut EthExtendedCntrsGrpDataLayout<&mut [u8]>, c: &Counts) {
    put!(
        g,
        set_rx_icrc_encapsulated_high,
        set_rx_icrc_encapsulated_low,
        c.icrc_errors
    );
}

fn rfc_2863(g: &mut Eth2863CntrsGrpDataLayout<&mut [u8]>, c: &Counts) {
    let (rx, tx) = (total(&c.traffic.rx), total(&c.traffic.tx));
    put!(g, set_if_in_octets_high, set_if_in_octets_low, rx.octets);
    put!(
        g,
        set_if_in_ucast_pkts_high,
        set_if_in_ucast_pkts_low,
        c.traffic.rx[0].packets
    );
    put!(g, set_if_out_octets_high, set_if_out_octets_low, tx.octets);
    put!(
        g,
        set_if_out_ucast_pkts_high,
        set_if_out_ucast_pkts_low,
        c.traffic.tx[0].packets
    );
    put!(
        g,
        set_if_in_multicast_pkts_high,
        set_if_in_multicast_pkts_low,
        c.traffic.rx[1].packets
    );
    put!(
        g,
        set_if_in_broadcast_pkts_high,
        set_if_in_broadcast_pkts_low,
        c.traffic.rx[2].packets
    );
    put!(
        g,
        set_if_out_multicast_pkts_high,
        set_if_out_multicast_pkts_low,
        c.traffic.tx[1].packets
    );
    put!(
        g,
        set_if_out_broadcast_pkts_high,
        set_if_out_broadcast_pkts_low,
        c.traffic.tx[2].packets
    );
    put!(
        g,
        set_if_out_discards_high,
        set_if_out_discards_low,
        c.tx_discards
    );
}

/// RFC 2819 (RMON): received frames, octets, kinds and lengths. The port drops nothing and
/// receives no runts or jabbers.
fn rfc_2819(g: &mut Eth2819CntrsGrpDataLayout<&mut [u8]>, c: &Counts) {
    let rx = total(&c.traffic.rx);
    put!(
        g,
        set_ether_stats_octets_high,
        set_ether_stats_octets_low,
        rx.octets
    );
    put!(
        g,
        set_ether_stats_pkts_high,
        set_ether_stats_pkts_low,
        rx.packets
    );
    put!(
        g,
        set_ether_stats_broadcast_pkts_high,
        set_ether_stats_broadcast_pkts_low,
        c.traffic.rx[2].packets
    );
    put!(
        g,
        set_ether_stats_multicast_pkts_high,
        set_ether_stats_multicast_pkts_low,
        c.traffic.rx[1].packets
    );
    let l = &c.rx_lengths;
    put!(
        g,
        set_ether_stats_pkts64octets_high,
        set_ether_stats_pkts64octets_low,
        l[0]
    );
    put!(
        g,
        set_ether_stats_pkts65to127octets_high,
        set_ether_stats_pkts65to127octets_low,
        l[1]
    );
    put!(
        g,
        set_ether_stats_pkts128to255octets_high,
        set_ether_stats_pkts128to255octets_low,
        l[2]
    );
    put!(
        g,
        set_ether_stats_pkts256to511octets_high,
        set_ether_stats_pkts256to511octets_low,
        l[3]
    );
    put!(
        g,
        set_ether_stats_pkts512to1023octets_high,
        set_ether_stats_pkts512to1023octets_low,
        l[4]
    );
    put!(
        g,
        set_ether_stats_pkts1024to1518octets_high,
        set_ether_stats_pkts1024to1518octets_low,
        l[5]
    );
    put!(
        g,
        set_ether_stats_pkts1519to2047octets_high,
        set_ether_stats_pkts1519to2047octets_low,
        l[6]
    );
    put!(
        g,
        set_ether_stats_pkts2048to4095octets_high,
        set_ether_stats_pkts2048to4095octets_low,
        l[7]
    );
    put!(
        g,
        set_ether_stats_pkts4096to8191octets_high,
        set_ether_stats_pkts4096to8191octets_low,
        l[8]
    );
    put!(
        g,
        set_ether_stats_pkts8192to10239octets_high,
        set_ether_stats_pkts8192to10239octets_low,
        l[9]
    );
}

/// Priority 0's traffic: all of it (the model's frames carry no VLAN priority).
fn per_prio(g: &mut EthPerPrioGrpDataLayout<&mut [u8]>, c: &Counts) {
    let (rx, tx) = (total(&c.traffic.rx), total(&c.traffic.tx));
    put!(g, set_rx_octets_high, set_rx_octets_low, rx.octets);
    put!(g, set_rx_frames_high, set_rx_frames_low, rx.packets);
    put!(g, set_tx_octets_high, set_tx_octets_low, tx.octets);
    put!(g, set_tx_frames_high, set_tx_frames_low, tx.packets);
}

/// Milliseconds of `d`, as the physical layer groups count time.
fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The physical layer group: time since the clear and link down events; no errors.
fn phys(g: &mut PhysLayerCntrs<&mut [u8]>, s: &Since) {
    put!(
        g,
        set_time_since_last_clear_high,
        set_time_since_last_clear_low,
        millis(s.elapsed)
    );
    g.set_link_down_events(u32::try_from(s.counts.link_down_events).unwrap_or(u32::MAX));
}

/// The statistical group: bits received at the line rate while the link was up (`rate` Mb/s
/// is the rate now; a link that changed speed since the clear is counted at the new one),
/// none of them in error.
fn phys_statistical(g: &mut PhysLayerStatisticalCntrs<&mut [u8]>, s: &Since, rate_mbps: u64) {
    put!(
        g,
        set_time_since_last_clear_high,
        set_time_since_last_clear_low,
        millis(s.elapsed)
    );
    // Mb/s × µs = bits.
    let bits = u64::try_from(s.up.as_micros())
        .unwrap_or(u64::MAX)
        .saturating_mul(rate_mbps);
    put!(
        g,
        set_phy_received_bits_high,
        set_phy_received_bits_low,
        bits
    );
}

//! The port registers behind `ethtool` and `ethtool -S`: PFCC (pause settings), PMLP (the
//! module cage of the port, for MCIA), PDDR (why the link is down) and PPCNT (the port's
//! frame counters by group).
//!
//! PPCNT counts what the model's port carries: the IEEE 802.3 and RFC 2863 groups report the
//! frames sent and received on the wire (while the port is up), with octets counting the
//! 4-byte FCS a real wire carries. The port drops nothing itself (it never runs out of buffer
//! space), so if_in_discards stays 0: frames the function does not take are counted where
//! their reason is (`exec/counters.rs`). Every other group the PRM defines reads as zeros, since the
//! events it counts (pause frames, symbol errors, per-priority traffic) do not occur on the
//! model's port. `clr` zeroes the group it reads, not the others: each group keeps the
//! counts it was last cleared at.

use crate::exec::counters::{PortCounters, Traffic};
use crate::fail::{ensure, Fail, Outcome};
use crate::model::Port;
use crate::syndrome as s;
use mlx5_prm::{
    Eth2863CntrsGrpDataLayout, Eth8023CntrsGrpDataLayout, EthExtendedCntrsGrpDataLayout,
    PddrPageSelect, PddrReg, PfccReg, PmlpReg, PpcntCounterGroup, PpcntReg,
};

/// The module (cage) number of the port's lanes: MCIA's module field.
pub(crate) const MODULE: u8 = 0;
/// Lanes of the port (a QSFP28 cage: four).
const LANES: u8 = 4;

/// PFCC: global pause in each direction may be written; priority flow control stays off
/// (the model's port has one priority).
pub(super) fn pfcc(port: &mut Port, image: &mut [u8], write: bool) -> Outcome<()> {
    let r = PfccReg::new_unchecked(&*image);
    ensure(r.local_port() == 1, Fail::bad_param(s::REG_BAD_PORT))?;
    if write {
        if !r.pptx_mask_n() {
            port.pause.0 = r.pptx();
        }
        if !r.pprx_mask_n() {
            port.pause.1 = r.pprx();
        }
    }
    let local_port = r.local_port();
    image.fill(0);
    let mut r = PfccReg::new_unchecked(image);
    r.set_local_port(local_port);
    r.set_pptx(port.pause.0);
    r.set_pprx(port.pause.1);
    Ok(())
}

/// PMLP: the port uses all four lanes of module [`MODULE`], lane i on the module's lane i.
pub(super) fn pmlp(image: &mut [u8]) -> Outcome<()> {
    let mut r = PmlpReg::new_unchecked(image);
    ensure(r.local_port() == 1, Fail::bad_param(s::REG_BAD_PORT))?;
    r.set_rxtx(false);
    r.set_width(LANES);
    for lane in 0..LANES {
        let mut m = match lane {
            0 => r.lane0_module_mapping_mut(),
            1 => r.lane1_module_mapping_mut(),
            2 => r.lane2_module_mapping_mut(),
            _ => r.lane3_module_mapping_mut(),
        };
        m.set_module(MODULE);
        m.set_rx_lane(lane);
        m.set_tx_lane(lane);
    }
    Ok(())
}

/// PDDR: the troubleshooting page of the link monitor group. The model's link goes down only
/// when the driver takes the port down, which is no fault to report: status opcode 0.
pub(super) fn pddr(image: &mut [u8]) -> Outcome<()> {
    let mut r = PddrReg::new_unchecked(image);
    ensure(r.local_port() == 1, Fail::bad_param(s::REG_BAD_PORT))?;
    ensure(
        r.page_select() == Ok(PddrPageSelect::TroubleshootingInfo),
        Fail::bad_param(s::PDDR_BAD_PAGE),
    )?;
    let mut data = r.page_data_mut();
    let mut page = data.pddr_troubleshooting_page_mut();
    ensure(page.group_opcode() == 0, Fail::bad_param(s::PDDR_BAD_PAGE))?;
    // Group 0 asked (checked above): opcode 0 and an empty message, the whole page zeroed.
    page.storage_mut().fill(0);
    Ok(())
}

/// The counter groups of the PRM's enum that take a priority or traffic class in prio_tc.
fn per_priority(group: PpcntCounterGroup) -> bool {
    matches!(
        group,
        PpcntCounterGroup::PerPriority
            | PpcntCounterGroup::PerTrafficClass
            | PpcntCounterGroup::PerTrafficClassCongestion
    )
}

/// PPCNT: the group in grp, cleared afterwards when clr is set.
pub(super) fn ppcnt(counters: &mut PortCounters, image: &mut [u8]) -> Outcome<()> {
    let r = PpcntReg::new_unchecked(&*image);
    ensure(r.local_port() == 1, Fail::bad_param(s::REG_BAD_PORT))?;
    let group = r.grp().map_err(|_| Fail::bad_param(s::PPCNT_BAD_GROUP))?;
    ensure(
        !per_priority(group) || r.prio_tc() < 8,
        Fail::bad_param(s::PPCNT_BAD_GROUP),
    )?;
    let clear = r.clr();
    let mut r = PpcntReg::new_unchecked(image);
    r.set_clr(false);
    let mut set = r.counter_set_mut();
    let raw = set.storage_mut();
    raw.fill(0);
    let slot = match group {
        PpcntCounterGroup::Ieee8023 => 0,
        PpcntCounterGroup::Rfc2863 => 1,
        PpcntCounterGroup::EthernetExtended => 2,
        _ => return Ok(()),
    };
    let c = counters.since(slot);
    match slot {
        0 => ieee_802_3(&mut Eth8023CntrsGrpDataLayout::new_unchecked(raw), &c),
        1 => rfc_2863(&mut Eth2863CntrsGrpDataLayout::new_unchecked(raw), &c),
        _ => extended(&mut EthExtendedCntrsGrpDataLayout::new_unchecked(raw), &c),
    }
    if clear {
        counters.clear(slot);
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

fn ieee_802_3(g: &mut Eth8023CntrsGrpDataLayout<&mut [u8]>, c: &crate::exec::counters::Counts) {
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
fn extended(g: &mut EthExtendedCntrsGrpDataLayout<&mut [u8]>, c: &crate::exec::counters::Counts) {
    put!(
        g,
        set_rx_icrc_encapsulated_high,
        set_rx_icrc_encapsulated_low,
        c.icrc_errors
    );
}

fn rfc_2863(g: &mut Eth2863CntrsGrpDataLayout<&mut [u8]>, c: &crate::exec::counters::Counts) {
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

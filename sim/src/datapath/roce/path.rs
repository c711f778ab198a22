//! How an RC QP's packets are addressed: the destination (MAC, IP address, hop limit,
//! traffic class, UDP source port) from the QP context's primary address path, the source
//! (MAC, VLAN, IP address) from the entry of the port's RoCE address table that the path's
//! `src_addr_index` names.

use super::wire::Path;
use crate::exec::qp::Qp;
use crate::model::Model;
use crate::roce_addr::{L3_IPV4, VERSION_2};

/// Lowest UDP source port the model picks for a QP whose path leaves it 0 (the RoCE
/// capability's `r_roce_min_src_udp_port`).
const SPORT_BASE: u16 = 0xc000;

/// The path of `qp` (number `qpn`), or `None` when its source entry is empty or not RoCEv2:
/// its packets cannot be addressed.
pub(crate) fn of(m: &Model, qpn: u32, qp: &Qp) -> Option<Path> {
    let ads = qp.ctx.primary_address_path();
    let entry = m.roce_addrs.get(usize::from(ads.src_addr_index()))?;
    if entry.version != VERSION_2 {
        return None;
    }
    let mut dmac = [0u8; 6];
    dmac[..2].copy_from_slice(&ads.rmac_47_32().to_be_bytes());
    dmac[2..].copy_from_slice(&ads.rmac_31_0().to_be_bytes());
    let dip = ads.rgid_rip();
    let tclass = if ads.tclass() != 0 {
        ads.tclass()
    } else {
        (ads.dscp() << 2) | ads.ecn()
    };
    let sport = match ads.udp_sport() {
        0 => SPORT_BASE | ((qpn ^ qp.ctx.remote_qpn()) as u16 & 0x3fff),
        p => p,
    };
    Some(Path {
        dmac,
        smac: entry.mac,
        vlan: entry
            .vlan
            .map(|vid| (u16::from(ads.eth_prio()) << 13) | (vid & 0xfff)),
        v4: entry.l3_type == L3_IPV4,
        sip: entry.l3,
        dip,
        tclass,
        flow_label: ads.flow_label(),
        hop_limit: match ads.hop_limit() {
            0 => 64,
            h => h,
        },
        sport,
    })
}

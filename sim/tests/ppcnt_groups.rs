//! PPCNT's groups beyond IEEE 802.3 and RFC 2863 on the model's port: RFC 2819 sorts received
//! frames by length, priority 0 carries all traffic, the physical layer groups count time,
//! link downs and the bits received at the line rate, and each group clears on its own.

mod common;

use common::dp::Node;
use common::eth::{l2, Eth};
use common::Reply;
use mlx5_prm::cmd::{self, AccessRegisterOpMod as Op};
use mlx5_prm::{
    CqeOpcode, Eth2819CntrsGrpDataLayout, EthPerPrioGrpDataLayout, PaosPortStatus, PaosReg,
    PhysLayerCntrs, PhysLayerStatisticalCntrs, PpcntReg,
};

const MAC_A: [u8; 6] = [0x02, 0, 0, 0, 0, 0xa];
const MAC_B: [u8; 6] = [0x02, 0, 0, 0, 0, 0xb];

fn reg(e: &Eth, op: Op, id: u16, image: &[u8]) -> Reply {
    e.n.host
        .run::<cmd::AccessRegister>(op, image.len(), image.len(), |i| {
            i.set_register_id(id);
            i.storage_mut()[16..].copy_from_slice(image);
        })
}

/// The counter set of group `group` (priority `prio`), read and optionally cleared.
fn group(e: &Eth, group: u8, prio: u8, clear: bool) -> Vec<u8> {
    let mut img = [0u8; 0x100];
    let mut r = PpcntReg::new_unchecked(&mut img[..]);
    r.set_local_port(1);
    r.set_grp_raw(group);
    r.set_prio_tc(prio);
    r.set_clr(clear);
    reg(e, Op::Read, 0x5008, &img).ok().out[16 + 8..16 + 0x100].to_vec()
}

fn v(h: u32, l: u32) -> u64 {
    (u64::from(h) << 32) | u64::from(l)
}

fn paos(e: &Eth, up: bool) {
    let mut img = [0u8; 16];
    let mut r = PaosReg::new_unchecked(&mut img[..]);
    r.set_local_port(1);
    r.set_admin_status(if up {
        PaosPortStatus::Up
    } else {
        PaosPortStatus::Down
    });
    r.set_ase(true);
    reg(e, Op::Write, 0x5006, &img).ok();
}

/// Two frames looped back: 214 + 4 = 218 wire bytes (128..=255) and 24 padded to 60 + 4 = 64.
fn traffic() -> Eth {
    let e = Eth::new(Node::inline(), &[MAC_A]);
    e.n.dev().loopback(true);
    e.post_recv(0, 2048);
    e.send(&l2(MAC_A, MAC_B), 0x8000, 200);
    e.send(&l2([0xff; 6], MAC_B), 0x8000, 10);
    for _ in 0..2 {
        e.scq.expect(CqeOpcode::Req);
    }
    e.rcq.expect(CqeOpcode::RespSend);
    e
}

#[test]
fn rfc_2819_sorts_received_frames_by_wire_length() {
    let e = traffic();
    let raw = group(&e, 0x2, 0, false);
    let g = Eth2819CntrsGrpDataLayout::new_unchecked(&raw[..]);
    assert_eq!(v(g.ether_stats_pkts_high(), g.ether_stats_pkts_low()), 2);
    assert_eq!(
        v(g.ether_stats_octets_high(), g.ether_stats_octets_low()),
        218 + 64
    );
    assert_eq!(g.ether_stats_broadcast_pkts_low(), 1);
    assert_eq!(g.ether_stats_pkts64octets_low(), 1);
    assert_eq!(g.ether_stats_pkts128to255octets_low(), 1);
    assert_eq!(g.ether_stats_pkts65to127octets_low(), 0);
    assert_eq!(g.ether_stats_undersize_pkts_low(), 0);
    // Clearing 2819 leaves it at zero and the others as they were.
    group(&e, 0x2, 0, true);
    let raw = group(&e, 0x2, 0, false);
    assert!(raw.iter().all(|&b| b == 0));
    let raw = group(&e, 0x10, 0, false);
    let p = EthPerPrioGrpDataLayout::new_unchecked(&raw[..]);
    assert_eq!(
        p.rx_frames_low(),
        2,
        "priority 0 untouched by the 2819 clear"
    );
}

#[test]
fn priority_0_carries_all_traffic() {
    let e = traffic();
    let raw = group(&e, 0x10, 0, false);
    let p = EthPerPrioGrpDataLayout::new_unchecked(&raw[..]);
    assert_eq!((p.rx_frames_low(), p.tx_frames_low()), (2, 2));
    assert_eq!((p.rx_octets_low(), p.tx_octets_low()), (282, 282));
    for prio in 1..8 {
        assert!(
            group(&e, 0x10, prio, false).iter().all(|&b| b == 0),
            "prio {prio}"
        );
    }
    // A priority past 7 is refused.
    let mut img = [0u8; 0x100];
    let mut r = PpcntReg::new_unchecked(&mut img[..]);
    r.set_local_port(1);
    r.set_grp_raw(0x10);
    r.set_prio_tc(8);
    reg(&e, Op::Read, 0x5008, &img).fails(0x3, mlx5_sim::syndrome::PPCNT_BAD_GROUP);
}

#[test]
fn physical_layer_counts_time_link_downs_and_received_bits() {
    let e = traffic();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let raw = group(&e, 0x12, 0, false);
    let p = PhysLayerCntrs::new_unchecked(&raw[..]);
    let ms = v(
        p.time_since_last_clear_high(),
        p.time_since_last_clear_low(),
    );
    assert!(ms >= 20, "{ms} ms since the port was made");
    assert_eq!(p.link_down_events(), 0);
    assert_eq!(v(p.symbol_errors_high(), p.symbol_errors_low()), 0);

    let raw = group(&e, 0x16, 0, true);
    let s = PhysLayerStatisticalCntrs::new_unchecked(&raw[..]);
    let bits = v(s.phy_received_bits_high(), s.phy_received_bits_low());
    // 100 Gb/s for at least 20 ms: at least 2e9 bits.
    assert!(bits >= 2_000_000_000, "{bits}");
    assert_eq!(v(s.phy_symbol_errors_high(), s.phy_symbol_errors_low()), 0);

    // Down for a while: one link down event, and no bits arrive while down.
    paos(&e, false);
    let raw = group(&e, 0x16, 0, false);
    let s = PhysLayerStatisticalCntrs::new_unchecked(&raw[..]);
    let before = v(s.phy_received_bits_high(), s.phy_received_bits_low());
    std::thread::sleep(std::time::Duration::from_millis(20));
    let raw = group(&e, 0x16, 0, false);
    let s = PhysLayerStatisticalCntrs::new_unchecked(&raw[..]);
    assert_eq!(
        v(s.phy_received_bits_high(), s.phy_received_bits_low()),
        before
    );
    paos(&e, true);
    let raw = group(&e, 0x12, 0, false);
    assert_eq!(
        PhysLayerCntrs::new_unchecked(&raw[..]).link_down_events(),
        1
    );
    // Clearing the physical layer group restarts its clock and its events.
    group(&e, 0x12, 0, true);
    let raw = group(&e, 0x12, 0, false);
    let p = PhysLayerCntrs::new_unchecked(&raw[..]);
    assert_eq!(p.link_down_events(), 0);
    assert!(
        v(
            p.time_since_last_clear_high(),
            p.time_since_last_clear_low()
        ) < 20
    );
}

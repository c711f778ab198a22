//! The receive path under arbitrary frames and settings: RSS with any hash function, key,
//! field selection and symmetry (valid or not), VLAN stripping on or off, FCS scatter on or
//! off, RQs that run out of receive WQEs, and frames that are garbage, truncated or
//! well-formed IPv4/IPv6 TCP/UDP (tagged or not) with bytes changed anywhere. Nothing may
//! panic; a delivered frame gives exactly one receive CQE whose byte count is the frame's
//! (less a stripped tag, plus a scattered FCS); and the device still answers commands.

mod common;

use common::eth::id_at;
use common::rx::{frame, Rx};
use mlx5_prm::{cmd, Cqe64, CqeOpcode, TircDispType};
use proptest::prelude::*;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(48),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// The hash a TIR is created with: function (raw, 0..=3: 3 is not one the PRM defines), key,
/// symmetric, L3 IPv6, L4 UDP, selected fields (any bits).
type Hash = (u8, [u8; 40], bool, bool, bool, u32);

fn hash() -> impl Strategy<Value = Hash> {
    (
        0u8..4,
        any::<[u8; 40]>(),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        any::<u32>(),
    )
}

/// A frame: garbage, or a well-formed one with some bytes changed and perhaps cut short.
fn frames() -> impl Strategy<Value = Vec<u8>> {
    let built = (
        any::<bool>(),
        prop::option::of(any::<u16>()),
        prop_oneof![Just(6u8), Just(17u8), any::<u8>()],
        any::<(u16, u16, [u8; 4], [u8; 4])>(),
        0usize..120,
        prop::collection::vec((0usize..200, any::<u8>()), 0..3),
        prop::option::of(0usize..200),
    )
        .prop_map(|(v6, tci, proto, (sp, dp, s, d), payload, pokes, cut)| {
            let mut f = if v6 {
                let (mut s6, mut d6) = ([0u8; 16], [0u8; 16]);
                s6[12..].copy_from_slice(&s);
                d6[12..].copy_from_slice(&d);
                let mut f = frame::v6(proto, (s6, sp), (d6, dp), payload);
                if let Some(t) = tci {
                    // Tag it after the MACs, as the v4 builder does.
                    f.splice(12..12, [0x81, 0, (t >> 8) as u8, t as u8]);
                }
                f
            } else {
                frame::v4(tci, proto, (s, sp), (d, dp), payload)
            };
            for (at, v) in pokes {
                if let Some(b) = f.get_mut(at) {
                    *b = v;
                }
            }
            if let Some(n) = cut {
                f.truncate(n);
            }
            f
        });
    prop_oneof![prop::collection::vec(any::<u8>(), 0..160), built]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn any_frame_under_any_receive_settings(
        h in hash(),
        vsd in any::<bool>(),
        fcs in any::<bool>(),
        modify in prop::option::of(hash()),
        input in prop::collection::vec(frames(), 1..40),
    ) {
        let rx = Rx::new(3, 8, |c| {
            c.set_vsd(vsd);
            c.set_scatter_fcs(fcs);
        });
        let rqt = rx.rqt(4, &[0, 1, 2, 1]);
        let set = |c: &mut mlx5_prm::Tirc<&mut [u8]>, (f, key, sym, v6, udp, fields): Hash| {
            c.set_rx_hash_fn_raw(f);
            c.set_rx_hash_symmetric(sym);
            for (k, w) in key.chunks(4).enumerate() {
                c.set_rx_hash_toeplitz_key(k, u32::from_be_bytes([w[0], w[1], w[2], w[3]])).unwrap();
            }
            let mut s = c.rx_hash_field_selector_outer_mut();
            s.set_l3_prot_type(v6);
            s.set_l4_prot_type(udp);
            s.set_selected_fields(fields & 0x3fff_ffff);
        };
        // Created by hand: a hash function the PRM does not define is refused (the test's
        // helpers assert success); then no TIR takes frames and all are dropped.
        let created = rx.n.host.run::<cmd::CreateTir>(0, 0, 0, |i| {
            let mut c = i.ctx_mut();
            c.set_transport_domain(rx.td);
            c.set_disp_type(TircDispType::Indirect);
            c.set_indirect_table(rqt);
            set(&mut c, h);
        });
        prop_assert_eq!(created.status() == 0, h.0 < 3, "only functions 0..2 exist");
        let tir = (created.status() == 0).then(|| id_at(&created));
        if let Some(tir) = tir {
            rx.steer_all_to(tir);
        }
        for (i, f) in input.iter().enumerate() {
            if i == input.len() / 2 {
                if let (Some(m), Some(tir)) = (modify, tir) {
                    // MODIFY_TIR of the hash, whatever its values: refused or taken.
                    let r = rx.n.host.run::<cmd::ModifyTir>(0, 0, 0, |c| {
                        c.set_tirn(tir);
                        c.bitmask_mut().set_hash(true);
                        set(&mut c.ctx_mut(), m);
                    });
                    prop_assert_eq!(r.status() == 0, m.0 < 3);
                }
            }
            let delivered = rx.receive(f);
            prop_assert!(tir.is_some() || !delivered, "nothing delivered without a TIR");
            let cqes: Vec<_> = rx.rqs.iter().filter_map(|r| r.cq.poll()).collect();
            if delivered {
                prop_assert_eq!(cqes.len(), 1, "one CQE for one delivered frame");
                let c = Cqe64::new_unchecked(cqes[0]);
                prop_assert_eq!(c.opcode(), Ok(CqeOpcode::RespSend));
                let n = c.byte_cnt() as usize;
                let stripped = if c.has_vlan() { 4 } else { 0 };
                let with_fcs = if fcs { 4 } else { 0 };
                prop_assert_eq!(n, f.len() - stripped + with_fcs);
                prop_assert!(!c.has_vlan() || !vsd, "stripped only with vsd clear");
            }
        }
        // The device still answers.
        let r = rx.n.host.run::<cmd::QueryAdapter>(0, 0, 0, |_| {});
        prop_assert_eq!((r.delivery, r.status()), (0, 0));
    }
}

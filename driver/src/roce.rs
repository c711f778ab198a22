//! RoCE addressing: the port's RoCE address (GID) table (SET_ROCE_ADDRESS and
//! QUERY_ROCE_ADDRESS as [`Hca::set_roce_address`] and [`Hca::query_roce_address`]), the GIDs
//! a RoCE v2 port has (the link-local one from its MAC, the IPv4-mapped one of each IPv4
//! address), and [`RocePath`], which fills the INIT2RTR arguments of an RC QP that talks to a
//! RoCE peer the way Linux's `mlx5_ib` fills them.
//!
//! A GID here is 16 bytes in network order; an IPv4 address is its IPv4-mapped IPv6 form
//! (`::ffff:a.b.c.d`), as in the table, in `rgid_rip` and on the wire of the out-of-band
//! exchanges of rdma-core's examples.

use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::hca::Hca;
use crate::qp::{rmac_fields, Init2rtr, Init2rtrOptional};
use mlx5_prm::cmd::{QueryRoceAddress, SetRoceAddress};
use mlx5_prm::rt::BytesMut;
use mlx5_prm::{QpMtu, RoceAddrLayout, RoceL3Type};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

pub use mlx5_prm::RoceVersion;

/// The port whose table the commands address: the function's only one (Linux sends 1 when the
/// device advertises `num_vhca_ports`, as the model does).
const PORT: u8 = 1;

/// One entry of the RoCE address table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoceAddress {
    /// The source address: an IPv4 entry is stored IPv4-mapped with L3 type IPv4, an IPv6
    /// entry (or a RoCE v1 GID) as it is with L3 type IPv6.
    pub ip: IpAddr,
    /// The source MAC of the entry's frames.
    pub mac: [u8; 6],
    /// The VLAN ID the frames carry (12 bits), if any.
    pub vlan: Option<u16>,
    /// RoCE v1 or v2.
    pub version: RoceVersion,
}

impl RoceAddress {
    /// A RoCE v2 entry without VLAN.
    pub fn v2(ip: IpAddr, mac: [u8; 6]) -> RoceAddress {
        RoceAddress {
            ip,
            mac,
            vlan: None,
            version: RoceVersion::Version2,
        }
    }

    /// The entry's GID: the IPv6 address, or the IPv4 address IPv4-mapped.
    pub fn gid(&self) -> [u8; 16] {
        ip_gid(self.ip)
    }

    /// The entry's `roce_l3_type`.
    pub fn l3_type(&self) -> RoceL3Type {
        match self.ip {
            IpAddr::V4(_) => RoceL3Type::Ipv4,
            IpAddr::V6(_) => RoceL3Type::Ipv6,
        }
    }

    /// Writes the entry into a `roce_addr_layout`; a VLAN ID wider than 12 bits is refused.
    fn write<B: BytesMut>(&self, a: &mut RoceAddrLayout<B>) -> Result<()> {
        a.set_source_l3_address(&self.gid());
        if let Some(vlan) = self.vlan {
            a.set_vlan_valid(true);
            a.try_set_vlan_id(vlan)?;
        }
        let (hi, lo) = rmac_fields(self.mac);
        a.set_source_mac_47_32(hi);
        a.set_source_mac_31_0(lo);
        a.set_roce_l3_type(self.l3_type());
        a.set_roce_version(self.version);
        Ok(())
    }
}

/// The GID of an IP address: IPv6 as it is, IPv4 IPv4-mapped.
pub fn ip_gid(ip: IpAddr) -> [u8; 16] {
    match ip {
        IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
        IpAddr::V6(v6) => v6.octets(),
    }
}

/// The IPv4 address of an IPv4-mapped GID.
pub fn gid_ipv4(gid: &[u8; 16]) -> Option<Ipv4Addr> {
    Ipv6Addr::from(*gid).to_ipv4_mapped()
}

/// The link-local IPv6 address of a MAC (fe80::/64 with the modified EUI-64 interface
/// identifier: the MAC split by ff:fe, its universal/local bit inverted): the GID a RoCE port
/// has at index 0, as Linux derives it.
pub fn link_local_gid(mac: [u8; 6]) -> Ipv6Addr {
    let mut g = [0u8; 16];
    g[0] = 0xfe;
    g[1] = 0x80;
    g[8] = mac[0] ^ 0x02;
    g[9..11].copy_from_slice(&mac[1..3]);
    g[11] = 0xff;
    g[12] = 0xfe;
    g[13..16].copy_from_slice(&mac[3..6]);
    Ipv6Addr::from(g)
}

impl<B: Backend> Hca<B> {
    /// SET_ROCE_ADDRESS: writes entry `index` of the port's RoCE address table.
    pub fn set_roce_address(&self, index: u16, address: &RoceAddress) -> Result<()> {
        // SAFETY: a GID table entry (addresses on the wire, not in host memory).
        unsafe {
            self.run_extra::<SetRoceAddress>(0, 0, 0, |i| {
                i.set_roce_address_index(index);
                i.try_set_vhca_port_num(PORT)?;
                address.write(&mut i.roce_address_mut())
            })
        }?;
        Ok(())
    }

    /// SET_ROCE_ADDRESS with a zero address and MAC: empties entry `index`, as Linux does.
    pub fn clear_roce_address(&self, index: u16) -> Result<()> {
        // SAFETY: as for `set_roce_address`.
        unsafe {
            self.run_extra::<SetRoceAddress>(0, 0, 0, |i| {
                i.set_roce_address_index(index);
                Ok(i.try_set_vhca_port_num(PORT)?)
            })
        }?;
        Ok(())
    }

    /// QUERY_ROCE_ADDRESS: entry `index`, `None` when it is empty (an all-zero address).
    pub fn query_roce_address(&self, index: u16) -> Result<Option<RoceAddress>> {
        let out = self.query::<QueryRoceAddress>(0, |i| {
            i.set_roce_address_index(index);
            i.set_vhca_port_num(PORT);
        })?;
        let a = out.roce_address();
        let gid = a.source_l3_address();
        if gid == [0; 16] {
            return Ok(None);
        }
        let bad = |what: String| Error::BadDeviceValue {
            command: "query_roce_address",
            what,
        };
        let version = a
            .roce_version()
            .map_err(|e| bad(format!("roce_version: {e}")))?;
        let ip = match a.roce_l3_type() {
            Ok(RoceL3Type::Ipv4) => IpAddr::V4(
                gid_ipv4(&gid)
                    .ok_or_else(|| bad("an IPv4 entry that is not IPv4-mapped".into()))?,
            ),
            Ok(RoceL3Type::Ipv6) => IpAddr::V6(Ipv6Addr::from(gid)),
            Err(e) => return Err(bad(format!("roce_l3_type: {e}"))),
        };
        let (hi, lo) = (
            a.source_mac_47_32().to_be_bytes(),
            a.source_mac_31_0().to_be_bytes(),
        );
        Ok(Some(RoceAddress {
            ip,
            mac: [hi[0], hi[1], lo[0], lo[1], lo[2], lo[3]],
            vlan: a.vlan_valid().then(|| a.vlan_id()),
            version,
        }))
    }
}

/// The UDP source port Linux gives a RoCE v2 RC connection without a flow label: a flow label
/// from the two QP numbers (their product folded to 20 bits), folded again to 14 bits and put
/// in 0xc000..=0xffff, the range the RoCE capability's r_roce_min/max_src_udp_port give.
pub fn udp_sport(local_qpn: u32, remote_qpn: u32) -> u16 {
    let mut v = u64::from(local_qpn) * u64::from(remote_qpn);
    v ^= v >> 20;
    v ^= v >> 40;
    let label = (v & 0xf_ffff) as u32;
    (((label & 0x3fff) ^ ((label >> 14) & 0x3f)) | 0xc000) as u16
}

/// How an RC QP reaches a RoCE peer: the peer's GID and MAC, our source GID index, and the
/// GRH (or IP header) fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RocePath {
    /// The peer's GID (its IP address for RoCE v2).
    pub peer_gid: [u8; 16],
    /// The peer's MAC (the next hop's, on a routed path).
    pub peer_mac: [u8; 6],
    /// Our entry of the RoCE address table the QP sends from.
    pub gid_index: u8,
    /// IPv6 hop limit, or IPv4 TTL.
    pub hop_limit: u8,
    /// Traffic class (its upper six bits are the DSCP of RoCE v2 frames).
    pub traffic_class: u8,
}

impl RocePath {
    /// A path to `peer_gid` / `peer_mac` from table entry `gid_index`, hop limit 1 and traffic
    /// class 0 (what rdma-core's pingpong examples use).
    pub fn new(peer_gid: [u8; 16], peer_mac: [u8; 6], gid_index: u8) -> RocePath {
        RocePath {
            peer_gid,
            peer_mac,
            gid_index,
            hop_limit: 1,
            traffic_class: 0,
        }
    }

    /// INIT2RTR's arguments for QP `local_qpn` connecting to `remote_qpn`, expecting
    /// `remote_psn` first, with path MTU `mtu`, the address path filled as `mlx5_ib` fills it
    /// for a RoCE v2 RC QP (rmac, rgid_rip, src_addr_index, hop limit, traffic class,
    /// UDP source port, DSCP), one incoming RDMA read or atomic at a time, and an RNR NAK
    /// timer of 12 (0.64 ms; rdma-core's examples' value).
    pub fn init2rtr(
        &self,
        local_qpn: u32,
        remote_qpn: u32,
        remote_psn: u32,
        mtu: QpMtu,
        log_msg_max: u8,
    ) -> Init2rtr {
        let (rmac_47_32, rmac_31_0) = rmac_fields(self.peer_mac);
        Init2rtr {
            mtu,
            log_msg_max,
            remote_qpn,
            next_rcv_psn: remote_psn,
            log_rra_max: 0,
            min_rnr_nak: 12,
            rmac_47_32,
            rmac_31_0,
            rgid_rip: self.peer_gid,
            src_addr_index: self.gid_index,
            hop_limit: self.hop_limit,
            tclass: self.traffic_class,
            flow_label: 0,
            udp_sport: udp_sport(local_qpn, remote_qpn),
            dscp: self.traffic_class >> 2,
            eth_prio: 0,
            vhca_port_num: PORT,
            optional: Init2rtrOptional::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_local_gid_is_the_eui64_of_the_mac() {
        // RFC 4291 appendix A's example: MAC 34-56-78-9A-BC-DE gives the interface
        // identifier 3656:78ff:fe9a:bcde.
        let g = link_local_gid([0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde]);
        assert_eq!(g, "fe80::3656:78ff:fe9a:bcde".parse::<Ipv6Addr>().unwrap());
        // A locally administered MAC loses its local bit.
        let g = link_local_gid([0x02, 0, 0, 0, 0, 1]);
        assert_eq!(g, "fe80::ff:fe00:1".parse::<Ipv6Addr>().unwrap());
    }

    #[test]
    fn ipv4_gids_are_ipv4_mapped() {
        let ip: IpAddr = "10.1.2.3".parse().unwrap();
        let g = ip_gid(ip);
        assert_eq!(g, [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 1, 2, 3]);
        assert_eq!(gid_ipv4(&g), Some(Ipv4Addr::new(10, 1, 2, 3)));
        assert_eq!(gid_ipv4(&link_local_gid([2, 0, 0, 0, 0, 1]).octets()), None);
    }

    #[test]
    fn udp_sport_follows_the_flow_label_folding() {
        // Worked by hand: 0x11 * 0x22 = 0x242, below 2^14, so the port is 0xc242.
        assert_eq!(udp_sport(0x11, 0x22), 0xc242);
        // 0x1000 * 0x1000 = 0x100_0000: the label folds bit 24 down to bit 4 (0x10), and
        // keeps 0x100_0000 & 0xfffff = 0; 14-bit fold of 0x10 is 0x10.
        assert_eq!(udp_sport(0x1000, 0x1000), 0xc010);
        // Every port lies in the RoCE v2 source port range.
        for (a, b) in [(1, 1), (0xff_ffff, 0xff_ffff), (0x123, 0xabcdef)] {
            assert!(udp_sport(a, b) >= 0xc000);
        }
    }
}

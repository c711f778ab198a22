//! SET_ROCE_ADDRESS and QUERY_ROCE_ADDRESS: the port's RoCE address (GID) table
//! (`Model::roce_addrs`), which the RoCE transport reads for a QP's source address and to
//! recognise the frames that are for this device.
//!
//! Linux writes an entry from `mlx5_core_roce_gid_set` and clears one by writing it with a
//! zero address and MAC (version and L3 type still set), so an all-zero source address is an
//! empty entry here. The L3 type is stored as given, not checked against the address: Linux's
//! own default GID (core/rdma.c, switchdev mode) is a link-local IPv6 address written with
//! L3 type IPv4. vhca_port_num is read only when the function advertises num_vhca_ports, as
//! Linux fills it only then.

use super::{out, Ctx, Req};
use crate::fail::{ensure, Fail, Outcome};
use crate::roce_addr::RoceAddr;
use crate::syndrome as s;
use mlx5_prm::cmd;
use mlx5_prm::{QueryRoceAddressIn, QueryRoceAddressOut, RoceAddrLayout, SetRoceAddressIn};

/// The checks both commands share: RoCE is on, the port is the function's, the index is in
/// the table. Returns the index.
fn entry_index(cx: &Ctx<'_>, index: u16, port: u8) -> Outcome<usize> {
    let gen = cx.m.gen();
    ensure(gen.roce(), Fail::bad_param(s::ROCE_ADDR_NO_ROCE))?;
    let ports = gen.num_vhca_ports();
    ensure(
        ports == 0 || (1..=ports).contains(&port),
        Fail::bad_param(s::ROCE_ADDR_BAD_PORT),
    )?;
    let index = usize::from(index);
    ensure(
        index < cx.m.roce_addrs.len(),
        Fail::bad_param(s::ROCE_ADDR_BAD_INDEX),
    )?;
    Ok(index)
}

/// SET_ROCE_ADDRESS: writes (or, with a zero address, clears) one entry.
pub(super) fn set(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let input = SetRoceAddressIn::new_unchecked(req.input);
    let index = entry_index(cx, input.roce_address_index(), input.vhca_port_num())?;
    let a = input.roce_address();
    let l3_type = a
        .roce_l3_type()
        .map_err(|_| Fail::bad_param(s::ROCE_ADDR_BAD_L3_TYPE))?;
    let version = a
        .roce_version()
        .map_err(|_| Fail::bad_param(s::ROCE_ADDR_BAD_VERSION))?;
    let l3 = a.source_l3_address();
    let entry = (l3 != [0; 16]).then(|| {
        let (hi, lo) = (
            a.source_mac_47_32().to_be_bytes(),
            a.source_mac_31_0().to_be_bytes(),
        );
        RoceAddr {
            l3,
            mac: [hi[0], hi[1], lo[0], lo[1], lo[2], lo[3]],
            vlan: a.vlan_valid().then(|| a.vlan_id()),
            l3_type: l3_type.raw(),
            version: version.raw(),
        }
    });
    // entry_index checked the index, so the table takes it.
    cx.m.roce_addrs.set(index, entry);
    Ok(out::<cmd::SetRoceAddress>(0))
}

/// QUERY_ROCE_ADDRESS: the entry as it was written; zeros when it is empty.
pub(super) fn query(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let input = QueryRoceAddressIn::new_unchecked(req.input);
    let index = entry_index(cx, input.roce_address_index(), input.vhca_port_num())?;
    let mut o = out::<cmd::QueryRoceAddress>(0);
    if let Some(e) = cx.m.roce_addrs.get(index) {
        let mut v = QueryRoceAddressOut::new_unchecked(&mut o[..]);
        write_entry(&mut v.roce_address_mut(), e);
    }
    Ok(o)
}

/// Fills a `roce_addr_layout` from a stored entry.
fn write_entry<B: mlx5_prm::rt::BytesMut>(a: &mut RoceAddrLayout<B>, e: &RoceAddr) {
    a.set_source_l3_address(&e.l3);
    if let Some(vlan) = e.vlan {
        a.set_vlan_valid(true);
        a.set_vlan_id(vlan);
    }
    a.set_source_mac_47_32(u16::from_be_bytes([e.mac[0], e.mac[1]]));
    a.set_source_mac_31_0(u32::from_be_bytes([e.mac[2], e.mac[3], e.mac[4], e.mac[5]]));
    // Stored values came from the generated enums, so they convert back.
    a.set_roce_l3_type_raw(e.l3_type);
    a.set_roce_version_raw(e.version);
}

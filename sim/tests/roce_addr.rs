//! SET_ROCE_ADDRESS and QUERY_ROCE_ADDRESS through the command interface: entries written as
//! Linux's `mlx5_core_roce_gid_set` lays them out (built here byte by byte from mlx5_ifc.h's
//! offsets, independently of the generated accessors) read back unchanged, cleared entries
//! read as zeros, every refusal has its own syndrome and changes nothing, and a function
//! reset empties the table.

mod common;

use common::Host;
use mlx5_prm::cmd;
use mlx5_prm::rt::Command;
use mlx5_prm::CmdStatus;
use mlx5_sim::syndrome as syn;
use mlx5_sim::{Caps, Config};

const BAD_PARAM: u8 = CmdStatus::BadParamErr.raw();
const BAD_SYS_STATE: u8 = CmdStatus::BadSysStateErr.raw();

/// One entry as the kernel's roce_addr_layout holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    gid: [u8; 16],
    mac: [u8; 6],
    vlan: Option<u16>,
    l3_type: u8,
    version: u8,
}

/// The 32 bytes of a roce_addr_layout, from mlx5_ifc.h: the GID at 0, vlan_valid bit 0x83,
/// vlan_id bits 0x84..0x90, the MAC at byte 0x12, roce_l3_type bits 0xd4..0xd8, roce_version
/// byte 0x1b.
fn layout(e: &Entry) -> [u8; 32] {
    let mut b = [0u8; 32];
    b[..16].copy_from_slice(&e.gid);
    if let Some(v) = e.vlan {
        b[0x10] = 0x10 | (v >> 8) as u8;
        b[0x11] = v as u8;
    }
    b[0x12..0x18].copy_from_slice(&e.mac);
    b[0x1a] = e.l3_type & 0xf;
    b[0x1b] = e.version;
    b
}

/// SET_ROCE_ADDRESS's input: the header, the index in bits 31:16 and vhca_port_num in bits
/// 3:0 of dword 2, the entry at byte 0x10.
fn set_input(index: u16, port: u8, e: &Entry) -> Vec<u8> {
    let mut b = vec![0u8; 0x30];
    b[..2].copy_from_slice(&cmd::SetRoceAddress::OPCODE.to_be_bytes());
    b[8..10].copy_from_slice(&index.to_be_bytes());
    b[11] = port & 0xf;
    b[0x10..0x30].copy_from_slice(&layout(e));
    b
}

/// QUERY_ROCE_ADDRESS's input.
fn query_input(index: u16, port: u8) -> Vec<u8> {
    let mut b = vec![0u8; 0x10];
    b[..2].copy_from_slice(&cmd::QueryRoceAddress::OPCODE.to_be_bytes());
    b[8..10].copy_from_slice(&index.to_be_bytes());
    b[11] = port & 0xf;
    b
}

fn set(host: &Host, index: u16, port: u8, e: &Entry) -> common::Reply {
    host.exec(&set_input(index, port, e), 0x10)
}

/// The entry's 32 bytes as QUERY_ROCE_ADDRESS returns them (output bytes 0x10..0x30).
fn query(host: &Host, index: u16) -> [u8; 32] {
    let r = host.exec(&query_input(index, 1), 0x30).ok();
    assert_eq!(r.out.len(), 0x30);
    r.out[0x10..0x30].try_into().unwrap()
}

fn up() -> Host {
    let host = Host::inline();
    host.bring_up();
    host
}

/// `::ffff:a.b.c.d`.
fn v4_mapped(ip: [u8; 4]) -> [u8; 16] {
    let mut g = [0u8; 16];
    g[10] = 0xff;
    g[11] = 0xff;
    g[12..].copy_from_slice(&ip);
    g
}

fn ipv4_entry() -> Entry {
    Entry {
        gid: v4_mapped([10, 0, 0, 1]),
        mac: [0x02, 0x11, 0x22, 0x33, 0x44, 0x55],
        vlan: None,
        l3_type: 0,
        version: 2,
    }
}

fn ipv6_entry() -> Entry {
    Entry {
        gid: [
            0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44, 0x55,
        ],
        mac: [0x02, 0x11, 0x22, 0x33, 0x44, 0x55],
        vlan: Some(0x123),
        l3_type: 1,
        version: 2,
    }
}

#[test]
fn entries_read_back_as_written() {
    let host = up();
    let (v4, v6) = (ipv4_entry(), ipv6_entry());
    assert_eq!(query(&host, 0), [0; 32], "an unused entry reads as zeros");
    set(&host, 1, 1, &v4).ok();
    set(&host, 0, 1, &v6).ok();
    // A RoCE v1 entry and the last index of the 256-entry table.
    let v1 = Entry {
        version: 0,
        vlan: Some(4095),
        ..v6
    };
    set(&host, 255, 1, &v1).ok();
    assert_eq!(query(&host, 0), layout(&v6));
    assert_eq!(query(&host, 1), layout(&v4));
    assert_eq!(query(&host, 255), layout(&v1));
    assert_eq!(query(&host, 2), [0; 32]);
    // Overwriting replaces the entry whole (the VLAN goes away).
    let moved = Entry {
        gid: v4_mapped([10, 0, 0, 9]),
        ..v4
    };
    set(&host, 0, 1, &moved).ok();
    assert_eq!(query(&host, 0), layout(&moved));
}

#[test]
fn clearing_as_linux_does_empties_the_entry() {
    let host = up();
    set(&host, 3, 1, &ipv6_entry()).ok();
    // mlx5_ib clears with a zero GID and MAC; core/rdma.c with version 2, L3 type 0.
    for (l3_type, version) in [(0, 0), (0, 2)] {
        set(&host, 3, 1, &ipv6_entry()).ok();
        let cleared = Entry {
            gid: [0; 16],
            mac: [0; 6],
            vlan: None,
            l3_type,
            version,
        };
        set(&host, 3, 1, &cleared).ok();
        assert_eq!(query(&host, 3), [0; 32]);
    }
}

#[test]
fn refusals_have_their_own_syndromes_and_change_nothing() {
    let host = up();
    let good = ipv4_entry();
    set(&host, 7, 1, &good).ok();
    let other = ipv6_entry();
    // Index outside the 256-entry table, for both commands.
    set(&host, 256, 1, &other).fails(BAD_PARAM, syn::ROCE_ADDR_BAD_INDEX);
    set(&host, 0xffff, 1, &other).fails(BAD_PARAM, syn::ROCE_ADDR_BAD_INDEX);
    host.exec(&query_input(256, 1), 0x30)
        .fails(BAD_PARAM, syn::ROCE_ADDR_BAD_INDEX);
    // The model advertises num_vhca_ports 1, so Linux sends port 1; 0 and 2 are refused.
    for port in [0, 2, 15] {
        set(&host, 7, port, &other).fails(BAD_PARAM, syn::ROCE_ADDR_BAD_PORT);
        host.exec(&query_input(7, port), 0x30)
            .fails(BAD_PARAM, syn::ROCE_ADDR_BAD_PORT);
    }
    // L3 types other than IPv4 (0) and IPv6 (1).
    for l3_type in [2, 0xf] {
        let e = Entry { l3_type, ..other };
        set(&host, 7, 1, &e).fails(BAD_PARAM, syn::ROCE_ADDR_BAD_L3_TYPE);
    }
    // Versions other than RoCE v1 (0) and v2 (2).
    for version in [1, 3, 0xff] {
        let e = Entry { version, ..other };
        set(&host, 7, 1, &e).fails(BAD_PARAM, syn::ROCE_ADDR_BAD_VERSION);
    }
    assert_eq!(
        query(&host, 7),
        layout(&good),
        "no refusal changed the entry"
    );
    // Lengths and state come first, as for every command.
    host.exec(&set_input(7, 1, &other)[..0x20], 0x10)
        .fails(CmdStatus::BadInpLenErr.raw(), syn::INPUT_TOO_SHORT);
    host.exec(&query_input(7, 1), 0x20)
        .fails(CmdStatus::BadOutpLenErr.raw(), syn::OUTPUT_TOO_SHORT);
    assert_eq!(query(&host, 7), layout(&good));
}

#[test]
fn needs_init_hca_and_the_roce_capability() {
    let host = Host::inline();
    host.simple::<cmd::EnableHca>(0).ok();
    set(&host, 0, 1, &ipv4_entry()).fails(BAD_SYS_STATE, syn::NOT_INITIALIZED);

    // An Ethernet function with the general roce capability off.
    let host = Host::new(Config {
        caps: Caps::connectx5_linux_ethernet(),
        ..Config::default()
    });
    host.bring_up();
    set(&host, 0, 1, &ipv4_entry()).fails(BAD_PARAM, syn::ROCE_ADDR_NO_ROCE);
    host.exec(&query_input(0, 1), 0x30)
        .fails(BAD_PARAM, syn::ROCE_ADDR_NO_ROCE);
}

#[test]
fn a_function_reset_empties_the_table() {
    let host = up();
    set(&host, 0, 1, &ipv6_entry()).ok();
    set(&host, 1, 1, &ipv4_entry()).ok();
    host.simple::<cmd::TeardownHca>(0).ok();
    let held = host.dev.pages_held();
    host.take(held).ok();
    host.simple::<cmd::DisableHca>(0).ok();
    host.bring_up();
    assert_eq!(query(&host, 0), [0; 32]);
    assert_eq!(query(&host, 1), [0; 32]);

    // TEARDOWN_HCA alone empties it too: the next INIT_HCA starts from an empty table.
    set(&host, 5, 1, &ipv4_entry()).ok();
    host.simple::<cmd::TeardownHca>(0).ok();
    host.simple::<cmd::InitHca>(0).ok();
    assert_eq!(query(&host, 5), [0; 32]);
}

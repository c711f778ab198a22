//! The decoding `Debug` (feature `debug`), which reads every layout through its reflection
//! table: nested structures in place, trailing arrays as long as the buffer, a union as the
//! member its selector picks (or its first bytes when the selector lives in another
//! mailbox), opaque bytes in hex, write-only register fields left out. Expected texts are
//! written out by hand from the spec's positions.
#![cfg(feature = "debug")]

use mlx5_prm::{CreateCqIn, Ipv6Layout, PpcntCounterGroup, PpcntReg, QueryHcaCapOut, UarPage};

#[test]
fn a_nested_structure_is_decoded_in_place_with_its_own_positions() {
    let mut i = CreateCqIn::zeroed();
    i.set_opcode(0x400);
    i.cq_context_mut().set_log_cq_size(6);
    let text = format!("{i:?}");
    assert!(
        text.starts_with("CreateCqIn { opcode: 0x00[31:16] = 0x400, "),
        "{text}"
    );
    // cq_context is 0x40 bytes at 0x10; inside it, positions are the CQ context's own.
    assert!(
        text.contains("cq_context: 0x10..0x50 = Cqc { status: 0x00[31:28] = 0x0, "),
        "{text}"
    );
    assert!(text.contains("log_cq_size: 0x0c[28:24] = 0x6"), "{text}");
}

#[test]
fn a_trailing_array_shows_what_the_buffer_holds() {
    // The fixed part, then two page addresses.
    let mut bytes = vec![0u8; CreateCqIn::SIZE + 16];
    bytes[CreateCqIn::SIZE..CreateCqIn::SIZE + 8].copy_from_slice(&0x1000u64.to_be_bytes());
    bytes[CreateCqIn::SIZE + 8..].copy_from_slice(&0x2000u64.to_be_bytes());
    let text = format!("{:?}", CreateCqIn::new_checked(&bytes[..]).unwrap());
    let at = CreateCqIn::SIZE;
    assert!(
        text.contains(&format!("pas: 0x{at:02x}.. = [0x1000, 0x2000]")),
        "{text}"
    );
    let text = format!("{:?}", CreateCqIn::zeroed());
    assert!(text.contains(&format!("pas: 0x{at:02x}.. = []")), "{text}");
}

#[test]
fn a_union_is_shown_as_the_member_its_selector_picks() {
    let mut p = PpcntReg::zeroed();
    p.set_grp(PpcntCounterGroup::Rfc2863);
    let mut bytes = *p.storage();
    // counter_set starts at 0x08; the RFC 2863 group's first counter is its first dword.
    bytes[0x08..0x0c].copy_from_slice(&0x1234u32.to_be_bytes());
    let text = format!("{:?}", PpcntReg::new_checked(bytes).unwrap());
    assert!(text.contains("grp: 0x00[5:0] = rfc_2863"), "{text}");
    assert!(
        text.contains(
            "counter_set: 0x08..0x100 = Eth2863CntrsGrpDataLayout { \
             if_in_octets_high: 0x00[31:0] = 0x1234, "
        ),
        "{text}"
    );
    // Another group, another member.
    bytes[0x03] = 0x00; // IEEE 802.3
    let text = format!("{:?}", PpcntReg::new_checked(bytes).unwrap());
    assert!(
        text.contains("counter_set: 0x08..0x100 = Eth8023CntrsGrpDataLayout { "),
        "{text}"
    );
    // A group no member stands for: the union's size and first bytes.
    bytes[0x03] = 0x3f;
    let text = format!("{:?}", PpcntReg::new_checked(bytes).unwrap());
    assert!(
        text.contains(
            "counter_set: 0x08..0x100 = EthCntrsGrpDataLayoutAuto { bytes: 248, \
             head: 00001234 00000000 00000000 00000000, selector: ppcnt_reg.grp }"
        ),
        "{text}"
    );
}

#[test]
fn a_union_whose_selector_is_in_the_other_mailbox_names_it() {
    let o = QueryHcaCapOut::zeroed();
    let text = format!("{o:?}");
    assert!(
        text.contains("capability: 0x10..0x1010 = HcaCapUnion { bytes: 4096, "),
        "{text}"
    );
    assert!(
        text.contains("selector: query_hca_cap_in.op_mod }"),
        "{text}"
    );
}

#[test]
fn opaque_bytes_are_hex_and_pretty_printing_indents() {
    let mut b = [0u8; 16];
    b[0] = 0xfe;
    b[1] = 0x80;
    b[15] = 0x01;
    let v = Ipv6Layout::new_checked(b).unwrap();
    assert_eq!(
        format!("{v:?}"),
        "Ipv6Layout { ipv6: 0x00..0x10 = fe800000 00000000 00000000 00000001 }"
    );
    assert_eq!(
        format!("{v:#?}"),
        "Ipv6Layout {\n    ipv6: 0x00..0x10 = fe800000 00000000 00000000 00000001,\n}"
    );
}

#[test]
fn write_only_register_fields_are_not_read() {
    // cq_arm_sn is write-only in the UAR page: reading it back tells nothing.
    let text = format!("{:?}", UarPage::zeroed());
    assert!(!text.contains("cq_arm_sn"), "{text}");
}

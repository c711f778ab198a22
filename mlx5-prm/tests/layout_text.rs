//! The stable text form of a layout (`View::LAYOUT`, `{}`): what dependants snapshot. Lines
//! checked against the spec's positions by hand.

use mlx5_prm::{Cqc, CreateCqIn};

#[test]
fn the_text_table_names_every_field_in_prm_notation() {
    let t = Cqc::LAYOUT.to_string();
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(lines[0], "cqc: 64 bytes");
    assert_eq!(lines.len(), 1 + Cqc::FIELDS.len());
    let line = |pos: &str, name: &str, bit: usize, width: &str| {
        format!("  {pos:<16}  {name}  (bit 0x{bit:x}, {width})\n")
    };
    // status is 0x00[31:28]: bits 0..4 in the kernel's numbering.
    assert!(
        t.contains(&line("0x00[31:28]", "status", 0, "4 bits")),
        "{t}"
    );
    assert!(
        t.contains(&line("0x00[25]", "dbr_umem_valid", 6, "1 bit")),
        "{t}"
    );
    // log_cq_size 0x0c[28:24]: bit 3 * 32 + 3 = 0x63, 5 bits; uar_page 0x0c[23:0].
    assert!(
        t.contains(&line("0x0c[28:24]", "log_cq_size", 0x63, "5 bits")),
        "{t}"
    );
    assert!(
        t.contains(&line("0x0c[23:0]", "uar_page", 0x68, "24 bits")),
        "{t}"
    );
    // A 64-bit address: dbr_addr at 0x38.
    assert!(
        t.contains(&line("0x38[63:0]", "dbr_addr", 0x1c0, "64 bits")),
        "{t}"
    );
    // A nested layout spanning dwords, and a trailing array of 64-bit entries.
    let t = CreateCqIn::LAYOUT.to_string();
    assert!(t.starts_with("create_cq_in: 272 bytes\n"), "{t}");
    assert!(
        t.contains(&line("0x10..0x50", "cq_context", 0x80, "512 bits")),
        "{t}"
    );
    assert!(
        t.contains(&line("0x110[63:0]", "pas", 0x880, "64 bits")),
        "{t}"
    );
}

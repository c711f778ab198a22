//! Synthetic specs for benchmarks: many structures, many fields, all valid.
//!
//! The shape imitates the real PRM: mostly small fields packed into dwords, some 64-bit
//! fields, an enum-typed or bool field now and then, and nine of every ten structures nesting
//! the first structure of their group of ten (a context inside a command, say).

use std::fmt::Write as _;

/// Field widths and type suffixes, cycled.
fn field_kind(f: usize, bit: u64) -> (u64, &'static str) {
    match f % 7 {
        0 if bit % 64 == 0 => (64, ""),
        1 => (4, ", type: synth_kind"),
        2 => (1, ", type: bool"),
        3 => (16, ""),
        4 => (8, ""),
        _ => (12, ""),
    }
}

/// Lays out `n` fields; returns their `(name, position, type suffix)` and the bytes used.
fn fields_of(n: usize) -> (Vec<(String, String, &'static str)>, u64) {
    let mut bit = 0u64;
    let mut out = Vec::with_capacity(n);
    for f in 0..n {
        let (width, ty) = field_kind(f, bit);
        // Keep fields inside a dword, and 64-bit fields on 64-bit boundaries.
        if width < 32 && bit % 32 + width > 32 {
            bit = (bit / 32 + 1) * 32;
        }
        if width == 64 && bit % 64 != 0 {
            bit = (bit / 64 + 1) * 64;
        }
        let at = crate::position::prm_notation(bit, width).unwrap_or_default();
        out.push((format!("f{f}"), at, ty));
        bit += width;
    }
    (out, bit.div_ceil(32) * 4)
}

/// Writes `files` YAML files holding `structs` structures with about `fields` fields in total
/// (each nested-structure field counts as one). Returns `(file name, text)` pairs.
pub fn synthetic_spec(structs: usize, fields: usize, files: usize) -> Vec<(String, String)> {
    let files = files.max(1);
    let structs = structs.max(1);
    let mut out: Vec<(String, String)> = (0..files)
        .map(|i| (format!("synth_{i:02}.yaml"), String::new()))
        .collect();
    for (i, (_, text)) in out.iter_mut().enumerate() {
        let _ = writeln!(text, "doc: Synthetic spec file {i} for benchmarks.");
        if i == 0 {
            text.push_str(
                "enums:\n  synth_kind:\n    width: 4\n    values: { a: 0, b: 1, c: 2, d: 15 }\n",
            );
        }
        text.push_str("structs:\n");
    }
    let mut group_base_size = 0;
    for s in 0..structs {
        let nests = s % 10 != 0;
        let n = fields / structs + usize::from(s < fields % structs);
        let own = n.saturating_sub(usize::from(nests));
        let (list, mut size) = fields_of(own);
        let mut body = String::new();
        for (name, at, ty) in &list {
            let _ = writeln!(
                body,
                "      {name}: {{ at: \"{at}\"{ty}, doc: Field {name} of structure {s}. }}"
            );
        }
        if nests {
            let base = s - s % 10;
            let _ = writeln!(
                body,
                "      nested: {{ at: \"0x{size:x}\", type: synth_s{base} }}"
            );
            size += group_base_size;
        } else {
            group_base_size = size;
        }
        let text = &mut out[s % files].1;
        let _ = writeln!(text, "  synth_s{s}:\n    size: 0x{size:x}\n    doc: Synthetic structure {s}.\n    fields:\n{body}");
    }
    out
}

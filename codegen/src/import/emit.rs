//! Lays out imported definitions and writes them as spec YAML.
//!
//! Sizes are summed (structures) or maxed (unions) in bits, as the kernel's `sizeof` does.
//! Where the header's layout cannot be written in the spec language as it stands, the
//! importer writes the nearest faithful form and says so with a warning:
//!
//! - `reserved*` members become gaps (the spec's reserved bits);
//! - a field that crosses a dword boundary, or a nested structure that is not dword-sized or
//!   dword-aligned, is written as opaque bytes when it is byte-aligned, and as an array of
//!   one-bit elements otherwise;
//! - a structure whose size is not a whole number of dwords is padded to one, and one with no
//!   fixed part (only a flexible array) is skipped, with the members of its type;
//! - a flexible array sharing an anonymous union with reserved room is written as the
//!   elements that fit in the room (see [`super::flex`]);
//! - inline unions (`union { ... } name;`) become named unions `<parent>_<name>`, and union
//!   members that are plain `u8` arrays become one-field structures `<union>_<member>`;
//! - names with capitals are lower-cased (the kernel's name is kept in a comment).

use super::yaml_out::{OutFile, OutStruct, OutUnion};
use super::{Def, Member};
use crate::diag::{Diagnostic, Diagnostics};
use crate::position::prm_notation;
use crate::source::{SourceMap, Span};
use std::collections::{HashMap, HashSet};

/// What the emitter produced.
pub struct Emitted {
    /// `(file name, YAML)` per header.
    pub files: Vec<(String, String)>,
    /// Structures and unions written.
    pub layouts: usize,
    /// Fields written.
    pub fields: usize,
}

struct Emitter<'a> {
    defs: &'a [Def],
    by_tag: HashMap<&'a str, usize>,
    sizes: HashMap<usize, Option<u64>>,
    in_progress: HashSet<usize>,
    diags: &'a mut Diagnostics,
    fields: usize,
}

/// The largest layout the spec language allows (16 MiB), in bits: sizes beyond it are errors,
/// which also keeps every offset computation far from overflow.
const MAX_BITS: u64 = crate::position::MAX_BYTES * 8;

fn is_reserved(name: &str) -> bool {
    name.starts_with("reserved")
}

fn quoted(pos: &str) -> String {
    format!("\"{pos}\"")
}

fn byte_range(off: u64, width: u64) -> String {
    format!("\"0x{:02x}..0x{:02x}\"", off / 8, (off + width) / 8)
}

/// A spec name for a C member name: lower case, kept unique within its structure.
fn member_name(raw: &str, used: &mut HashSet<String>) -> (String, Option<String>) {
    let lower = raw.to_ascii_lowercase();
    let mut name = lower.clone();
    let mut n = 2;
    while !used.insert(name.clone()) {
        name = format!("{lower}_{n}");
        n += 1;
    }
    let note = (name != raw).then(|| format!("kernel name: {raw}"));
    (name, note)
}

impl<'a> Emitter<'a> {
    fn warn(&mut self, span: Span, msg: String) {
        self.diags.push(Diagnostic::warning("import", span, msg));
    }

    fn error(&mut self, span: Span, msg: String) {
        self.diags.push(Diagnostic::error("import", span, msg));
    }

    /// Size in bits of the definition `idx`, or `None` when it refers to something unknown.
    fn def_size(&mut self, idx: usize) -> Option<u64> {
        if let Some(s) = self.sizes.get(&idx) {
            return *s;
        }
        if !self.in_progress.insert(idx) {
            let span = self.defs[idx].span;
            self.error(span, format!("`{}` contains itself", self.defs[idx].tag));
            return None;
        }
        let def = &self.defs[idx];
        let s = self.members_size(&def.members, def.union);
        self.in_progress.remove(&idx);
        self.sizes.insert(idx, s);
        s
    }

    fn members_size(&mut self, members: &[Member], union: bool) -> Option<u64> {
        let mut total = 0u64;
        for m in members {
            let w = self.member_width(m)?;
            total = if union {
                total.max(w)
            } else {
                total.checked_add(w)?
            };
            if total > MAX_BITS {
                return None;
            }
        }
        Some(total)
    }

    fn member_width(&mut self, m: &Member) -> Option<u64> {
        match m {
            Member::Field { dims, span, .. } => {
                let w = dims
                    .iter()
                    .try_fold(1u64, |a, d| a.checked_mul(d.unwrap_or(0)));
                match w.filter(|&w| w <= MAX_BITS) {
                    Some(w) => Some(w),
                    None => {
                        self.error(
                            *span,
                            "array larger than the 16 MiB a layout may span".into(),
                        );
                        None
                    }
                }
            }
            Member::Nested {
                tag, count, span, ..
            } => {
                let Some(&idx) = self.by_tag.get(tag.as_str()) else {
                    self.diags.push(
                        Diagnostic::error("import", *span, format!("unknown type `{tag}`"))
                            .with_hint(
                                "no header read defines it: import the header that does \
                                 along with this one (the kernel's other mlx5_ifc_*.h use \
                                 mlx5_ifc.h's: `prmc import mlx5_ifc.h HEADER --out DIR`)",
                            ),
                    );
                    return None;
                };
                let s = self.def_size(idx)?;
                let w = match count {
                    None => Some(s),
                    Some(n) => s.checked_mul(n.unwrap_or(0)),
                };
                match w.filter(|&w| w <= MAX_BITS) {
                    Some(w) => Some(w),
                    None => {
                        self.error(
                            *span,
                            "array larger than the 16 MiB a layout may span".into(),
                        );
                        None
                    }
                }
            }
            Member::Inline { union, members, .. } => self.members_size(members, *union),
            Member::Bad { .. } => None,
        }
    }

    /// The size in bits of the type `tag` as already laid out (0 when unknown or empty).
    fn laid_size(&self, tag: &str) -> u64 {
        let i = self.by_tag.get(tag);
        i.and_then(|i| self.sizes.get(i).copied().flatten())
            .unwrap_or(0)
    }

    /// The spec name of a type and whether it is a union; `None` when unknown or empty (an
    /// empty layout is not written, so nothing may name it).
    fn type_of(&self, tag: &str) -> Option<(String, bool)> {
        let &i = self.by_tag.get(tag)?;
        (self.sizes.get(&i) != Some(&Some(0)))
            .then(|| (self.defs[i].name.clone(), self.defs[i].union))
    }

    /// Writes a struct's members, starting at bit `base`, into `fields`; synthesized types go
    /// to `out`. Returns the bit offset after the last member.
    #[allow(clippy::too_many_arguments)]
    fn struct_members(
        &mut self,
        parent: &str,
        members: &[Member],
        base: u64,
        fields: &mut Vec<String>,
        used: &mut HashSet<String>,
        anon: &mut usize,
        out: &mut OutFile,
    ) -> Option<u64> {
        let mut off = base;
        for m in members {
            let width = self.member_width(m)?;
            match m {
                Member::Field { name, dims, span } => {
                    if !is_reserved(name) {
                        let (n, note) = member_name(name, used);
                        if let Some(value) = self.field_value(name, off, dims, *span) {
                            let comment = note.map(|n| format!("  # {n}")).unwrap_or_default();
                            fields.push(format!("{n}: {value}{comment}"));
                            self.fields += 1;
                        }
                    }
                }
                Member::Nested {
                    tag,
                    name,
                    count,
                    span,
                    ..
                } => {
                    let (n, _) = member_name(name, used);
                    let Some((ty, _)) = self.type_of(tag) else {
                        continue;
                    };
                    let elem = width / count.map_or(1, |c| c.unwrap_or(1).max(1));
                    let elem = if matches!(count, Some(None)) {
                        self.laid_size(tag)
                    } else {
                        elem
                    };
                    if elem % 32 != 0 || off % 32 != 0 {
                        if off % 8 == 0 && width % 8 == 0 && width > 0 {
                            self.warn(*span, format!("`{name}` ({tag}) is not dword-sized or dword-aligned: written as bytes"));
                            fields.push(format!("{n}: {}", byte_range(off, width)));
                            self.fields += 1;
                        } else {
                            self.warn(*span, format!("`{name}` ({tag}) cannot be placed: skipped"));
                        }
                    } else {
                        let count_text = match count {
                            None => String::new(),
                            Some(Some(c)) => format!(", count: {c}"),
                            Some(None) => ", count: trailing".into(),
                        };
                        fields.push(format!(
                            "{n}: {{ at: \"0x{:02x}\", type: {ty}{count_text} }}",
                            off / 8
                        ));
                        self.fields += 1;
                    }
                }
                Member::Inline {
                    union: true,
                    members: inner,
                    name: None,
                    span,
                } if super::flex::over_reserved(inner).is_some() => {
                    let list = super::flex::over_reserved(inner)?;
                    let Member::Nested { tag, .. } = list else {
                        return None;
                    };
                    let elem = self.laid_size(tag);
                    let (laid, warning) = super::flex::as_fixed(list, width, elem)?;
                    self.warn(*span, warning);
                    self.struct_members(parent, &laid, off, fields, used, anon, out)?;
                }
                Member::Inline {
                    union,
                    members,
                    name,
                    span,
                } => match (union, name) {
                    (false, None) => {
                        self.struct_members(parent, members, off, fields, used, anon, out)?;
                    }
                    _ => {
                        let label = name.clone().unwrap_or_else(|| {
                            *anon += 1;
                            format!("anon{anon}")
                        });
                        let (n, _) = member_name(&label, used);
                        let synth = format!("{parent}_{}", n);
                        let ok = if *union {
                            self.union_def(&synth, members, *span, out)
                        } else {
                            self.struct_def(&synth, members, *span, out)
                        };
                        if ok && off % 32 == 0 && width % 32 == 0 {
                            fields.push(format!(
                                "{n}: {{ at: \"0x{:02x}\", type: {synth} }}",
                                off / 8
                            ));
                            self.fields += 1;
                        } else if ok && off % 8 == 0 {
                            self.warn(
                                *span,
                                format!("inline `{label}` is not dword-aligned: written as bytes"),
                            );
                            fields.push(format!("{n}: {}", byte_range(off, width)));
                            self.fields += 1;
                        }
                    }
                },
                Member::Bad { .. } => return None,
            }
            off = off.checked_add(width).filter(|&o| o <= MAX_BITS)?;
        }
        Some(off)
    }

    /// The YAML value of a `u8` field, or `None` (with a diagnostic) when it cannot be placed.
    fn field_value(
        &mut self,
        name: &str,
        off: u64,
        dims: &[Option<u64>],
        span: Span,
    ) -> Option<String> {
        let crosses = |o: u64, w: u64| !(o % 32 + w <= 32 || (o % 32 == 0 && w == 64));
        match dims {
            [Some(w)] => {
                let w = *w;
                if !crosses(off, w) {
                    // A one-bit member is a flag in every mlx5_ifc.h layout: a bool.
                    if w == 1 {
                        return prm_notation(off, 1)
                            .map(|p| format!("{{ at: {}, type: bool }}", quoted(&p)));
                    }
                    return prm_notation(off, w).map(|p| quoted(&p));
                }
                if off % 8 == 0 && w % 8 == 0 {
                    if w <= 64 {
                        self.warn(
                            span,
                            format!("`{name}` crosses a dword boundary: written as bytes"),
                        );
                    }
                    return Some(byte_range(off, w));
                }
                // A bit mask that straddles dwords at odd bits: one bit per element.
                self.warn(span, format!("`{name}` crosses a dword boundary off byte boundaries: written as {w} one-bit elements"));
                prm_notation(off, 1).map(|p| format!("{{ at: {}, count: {w} }}", quoted(&p)))
            }
            [None] => None,
            [count, Some(w)] => {
                let w = *w;
                match count {
                    Some(n) => {
                        let n = *n;
                        if w == 8 && off % 8 == 0 {
                            return Some(byte_range(off, n * 8));
                        }
                        if (0..n.min(32)).all(|i| !crosses(off + i * w, w)) {
                            return prm_notation(off, w)
                                .map(|p| format!("{{ at: {}, count: {n} }}", quoted(&p)));
                        }
                        if off % 8 == 0 && (n * w) % 8 == 0 {
                            self.warn(
                                span,
                                format!(
                                    "elements of `{name}` cross dword boundaries: written as bytes"
                                ),
                            );
                            return Some(byte_range(off, n * w));
                        }
                        self.warn(
                            span,
                            format!("elements of `{name}` cannot be placed: skipped"),
                        );
                        None
                    }
                    None => {
                        let ty = match w {
                            8 => "u8",
                            16 => "u16",
                            32 => "u32",
                            64 => "u64",
                            _ => "",
                        };
                        if !ty.is_empty() && off % 8 == 0 {
                            Some(format!(
                                "{{ at: \"0x{:02x}\", type: {ty}, count: trailing }}",
                                off / 8
                            ))
                        } else if off % 32 == 0 && w < 32 {
                            prm_notation(off, w)
                                .map(|p| format!("{{ at: {}, count: trailing }}", quoted(&p)))
                        } else {
                            self.warn(
                                span,
                                format!("trailing array `{name}` cannot be placed: skipped"),
                            );
                            None
                        }
                    }
                }
            }
            _ => {
                self.warn(
                    span,
                    format!("`{name}` has {} dimensions: skipped", dims.len()),
                );
                None
            }
        }
    }

    /// Writes a structure named `name`. Returns false when it could not be laid out.
    fn struct_def(
        &mut self,
        name: &str,
        members: &[Member],
        span: Span,
        out: &mut OutFile,
    ) -> bool {
        let mut fields = Vec::new();
        let mut used = HashSet::new();
        let mut anon = 0;
        let Some(bits) =
            self.struct_members(name, members, 0, &mut fields, &mut used, &mut anon, out)
        else {
            return false;
        };
        if bits == 0 {
            self.warn(span, format!("`{name}` is empty: skipped"));
            return false;
        }
        let size = bits.div_ceil(32) * 4;
        let note = (bits % 32 != 0).then(|| {
            self.warn(
                span,
                format!("`{name}` is {bits} bits, not whole dwords: padded to 0x{size:x} bytes"),
            );
            format!("the header's size is {bits} bits; padded to whole dwords")
        });
        out.structs.push(OutStruct {
            name: name.to_string(),
            size,
            note,
            fields,
        });
        true
    }

    /// Writes a union named `name`; members that are not structures get one-field structures.
    fn union_def(&mut self, name: &str, members: &[Member], span: Span, out: &mut OutFile) -> bool {
        let Some(bits) = self.members_size(members, true) else {
            return false;
        };
        if bits == 0 {
            self.warn(span, format!("`{name}` is empty: skipped"));
            return false;
        }
        let mut used = HashSet::new();
        let mut lines = Vec::new();
        for m in members {
            match m {
                Member::Field {
                    name: f,
                    dims,
                    span,
                } if !is_reserved(f) => {
                    let (n, _) = member_name(f, &mut used);
                    let synth = format!("{name}_{n}");
                    let member = [Member::Field {
                        name: f.clone(),
                        dims: dims.clone(),
                        span: *span,
                    }];
                    if self.struct_def(&synth, &member, *span, out) {
                        lines.push(format!("{n}: {synth}"));
                    }
                }
                Member::Field { .. } => {}
                Member::Nested {
                    tag,
                    name: f,
                    count: None,
                    span,
                    ..
                } => {
                    let (n, _) = member_name(f, &mut used);
                    match self.type_of(tag) {
                        Some((ty, false)) => lines.push(format!("{n}: {ty}")),
                        Some((_, true)) => self.warn(
                            *span,
                            format!("union member `{f}` is itself a union: skipped"),
                        ),
                        None => {}
                    }
                }
                Member::Nested { name: f, span, .. } => {
                    self.warn(*span, format!("union member `{f}` is an array: skipped"));
                }
                Member::Inline {
                    union: false,
                    members: inner,
                    name: label,
                    span,
                } => {
                    let label = label.clone().unwrap_or_else(|| "anon".into());
                    let (n, _) = member_name(&label, &mut used);
                    let synth = format!("{name}_{n}");
                    if self.struct_def(&synth, inner, *span, out) {
                        lines.push(format!("{n}: {synth}"));
                    }
                }
                Member::Inline { span, .. } => {
                    self.warn(*span, "a union nested in a union: skipped".into())
                }
                Member::Bad { .. } => return false,
            }
        }
        out.unions.push(OutUnion {
            name: name.to_string(),
            size: bits.div_ceil(32) * 4,
            members: lines,
        });
        true
    }
}

/// Lays out every definition and renders one YAML document per header file.
pub fn emit(sources: &SourceMap, defs: &[Def], diags: &mut Diagnostics) -> Emitted {
    let mut by_tag = HashMap::new();
    for (i, d) in defs.iter().enumerate() {
        if by_tag.insert(d.tag.as_str(), i).is_some() {
            diags.push(Diagnostic::error(
                "import",
                d.span,
                format!("`{}` is defined twice", d.tag),
            ));
        }
    }
    let mut e = Emitter {
        defs,
        by_tag,
        sizes: HashMap::new(),
        in_progress: HashSet::new(),
        diags,
        fields: 0,
    };
    let mut per_file: Vec<OutFile> = (0..sources.files.len())
        .map(|_| OutFile::default())
        .collect();
    for d in defs {
        let out = &mut per_file[d.span.file];
        if d.union {
            e.union_def(&d.name, &d.members, d.span, out);
        } else {
            e.struct_def(&d.name, &d.members, d.span, out);
        }
    }
    let mut layouts = 0;
    let files = per_file
        .into_iter()
        .enumerate()
        .filter(|(_, f)| !f.structs.is_empty() || !f.unions.is_empty())
        .map(|(i, f)| {
            layouts += f.structs.len() + f.unions.len();
            f.render(&sources.files[i].path, i)
        })
        .collect();
    Emitted {
        files,
        layouts,
        fields: e.fields,
    }
}

//! The decoder: a byte buffer read through a layout of the IR into a tree of every field.
//!
//! Each node carries what a person checking a dump needs side by side: the field's path, its
//! position in PRM notation and the kernel's bit offset (both absolute in the buffer, so they
//! can be found in the dump directly), the raw bits and the decoded value. Reserved bits that
//! are set get a node of their own, since a set reserved bit is usually the bug being chased.
//! Unions are read through their selector when the selector's structure encloses the union in
//! this buffer, or is given from outside it (`--op-mod` for an output mailbox, whose unions the
//! input's op_mod selects), or through `--member`; otherwise every member is shown.

use super::bits;
use crate::ir::{ArrayCount, Field, FieldType, Ir, Struct, Union};
use crate::position::prm_notation;
use serde::Serialize;

/// Nesting depth beyond which decoding stops (real layouts nest under 6 levels).
const MAX_DEPTH: usize = 16;

/// One decoded field, reserved range, union member or array element.
#[derive(Debug, Clone, Serialize)]
pub struct Node {
    /// Dotted path from the top layout (`cq_context.log_cq_size`, `pas[1]`).
    pub path: String,
    /// `uint`, `bool`, `enum`, `bytes`, `struct`, `union`, `member`, `array` or `reserved`.
    pub kind: &'static str,
    /// Type name (`uint`, `bool`, `bytes`, the enum, struct or union name).
    #[serde(rename = "type")]
    pub ty: String,
    /// Position in the buffer in PRM notation (`0x1c[22:20]`).
    pub position: String,
    /// The position as the spec writes it, relative to the enclosing structure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec_position: Option<String>,
    /// Absolute MSB-first bit offset (the kernel's numbering).
    pub bit_offset: u64,
    /// Bits covered.
    pub width: u64,
    /// Leaves: the raw bits as hex (`0x1f`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
    /// Leaves: the decoded value (a number, a bool, an enum name, a hex string).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<serde_json::Value>,
    /// Something the reader should know: an unknown enum value, set reserved bits, how a
    /// union member was chosen.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Fields of a structure, members of a union, elements of an array.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<Node>,
}

/// How many elements of one array are decoded unless told otherwise: a dump of a page list or
/// a trailing array can hold millions (a 16 MiB input of 8-bit elements), which nobody reads
/// one by one, and decoding each would cost time and memory in proportion.
pub const DEFAULT_MAX_ELEMENTS: u64 = 256;

/// How union members are picked when the selector cannot be read, and how much of an array
/// is shown.
#[derive(Debug, Clone)]
pub struct Options {
    /// `MEMBER` (any union with such a member) or `PATH=MEMBER` (the union at PATH).
    pub members: Vec<String>,
    /// Selector fields whose value is known though they are not in the buffer.
    pub known: Vec<Known>,
    /// Elements decoded per array (the first ones; the array's node says how many there
    /// are); `None` decodes every one.
    pub max_elements: Option<u64>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            members: Vec::new(),
            known: Vec::new(),
            max_elements: Some(DEFAULT_MAX_ELEMENTS),
        }
    }
}

/// The value of a field outside the buffer that a union's selector names (the op_mod of the
/// input mailbox, when the output is decoded).
#[derive(Debug, Clone)]
pub struct Known {
    /// The structure holding the field (`query_hca_cap_in`).
    pub structure: String,
    /// The field's path in it (`op_mod`).
    pub field: String,
    /// Its value.
    pub value: u64,
    /// Where the value came from, for the note (`--op-mod`).
    pub how: String,
}

/// A decoding failure: the input does not fit the layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError(pub String);

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What to decode: a structure or a union of the IR.
#[derive(Debug, Clone, Copy)]
pub enum Target<'a> {
    /// A structure or register block.
    Struct(&'a Struct),
    /// A union (its size is the largest member's).
    Union(&'a Union),
}

impl<'a> Target<'a> {
    /// Looks a layout up by name.
    pub fn find(ir: &'a Ir, name: &str) -> Option<Target<'a>> {
        ir.find_struct(name)
            .map(Target::Struct)
            .or_else(|| ir.find_union(name).map(Target::Union))
    }

    /// Name.
    pub fn name(&self) -> &'a str {
        match self {
            Target::Struct(s) => &s.name,
            Target::Union(u) => &u.name,
        }
    }

    /// Size of the fixed part in bytes.
    pub fn size(&self) -> u64 {
        match self {
            Target::Struct(s) => s.size,
            Target::Union(u) => u.size,
        }
    }
}

/// Checks the buffer's length against the layout: shorter is truncated; longer is allowed only
/// when the layout ends in a trailing array and the extra bytes are whole elements.
pub fn check_length(ir: &Ir, target: Target, len: usize) -> Result<(), DecodeError> {
    let size = target.size();
    let len64 = len as u64;
    if len64 < size {
        return Err(DecodeError(format!(
            "truncated input: `{}` is 0x{size:x} ({size}) bytes, the input has 0x{len:x} ({len})",
            target.name()
        )));
    }
    if len64 == size {
        return Ok(());
    }
    let tail = match target {
        Target::Struct(s) => trailing_element_bits(ir, s, 0),
        Target::Union(_) => None,
    };
    match tail {
        Some(w) if w > 0 && ((len64 - size) * 8) % w == 0 => Ok(()),
        Some(w) => Err(DecodeError(format!(
            "the input's 0x{len:x} bytes are not `{}`'s 0x{size:x} bytes plus whole {}-byte elements of its trailing array",
            target.name(),
            w / 8
        ))),
        None => {
            let same: Vec<&str> = ir
                .structs
                .iter()
                .filter(|s| s.size == len64)
                .map(|s| s.name.as_str())
                .take(8)
                .collect();
            let hint = if same.is_empty() {
                " (no layout of the spec has that size)".to_string()
            } else {
                format!(" (layouts of that size: {})", same.join(", "))
            };
            Err(DecodeError(format!(
                "the input is 0x{len:x} ({len}) bytes; `{}` is 0x{size:x} ({size}) bytes and has no trailing array{hint}",
                target.name()
            )))
        }
    }
}

/// Element width of the trailing array `s` runs on through, if any.
fn trailing_element_bits(ir: &Ir, s: &Struct, depth: usize) -> Option<u64> {
    let f = ir.tail_field(s)?;
    match f.count {
        Some(ArrayCount::Trailing) => Some(f.width),
        _ if depth < MAX_DEPTH => match &f.ty {
            FieldType::Struct(t) => trailing_element_bits(ir, ir.find_struct(t)?, depth + 1),
            _ => None,
        },
        _ => None,
    }
}

/// Decodes `buf` as `target` (check the length first with [`check_length`]).
pub fn decode(ir: &Ir, target: Target, buf: &[u8], opts: &Options) -> Node {
    let mut d = Decoder {
        ir,
        buf,
        opts,
        stack: Vec::new(),
    };
    match target {
        Target::Struct(s) => {
            let mut node = d.container("", "struct", &s.name, 0, s.size * 8, None);
            node.children = d.fields(s, "", 0, 0);
            node
        }
        Target::Union(u) => d.union(u, "", 0, 0),
    }
}

struct Decoder<'a> {
    ir: &'a Ir,
    buf: &'a [u8],
    opts: &'a Options,
    /// Enclosing structures and their bit offsets, for union selectors.
    stack: Vec<(&'a str, u64)>,
}

fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}.{name}")
    }
}

fn notation(bit: u64, width: u64) -> String {
    prm_notation(bit, width).unwrap_or_else(|| format!("bit 0x{bit:x}+{width}"))
}

/// The raw bits as hex: `0x` and the value without leading zeros for fields up to 64 bits,
/// every byte for wider ones.
fn raw_hex(buf: &[u8], bit: u64, width: u64) -> String {
    match bits::get_u64(buf, bit, width) {
        Some(v) => format!("0x{v:x}"),
        None => {
            let b = bits::get(buf, bit, width);
            let s: String = b.iter().map(|x| format!("{x:02x}")).collect();
            format!("0x{s}")
        }
    }
}

impl<'a> Decoder<'a> {
    fn container(
        &self,
        path: &str,
        kind: &'static str,
        ty: &str,
        bit: u64,
        width: u64,
        spec_position: Option<String>,
    ) -> Node {
        Node {
            path: path.to_string(),
            kind,
            ty: ty.to_string(),
            position: notation(bit, width),
            spec_position,
            bit_offset: bit,
            width,
            raw: None,
            value: None,
            note: None,
            children: Vec::new(),
        }
    }

    /// The fields of `s` placed at `base`, with set reserved bits between them.
    fn fields(&mut self, s: &'a Struct, prefix: &str, base: u64, depth: usize) -> Vec<Node> {
        self.stack.push((&s.name, base));
        let mut out = Vec::new();
        let mut covered = 0u64;
        for f in &s.fields {
            if f.bit_offset > covered {
                self.reserved(base + covered, base + f.bit_offset, prefix, &mut out);
            }
            covered = covered.max(f.end_bit());
            out.push(self.field(f, prefix, base, depth));
        }
        if covered < s.size * 8 {
            self.reserved(base + covered, base + s.size * 8, prefix, &mut out);
        }
        self.stack.pop();
        out
    }

    fn reserved(&self, start: u64, end: u64, prefix: &str, out: &mut Vec<Node>) {
        let end = end.min(self.buf.len() as u64 * 8);
        let mut at = start;
        // One node per dword piece, so each has a PRM position.
        while at < end {
            let stop = end.min((at / 32 + 1) * 32);
            let v = bits::get(self.buf, at, stop - at);
            if v.iter().any(|&b| b != 0) {
                let mut n = self.container(
                    &join(prefix, "(reserved)"),
                    "reserved",
                    "",
                    at,
                    stop - at,
                    None,
                );
                n.raw = Some(raw_hex(self.buf, at, stop - at));
                n.note = Some("reserved bits are set".into());
                out.push(n);
            }
            at = stop;
        }
    }

    fn field(&mut self, f: &'a Field, prefix: &str, base: u64, depth: usize) -> Node {
        let path = join(prefix, &f.name);
        let at = base + f.bit_offset;
        let count = match f.count {
            None => None,
            Some(ArrayCount::Fixed(n)) => Some(n),
            Some(ArrayCount::Trailing) => {
                let left = (self.buf.len() as u64 * 8).saturating_sub(at);
                Some(left.checked_div(f.width).unwrap_or(0))
            }
        };
        let Some(n) = count else {
            return self.element(&f.ty, path, at, f.width, Some(f.position.clone()), depth);
        };
        let mut node = self.container(
            &path,
            "array",
            f.ty.name(),
            at,
            f.width.saturating_mul(n),
            Some(f.position.clone()),
        );
        if n == 0 {
            node.position = format!("0x{:02x}..", at / 8);
        }
        let shown = self.opts.max_elements.map_or(n, |m| n.min(m));
        node.note = if shown < n {
            Some(format!(
                "{n} elements, the first {shown} decoded (prmc decode --elements N|all)"
            ))
        } else {
            (f.count == Some(ArrayCount::Trailing)).then(|| format!("{n} elements"))
        };
        node.children = (0..shown)
            .map(|i| {
                self.element(
                    &f.ty,
                    format!("{path}[{i}]"),
                    at + i * f.width,
                    f.width,
                    None,
                    depth,
                )
            })
            .collect();
        node
    }

    /// One value of type `ty` at `at`.
    fn element(
        &mut self,
        ty: &'a FieldType,
        path: String,
        at: u64,
        width: u64,
        spec_position: Option<String>,
        depth: usize,
    ) -> Node {
        let mut node = self.container(&path, ty.kind(), ty.name(), at, width, spec_position);
        match ty {
            FieldType::Struct(t) => {
                if let Some(inner) = self.ir.find_struct(t).filter(|_| depth < MAX_DEPTH) {
                    node.children = self.fields(inner, &path, at, depth + 1);
                }
                return node;
            }
            FieldType::Union(t) => {
                if let Some(u) = self.ir.find_union(t).filter(|_| depth < MAX_DEPTH) {
                    let spec = node.spec_position.take();
                    node = self.union(u, &path, at, depth + 1);
                    node.spec_position = spec;
                }
                return node;
            }
            _ => {}
        }
        node.raw = Some(raw_hex(self.buf, at, width));
        let v = bits::get_u64(self.buf, at, width);
        node.value = Some(match (ty, v) {
            (FieldType::Bool, Some(v)) => serde_json::Value::Bool(v != 0),
            (FieldType::Enum(e), Some(v)) => {
                match self
                    .ir
                    .find_enum(e)
                    .and_then(|e| e.values.iter().find(|x| x.value == v))
                {
                    Some(x) => serde_json::Value::String(x.name.clone()),
                    None => {
                        node.note = Some(format!("unknown {e} value {v}"));
                        serde_json::Value::Number(v.into())
                    }
                }
            }
            (FieldType::Uint, Some(v)) => serde_json::Value::Number(v.into()),
            _ => serde_json::Value::String(raw_hex(self.buf, at, width)),
        });
        node
    }

    fn union(&mut self, u: &'a Union, path: &str, at: u64, depth: usize) -> Node {
        let mut node = self.container(path, "union", &u.name, at, u.size * 8, None);
        let (chosen, how) = self.choose(u, path);
        node.note = Some(how);
        for m in &u.members {
            if chosen.is_some_and(|c| c != m.name) {
                continue;
            }
            let mpath = join(path, &m.name);
            let Some(s) = self.ir.find_struct(&m.ty) else {
                continue;
            };
            let mut mn = self.container(&mpath, "member", &s.name, at, s.size * 8, None);
            mn.children = self.fields(s, &mpath, at, depth);
            // The union's bits past this member.
            if s.size < u.size {
                self.reserved(at + s.size * 8, at + u.size * 8, &mpath, &mut mn.children);
            }
            node.children.push(mn);
        }
        node
    }

    /// The member to decode (`None`: all) and a note saying why.
    fn choose(&self, u: &'a Union, path: &str) -> (Option<&'a str>, String) {
        for m in &self.opts.members {
            let (p, name) = match m.split_once('=') {
                Some((p, name)) => (Some(p), name),
                None => (None, m.as_str()),
            };
            if p.is_some_and(|p| p != path) {
                continue;
            }
            if let Some(x) = u.members.iter().find(|x| x.name == name) {
                return (Some(&x.name), format!("member {name} chosen by --member"));
            }
        }
        let Some(sel) = &u.selector else {
            return (
                None,
                "no selector: every member shown (pick one with --member)".into(),
            );
        };
        let enclosing = self.stack.iter().rev().find(|(n, _)| *n == sel.structure);
        let given = self
            .opts
            .known
            .iter()
            .find(|k| k.structure == sel.structure && k.field == sel.field);
        let v = match (enclosing, given) {
            (Some(&(_, base)), _) => {
                bits::get_u64(self.buf, base + sel.bit_offset, sel.width).unwrap_or(0)
            }
            (None, Some(k)) => k.value,
            (None, None) => {
                return (
                    None,
                    format!(
                        "selector {}.{} is not in this buffer: every member shown (pick one with --member, or --op-mod for a command's output)",
                        sel.structure, sel.field
                    ),
                )
            }
        };
        let v = v >> sel.shift.min(63);
        let by = match (enclosing, given) {
            (None, Some(k)) => format!("{}.{} = {:#x} ({})", k.structure, k.field, k.value, k.how),
            _ => format!("{} = {v}", sel.field),
        };
        match u.members.iter().find(|m| m.when == Some(v)) {
            Some(m) => (Some(&m.name), format!("member {} chosen by {by}", m.name)),
            None => (None, format!("{by} picks no member: every member shown")),
        }
    }
}

/// Every leaf (a value with raw bits) of the tree, in order: what [`super::encode`] needs to
/// write the same bytes back.
pub fn leaves(node: &Node) -> Vec<&Node> {
    let mut out = Vec::new();
    fn walk<'n>(n: &'n Node, out: &mut Vec<&'n Node>) {
        if n.raw.is_some() && n.kind != "reserved" {
            out.push(n);
        }
        for c in &n.children {
            walk(c, out);
        }
    }
    walk(node, &mut out);
    out
}

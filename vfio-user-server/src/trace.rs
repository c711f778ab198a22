//! The command trace: one JSON line per command the guest issued, decoded field by field with
//! the spec's reflection tables (`mlx5-prm`, feature `reflect`): opcode and its name, op_mod,
//! status, syndrome, and every input and output field that is not zero.
//!
//! Nested structures are decoded with their own layout when the spec's table can be found
//! (by the nested field's name, or the known context names below); a nested structure
//! without one, and the bytes past a layout (mailbox data such as page lists), are shown as
//! their non-zero big-endian dwords, `name+0xOFF`.

use crate::commands::{self, CommandInfo};
use mlx5_prm::rt::reflect::LayoutAccess;
use serde_json::{json, Map, Value};
use std::io::Write;

/// One command as the model executed it.
#[derive(Debug, Clone, Default)]
pub struct TracedCommand {
    /// Opcode.
    pub opcode: u16,
    /// op_mod.
    pub op_mod: u16,
    /// Delivery status of the entry (0: delivered; otherwise the command did not run).
    pub delivery: u8,
    /// Status written to the output.
    pub status: u8,
    /// Syndrome written to the output.
    pub syndrome: u32,
    /// The whole input (inline part and mailbox data), when the model reports it.
    pub input: Option<Vec<u8>>,
    /// The whole output, when the model reports it.
    pub output: Option<Vec<u8>>,
}

/// Nested fields whose layout has another name than the field.
const NESTED_LAYOUTS: &[(&str, &str)] = &[
    ("eq_context_entry", "eqc"),
    ("cq_context", "cqc"),
    ("memory_key_mkey_entry", "mkc"),
    ("ctx", "tisc"),
    ("wq", "wq"),
    ("primary_address_path", "ads"),
    ("secondary_address_path", "ads"),
    ("outer_headers", "fte_match_set_lyr_2_4"),
    ("inner_headers", "fte_match_set_lyr_2_4"),
    ("misc_parameters", "fte_match_set_misc"),
    ("misc_parameters_2", "fte_match_set_misc2"),
];

/// The capability page QUERY_HCA_CAP / SET_HCA_CAP carry for op_mod's type (op_mod >> 1).
fn capability_layout(op_mod: u16) -> Option<&'static str> {
    match op_mod >> 1 {
        0 => Some("cmd_hca_cap"),
        1 => Some("per_protocol_networking_offload_caps"),
        4 => Some("roce_cap"),
        _ => None,
    }
}

fn nested_layout(field: &str, size: usize, op_mod: u16) -> Option<&'static LayoutAccess> {
    let by_name = |n: &str| commands::layout(n).filter(|l| l.size <= size);
    if field == "capability" {
        return capability_layout(op_mod).and_then(by_name);
    }
    NESTED_LAYOUTS
        .iter()
        .find(|(f, _)| *f == field)
        .and_then(|(_, l)| by_name(l))
        .or_else(|| by_name(field))
}

/// Adds the non-zero big-endian dwords of `bytes` as `prefix+0xOFF` entries.
fn raw_dwords(out: &mut Map<String, Value>, prefix: &str, base: usize, bytes: &[u8]) {
    for (i, chunk) in bytes.chunks(4).enumerate() {
        let mut w = [0u8; 4];
        w[..chunk.len()].copy_from_slice(chunk);
        let v = u32::from_be_bytes(w);
        if v != 0 {
            out.insert(
                format!("{prefix}+{:#x}", base + i * 4),
                json!(format!("{v:#010x}")),
            );
        }
    }
}

/// Every non-zero field of `layout` over `bytes` (which may be longer: the rest is raw).
fn decode(
    out: &mut Map<String, Value>,
    prefix: &str,
    layout: &LayoutAccess,
    bytes: &[u8],
    op_mod: u16,
    depth: u32,
) {
    if bytes.len() < layout.size {
        raw_dwords(out, prefix, 0, bytes);
        return;
    }
    let name = |f: &str| {
        if prefix.is_empty() {
            f.to_string()
        } else {
            format!("{prefix}.{f}")
        }
    };
    for f in layout.fields {
        let Some(get) = f.get else { continue };
        let width = f.width.max(1) as usize;
        let count = if f.trailing {
            let start = f.bit_offset / 8;
            // Elements of a trailing array that fit in the bytes given, at most 4096.
            bytes.len().saturating_sub(start) * 8 / width
        } else {
            f.count
        };
        for i in 0..count.min(4096) {
            let end_bit = f.bit_offset + (i + 1) * width;
            if end_bit.div_ceil(8) > bytes.len() {
                break;
            }
            let v = get(bytes, i);
            if v != 0 {
                let key = if f.count == 1 && !f.trailing {
                    name(f.name)
                } else {
                    format!("{}[{i}]", name(f.name))
                };
                let val = if width > 16 {
                    json!(format!("{v:#x}"))
                } else {
                    json!(v)
                };
                out.insert(key, val);
            }
        }
    }
    for n in layout.nested {
        let at = (n.view_offset)(bytes);
        let Some(sub) = bytes.get(at..at.saturating_add(n.size).min(bytes.len())) else {
            continue;
        };
        if sub.iter().all(|&b| b == 0) {
            continue;
        }
        match nested_layout(n.name, n.size, op_mod).filter(|_| depth < 4) {
            Some(l) => decode(out, &name(n.name), l, sub, op_mod, depth + 1),
            None => raw_dwords(out, &name(n.name), 0, sub),
        }
    }
    // Trailing arrays decode the rest themselves; raw dwords only without one.
    if !layout.fields.iter().any(|f| f.trailing) && bytes.len() > layout.size {
        raw_dwords(out, &name("data"), layout.size, &bytes[layout.size..]);
    }
}

/// The JSON object for one command (`seq` numbers them from 1).
pub fn to_json(seq: u64, c: &TracedCommand) -> Value {
    let info: Option<&CommandInfo> = commands::by_opcode(c.opcode);
    let mut obj = Map::new();
    obj.insert("seq".into(), json!(seq));
    obj.insert("opcode".into(), json!(format!("{:#x}", c.opcode)));
    obj.insert("name".into(), json!(info.map_or("unknown", |i| i.name)));
    obj.insert("op_mod".into(), json!(c.op_mod));
    if c.delivery != 0 {
        obj.insert("delivery".into(), json!(c.delivery));
    }
    obj.insert("status".into(), json!(c.status));
    obj.insert("syndrome".into(), json!(format!("{:#x}", c.syndrome)));
    for (key, bytes, layout) in [
        ("in", &c.input, info.map(|i| i.input)),
        ("out", &c.output, info.map(|i| i.output)),
    ] {
        let Some(bytes) = bytes else { continue };
        let mut fields = Map::new();
        match layout.and_then(commands::layout) {
            Some(l) => decode(&mut fields, "", l, bytes, c.op_mod, 0),
            None => raw_dwords(&mut fields, "", 0, bytes),
        }
        obj.insert(key.into(), Value::Object(fields));
    }
    Value::Object(obj)
}

/// Writes trace lines to a file (or any writer), numbering the commands.
pub struct TraceWriter {
    out: Box<dyn Write + Send>,
    seq: u64,
}

impl std::fmt::Debug for TraceWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceWriter")
            .field("seq", &self.seq)
            .finish_non_exhaustive()
    }
}

impl TraceWriter {
    /// A writer onto `out`.
    pub fn new(out: Box<dyn Write + Send>) -> TraceWriter {
        TraceWriter { out, seq: 0 }
    }

    /// Writes one command's line and flushes it (so a crashed run keeps its trace).
    pub fn record(&mut self, c: &TracedCommand) -> std::io::Result<()> {
        self.seq += 1;
        let line = to_json(self.seq, c);
        writeln!(self.out, "{line}")?;
        self.out.flush()
    }

    /// Writes a marker line (a new connection, a reset), so the trace shows sessions.
    pub fn note(&mut self, event: &str) -> std::io::Result<()> {
        writeln!(self.out, "{}", json!({ "event": event }))?;
        self.out.flush()
    }

    /// Commands written so far.
    pub fn count(&self) -> u64 {
        self.seq
    }
}

#[cfg(test)]
mod tests;

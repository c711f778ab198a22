//! The command trace: one JSON line per command the guest issued, decoded field by field with
//! the spec's reflection tables (`mlx5-prm`, feature `reflect`): opcode and its name, op_mod,
//! status, syndrome, and every input and output field that is not zero.
//!
//! Everything comes from the generated tables: the command by opcode (`cmd::by_opcode`), its
//! layouts by name, and for each nested field the layout the table names. A nested structure
//! is decoded with its layout (`cq_context.log_cq_size`), an array of them element by element
//! (`name[i].field`). A union is decoded as the member its selector picks, named in the key
//! (`capability.cmd_hca_cap.log_max_qp`); the selector is read from the layout that holds it
//! when that layout is being decoded or is the command's input, or else from the command's
//! input when that has a field of the same name at the same place (SET_HCA_CAP's `op_mod`,
//! which picks the same page as QUERY_HCA_CAP's). A union without a selector, or whose
//! selector picks no member, and the bytes past a layout (mailbox data such as page lists
//! where no trailing array takes them), are shown as their non-zero big-endian dwords,
//! `name+0xOFF`. Nesting is followed [`MAX_DEPTH`] levels deep and an array shows at most
//! [`MAX_ELEMENTS`] elements, so a hostile guest's mailboxes cost bounded work.

use crate::commands::{self, CommandInfo};
use mlx5_prm::rt::reflect::{LayoutAccess, NestedAccess, NestedKind, SelectorAccess};
use serde_json::{json, Map, Value};
use std::io::Write;

/// Nesting levels decoded below a command's input or output; deeper ones are raw dwords.
pub const MAX_DEPTH: u32 = 4;

/// Elements of one array (scalars or nested layouts) shown at most.
pub const MAX_ELEMENTS: usize = 4096;

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

/// A layout being decoded, with the ones around it: where a union's selector may be read.
struct Scope<'a> {
    layout: &'static str,
    bytes: &'a [u8],
    parent: Option<&'a Scope<'a>>,
}

/// One decode of a mailbox: the entries found so far and the command's input (where a
/// selector of another layout is read).
struct Decoder<'a> {
    out: Map<String, Value>,
    input: Option<(&'static str, &'a [u8])>,
}

fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}.{name}")
    }
}

impl<'a> Decoder<'a> {
    /// The raw value of `sel`, from the first layout being decoded that holds it, else from
    /// the command's input (see the module documentation).
    fn selector_value(&self, sel: &SelectorAccess, scope: &Scope<'_>) -> Option<u64> {
        let mut at = Some(scope);
        while let Some(s) = at {
            if s.layout == sel.layout {
                return sel.read(s.bytes);
            }
            at = s.parent;
        }
        let (name, bytes) = self.input?;
        let same_place = name == sel.layout
            || commands::layout(name)
                .and_then(|l| l.field(sel.field))
                .is_some_and(|f| f.bit_offset == sel.bit_offset && f.width == sel.width);
        if same_place {
            sel.read(bytes)
        } else {
            None
        }
    }

    /// Every non-zero field of `layout` over `bytes` (which may be longer: the rest is raw,
    /// unless a trailing array or a nested view running on takes it).
    fn decode(
        &mut self,
        prefix: &str,
        layout: &'static LayoutAccess,
        bytes: &[u8],
        parent: Option<&Scope<'_>>,
        depth: u32,
    ) {
        if bytes.len() < layout.size {
            raw_dwords(&mut self.out, prefix, 0, bytes);
            return;
        }
        let scope = Scope {
            layout: layout.name,
            bytes,
            parent,
        };
        for f in layout.fields {
            let Some(get) = f.get else { continue };
            let width = f.width.max(1) as usize;
            let count = if f.trailing {
                // Elements of a trailing array that fit in the bytes given.
                bytes.len().saturating_sub(f.bit_offset / 8) * 8 / width
            } else {
                f.count
            };
            for i in 0..count.min(MAX_ELEMENTS) {
                let end_bit = f.bit_offset + (i + 1) * width;
                if end_bit.div_ceil(8) > bytes.len() {
                    break;
                }
                let v = get(bytes, i);
                if v != 0 {
                    let key = if f.count == 1 && !f.trailing {
                        join(prefix, f.name)
                    } else {
                        format!("{}[{i}]", join(prefix, f.name))
                    };
                    let val = if width > 16 {
                        json!(format!("{v:#x}"))
                    } else {
                        json!(v)
                    };
                    self.out.insert(key, val);
                }
            }
        }
        for n in layout.nested {
            self.nested(prefix, n, &scope, depth);
        }
        let tail_taken = layout.fields.iter().any(|f| f.trailing)
            || layout.nested.iter().any(|n| n.trailing || n.runs_on);
        if !tail_taken && bytes.len() > layout.size {
            raw_dwords(
                &mut self.out,
                &join(prefix, "data"),
                layout.size,
                &bytes[layout.size..],
            );
        }
    }

    /// Every non-zero element of nested field `n` of the layout in `scope`.
    fn nested(&mut self, prefix: &str, n: &NestedAccess, scope: &Scope<'_>, depth: u32) {
        let bytes = scope.bytes;
        let single = n.count == 1 && !n.trailing;
        // Present: this crate builds mlx5-prm with `reflect`.
        let Some(view_offset) = n.view_offset else {
            return;
        };
        for i in 0..MAX_ELEMENTS {
            let Some(at) = view_offset(bytes, i) else {
                break;
            };
            let end = if n.runs_on {
                bytes.len()
            } else {
                at.saturating_add(n.size).min(bytes.len())
            };
            let Some(sub) = bytes.get(at..end) else { break };
            if sub.iter().all(|&b| b == 0) {
                continue;
            }
            let key = if single {
                join(prefix, n.name)
            } else {
                format!("{}[{i}]", join(prefix, n.name))
            };
            if depth >= MAX_DEPTH {
                raw_dwords(&mut self.out, &key, 0, sub);
                continue;
            }
            let picked = match n.kind() {
                NestedKind::Struct => commands::layout(n.layout).map(|l| (key.clone(), l)),
                NestedKind::Union => commands::union(n.layout).and_then(|u| {
                    let raw = self.selector_value(u.selector.as_ref()?, scope)?;
                    let m = u.member_for(raw)?;
                    Some((join(&key, m.name), commands::layout(m.layout)?))
                }),
            };
            match picked {
                Some((key, l)) => self.decode(&key, l, sub, Some(scope), depth + 1),
                None => raw_dwords(&mut self.out, &key, 0, sub),
            }
        }
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
    let input = c.input.as_deref();
    let input_layout = info.map(|i| i.input);
    for (key, bytes, layout) in [
        ("in", input, input_layout),
        ("out", c.output.as_deref(), info.map(|i| i.output)),
    ] {
        let Some(bytes) = bytes else { continue };
        let mut d = Decoder {
            out: Map::new(),
            input: input_layout.zip(input),
        };
        match layout.and_then(commands::layout) {
            Some(l) => d.decode("", l, bytes, None, 0),
            None => raw_dwords(&mut d.out, "", 0, bytes),
        }
        obj.insert(key.into(), Value::Object(d.out));
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

pub mod summary;

#[cfg(test)]
mod tests;

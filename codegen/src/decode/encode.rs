//! `prmc encode`: a buffer built from `field.path=value` assignments, the inverse of the
//! decoder. Paths are the decoder's (`cq_context.log_cq_size`, `pas[2]`, a union's member by
//! name: `counter_set.eth_802_3_cntrs_grp_data_layout.a_frames_transmitted_ok`), values are
//! numbers (decimal, `0x` hex of any length, `0b`), enum value names or `true`/`false`.

use super::bits;
use super::tree::{DecodeError, Target};
use crate::ir::{ArrayCount, FieldType, Ir, Struct};

/// Where an assignment writes: absolute bit offset, width and type of the leaf.
#[derive(Debug, Clone)]
pub struct Leaf<'a> {
    /// Absolute MSB-first bit offset.
    pub bit_offset: u64,
    /// Width in bits.
    pub width: u64,
    /// The leaf's type.
    pub ty: &'a FieldType,
}

/// Splits `path=value`.
pub fn split_assignment(arg: &str) -> Result<(&str, &str), DecodeError> {
    match arg.split_once('=') {
        Some((p, v)) if !p.is_empty() && !v.is_empty() => Ok((p.trim(), v.trim())),
        _ => Err(DecodeError(format!(
            "`{arg}` is not an assignment: write field.path=value"
        ))),
    }
}

/// One path component: a name and an optional `[index]`.
fn component(c: &str) -> Result<(&str, Option<u64>), String> {
    match c.split_once('[') {
        None => Ok((c, None)),
        Some((name, rest)) => {
            let idx = rest
                .strip_suffix(']')
                .ok_or_else(|| format!("`{c}`: an index is written name[N]"))?;
            let i = crate::num::parse_uint(idx).map_err(|e| format!("`{c}`: {e}"))?;
            Ok((name, Some(i)))
        }
    }
}

fn unknown(name: &str, what: &str, candidates: &[&str]) -> String {
    let hint = crate::load::suggest(name, candidates)
        .map(|s| format!(" (did you mean `{s}`?)"))
        .unwrap_or_default();
    format!("no field `{name}` in `{what}`{hint}")
}

/// Resolves a dotted path in `target` to a leaf.
pub fn resolve<'a>(ir: &'a Ir, target: Target<'a>, path: &str) -> Result<Leaf<'a>, String> {
    let parts: Vec<&str> = path.split('.').collect();
    let mut i = 0;
    let mut base = 0u64;
    let mut current: &Struct = match target {
        Target::Struct(s) => s,
        Target::Union(u) => {
            let m = parts[0];
            let names: Vec<&str> = u.members.iter().map(|m| m.name.as_str()).collect();
            let member = u
                .members
                .iter()
                .find(|x| x.name == m)
                .ok_or_else(|| unknown(m, &u.name, &names))?;
            i = 1;
            ir.find_struct(&member.ty)
                .ok_or_else(|| format!("member `{m}` has no structure"))?
        }
    };
    loop {
        let Some(part) = parts.get(i) else {
            return Err(format!(
                "`{path}` names the structure `{}`: assign one of its fields",
                current.name
            ));
        };
        let (name, index) = component(part)?;
        let names: Vec<&str> = current.fields.iter().map(|f| f.name.as_str()).collect();
        let f = current
            .fields
            .iter()
            .find(|f| f.name == name)
            .ok_or_else(|| unknown(name, &current.name, &names))?;
        let mut at = base + f.bit_offset;
        match (f.count, index) {
            (None, None) => {}
            (None, Some(_)) => return Err(format!("`{name}` is not an array")),
            (Some(_), None) => {
                return Err(format!("`{name}` is an array: write {name}[N]"));
            }
            (Some(ArrayCount::Fixed(n)), Some(k)) if k >= n => {
                return Err(format!("`{name}` has {n} elements; [{k}] is past its end"));
            }
            (Some(ArrayCount::Trailing), Some(k)) if k >= 1 << 20 => {
                return Err(format!("`{name}[{k}]`: index too large"));
            }
            (Some(_), Some(k)) => at += k * f.width,
        }
        i += 1;
        match &f.ty {
            FieldType::Struct(t) => {
                current = ir
                    .find_struct(t)
                    .ok_or_else(|| format!("no structure `{t}`"))?;
                base = at;
            }
            FieldType::Union(t) => {
                let u = ir.find_union(t).ok_or_else(|| format!("no union `{t}`"))?;
                let Some(m) = parts.get(i) else {
                    return Err(format!(
                        "`{path}` names the union `{t}`: continue with a member's name"
                    ));
                };
                let names: Vec<&str> = u.members.iter().map(|m| m.name.as_str()).collect();
                let member = u
                    .members
                    .iter()
                    .find(|x| x.name == *m)
                    .ok_or_else(|| unknown(m, &u.name, &names))?;
                current = ir
                    .find_struct(&member.ty)
                    .ok_or_else(|| format!("member `{m}` has no structure"))?;
                base = at;
                i += 1;
            }
            ty => {
                if i < parts.len() {
                    return Err(format!("`{name}` is a {}, it has no fields", ty.kind()));
                }
                return Ok(Leaf {
                    bit_offset: at,
                    width: f.width,
                    ty: &f.ty,
                });
            }
        }
    }
}

/// Parses a value for `leaf` into big-endian bytes.
pub fn parse_value(ir: &Ir, leaf: &Leaf, path: &str, text: &str) -> Result<Vec<u8>, String> {
    let fits = |bytes: Vec<u8>| {
        if bits::fits(&bytes, leaf.width) {
            Ok(bytes)
        } else {
            Err(format!(
                "`{text}` does not fit `{path}` ({} bit{}; the value needs {})",
                leaf.width,
                if leaf.width == 1 { "" } else { "s" },
                bits::significant_bits(&bytes)
            ))
        }
    };
    match text {
        "true" if leaf.width == 1 => return Ok(vec![1]),
        "false" if leaf.width == 1 => return Ok(vec![0]),
        _ => {}
    }
    // An enum value's name wins over a number (imported enums may have names like `1g`).
    let named = match leaf.ty {
        FieldType::Enum(e) => ir.find_enum(e),
        _ => None,
    };
    if let Some(v) = named.and_then(|e| e.values.iter().find(|v| v.name == text)) {
        return fits(v.value.to_be_bytes().to_vec());
    }
    if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        let digits: String = hex.chars().filter(|&c| c != '_').collect();
        if digits.len() > 16 {
            if let Some(c) = digits.chars().find(|c| !c.is_ascii_hexdigit()) {
                return Err(format!("`{text}`: `{c}` is not a hex digit"));
            }
            let padded = if digits.len() % 2 == 1 {
                format!("0{digits}")
            } else {
                digits
            };
            let bytes = padded
                .as_bytes()
                .chunks(2)
                .map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap_or("0"), 16).unwrap_or(0))
                .collect();
            return fits(bytes);
        }
    }
    if text.starts_with(|c: char| c.is_ascii_digit()) {
        let v = crate::num::parse_uint(text)?;
        return fits(v.to_be_bytes().to_vec());
    }
    if let FieldType::Enum(e) = leaf.ty {
        if let Some(e) = ir.find_enum(e) {
            let names: Vec<&str> = e.values.iter().map(|v| v.name.as_str()).collect();
            let hint = crate::load::suggest(text, &names)
                .map(|s| format!("did you mean `{s}`? "))
                .unwrap_or_default();
            return Err(format!(
                "`{text}` is not a value of `{}` ({hint}values: {})",
                e.name,
                names.join(", ")
            ));
        }
    }
    Err(format!(
        "`{text}` is not a value for `{path}` ({}): write a number{}",
        leaf.ty.name(),
        if leaf.width == 1 {
            ", true or false"
        } else {
            ""
        }
    ))
}

/// Builds the buffer: `base` (or zeros of the layout's size) with every assignment applied in
/// order. Assigning past the end of a trailing array grows the buffer by whole elements.
pub fn encode(
    ir: &Ir,
    target: Target,
    base: Option<Vec<u8>>,
    assignments: &[(String, String)],
) -> Result<Vec<u8>, DecodeError> {
    let mut buf = match base {
        Some(b) => {
            super::tree::check_length(ir, target, b.len())
                .map_err(|e| DecodeError(format!("--base: {e}")))?;
            b
        }
        None => vec![0u8; target.size() as usize],
    };
    for (path, value) in assignments {
        let at = |m: String| DecodeError(format!("`{path}={value}`: {m}"));
        let leaf = resolve(ir, target, path).map_err(at)?;
        let bytes = parse_value(ir, &leaf, path, value).map_err(at)?;
        let end = (leaf.bit_offset + leaf.width).div_ceil(8) as usize;
        if end > buf.len() {
            buf.resize(end, 0);
        }
        bits::set(&mut buf, leaf.bit_offset, leaf.width, &bytes);
    }
    Ok(buf)
}

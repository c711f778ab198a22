//! Register images by field name, through the generated reflection tables: `key=value`
//! assignments into an image (numbers in any base, flags, enum values by the spec's name,
//! dotted paths into nested structures), and an image rendered as JSON or as `name: value`
//! lines.

use mlx5_prm::rt::reflect::{
    FieldAccess, LayoutAccess, NestedAccess, NestedTable, UnionMemberAccess, ValueKind,
};
use serde_json::{Map, Value};

/// Largest enum field whose values are searched by name (2^16 candidates at most).
const MAX_ENUM_SEARCH_BITS: u32 = 16;

/// Finds a scalar field by a dotted path; returns it and the byte offset of the layout that
/// holds it.
fn find(table: &'static LayoutAccess, path: &str) -> Result<(&'static FieldAccess, usize), String> {
    let mut table = table;
    let mut base = 0usize;
    let mut parts = path.split('.').peekable();
    while let Some(part) = parts.next() {
        if parts.peek().is_none() {
            return table
                .field(part)
                .map(|f| (f, base))
                .ok_or_else(|| unknown_field(table, part));
        }
        let nested = table
            .nested_field(part)
            .ok_or_else(|| unknown_field(table, part))?;
        match nested.table {
            NestedTable::Struct(t) if nested.count == 1 => {
                base += nested.byte_offset;
                table = t;
            }
            _ => {
                return Err(format!(
                    "`{part}` of {} is an array or a union; name a plain field",
                    table.name
                ))
            }
        }
    }
    Err("an empty field name".into())
}

fn unknown_field(table: &LayoutAccess, name: &str) -> String {
    let fields: Vec<&str> = table
        .fields
        .iter()
        .map(|f| f.name)
        .chain(table.nested.iter().map(|n| n.name))
        .filter(|n| !n.starts_with("reserved"))
        .collect();
    format!(
        "{} has no field `{name}` (fields: {})",
        table.name,
        fields.join(", ")
    )
}

/// Parses `text` as a value of field `f`.
fn parse_value(f: &FieldAccess, text: &str) -> Result<u64, String> {
    let number = || -> Option<u64> {
        let t = text.replace('_', "");
        if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
            u64::from_str_radix(h, 16).ok()
        } else if let Some(b) = t.strip_prefix("0b") {
            u64::from_str_radix(b, 2).ok()
        } else {
            t.parse().ok()
        }
    };
    let value = match f.kind {
        ValueKind::Flag => match text {
            "true" | "on" | "yes" | "1" => Some(1),
            "false" | "off" | "no" | "0" => Some(0),
            _ => None,
        },
        ValueKind::Enum { value_name, .. } => number().or_else(|| {
            let bits = f.width.min(MAX_ENUM_SEARCH_BITS);
            (0..1u64 << bits).find(|&v| value_name(v) == Some(text))
        }),
        ValueKind::Number => number(),
        ValueKind::Bytes => None,
    };
    let value = value.ok_or_else(|| match f.kind {
        ValueKind::Enum { name, value_name } => {
            let names: Vec<&str> = (0..1u64 << f.width.min(8)).filter_map(value_name).collect();
            format!(
                "`{text}` is not a value of {} ({name}: {})",
                f.name,
                names.join(", ")
            )
        }
        ValueKind::Bytes => format!("{} holds bytes; it cannot be set by value", f.name),
        _ => format!(
            "`{text}` is not a value of {} (a number, 0x… or 0b…)",
            f.name
        ),
    })?;
    if f.width < 64 && value >> f.width != 0 {
        return Err(format!(
            "{value:#x} does not fit {} ({} bits)",
            f.name, f.width
        ));
    }
    Ok(value)
}

/// Applies `name=value` assignments to `image`, laid out by `table`.
pub fn assign(
    table: &'static LayoutAccess,
    image: &mut [u8],
    pairs: &[String],
) -> Result<(), String> {
    for pair in pairs {
        let (name, text) = pair
            .split_once('=')
            .ok_or_else(|| format!("`{pair}` is not NAME=VALUE"))?;
        let (field, base) = find(table, name.trim())?;
        if field.count != 1 {
            return Err(format!(
                "{name} is an array; set it by element is not supported"
            ));
        }
        let value = parse_value(field, text.trim())?;
        let set = field
            .set
            .ok_or_else(|| format!("{name} cannot be written"))?;
        let part = image
            .get_mut(base..)
            .ok_or_else(|| format!("{name} lies past the image"))?;
        set(part, 0, value);
    }
    Ok(())
}

/// The value of a scalar field for display: the enum's name where it has one.
fn shown(f: &FieldAccess, raw: u64) -> Value {
    match f.kind {
        ValueKind::Flag => Value::Bool(raw != 0),
        ValueKind::Enum { value_name, .. } => match value_name(raw) {
            Some(n) => Value::String(n.to_string()),
            None => Value::from(raw),
        },
        _ => Value::from(raw),
    }
}

/// `image` as a JSON object: every named scalar field (arrays as lists), nested structures
/// as objects; reserved fields and opaque bytes are left out (the raw image is given apart).
pub fn to_json(table: &'static LayoutAccess, image: &[u8]) -> Value {
    let mut map = Map::new();
    for f in table.fields {
        if f.name.starts_with("reserved") || !f.readable {
            continue;
        }
        let Some(get) = f.get else { continue };
        if f.count == 1 {
            map.insert(f.name.into(), shown(f, get(image, 0)));
        } else if !f.trailing {
            let values: Vec<Value> = (0..f.count).map(|i| shown(f, get(image, i))).collect();
            map.insert(f.name.into(), Value::Array(values));
        }
    }
    for n in table.nested {
        if let Some((t, part)) = nested_view(table, n, image) {
            map.insert(n.name.into(), to_json(t, part));
        }
    }
    Value::Object(map)
}

/// `name: value` lines for the scalar fields of `image` (nested ones as `outer.inner`), the
/// zero ones only when `all`.
pub fn lines(
    table: &'static LayoutAccess,
    image: &[u8],
    all: bool,
    prefix: &str,
    out: &mut Vec<(String, String)>,
) {
    for f in table.fields {
        if f.name.starts_with("reserved") || !f.readable || f.count != 1 {
            continue;
        }
        let Some(get) = f.get else { continue };
        let raw = get(image, 0);
        if raw == 0 && !all {
            continue;
        }
        let text = match shown(f, raw) {
            Value::String(s) => format!("{s} ({raw:#x})"),
            Value::Bool(b) => b.to_string(),
            _ if raw > 9 => format!("{raw} ({raw:#x})"),
            _ => raw.to_string(),
        };
        out.push((format!("{prefix}{}", f.name), text));
    }
    for n in table.nested {
        if let Some((t, part)) = nested_view(table, n, image) {
            lines(t, part, all, &format!("{prefix}{}.", n.name), out);
        }
    }
}

/// The layout and bytes of a (non-array) nested field: a structure as it is, a union as the
/// member its selector picks when the selector lies in `parent` (PPCNT's `counter_set` by
/// `grp`). `None` for arrays, unions without such a selector, and bytes `image` lacks.
fn nested_view<'i>(
    parent: &LayoutAccess,
    n: &NestedAccess,
    image: &'i [u8],
) -> Option<(&'static LayoutAccess, &'i [u8])> {
    if n.count != 1 {
        return None;
    }
    let part = image.get(n.byte_offset..n.byte_offset.checked_add(n.size)?)?;
    match n.table {
        NestedTable::Struct(t) => Some((t, part)),
        NestedTable::Union(u) => {
            let sel = u.selector?;
            if sel.layout != parent.name {
                return None;
            }
            let member: &UnionMemberAccess = u.member_for(sel.read(image)?)?;
            Some((member.table, part))
        }
    }
}

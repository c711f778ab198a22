//! The decoding `Debug` of the generated views, driven by their reflection tables: each field
//! is read at the offset and width its [`FieldAccess`] gives and shown with its PRM position,
//! enum values by the spec's names, nested structures decoded in place, a union as the member
//! its selector picks, and reserved bits that are set listed. One walk over the tables serves
//! every layout, so there is no per-layout formatting code to drift from the tables that
//! tools and the oracle tests read.
//!
//! The walk reads storage through a trait object ([`Source`]): compiled once, not once per
//! view type, and without the unbounded monomorphization a generic recursion over nested
//! sub-storage types would need. Reads go a dword at a time where the dword lies inside the
//! storage (so a register block over MMIO sees only 32-bit accesses) and every read is
//! checked: bytes a buffer does not hold show as `?`, never as a panic.

use super::layout::Position;
use super::reflect::{
    FieldAccess, LayoutAccess, NestedAccess, NestedTable, UnionAccess, ValueKind,
};
use super::Bytes;
use core::fmt;

/// Storage as the walk reads it.
trait Source {
    fn size(&self) -> usize;
    fn be32(&self, at: usize) -> u32;
    fn u8(&self, at: usize) -> u8;
}

impl<B: Bytes> Source for B {
    fn size(&self) -> usize {
        Bytes::len(self)
    }
    fn be32(&self, at: usize) -> u32 {
        self.read_be32(at)
    }
    fn u8(&self, at: usize) -> u8 {
        self.read_u8(at)
    }
}

/// Bytes `start .. start + len` of a source: a layout's storage, or a nested layout's part
/// of its parent's.
#[derive(Clone, Copy)]
struct Window<'a> {
    src: &'a dyn Source,
    start: usize,
    len: usize,
}

impl<'a> Window<'a> {
    fn new(src: &'a dyn Source) -> Self {
        Window {
            src,
            start: 0,
            len: src.size(),
        }
    }

    /// Bytes `at .. at + len` of this window, when it holds them.
    fn sub(&self, at: usize, len: usize) -> Option<Window<'a>> {
        (at.checked_add(len)? <= self.len).then_some(Window {
            src: self.src,
            start: self.start + at,
            len,
        })
    }

    /// The byte at `at`, when the window holds it.
    fn byte(&self, at: usize) -> Option<u8> {
        (at < self.len).then(|| self.src.u8(self.start + at))
    }

    /// The big-endian dword at `at` (a multiple of 4); one that runs past the end is read
    /// byte by byte, the missing bytes as zero, and `None` when no byte of it is inside.
    fn dword(&self, at: usize) -> Option<u32> {
        if at.checked_add(4)? <= self.len {
            return Some(self.src.be32(self.start + at));
        }
        let first = self.byte(at)?;
        let rest = (1..4).map(|i| self.byte(at + i).unwrap_or(0));
        Some(rest.fold(u32::from(first), |a, b| a << 8 | u32::from(b)))
    }

    /// Bits `bit .. bit + width` (MSB-first, 1 ≤ width ≤ 64) as a number, or `None` when
    /// they are not all inside the window.
    fn bits(&self, bit: usize, width: u32) -> Option<u64> {
        if width == 0 || width > 64 {
            return None;
        }
        let end = bit.checked_add(width as usize)?;
        if end.div_ceil(8) > self.len {
            return None;
        }
        let (first, last) = (bit / 32, end.div_ceil(32));
        // At most three dwords: 64 bits that do not start on a dword.
        let mut acc = 0u128;
        for dw in first..last {
            acc = acc << 32 | u128::from(self.dword(dw * 4)?);
        }
        let v = (acc >> (last * 32 - end)) as u64;
        Some(if width == 64 {
            v
        } else {
            v & ((1 << width) - 1)
        })
    }
}

/// Bits `bit .. bit + width` of `bytes` (see [`Window::bits`]): what
/// [`read_bits`](super::reflect::read_bits) reads.
pub(crate) fn bits_of(bytes: &[u8], bit: usize, width: u32) -> Option<u64> {
    Window::new(&bytes).bits(bit, width)
}

/// A layout being shown, with the ones around it: where a union's selector is looked for.
struct Scope<'a> {
    name: &'static str,
    window: Window<'a>,
    parent: Option<&'a Scope<'a>>,
}

/// The decoded form of some bytes as a layout, for `{:?}` / `{:#?}`: what the generated
/// views' `Debug` prints with feature `debug`.
///
/// ```text
/// Cqc { status: 0x00[31:28] = 0x0, cqe_sz: 0x00[23:21] = bytes_128, ..., dbr_addr: 0x38[63:0] = 0x1000 }
/// ```
pub struct Decoded<'a> {
    table: &'static LayoutAccess,
    window: Window<'a>,
    parent: Option<&'a Scope<'a>>,
}

impl<'a> Decoded<'a> {
    /// `buf` decoded as the layout `table` describes.
    pub fn new<B: Bytes>(table: &'static LayoutAccess, buf: &'a B) -> Self {
        Decoded {
            table,
            window: Window::new(buf),
            parent: None,
        }
    }
}

/// The `Debug` of a union view on its own: with no layout around it to read the selector
/// from, it shows the union's size and first bytes (and names the selector field).
pub fn debug_union<B: Bytes>(
    f: &mut fmt::Formatter<'_>,
    table: &'static UnionAccess,
    buf: &B,
) -> fmt::Result {
    show_union(f, table, Window::new(buf), None)
}

impl fmt::Debug for Decoded<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scope = Scope {
            name: self.table.name,
            window: self.window,
            parent: self.parent,
        };
        let t = self.table;
        let mut d = f.debug_struct(t.type_name);
        // Scalars and nested layouts in offset order (each list is in spec order).
        let (mut fi, mut ni) = (0, 0);
        loop {
            let field = t.fields.get(fi);
            let nested = t.nested.get(ni);
            match (field, nested) {
                (Some(fa), Some(na)) if fa.bit_offset <= na.byte_offset * 8 => {
                    show_field(&mut d, fa, self.window);
                    fi += 1;
                }
                (Some(fa), None) => {
                    show_field(&mut d, fa, self.window);
                    fi += 1;
                }
                (_, Some(na)) => {
                    show_nested(&mut d, na, &scope);
                    ni += 1;
                }
                (None, None) => break,
            }
        }
        if t.reserved
            .iter()
            .any(|&(at, m)| reserved(self.window, at, m) != 0)
        {
            d.field(
                "reserved_bits_set",
                &Reserved {
                    window: self.window,
                    masks: t.reserved,
                },
            );
        }
        d.finish()
    }
}

/// The set reserved bits of the dword at `at` (0 when it is not in the window).
fn reserved(w: Window<'_>, at: u32, mask: u32) -> u32 {
    w.dword(at as usize).unwrap_or(0) & mask
}

/// Reserved bits that are set, per dword.
struct Reserved<'a> {
    window: Window<'a>,
    masks: &'static [(u32, u32)],
}

impl fmt::Debug for Reserved<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut l = f.debug_list();
        for &(at, m) in self.masks {
            let v = reserved(self.window, at, m);
            if v != 0 {
                l.entry(&format_args!("0x{at:02x}: 0x{v:08x}"));
            }
        }
        l.finish()
    }
}

/// `POSITION = VALUE`.
struct At<P, V>(P, V);

impl<P: fmt::Display, V: fmt::Debug> fmt::Debug for At<P, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} = ", self.0)?;
        fmt::Debug::fmt(&self.1, f)
    }
}

/// Where an array lies: its whole span, or its start for a trailing one.
enum ArrayAt {
    Span(Position),
    From(usize),
}

impl fmt::Display for ArrayAt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArrayAt::Span(p) => fmt::Display::fmt(p, f),
            ArrayAt::From(byte) => write!(f, "0x{byte:02x}.."),
        }
    }
}

/// One element of a scalar field.
struct Value<'a> {
    field: &'static FieldAccess,
    window: Window<'a>,
    bit: usize,
}

impl fmt::Debug for Value<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (w, field) = (self.window, self.field);
        if let ValueKind::Bytes = field.kind {
            let n = field.width as usize / 8;
            let at = self.bit / 8;
            if w.sub(at, n).is_none() {
                return f.write_str("?");
            }
            for i in 0..n {
                if i > 0 && i % 4 == 0 {
                    f.write_str(" ")?;
                }
                write!(f, "{:02x}", w.byte(at + i).unwrap_or(0))?;
            }
            return Ok(());
        }
        let Some(v) = w.bits(self.bit, field.width) else {
            return f.write_str("?");
        };
        match field.kind {
            ValueKind::Flag => fmt::Debug::fmt(&(v != 0), f),
            ValueKind::Enum { value_name, .. } => match value_name(v) {
                Some(name) => f.write_str(name),
                None => write!(f, "unknown(0x{v:x})"),
            },
            _ => write!(f, "0x{v:x}"),
        }
    }
}

/// Elements of an array of scalars.
struct Elements<'a> {
    field: &'static FieldAccess,
    window: Window<'a>,
    count: usize,
}

impl fmt::Debug for Elements<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let w = self.field.width as usize;
        let items = (0..self.count).map(|i| Value {
            field: self.field,
            window: self.window,
            bit: self.field.bit_offset + i * w,
        });
        super::fmt::list(f, self.count, items)
    }
}

fn show_field(d: &mut fmt::DebugStruct<'_, '_>, fa: &'static FieldAccess, w: Window<'_>) {
    if !fa.readable {
        return;
    }
    let width = fa.width as usize;
    if fa.count == 1 && !fa.trailing {
        let value = Value {
            field: fa,
            window: w,
            bit: fa.bit_offset,
        };
        d.field(fa.name, &At(Position(fa.bit_offset, fa.width), value));
        return;
    }
    let (at, count) = if fa.trailing {
        let room = (w.len * 8).saturating_sub(fa.bit_offset);
        (ArrayAt::From(fa.bit_offset / 8), room / width.max(1))
    } else {
        let span = Position(fa.bit_offset, (width * fa.count) as u32);
        (ArrayAt::Span(span), fa.count)
    };
    let elements = Elements {
        field: fa,
        window: w,
        count,
    };
    d.field(fa.name, &At(at, elements));
}

/// One element of a nested field: a structure, or a union shown through its selector.
struct Element<'a> {
    table: NestedTable,
    window: Window<'a>,
    scope: &'a Scope<'a>,
}

impl fmt::Debug for Element<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.table {
            NestedTable::Struct(t) => {
                let inner = Decoded {
                    table: t,
                    window: self.window,
                    parent: Some(self.scope),
                };
                fmt::Debug::fmt(&inner, f)
            }
            NestedTable::Union(u) => show_union(f, u, self.window, Some(self.scope)),
        }
    }
}

/// A union: the member its selector picks, read where the selector lives (this layout or
/// one around it), or the union's size and first bytes when nothing picks one.
fn show_union(
    f: &mut fmt::Formatter<'_>,
    u: &'static UnionAccess,
    window: Window<'_>,
    scope: Option<&Scope<'_>>,
) -> fmt::Result {
    if let Some(sel) = u.selector {
        let mut s = scope;
        while let Some(sc) = s {
            if sc.name == sel.layout {
                let member = sc
                    .window
                    .bits(sel.bit_offset, sel.width)
                    .and_then(|raw| u.member_for(raw));
                if let Some(m) = member {
                    let member = Decoded {
                        table: m.table,
                        window,
                        parent: scope,
                    };
                    return fmt::Debug::fmt(&member, f);
                }
                break;
            }
            s = sc.parent;
        }
    }
    let mut head = [0u8; 16];
    let n = head.len().min(window.len);
    for (i, b) in head[..n].iter_mut().enumerate() {
        *b = window.byte(i).unwrap_or(0);
    }
    let mut d = f.debug_struct(u.type_name);
    d.field("bytes", &window.len);
    d.field("head", &super::fmt::HexBytes(&head[..n]));
    if let Some(sel) = u.selector {
        d.field("selector", &format_args!("{}.{}", sel.layout, sel.field));
    }
    d.finish()
}

/// Elements of an array of nested layouts.
struct NestedElements<'a> {
    na: &'static NestedAccess,
    scope: &'a Scope<'a>,
    count: usize,
}

impl fmt::Debug for NestedElements<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let na = self.na;
        let items = (0..self.count).map(|i| Maybe(element(na, self.scope, i)));
        super::fmt::list(f, self.count, items)
    }
}

/// An element, or `?` where the buffer does not hold it.
struct Maybe<T>(Option<T>);

impl<T: fmt::Debug> fmt::Debug for Maybe<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Some(v) => fmt::Debug::fmt(v, f),
            None => f.write_str("?"),
        }
    }
}

/// Element `i` of a nested field, over its part of the parent's storage.
fn element<'a>(na: &'static NestedAccess, scope: &'a Scope<'a>, i: usize) -> Option<Element<'a>> {
    let at = i.checked_mul(na.stride)?.checked_add(na.byte_offset)?;
    let len = if na.runs_on {
        scope.window.len.checked_sub(at)?
    } else {
        na.size
    };
    Some(Element {
        table: na.table,
        window: scope.window.sub(at, len)?,
        scope,
    })
}

fn show_nested(d: &mut fmt::DebugStruct<'_, '_>, na: &'static NestedAccess, scope: &Scope<'_>) {
    if na.count == 1 && !na.trailing {
        let span = Position(na.byte_offset * 8, (na.size * 8) as u32);
        d.field(na.name, &At(span, Maybe(element(na, scope, 0))));
        return;
    }
    let (at, count) = if na.trailing {
        let room = scope.window.len.saturating_sub(na.byte_offset);
        (ArrayAt::From(na.byte_offset), room / na.stride.max(1))
    } else {
        let span = Position(na.byte_offset * 8, (na.size * na.count * 8) as u32);
        (ArrayAt::Span(span), na.count)
    };
    let elements = NestedElements { na, scope, count };
    d.field(na.name, &At(at, elements));
}

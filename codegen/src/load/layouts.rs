//! Reading the layout entries of a spec file: constants, enums, structures and their fields
//! (with each field's position string parsed into a `Position`).

use super::Reader;
use crate::diag::Diagnostic;
use crate::position::Position;
use crate::source::Span;
use crate::syntax::*;
use marked_yaml::types::MarkedScalarNode;
use marked_yaml::Node;

const STRUCT_KEYS: &[&str] = &["size", "doc", "fields", "words"];
const FIELD_KEYS: &[&str] = &["at", "type", "count", "doc", "access"];
const ENUM_KEYS: &[&str] = &["doc", "width", "values"];
const VALUE_KEYS: &[&str] = &["value", "doc"];

impl Reader<'_> {
    pub(super) fn constant(
        &mut self,
        name: Spanned<String>,
        node: &Node,
        path: String,
    ) -> Option<ConstDecl> {
        let (value, doc) = self.value_and_doc(node, name.span, "constant", &path)?;
        Some(ConstDecl { name, value, doc })
    }

    /// `name: 3` or `name: { value: 3, doc: ... }`.
    pub(super) fn value_and_doc(
        &mut self,
        node: &Node,
        owner: Span,
        what: &str,
        path: &str,
    ) -> Option<(Spanned<u64>, Option<String>)> {
        if let Node::Mapping(m) = node {
            self.check_keys(m, VALUE_KEYS, what, path);
            let doc = self.doc(m.get_node("doc"), path);
            let v = self.required(m, "value", owner, &format!("`{}`", path), path)?;
            let value = self.uint(v, &format!("{what} value"), &format!("{path}.value"))?;
            Some((value, doc))
        } else {
            Some((self.uint(node, &format!("{what} value"), path)?, None))
        }
    }

    pub(super) fn enumeration(
        &mut self,
        name: Spanned<String>,
        node: &Node,
        path: String,
    ) -> Option<EnumDecl> {
        let map = self.mapping(node, &format!("enum `{}`", name.value), &path)?;
        self.check_keys(map, ENUM_KEYS, "an enum", &path);
        let doc = self.doc(map.get_node("doc"), &path);
        let width = map
            .get_node("width")
            .and_then(|w| self.uint(w, "enum width", &format!("{path}.width")));
        let mut values = Vec::new();
        if let Some(vs) = self.required(
            map,
            "values",
            name.span,
            &format!("enum `{}`", name.value),
            &path,
        ) {
            if let Some(vm) = self.mapping(vs, "`values`", &format!("{path}.values")) {
                for (k, v) in vm.iter() {
                    let vname = self.name(k);
                    let vpath = format!("{path}.values.{}", vname.value);
                    if let Some((value, vdoc)) = self.value_and_doc(v, vname.span, "enum", &vpath) {
                        values.push(EnumValueDecl {
                            name: vname,
                            value,
                            doc: vdoc,
                        });
                    }
                }
            }
        }
        Some(EnumDecl {
            name,
            doc,
            width,
            values,
        })
    }

    pub(super) fn structure(
        &mut self,
        name: Spanned<String>,
        node: &Node,
        path: String,
        register_block: bool,
    ) -> Option<StructDecl> {
        let what = if register_block {
            "register block"
        } else {
            "struct"
        };
        let map = self.mapping(node, &format!("{what} `{}`", name.value), &path)?;
        self.check_keys(map, STRUCT_KEYS, &format!("a {what}"), &path);
        let doc = self.doc(map.get_node("doc"), &path);
        let size = self
            .required(
                map,
                "size",
                name.span,
                &format!("{what} `{}`", name.value),
                &path,
            )
            .and_then(|n| self.size(n, &format!("{path}.size")));
        let mut fields = Vec::new();
        let mut incomplete = false;
        if let Some(fnode) = map.get_node("fields") {
            match self.mapping(fnode, "`fields`", &format!("{path}.fields")) {
                Some(fmap) => {
                    for (k, v) in fmap.iter() {
                        let fname = self.name(k);
                        let fpath = format!("{path}.fields.{}", fname.value);
                        match self.field(fname, v, &fpath, register_block) {
                            Some(f) => fields.push(f),
                            None => incomplete = true,
                        }
                    }
                }
                None => incomplete = !matches!(fnode, Node::Scalar(s) if s.as_str().is_empty()),
            }
        }
        let words = self.words(map, &path);
        Some(StructDecl {
            name,
            register_block,
            size,
            doc,
            fields,
            words,
            incomplete,
        })
    }

    pub(super) fn field(
        &mut self,
        name: Spanned<String>,
        node: &Node,
        path: &str,
        register_block: bool,
    ) -> Option<FieldDecl> {
        // Shorthand: `name: "0x3c[31:16]"`.
        if let Node::Scalar(s) = node {
            let at = self.position(s, &format!("{path}.at"))?;
            return Some(FieldDecl {
                name,
                at,
                ty: None,
                count: None,
                doc: None,
                access: None,
            });
        }
        let map = self.mapping(node, &format!("field `{}`", name.value), path)?;
        self.check_keys(map, FIELD_KEYS, "a field", path);
        let doc = self.doc(map.get_node("doc"), path);
        let ty = map
            .get_node("type")
            .and_then(|n| self.string(n, "`type`", &format!("{path}.type")));
        let count = map.get_node("count").and_then(|n| {
            let s = self.scalar(n, "`count`", &format!("{path}.count"))?;
            let span = self.span(s.span());
            if s.as_str() == "trailing" {
                return Some(Spanned {
                    value: Count::Trailing,
                    span,
                });
            }
            match crate::num::parse_uint(s.as_str()) {
                Ok(v) => Some(Spanned {
                    value: Count::Fixed(v),
                    span,
                }),
                Err(m) => {
                    self.diags.push(
                        Diagnostic::error("number", span, format!("`count`: {m}"))
                            .with_path(format!("{path}.count"))
                            .with_hint("write a number of elements, or `trailing` for an array that fills the rest of the buffer"),
                    );
                    None
                }
            }
        });
        let access = map.get_node("access").and_then(|n| {
            let s = self.string(n, "`access`", &format!("{path}.access"))?;
            let value = match s.value.as_str() {
                "ro" => Access::Ro,
                "rw" => Access::Rw,
                "wo" => Access::Wo,
                other => {
                    self.diags.push(
                        Diagnostic::error("access", s.span, format!("unknown access `{other}`"))
                            .with_path(format!("{path}.access"))
                            .with_hint("use `ro`, `rw` or `wo`"),
                    );
                    return None;
                }
            };
            if !register_block {
                self.diags.push(
                    Diagnostic::error(
                        "access",
                        s.span,
                        "`access` applies only to fields of register blocks",
                    )
                    .with_path(format!("{path}.access"))
                    .with_hint("move the struct under `registers:` or drop `access`"),
                );
            }
            Some(Spanned {
                value,
                span: s.span,
            })
        });
        let at_node = self.required(
            map,
            "at",
            name.span,
            &format!("field `{}`", name.value),
            path,
        )?;
        let at_scalar = self.scalar(at_node, "`at`", &format!("{path}.at"))?;
        let at = self.position(at_scalar, &format!("{path}.at"))?;
        Some(FieldDecl {
            name,
            at,
            ty,
            count,
            doc,
            access,
        })
    }

    /// Parses a position, mapping grammar errors to the exact column in the file.
    pub(super) fn position(
        &mut self,
        s: &MarkedScalarNode,
        path: &str,
    ) -> Option<Spanned<Position>> {
        let span = self.span(s.span());
        let text = s.as_str();
        match Position::parse(text) {
            Ok(p) => Some(Spanned { value: p, span }),
            Err(e) => {
                // The marker points at the opening quote of a quoted scalar.
                let quoted = self
                    .sources
                    .files
                    .get(self.file)
                    .and_then(|f| f.line(span.line))
                    .and_then(|l| l.chars().nth(span.col as usize - 1))
                    .is_some_and(|c| c == '"' || c == '\'');
                let leading = if quoted { 1 } else { 0 };
                let at = span.shifted(leading + e.offset as u32, e.len.max(1) as u32);
                let mut d = Diagnostic::error("position", at, e.message).with_path(path);
                if let Some(h) = e.hint {
                    d = d.with_hint(h);
                }
                self.diags.push(d);
                None
            }
        }
    }
}

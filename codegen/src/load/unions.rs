//! Reading a spec file's unions: the size, the selector field and each member's `when` value.

use super::Reader;
use crate::syntax::*;
use marked_yaml::Node;

const UNION_KEYS: &[&str] = &["size", "doc", "selector", "members"];
const SELECTOR_KEYS: &[&str] = &["field", "shift"];
const MEMBER_KEYS: &[&str] = &["type", "when", "doc"];

impl Reader<'_> {
    pub(super) fn union(
        &mut self,
        name: Spanned<String>,
        node: &Node,
        path: String,
    ) -> Option<UnionDecl> {
        let map = self.mapping(node, &format!("union `{}`", name.value), &path)?;
        self.check_keys(map, UNION_KEYS, "a union", &path);
        let doc = self.doc(map.get_node("doc"), &path);
        let size = self
            .required(
                map,
                "size",
                name.span,
                &format!("union `{}`", name.value),
                &path,
            )
            .and_then(|n| self.size(n, &format!("{path}.size")));
        let selector = map.get_node("selector").and_then(|n| {
            let spath = format!("{path}.selector");
            let sm = self.mapping(n, "`selector`", &spath)?;
            self.check_keys(sm, SELECTOR_KEYS, "a selector", &spath);
            let span = self.node_span(n);
            let field = self.required(sm, "field", span, "`selector`", &spath)?;
            let field = self.string(field, "`field`", &format!("{spath}.field"))?;
            let shift = sm
                .get_node("shift")
                .and_then(|s| self.uint(s, "`shift`", &format!("{spath}.shift")));
            Some(SelectorDecl { field, shift, span })
        });
        let mut members = Vec::new();
        if let Some(mnode) = self.required(
            map,
            "members",
            name.span,
            &format!("union `{}`", name.value),
            &path,
        ) {
            if let Some(mmap) = self.mapping(mnode, "`members`", &format!("{path}.members")) {
                for (k, v) in mmap.iter() {
                    let mname = self.name(k);
                    let mpath = format!("{path}.members.{}", mname.value);
                    if let Some(m) = self.member(mname, v, &mpath) {
                        members.push(m);
                    }
                }
            }
        }
        Some(UnionDecl {
            name,
            size,
            doc,
            selector,
            members,
        })
    }

    pub(super) fn member(
        &mut self,
        name: Spanned<String>,
        node: &Node,
        path: &str,
    ) -> Option<MemberDecl> {
        if let Node::Scalar(_) = node {
            let ty = self.string(node, "member type", path)?;
            return Some(MemberDecl {
                name,
                ty,
                when: None,
                doc: None,
            });
        }
        let map = self.mapping(node, &format!("member `{}`", name.value), path)?;
        self.check_keys(map, MEMBER_KEYS, "a union member", path);
        let doc = self.doc(map.get_node("doc"), path);
        let when = map
            .get_node("when")
            .and_then(|n| self.string(n, "`when`", &format!("{path}.when")));
        let ty = self.required(
            map,
            "type",
            name.span,
            &format!("member `{}`", name.value),
            path,
        )?;
        let ty = self.string(ty, "`type`", &format!("{path}.type"))?;
        Some(MemberDecl {
            name,
            ty,
            when,
            doc,
        })
    }
}

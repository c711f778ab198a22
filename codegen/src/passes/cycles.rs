//! No structure contains itself, directly or through other structures and unions: such a
//! layout would have no finite size.

use crate::diag::{Diagnostic, Diagnostics};
use crate::ir::{FieldType, Ir};
use crate::source::Span;
use std::collections::HashMap;

/// An edge: the containing type's field or member that names another type.
struct Edge<'a> {
    to: &'a str,
    via: &'a str,
    span: Span,
    path: String,
}

/// Runs the check.
pub fn run(ir: &Ir, diags: &mut Diagnostics) {
    let mut graph: HashMap<&str, Vec<Edge>> = HashMap::new();
    for s in &ir.structs {
        let edges = graph.entry(&s.name).or_default();
        for f in &s.fields {
            if let FieldType::Struct(t) | FieldType::Union(t) = &f.ty {
                edges.push(Edge {
                    to: t,
                    via: &f.name,
                    span: f.spans.ty.unwrap_or(f.spans.at),
                    path: format!("{}.fields.{}.type", super::struct_path(s), f.name),
                });
            }
        }
    }
    for u in &ir.unions {
        let edges = graph.entry(&u.name).or_default();
        for m in &u.members {
            edges.push(Edge {
                to: &m.ty,
                via: &m.name,
                span: m.ty_span,
                path: format!("unions.{}.members.{}.type", u.name, m.name),
            });
        }
    }
    let mut names: Vec<&str> = graph.keys().copied().collect();
    names.sort_unstable();
    // 0 = unvisited, 1 = on the current path, 2 = done.
    let mut state: HashMap<&str, u8> = HashMap::new();
    for root in names {
        if state.get(root).copied().unwrap_or(0) != 0 {
            continue;
        }
        // Iterative DFS: (node, next edge index); `path` mirrors the stack.
        let mut stack: Vec<(&str, usize)> = vec![(root, 0)];
        state.insert(root, 1);
        while let Some(&mut (node, ref mut next)) = stack.last_mut() {
            let edges = graph.get(node).map(Vec::as_slice).unwrap_or(&[]);
            if *next >= edges.len() {
                state.insert(node, 2);
                stack.pop();
                continue;
            }
            let edge = &edges[*next];
            *next += 1;
            match state.get(edge.to).copied().unwrap_or(0) {
                0 if graph.contains_key(edge.to) => {
                    state.insert(edge.to, 1);
                    stack.push((edge.to, 0));
                }
                1 => {
                    let start = stack.iter().position(|(n, _)| *n == edge.to).unwrap_or(0);
                    let mut cycle: Vec<&str> = stack[start..].iter().map(|(n, _)| *n).collect();
                    cycle.push(edge.to);
                    diags.push(
                        Diagnostic::error(
                            "cycle",
                            edge.span,
                            format!(
                                "`{node}.{}` makes `{}` contain itself: {}",
                                edge.via,
                                edge.to,
                                cycle.join(" → ")
                            ),
                        )
                        .with_path(edge.path.clone())
                        .with_hint("a structure cannot nest itself; refer to it by address or handle instead"),
                    );
                }
                _ => {}
            }
        }
    }
}

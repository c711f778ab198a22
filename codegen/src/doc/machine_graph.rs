//! A state machine drawn as a graph: an inline SVG with the states in a row (in the order of
//! their enum), each transition an arrow labelled with its name and command.
//!
//! The layout is fixed rather than computed by a graph-drawing engine (no Graphviz at doc
//! time, nothing to install): forward transitions arc above the row, backward ones below, a
//! transition to the same state loops over it, and one allowed from any state comes up from a
//! dashed stub under its target. Arcs that span more states rise higher, so their labels sit
//! at different heights; labels are monospace, so their widths are known without a renderer.

use super::{esc, field_anchor, slug, Site};
use crate::ir::StateMachine;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Width of one monospace character at the label size (12 px), a little generous.
const CHAR_W: f64 = 7.4;
/// Height of a state's box.
const NODE_H: f64 = 34.0;
/// Gap between two states' boxes.
const GAP: f64 = 70.0;
/// How far an arc rises per state it spans, and the height of a self loop.
const STEP: f64 = 38.0;
const LOOP: f64 = 30.0;

/// One arrow: its endpoints (state indices; `None` = any state) and the transitions it carries.
struct Edge<'a> {
    from: Option<usize>,
    to: usize,
    names: Vec<(&'a str, &'a str)>,
}

/// The edges, one per (from, to) pair, in the order the spec first mentions each pair.
fn edges<'a>(m: &'a StateMachine, states: &[String]) -> Vec<Edge<'a>> {
    let index = |s: &str| states.iter().position(|x| x == s);
    let mut out: Vec<Edge<'a>> = Vec::new();
    let mut at: BTreeMap<(Option<usize>, usize), usize> = BTreeMap::new();
    for t in &m.transitions {
        let Some(to) = index(&t.to) else { continue };
        let froms: Vec<Option<usize>> = if t.from.is_empty() {
            vec![None]
        } else {
            t.from.iter().filter_map(|f| index(f).map(Some)).collect()
        };
        for from in froms {
            let i = *at.entry((from, to)).or_insert_with(|| {
                out.push(Edge {
                    from,
                    to,
                    names: Vec::new(),
                });
                out.len() - 1
            });
            if let Some(e) = out.get_mut(i) {
                e.names.push((&t.name, &t.command));
            }
        }
    }
    out
}

fn text_w(s: &str) -> f64 {
    s.chars().count() as f64 * CHAR_W
}

/// The SVG of a state machine whose states are `states` (enum value names, in order).
pub fn render(site: &Site, m: &StateMachine, states: &[String]) -> String {
    if states.is_empty() {
        return String::new();
    }
    let edges = edges(m, states);
    let label_w = edges
        .iter()
        .flat_map(|e| e.names.iter())
        .map(|(n, c)| text_w(n).max(text_w(c)))
        .fold(0.0, f64::max);
    let node_w = states.iter().map(|s| text_w(s) + 24.0).fold(70.0, f64::max);
    // Wide enough that a label between two states does not reach past either centre.
    let gap = GAP.max(label_w - node_w + 16.0);
    let pitch = node_w + gap;
    let span = |e: &Edge| e.from.map_or(0, |f| f.abs_diff(e.to)) as f64;
    let lines = |e: &Edge| e.names.len() as f64 * 2.0 * 13.0;
    // Room above: the highest forward arc and its labels; below: backward arcs, then stubs.
    let up = edges
        .iter()
        .filter(|e| e.from.is_some_and(|f| f <= e.to))
        .map(|e| if e.from == Some(e.to) { LOOP } else { STEP * span(e) } + lines(e))
        .fold(0.0, f64::max);
    let down = edges
        .iter()
        .filter(|e| e.from.is_some_and(|f| f > e.to))
        .map(|e| STEP * span(e) + lines(e))
        .fold(0.0, f64::max);
    let any_lines = edges
        .iter()
        .filter(|e| e.from.is_none())
        .map(lines)
        .fold(0.0, f64::max);
    let top = up + 16.0;
    let bottom = top + NODE_H;
    let stub_end = bottom + down + 28.0;
    let height = stub_end
        + if any_lines > 0.0 {
            any_lines + 24.0
        } else {
            8.0
        };
    let width = 16.0 + states.len() as f64 * pitch - gap + 16.0;
    let cx = |i: usize| 16.0 + i as f64 * pitch + node_w / 2.0;

    let mut svg = format!(
        r#"<div class="diagram-wrap"><svg class="machine" xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" role="img" aria-label="{} state machine"><defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z"/></marker></defs>"#,
        esc(&m.name)
    );
    for (i, s) in states.iter().enumerate() {
        let used = edges.iter().any(|e| e.to == i || e.from == Some(i));
        let class = if used { "state" } else { "state idle" };
        let _ = write!(
            svg,
            r#"<g class="{class}" data-state="{}"><rect x="{:.1}" y="{top:.1}" width="{node_w:.1}" height="{NODE_H}" rx="6"/><text x="{:.1}" y="{:.1}">{}</text></g>"#,
            esc(s),
            cx(i) - node_w / 2.0,
            cx(i),
            top + NODE_H / 2.0 + 4.5,
            esc(s)
        );
    }
    for e in &edges {
        let to_x = cx(e.to);
        // The path, and where the first label line goes (growing up or down from there).
        let (path, lx, ly, grow) = match e.from {
            Some(f) if f == e.to => {
                let x = to_x;
                (
                    format!(
                        "M{:.1},{top:.1} C{:.1},{:.1} {:.1},{:.1} {:.1},{top:.1}",
                        x - 14.0,
                        x - 34.0,
                        top - LOOP * 1.33,
                        x + 34.0,
                        top - LOOP * 1.33,
                        x + 14.0
                    ),
                    x,
                    top - LOOP - 5.0,
                    -1.0,
                )
            }
            Some(f) if f < e.to => {
                let (a, b) = (cx(f) + node_w / 4.0, to_x - node_w / 4.0);
                let h = STEP * span(e);
                (
                    format!(
                        "M{a:.1},{top:.1} C{a:.1},{:.1} {b:.1},{:.1} {b:.1},{top:.1}",
                        top - h * 1.33,
                        top - h * 1.33
                    ),
                    (a + b) / 2.0,
                    top - h - 5.0,
                    -1.0,
                )
            }
            Some(f) => {
                let (a, b) = (cx(f) - node_w / 4.0, to_x + node_w / 4.0);
                let h = STEP * span(e);
                (
                    format!(
                        "M{a:.1},{bottom:.1} C{a:.1},{:.1} {b:.1},{:.1} {b:.1},{bottom:.1}",
                        bottom + h * 1.33,
                        bottom + h * 1.33
                    ),
                    (a + b) / 2.0,
                    bottom + h + 14.0,
                    1.0,
                )
            }
            None => (
                format!("M{to_x:.1},{stub_end:.1} L{to_x:.1},{bottom:.1}"),
                to_x,
                stub_end + 16.0,
                1.0,
            ),
        };
        let from_attr = e.from.and_then(|f| states.get(f)).map_or("*", |s| s);
        let class = if e.from.is_none() { "edge any" } else { "edge" };
        let _ = write!(
            svg,
            r#"<g class="{class}" data-from="{}" data-to="{}"><path d="{path}" marker-end="url(#arrow)"/>"#,
            esc(from_attr),
            esc(states.get(e.to).map_or("", |s| s))
        );
        // Two lines per transition, read top to bottom: its name (linked to its section
        // below) and its command (linked to the command's page).
        let prefix = if e.from.is_none() { "any → " } else { "" };
        let mut lines: Vec<(Option<String>, &str, String)> = Vec::new();
        for (name, command) in &e.names {
            let anchor = format!("#{}", field_anchor(name));
            lines.push((Some(anchor), "t", format!("{prefix}{}", esc(name))));
            let href = site
                .ir
                .find_command(command)
                .map(|_| format!("../command/{}.html", slug(command)));
            lines.push((href, "c", esc(command)));
        }
        let n = lines.len() as f64;
        for (k, (href, class, text)) in lines.iter().enumerate() {
            // Growing up, the last line sits on the arc; growing down, the first one does.
            let y = if grow < 0.0 {
                ly - (n - 1.0 - k as f64) * 13.0
            } else {
                ly + k as f64 * 13.0
            };
            let t = format!(r#"<text class="{class}" x="{lx:.1}" y="{y:.1}">{text}</text>"#);
            match href {
                Some(h) => {
                    let _ = write!(svg, r#"<a href="{h}">{t}</a>"#);
                }
                None => svg.push_str(&t),
            }
        }
        svg.push_str("</g>");
    }
    svg.push_str("</svg></div>\n");
    svg
}

//! `prmc doc` in a real browser: headless Chromium loads the reference from `file://` and the
//! test reads what it rendered, not the HTML source: where each field's box landed under the
//! bit-number header (every field of `cqe64` and `create_cq_in` at its dword row and its
//! columns, rows stacked in dword order), the search box typed into and followed with Enter,
//! and the console of every kind of page (no error, warning, uncaught exception or file that
//! failed to load). Screenshots of `cqe64` and `create_cq_in` go to `target/prm-doc-shots/`.
//!
//! Needs Chromium, so it is `#[ignore]`d in a plain `cargo test`; `scripts/test` installs
//! Debian's `chromium` and runs it with `--ignored`. Without a browser it fails and says why.

mod browser;
mod doc_common;

use browser::Browser;
use doc_common::{doc, expected_pieces, ir_of, manifest, row_dwords};
use prm_codegen::ir::{FieldType, Struct};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Every column header's bit number and horizontal extent, then each row's offset label,
/// top edge and boxes (field name, extent, link), as laid out by the browser.
const READ_DIAGRAM: &str = r#"(() => {
  const t = document.querySelector('table.diagram');
  if (!t) { return null; }
  const box = (e) => { const r = e.getBoundingClientRect(); return [r.left, r.right, r.top, r.bottom]; };
  const cols = [...t.querySelectorAll('thead th')].filter((th) => !th.classList.contains('off'))
    .map((th) => [Number(th.textContent)].concat(box(th)));
  const rows = [...t.querySelectorAll('tbody tr')].filter((tr) => !tr.classList.contains('trail'))
    .map((tr) => ({
      label: tr.querySelector('th.off').textContent,
      rect: box(tr),
      cells: [...tr.querySelectorAll('td')].map((td) => {
        const a = td.querySelector('a');
        return { field: td.dataset.field || null, rect: box(td),
                 label: a ? a.textContent : null, href: a ? a.href : null,
                 visible: getComputedStyle(td).visibility === 'visible' };
      }),
    }));
  return { cols, rows };
})()"#;

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

/// The bit whose header column edge (`left` or right) is nearest `x`, if within 2 px.
fn column_at(cols: &[(u64, f64, f64)], x: f64, left: bool) -> Option<u64> {
    cols.iter()
        .map(|&(bit, l, r)| (bit, (if left { l } else { r } - x).abs()))
        .filter(|&(_, d)| d <= 2.0)
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(bit, _)| bit)
}

/// Reads the rendered diagram of `s` and checks it against the IR: every piece of every field
/// in the row of its dword and under the header columns of its bits, each row tiled from bit
/// 31 to bit 0 with no gap or overlap, rows top to bottom in dword order, nested layouts
/// linked to their pages. Returns how many field boxes were checked.
fn check_rendered_diagram(b: &mut Browser, s: &Struct) -> usize {
    let d = b.eval(READ_DIAGRAM).expect("reading the diagram");
    assert!(!d.is_null(), "{}: no diagram on the page", s.name);
    let cols: Vec<(u64, f64, f64)> = d["cols"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c[0].as_u64().unwrap(), f(&c[1]), f(&c[2])))
        .collect();
    assert_eq!(cols.len(), 32, "{}: header columns", s.name);
    // The header reads 31 on the left down to 0 on the right, each column to the right of
    // the one before.
    for w in cols.windows(2) {
        assert_eq!(w[0].0, w[1].0 + 1, "{}: header order", s.name);
        assert!(w[0].2 <= w[1].1 + 0.5, "{}: header columns overlap", s.name);
    }
    let mut drawn = BTreeSet::new();
    let mut boxes = 0;
    let mut last_top = f64::NEG_INFINITY;
    let mut last_dword = None;
    for row in d["rows"].as_array().unwrap() {
        let label = row["label"].as_str().unwrap();
        let (first, last) = row_dwords(label);
        let top = f(&row["rect"][2]);
        assert!(
            top > last_top && last_dword.is_none_or(|l| first > l),
            "{}: row {label} is not below the row before it",
            s.name
        );
        last_top = top;
        last_dword = Some(last);
        let mut next_hi = 31u64;
        for cell in row["cells"].as_array().unwrap() {
            let r = &cell["rect"];
            let hi = column_at(&cols, f(&r[0]), true);
            let lo = column_at(&cols, f(&r[1]), false);
            let (Some(hi), Some(lo)) = (hi, lo) else {
                panic!(
                    "{}: row {label}: a box at x {}..{} is not on column edges",
                    s.name, r[0], r[1]
                );
            };
            assert_eq!(
                hi, next_hi,
                "{}: row {label}: gap or overlap before bit {hi}",
                s.name
            );
            assert!(
                (f(&r[2]) - top).abs() <= 2.0,
                "{}: row {label}: a box is not in its row",
                s.name
            );
            next_hi = lo.wrapping_sub(1);
            let Some(name) = cell["field"].as_str() else {
                continue;
            };
            assert_eq!(cell["visible"], true, "{}.{name} is hidden", s.name);
            let field = s
                .fields
                .iter()
                .find(|x| x.name == name)
                .unwrap_or_else(|| panic!("{}: a box for an unknown field {name}", s.name));
            if let FieldType::Struct(t) | FieldType::Union(t) = &field.ty {
                let href = cell["href"].as_str().unwrap_or_default();
                assert!(
                    href.ends_with(&format!("/layout/{t}.html")),
                    "{}.{name}: links to {href}, not {t}'s page",
                    s.name
                );
            }
            for dw in first..=last {
                drawn.insert((name.to_string(), dw, hi, lo));
            }
            boxes += 1;
        }
        assert_eq!(
            next_hi,
            u64::MAX,
            "{}: row {label} stops before bit 0",
            s.name
        );
    }
    assert_eq!(
        drawn,
        expected_pieces(s),
        "{}: what the browser drew differs from the IR",
        s.name
    );
    boxes
}

/// A PNG of the box around the elements `selector` matches (the page's `main`, say), written
/// to `target/prm-doc-shots/NAME.png`.
fn screenshot(b: &mut Browser, name: &str, selector: &str) -> PathBuf {
    let js = format!(
        "(() => {{ const rs = [...document.querySelectorAll({selector:?})].slice(0, 2).map((e) => e.getBoundingClientRect());
           const l = Math.min(...rs.map((r) => r.left)), t = Math.min(...rs.map((r) => r.top));
           const r = Math.max(...rs.map((r) => r.right)), bt = Math.max(...rs.map((r) => r.bottom));
           return [l + scrollX - 8, t + scrollY - 8, r - l + 16, bt - t + 16]; }})()"
    );
    let r = b.eval(&js).expect("the elements' box");
    let png = b
        .screenshot((f(&r[0]), f(&r[1]), f(&r[2]), f(&r[3]).min(4000.0)))
        .expect("screenshot");
    assert!(
        png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 10_000,
        "{name}: not a picture of a page ({} bytes)",
        png.len()
    );
    let path = shots_dir().join(format!("{name}.png"));
    std::fs::write(&path, png).expect("writing the screenshot");
    path
}

/// Each edge's path ends (in SVG units), the boxes of the states, every label's box on screen.
const READ_GRAPH: &str = r##"(() => {
  const svg = document.querySelector('svg.machine');
  if (!svg) { return null; }
  const states = {};
  svg.querySelectorAll('g.state').forEach((g) => {
    const r = g.querySelector('rect');
    states[g.dataset.state] = ['x', 'y', 'width', 'height'].map((k) => r[k].baseVal.value);
  });
  const edges = [...svg.querySelectorAll('g.edge')].map((g) => {
    const p = g.querySelector('path');
    const n = p.getTotalLength();
    const a = p.getPointAtLength(0), b = p.getPointAtLength(n);
    const names = [...g.querySelectorAll('a[href^="#"] text')].map((t) => t.textContent);
    return { from: g.dataset.from, to: g.dataset.to, start: [a.x, a.y], end: [b.x, b.y], names };
  });
  const box = (e) => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom, e.textContent]; };
  const labels = [...svg.querySelectorAll('text')].map(box);
  return { states, edges, labels };
})()"##;

/// The QP state machine's graph as drawn: one arrow per transition of the IR, leaving its
/// source state's box and ending on its target's (a transition from any state starts on no
/// state), and no two labels (state names, transition names, commands) overlapping.
fn check_state_graph(b: &mut Browser, out: &Path, ir: &prm_codegen::ir::Ir) {
    let m = ir.state_machines.first().expect("a state machine");
    let page = format!("machine/{}.html", m.name);
    load_clean(b, out, &page);
    let g = b.eval(READ_GRAPH).expect("reading the graph");
    assert!(!g.is_null(), "{page}: no graph");
    let on = |p: &Value, r: &Value| {
        let (x, y) = (f(&p[0]), f(&p[1]));
        let (rx, ry, rw, rh) = (f(&r[0]), f(&r[1]), f(&r[2]), f(&r[3]));
        x >= rx - 1.0 && x <= rx + rw + 1.0 && y >= ry - 1.0 && y <= ry + rh + 1.0
    };
    let mut drawn = BTreeSet::new();
    for e in g["edges"].as_array().unwrap() {
        let (from, to) = (e["from"].as_str().unwrap(), e["to"].as_str().unwrap());
        let states = g["states"].as_object().unwrap();
        let to_box = states
            .get(to)
            .unwrap_or_else(|| panic!("{page}: no state {to}"));
        assert!(
            on(&e["end"], to_box),
            "{page}: {from}→{to} ends off {to}: {e}"
        );
        if from == "*" {
            assert!(
                !states.values().any(|r| on(&e["start"], r)),
                "{page}: a from-any arrow starts on a state: {e}"
            );
        } else {
            let from_box = states
                .get(from)
                .unwrap_or_else(|| panic!("no state {from}"));
            assert!(
                on(&e["start"], from_box),
                "{page}: {from}→{to} starts off {from}: {e}"
            );
        }
        for n in e["names"].as_array().unwrap() {
            let n = n.as_str().unwrap().trim_start_matches("any → ");
            drawn.insert((from.to_string(), to.to_string(), n.to_string()));
        }
    }
    let mut want = BTreeSet::new();
    for t in &m.transitions {
        if t.from.is_empty() {
            want.insert(("*".to_string(), t.to.clone(), t.name.clone()));
        }
        for from in &t.from {
            want.insert((from.clone(), t.to.clone(), t.name.clone()));
        }
    }
    assert_eq!(
        drawn, want,
        "{page}: the arrows differ from the IR's transitions"
    );
    let labels = g["labels"].as_array().unwrap();
    for (i, a) in labels.iter().enumerate() {
        for c in &labels[i + 1..] {
            let apart = f(&a[2]) <= f(&c[0])
                || f(&c[2]) <= f(&a[0])
                || f(&a[3]) <= f(&c[1])
                || f(&c[3]) <= f(&a[1]);
            assert!(apart, "{page}: labels {} and {} overlap", a[4], c[4]);
        }
    }
    let path = screenshot(b, &format!("machine-{}", m.name), "svg.machine");
    eprintln!(
        "{page}: {} arrows where the IR puts them; {}",
        want.len(),
        path.display()
    );
}

fn shots_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("target dir")
        .join("prm-doc-shots");
    std::fs::create_dir_all(&dir).expect("shots dir");
    dir
}

fn url(out: &Path, page: &str) -> String {
    format!("file://{}/{page}", out.display())
}

/// Loads a page and fails on anything its console or the browser's log reported.
fn load_clean(b: &mut Browser, out: &Path, page: &str) {
    b.navigate(&url(out, page)).expect(page);
    let errors = b.take_errors();
    assert!(errors.is_empty(), "{page}: {errors:#?}");
}

#[test]
#[ignore = "needs Chromium: scripts/test installs it and runs this with --ignored"]
fn the_reference_in_headless_chromium() {
    let exe = browser::find().unwrap_or_else(|e| panic!("{e}"));
    let spec = manifest("../spec");
    let ir = ir_of(&spec);
    let out = doc(&spec);
    let out = out.path();
    let mut b = Browser::launch(&exe, 1400, 900).unwrap_or_else(|e| panic!("{e}"));

    // The console check can fail: an error logged by a page is reported.
    load_clean(&mut b, out, "index.html");
    b.eval("console.error('probe from the test')").unwrap();
    let caught = b.take_errors();
    assert!(
        caught.iter().any(|e| e.contains("probe from the test")),
        "a console error went unseen: {caught:?}"
    );

    // Search by name: type into the box, the field is listed, Enter opens its row.
    b.eval("document.getElementById('search').focus()").unwrap();
    b.type_text("log_max_qp").unwrap();
    let hits = b
        .eval("[...document.querySelectorAll('#results li a')].map((a) => [a.textContent, a.getAttribute('href')])")
        .unwrap();
    let hits = hits.as_array().expect("results");
    let holders: Vec<&str> = ir
        .structs
        .iter()
        .filter(|s| s.fields.iter().any(|x| x.name == "log_max_qp"))
        .map(|s| s.name.as_str())
        .collect();
    assert!(!holders.is_empty());
    let first = hits
        .first()
        .unwrap_or_else(|| panic!("no results: {hits:?}"));
    let first_name = first[0].as_str().unwrap();
    assert!(
        holders
            .iter()
            .any(|h| first_name == format!("{h}.log_max_qp")),
        "first result {first_name}, want one of {holders:?}.log_max_qp"
    );
    assert_eq!(
        b.eval("document.getElementById('results').hidden").unwrap(),
        false,
        "the result list is not shown"
    );
    b.press("Enter", 13).unwrap();
    let want = first[1].as_str().unwrap();
    let (want_file, want_anchor) = want.split_once('#').expect("a field result has an anchor");
    let mut landed = Value::Null;
    for _ in 0..100 {
        landed = b
            .eval("[location.pathname, location.hash, document.readyState, !!document.getElementById(location.hash.slice(1))]")
            .unwrap_or(Value::Null);
        if landed[0].as_str().is_some_and(|p| p.ends_with(want_file)) && landed[2] == "complete" {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(
        landed[0].as_str().is_some_and(|p| p.ends_with(want_file)),
        "Enter did not open {want}: {landed}"
    );
    assert_eq!(landed[1], format!("#{want_anchor}"), "{landed}");
    assert_eq!(landed[3], true, "no element #{want_anchor}: {landed}");
    let errors = b.take_errors();
    assert!(errors.is_empty(), "{want}: {errors:#?}");

    // Search by number: CREATE_CQ's opcode finds the command.
    load_clean(&mut b, out, "index.html");
    b.eval("document.getElementById('search').focus()").unwrap();
    let opcode = ir
        .commands
        .iter()
        .find(|c| c.name == "create_cq")
        .expect("create_cq")
        .opcode;
    b.type_text(&format!("{opcode:#x}")).unwrap();
    let names = b
        .eval("[...document.querySelectorAll('#results li a')].map((a) => a.textContent)")
        .unwrap();
    assert!(
        names.as_array().unwrap().iter().any(|n| n == "create_cq"),
        "{opcode:#x}: {names}"
    );

    // The diagrams as drawn.
    for (name, min_boxes) in [("cqe64", 20), ("create_cq_in", 5)] {
        let s = ir.find_struct(name).expect(name);
        load_clean(&mut b, out, &format!("layout/{name}.html"));
        let boxes = check_rendered_diagram(&mut b, s);
        assert!(boxes >= min_boxes, "{name}: only {boxes} boxes");
        let shot = screenshot(&mut b, name, "main");
        screenshot(&mut b, &format!("{name}-diagram"), "h1, .diagram-wrap");
        eprintln!(
            "{name}: {boxes} field boxes where the IR puts them; {}",
            shot.display()
        );
    }

    // Every kind of page loads without a console error; the largest layout's diagram too.
    let biggest = ir.structs.iter().max_by_key(|s| s.fields.len()).unwrap();
    load_clean(&mut b, out, &format!("layout/{}.html", biggest.name));
    check_rendered_diagram(&mut b, biggest);
    // A union draws each member's diagram; the first is unfolded and laid out like any.
    let union = ir.unions.first().expect("a union");
    load_clean(&mut b, out, &format!("layout/{}.html", union.name));
    let member = union.members.first().expect("a member");
    check_rendered_diagram(&mut b, ir.find_struct(&member.ty).expect("member layout"));
    let en = &ir.enums.first().expect("an enum").name;
    for page in [
        format!("enum/{en}.html"),
        "command/create_cq.html".to_string(),
    ] {
        load_clean(&mut b, out, &page);
    }
    check_state_graph(&mut b, out, &ir);
    let source = std::fs::read_dir(out.join("src"))
        .expect("src pages")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| n.ends_with(".html"))
        .expect("a source page");
    load_clean(&mut b, out, &format!("src/{source}"));
}

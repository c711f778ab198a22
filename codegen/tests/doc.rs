//! `prmc doc`: the real binary on `spec/` and `tests/good/`, its pages read back with an HTML
//! parser. The diagram is checked against positions computed here from the IR (dword and PRM
//! bit numbers of every piece of every field), not against the diagram code; every local link
//! and anchor must exist; spec text must come out as text, never as markup.

mod doc_common;

use doc_common::{doc, expected_pieces, ir_of, manifest, row_dwords};
use prm_codegen::ir::Struct;
use scraper::{ElementRef, Html, Selector};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

fn sel(s: &str) -> Selector {
    Selector::parse(s).expect("selector")
}

/// What the page draws: for every field box, `(field, dword, hi, lo)` per dword of its row,
/// with the columns found by adding up the colspans from bit 31, as a browser lays them out.
/// Every row must fill exactly 32 columns; reserved boxes must cover bits no field has.
fn drawn_pieces(html: &Html, s: &Struct) -> BTreeSet<(String, u64, u64, u64)> {
    let mut out = BTreeSet::new();
    let covered = expected_pieces(s);
    let rows: Vec<ElementRef> = html.select(&sel("table.diagram tbody tr")).collect();
    assert!(!rows.is_empty() || s.size == 0, "{}: no diagram", s.name);
    for tr in rows {
        if tr.value().classes().any(|c| c == "trail") {
            continue;
        }
        let label: String = tr.select(&sel("th.off")).next().unwrap().text().collect();
        let (first, last) = row_dwords(&label);
        let mut col = 0u64;
        for td in tr.select(&sel("td")) {
            let span: u64 = td.value().attr("colspan").unwrap_or("1").parse().unwrap();
            let (hi, lo) = (31 - col, 32 - col - span);
            col += span;
            if td.value().classes().any(|c| c == "rsvd") {
                for dw in first..=last {
                    assert!(
                        !covered
                            .iter()
                            .any(|(_, d, h, l)| *d == dw && *l <= hi && lo <= *h),
                        "{}: reserved box over a field at dword {dw} bits {hi}:{lo}",
                        s.name
                    );
                }
                continue;
            }
            let text: String = td.text().collect();
            let name = text.split('[').next().unwrap().to_string();
            for dw in first..=last {
                out.insert((name.clone(), dw, hi, lo));
            }
        }
        assert_eq!(col, 32, "{}: row {label} is {col} columns wide", s.name);
    }
    out
}

fn check_diagram(out: &Path, s: &Struct) {
    let page = out.join(format!("layout/{}.html", s.name));
    let html = Html::parse_document(&std::fs::read_to_string(&page).unwrap());
    assert_eq!(
        drawn_pieces(&html, s),
        expected_pieces(s),
        "{}: the diagram differs from the IR",
        s.name
    );
}

#[test]
fn cqe64_every_field_in_its_row_and_columns() {
    let spec = manifest("../spec");
    let ir = ir_of(&spec);
    let out = doc(&spec);
    let cqe = ir.find_struct("cqe64").expect("cqe64");
    let want = expected_pieces(cqe);
    // Every field of cqe64 is in there (a spot check that the expectation is not empty).
    for f in &cqe.fields {
        assert!(want.iter().any(|p| p.0 == f.name), "{}", f.name);
    }
    // The owner bit, PRM 0x3c[0]: the last dword's rightmost column.
    assert!(want.contains(&("owner".to_string(), 15, 0, 0)), "{want:?}");
    check_diagram(out.path(), cqe);
}

#[test]
fn every_diagram_of_both_specs_matches_the_ir() {
    for dir in ["../spec", "tests/good"] {
        let spec = manifest(dir);
        let ir = ir_of(&spec);
        let out = doc(&spec);
        for s in &ir.structs {
            check_diagram(out.path(), s);
        }
    }
}

/// Every `href`/`src` of every page is local and lands on a file that exists, and on an
/// element with that id when it has a `#anchor`.
fn check_links(out: &Path) -> usize {
    let mut ids: BTreeMap<PathBuf, BTreeSet<String>> = BTreeMap::new();
    let mut pages = Vec::new();
    for e in walk(out) {
        if e.extension().is_some_and(|x| x == "html") {
            let html = Html::parse_document(&std::fs::read_to_string(&e).unwrap());
            let set = html
                .select(&sel("[id]"))
                .filter_map(|n| n.value().attr("id").map(str::to_string))
                .collect();
            ids.insert(e.canonicalize().unwrap(), set);
            pages.push((e, html));
        }
    }
    let mut checked = 0;
    for (page, html) in &pages {
        for n in html.select(&sel("[href], [src]")) {
            let link = n.value().attr("href").or(n.value().attr("src")).unwrap();
            assert!(
                !link.contains("://") && !link.starts_with("//"),
                "{}: not offline: {link}",
                page.display()
            );
            let (file, anchor) = link.split_once('#').unwrap_or((link, ""));
            let target = if file.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(file)
            };
            assert!(target.is_file(), "{}: broken link {link}", page.display());
            if !anchor.is_empty() {
                let set = ids.get(&target.canonicalize().unwrap());
                assert!(
                    set.is_some_and(|s| s.contains(anchor)),
                    "{}: no #{anchor} in {file}",
                    page.display()
                );
            }
            checked += 1;
        }
    }
    checked
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out.sort();
    out
}

#[test]
fn every_link_resolves() {
    for dir in ["../spec", "tests/good"] {
        let out = doc(&manifest(dir));
        let n = check_links(out.path());
        assert!(n > 100, "{dir}: only {n} links checked");
    }
}

/// The search index as rows `[name, kind, href, detail]`.
fn search_rows(out: &Path) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(out.join("search-index.js")).unwrap();
    let json = text
        .trim()
        .strip_prefix("window.PRM_INDEX = ")
        .and_then(|t| t.strip_suffix(';'))
        .expect("search-index.js shape");
    serde_json::from_str(json).expect("JSON")
}

#[test]
fn search_index_lists_log_max_qp_and_opcodes() {
    let out = doc(&manifest("../spec"));
    let rows = search_rows(out.path());
    let hit = rows
        .iter()
        .find(|r| r[0] == "cmd_hca_cap.log_max_qp" && r[1] == "field")
        .expect("cmd_hca_cap.log_max_qp in the search index");
    let (file, anchor) = hit[2].split_once('#').unwrap();
    let page = std::fs::read_to_string(out.path().join(file)).unwrap();
    assert!(page.contains(&format!("id=\"{anchor}\"")), "{anchor}");
    // Commands are found by their opcode, in hex and in decimal.
    let q = rows
        .iter()
        .find(|r| r[0] == "query_hca_cap")
        .expect("query_hca_cap");
    assert!(q[3].contains("0x100") && q[3].contains("256"), "{q:?}");
    let good = doc(&manifest("tests/good"));
    assert!(search_rows(good.path())
        .iter()
        .any(|r| r[0] == "toy_general_cap.log_max_qp"));
}

#[test]
fn access_registers_are_listed_found_and_named_on_their_image() {
    let out = doc(&manifest("../spec"));
    let rows = search_rows(out.path());
    let paos = rows
        .iter()
        .find(|r| r[0] == "paos" && r[1] == "register")
        .expect("paos in the search index");
    assert_eq!(paos[2], "layout/paos_reg.html");
    assert!(paos[3].contains("0x5006"), "{paos:?}");
    let index = std::fs::read_to_string(out.path().join("index.html")).unwrap();
    assert!(index.contains(r#"<li id="r-paos"><a href="layout/paos_reg.html">paos</a>"#));
    let image = std::fs::read_to_string(out.path().join("layout/paos_reg.html")).unwrap();
    assert!(image.contains("paos (access register 0x5006, read/write)"));
}

#[test]
fn same_spec_same_bytes() {
    let a = doc(&manifest("../spec"));
    let b = doc(&manifest("../spec"));
    let (fa, fb) = (walk(a.path()), walk(b.path()));
    assert_eq!(fa.len(), fb.len());
    for (x, y) in fa.iter().zip(&fb) {
        assert_eq!(x.strip_prefix(a.path()), y.strip_prefix(b.path()));
        assert!(
            std::fs::read(x).unwrap() == std::fs::read(y).unwrap(),
            "{}",
            x.display()
        );
    }
}

const HOSTILE: &str = r#"doc: "module <script>alert('m')</script>"
enums:
  e:
    doc: "enum </table><img src=x onerror=alert(1)>"
    width: 4
    values:
      v: { value: 1, doc: "value \"><script>alert('v')</script>" }
structs:
  s:
    size: 0xc
    doc: "struct <script>alert('s')</script> & `code<b>`"
    fields:
      opcode: "0x00[31:16]"
      f: { at: "0x00[3:0]", type: e, doc: "field ' onmouseover='alert(1)' <script>x</script>" }
      op_mod: "0x04[15:0]"
      g: { at: "0x08[31:0]", doc: "<a href=\"http://example.invalid/\">link</a>" }
  o:
    size: 0x8
    fields:
      status: "0x00[31:24]"
      syndrome: "0x04[31:0]"
commands:
  c: { opcode: 0x123, in: s, out: o, doc: "cmd <script>alert('c')</script>" }
"#;

#[test]
fn spec_text_is_escaped() {
    let spec = tempfile::tempdir().unwrap();
    std::fs::write(spec.path().join("evil.yaml"), HOSTILE).unwrap();
    // A file name is spec text too (it names a module and a source page).
    std::fs::write(
        spec.path().join("x <b>\"'.yaml"),
        "doc: other\nconstants:\n  k: { value: 1, doc: \"<script>k</script>\" }\n",
    )
    .unwrap();
    let out = doc(spec.path());
    check_links(out.path());
    let mut seen_text = 0;
    for p in walk(out.path()) {
        if p.extension().is_none_or(|x| x != "html") {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        let html = Html::parse_document(&text);
        // Only the two scripts of our own, on every page; no element of the spec's making.
        let scripts: Vec<_> = html
            .select(&sel("script"))
            .map(|s| s.value().attr("src").unwrap_or("inline").to_string())
            .collect();
        assert!(
            scripts
                .iter()
                .all(|s| s.ends_with("search-index.js") || s.ends_with("search.js")),
            "{}: {scripts:?}",
            p.display()
        );
        assert_eq!(scripts.len(), 2, "{}", p.display());
        assert_eq!(html.select(&sel("img, b")).count(), 0, "{}", p.display());
        for n in html.select(&sel("*")) {
            for (k, _) in n.value().attrs() {
                assert!(!k.starts_with("on"), "{}: attribute {k}", p.display());
            }
            if let Some(h) = n.value().attr("href") {
                assert!(!h.contains("example.invalid"), "{}: {h}", p.display());
            }
        }
        let all: String = html.root_element().text().collect();
        if all.contains("<script>alert('s')</script>") {
            seen_text += 1;
        }
    }
    // The doc is still there, as text, on the layout page and in the source listing.
    assert!(seen_text >= 2, "{seen_text}");
}

#[test]
fn a_huge_layout_draws_a_few_rows() {
    let spec = tempfile::tempdir().unwrap();
    std::fs::write(
        spec.path().join("big.yaml"),
        "structs:\n  big:\n    size: 0x10000\n    fields:\n      a: \"0x00[31:0]\"\n      b: { at: \"0x10\", type: u8, count: 0x1000 }\n      z: \"0xfffc[7:0]\"\n",
    )
    .unwrap();
    let out = doc(spec.path());
    let page = std::fs::read_to_string(out.path().join("layout/big.html")).unwrap();
    let html = Html::parse_document(&page);
    let rows = html.select(&sel("table.diagram tbody tr")).count();
    assert!(rows <= 8, "{rows} rows");
    assert!(page.len() < 40_000, "{} bytes", page.len());
    let ir = ir_of(spec.path());
    check_diagram(out.path(), ir.find_struct("big").unwrap());
}

#[test]
fn qp_state_machine_page_links_its_commands() {
    let out = doc(&manifest("../spec"));
    let page = std::fs::read_to_string(out.path().join("machine/qp.html")).unwrap();
    let html = Html::parse_document(&page);
    let links: BTreeSet<String> = html
        .select(&sel("table.states a"))
        .filter_map(|a| a.value().attr("href").map(str::to_string))
        .collect();
    for cmd in ["rst2init_qp", "init2rtr_qp", "rtr2rts_qp"] {
        assert!(
            links.contains(&format!("../command/{cmd}.html")),
            "{cmd}: {links:?}"
        );
    }
}

#[test]
fn a_spec_with_errors_exits_1_and_writes_nothing() {
    let spec = tempfile::tempdir().unwrap();
    std::fs::write(
        spec.path().join("x.yaml"),
        "structs:\n  a:\n    size: 4\n    fields:\n      f: \"0x00[31:16]\"\n      g: \"0x00[20:0]\"\n",
    )
    .unwrap();
    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("ref");
    let run = Command::new(env!("CARGO_BIN_EXE_prmc"))
        .args(["doc", "--spec"])
        .arg(spec.path())
        .arg("--out")
        .arg(&target)
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&run.stderr).contains("x.yaml:6"));
    assert!(!target.exists());
    let missing = Command::new(env!("CARGO_BIN_EXE_prmc"))
        .args(["doc", "--spec", "/nonexistent/spec", "--out"])
        .arg(&target)
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
}

#[test]
fn qp_state_machine_graph_draws_every_transition() {
    let spec = manifest("../spec");
    let ir = ir_of(&spec);
    let out = doc(&spec);
    for m in &ir.state_machines {
        let page =
            std::fs::read_to_string(out.path().join(format!("machine/{}.html", m.name))).unwrap();
        let html = Html::parse_document(&page);
        let mut drawn = BTreeSet::new();
        for g in html.select(&sel("svg.machine g.edge")) {
            let from = g.value().attr("data-from").unwrap().to_string();
            let to = g.value().attr("data-to").unwrap().to_string();
            for t in g.select(&sel(r##"a[href^="#"] text"##)) {
                let name: String = t.text().collect();
                let name = name.trim_start_matches("any → ").to_string();
                drawn.insert((from.clone(), to.clone(), name));
            }
        }
        let mut want = BTreeSet::new();
        for t in &m.transitions {
            let froms: Vec<String> = if t.from.is_empty() {
                vec!["*".into()]
            } else {
                t.from.clone()
            };
            for from in froms {
                want.insert((from, t.to.clone(), t.name.clone()));
            }
        }
        assert_eq!(drawn, want, "{}: the graph's arrows", m.name);
        let states = html.select(&sel("svg.machine g.state")).count();
        let values = ir.find_enum(&m.states).unwrap().values.len();
        assert_eq!(states, values, "{}: one box per state", m.name);
    }
}

#[test]
fn a_union_page_draws_each_member() {
    let spec = manifest("../spec");
    let ir = ir_of(&spec);
    let out = doc(&spec);
    for u in &ir.unions {
        let page =
            std::fs::read_to_string(out.path().join(format!("layout/{}.html", u.name))).unwrap();
        let html = Html::parse_document(&page);
        let drawn: Vec<String> = html
            .select(&sel("details.member"))
            .filter(|d| d.select(&sel("table.diagram")).next().is_some())
            .map(|d| d.value().attr("data-member").unwrap().to_string())
            .collect();
        let want: Vec<String> = u.members.iter().map(|m| m.name.clone()).collect();
        assert_eq!(drawn, want, "{}: a diagram per member", u.name);
    }
}

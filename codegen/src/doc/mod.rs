//! `prmc doc`: the spec as a static, offline HTML reference.
//!
//! One page per layout (a PRM-style bit diagram, then the field table and where the layout is
//! used), enum, command and state machine, an index with a search box, and every spec file as
//! a page with numbered lines that the item pages link to. Nothing is fetched from the network:
//! the stylesheet and script are compiled in, the search index is a generated script (a JSON
//! file could not be read by `fetch` from a `file://` page).
//!
//! Every string from the spec is untrusted text and goes through [`esc`]; file names are made
//! with [`slug`], which keeps only `[A-Za-z0-9_.-]`. The pages are built with `std::fmt::Write`
//! rather than a template crate: the pages are few and regular, and a template engine would add
//! a proc-macro build for little gain. Output is deterministic: items are visited in IR order
//! and every lookup table is a `BTreeMap`.

mod command;
mod diagram;
mod enums;
mod index;
mod layout;
mod machine;
mod machine_graph;
mod source;

use crate::ir::{FieldType, Ir};
use crate::source::{SourceMap, Span};
use crate::Compilation;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// The stylesheet, written as `style.css`.
const STYLE: &str = include_str!("assets/style.css");
/// The search box's script, written as `search.js`.
const SEARCH: &str = include_str!("assets/search.js");

/// One output file: its path relative to the output directory, and its contents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// Relative path with `/` separators (`layout/cqe64.html`).
    pub path: String,
    /// The file's text.
    pub contents: String,
}

/// Renders the whole reference for a compilation (which should have no errors).
pub fn render(c: &Compilation) -> Vec<Page> {
    let site = Site::new(&c.ir, &c.sources);
    let mut pages = vec![
        Page {
            path: "style.css".into(),
            contents: STYLE.into(),
        },
        Page {
            path: "search.js".into(),
            contents: SEARCH.into(),
        },
        Page {
            path: "search-index.js".into(),
            contents: index::search_index(&site),
        },
        Page {
            path: "index.html".into(),
            contents: index::page(&site),
        },
    ];
    for s in &c.ir.structs {
        pages.push(Page {
            path: format!("layout/{}.html", slug(&s.name)),
            contents: layout::struct_page(&site, s),
        });
    }
    for u in &c.ir.unions {
        pages.push(Page {
            path: format!("layout/{}.html", slug(&u.name)),
            contents: layout::union_page(&site, u),
        });
    }
    for e in &c.ir.enums {
        pages.push(Page {
            path: format!("enum/{}.html", slug(&e.name)),
            contents: enums::page(&site, e),
        });
    }
    for cmd in &c.ir.commands {
        pages.push(Page {
            path: format!("command/{}.html", slug(&cmd.name)),
            contents: command::page(&site, cmd),
        });
    }
    for m in &c.ir.state_machines {
        pages.push(Page {
            path: format!("machine/{}.html", slug(&m.name)),
            contents: machine::page(&site, m),
        });
    }
    for (i, f) in c.sources.files.iter().enumerate() {
        if let Some(name) = site.files.get(i) {
            pages.push(Page {
                path: format!("src/{}.html", name.slug),
                contents: source::page(name, f),
            });
        }
    }
    // A name defined twice (only in a spec with errors) would give two pages one path: the
    // first one written wins, as the first definition does in the IR's index.
    let mut seen = std::collections::BTreeSet::new();
    pages.retain(|p| seen.insert(p.path.clone()));
    pages
}

/// Writes the pages under `out`, creating directories; returns the bytes written.
pub fn write(pages: &[Page], out: &Path) -> std::io::Result<u64> {
    let mut total = 0u64;
    for p in pages {
        let path = out.join(&p.path);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(&path, &p.contents)?;
        total += p.contents.len() as u64;
    }
    Ok(total)
}

/// A spec file as the reference names it.
pub(crate) struct FileName {
    /// Shown to readers: the path relative to the spec directory.
    pub display: String,
    /// Its page's file stem under `src/`.
    pub slug: String,
}

/// Who uses a layout or enum: (page href from a page one level down, text).
type Users = BTreeMap<String, Vec<(String, String)>>;

/// What every page needs: the IR, file names, and the reverse lookups (who uses what).
pub(crate) struct Site<'a> {
    pub ir: &'a Ir,
    /// Per source file index.
    pub files: Vec<FileName>,
    /// Layout or union name → the fields, union members and commands that use it.
    pub layout_users: Users,
    /// Enum name → the fields of its type.
    pub enum_users: Users,
    /// Command name → the state-machine transitions it makes.
    pub command_users: Users,
}

impl<'a> Site<'a> {
    fn new(ir: &'a Ir, sources: &SourceMap) -> Site<'a> {
        let files = sources
            .files
            .iter()
            .map(|f| {
                let path = f.path.display().to_string();
                let display = ir
                    .modules
                    .iter()
                    .find(|m| m.path == path)
                    .map_or(path, |m| m.relative.clone());
                FileName {
                    slug: slug(&display),
                    display,
                }
            })
            .collect();
        let mut layout_users = Users::new();
        let mut enum_users = Users::new();
        let mut command_users = Users::new();
        for s in &ir.structs {
            for f in &s.fields {
                let href = format!("../layout/{}.html#{}", slug(&s.name), field_anchor(&f.name));
                let text = format!("{}.{}", s.name, f.name);
                match &f.ty {
                    FieldType::Struct(t) | FieldType::Union(t) => {
                        layout_users
                            .entry(t.clone())
                            .or_default()
                            .push((href, text));
                    }
                    FieldType::Enum(t) => {
                        enum_users.entry(t.clone()).or_default().push((href, text));
                    }
                    _ => {}
                }
            }
        }
        for u in &ir.unions {
            for m in &u.members {
                layout_users.entry(m.ty.clone()).or_default().push((
                    format!("../layout/{}.html", slug(&u.name)),
                    format!("{} (union member {})", u.name, m.name),
                ));
            }
        }
        for c in &ir.commands {
            let href = format!("../command/{}.html", slug(&c.name));
            for (which, name) in [("input", &c.input), ("output", &c.output)] {
                layout_users
                    .entry(name.clone())
                    .or_default()
                    .push((href.clone(), format!("{} ({which})", c.name)));
            }
        }
        for r in &ir.access_registers {
            layout_users.entry(r.layout.clone()).or_default().push((
                format!("../index.html#r-{}", slug(&r.name)),
                format!(
                    "{} (access register {:#x}, {})",
                    r.name,
                    r.id,
                    r.access.name().replace('_', "/")
                ),
            ));
        }
        for m in &ir.state_machines {
            for t in &m.transitions {
                command_users.entry(t.command.clone()).or_default().push((
                    format!(
                        "../machine/{}.html#{}",
                        slug(&m.name),
                        field_anchor(&t.name)
                    ),
                    format!("{} state machine: {}", m.name, t.name),
                ));
            }
        }
        Site {
            ir,
            files,
            layout_users,
            enum_users,
            command_users,
        }
    }

    /// A link to where a span points in its spec file, as seen from a page one level down.
    pub fn src_link(&self, span: Span) -> String {
        match self.files.get(span.file) {
            Some(f) if span.line > 0 => format!(
                r#"<a class="src" href="../src/{}.html#L{}">{}:{}</a>"#,
                f.slug,
                span.line,
                esc(&f.display),
                span.line
            ),
            _ => String::new(),
        }
    }

    /// The page of a layout, union or enum by name, from a page one level down, if it has one.
    pub fn type_href(&self, name: &str) -> Option<String> {
        match self.ir.index.get(name)? {
            crate::ir::Item::Struct(_) | crate::ir::Item::Union(_) => {
                Some(format!("../layout/{}.html", slug(name)))
            }
            crate::ir::Item::Enum(_) => Some(format!("../enum/{}.html", slug(name))),
        }
    }

    /// A type name, linked to its page when it has one.
    pub fn type_link(&self, name: &str) -> String {
        match self.type_href(name) {
            Some(h) => format!(r#"<a href="{}">{}</a>"#, esc(&h), esc(name)),
            None => esc(name),
        }
    }

    /// A command name, linked to its page when it has one.
    pub fn command_link(&self, name: &str) -> String {
        if self.ir.find_command(name).is_some() {
            format!(
                r#"<a href="../command/{}.html">{}</a>"#,
                slug(name),
                esc(name)
            )
        } else {
            esc(name)
        }
    }
}

/// Escapes text for HTML content and quoted attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A name as a file stem or anchor: `[A-Za-z0-9_.-]` kept, every other byte as `~hh`. It is
/// one-to-one, so two names never share a page, and no `/`, space or quote survives (so no
/// slug leaves its directory).
pub fn slug(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.' {
            out.push(b as char);
        } else {
            let _ = write!(out, "~{b:02x}");
        }
    }
    out
}

/// The anchor of a field's table row (and of a transition, an enum value).
pub fn field_anchor(name: &str) -> String {
    format!("f-{}", slug(name))
}

/// Spec doc text as HTML: escaped, blank lines as paragraph breaks, `code` spans kept.
pub fn doc_html(doc: Option<&str>) -> String {
    let Some(doc) = doc else {
        return String::new();
    };
    let mut out = String::new();
    for para in doc.split("\n\n").filter(|p| !p.trim().is_empty()) {
        out.push_str("<p>");
        out.push_str(&code_spans(&esc(para.trim())));
        out.push_str("</p>");
    }
    out
}

/// Turns `` `x` `` into `<code>x</code>` in already escaped text (a backtick is never part
/// of an escape, so this cannot open a tag of the spec's making).
fn code_spans(escaped: &str) -> String {
    let parts: Vec<&str> = escaped.split('`').collect();
    if parts.len() % 2 == 0 {
        return escaped.to_string();
    }
    let mut out = String::new();
    for (i, p) in parts.iter().enumerate() {
        if i % 2 == 1 {
            let _ = write!(out, "<code>{p}</code>");
        } else {
            out.push_str(p);
        }
    }
    out
}

/// A whole page: `root` is the way back to the output directory (`""` or `"../"`).
pub fn shell(root: &str, title: &str, body: &str) -> String {
    format!(
        r#"<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title} · PRM reference</title>
<link rel="stylesheet" href="{root}style.css">
</head>
<body>
<nav class="top"><a href="{root}index.html">PRM reference</a>
<input id="search" type="search" placeholder="Search layouts, fields, values, opcodes" autocomplete="off" aria-label="Search" data-root="{root}">
<ol id="results" hidden></ol></nav>
<main>
{body}
</main>
<script src="{root}search-index.js"></script>
<script src="{root}search.js"></script>
</body>
</html>
"#,
        title = esc(title),
    )
}

/// `0x1f` for a number, as the PRM writes them.
pub fn hex(v: u64) -> String {
    format!("0x{v:x}")
}

//! The importer's output as it is assembled: per header file, the structures and unions laid
//! out by [`super::emit`] with their field lines already in spec syntax, and their rendering as
//! one YAML document.

use std::fmt::Write as _;
use std::path::Path;

/// A structure ready to write: its field lines are spec YAML (`name: { at: ... }`).
pub(super) struct OutStruct {
    pub(super) name: String,
    pub(super) size: u64,
    /// A comment written under the size (why the layout was padded, say).
    pub(super) note: Option<String>,
    pub(super) fields: Vec<String>,
}

/// A union ready to write, its member lines in spec YAML.
pub(super) struct OutUnion {
    pub(super) name: String,
    pub(super) size: u64,
    pub(super) members: Vec<String>,
}

/// Everything one header file contributes.
#[derive(Default)]
pub(super) struct OutFile {
    pub(super) structs: Vec<OutStruct>,
    pub(super) unions: Vec<OutUnion>,
}

impl OutFile {
    /// `(file name, YAML)` for the header at `path` (the `index`-th source, which names the
    /// file when the path has no stem).
    pub(super) fn render(&self, path: &Path, index: usize) -> (String, String) {
        let mut y = String::new();
        let _ = writeln!(y, "# Imported by `prmc import` from {}.", path.display());
        let _ = writeln!(
            y,
            "# A transcription for cross-checks and scale tests: not a spec to edit or commit."
        );
        let _ = writeln!(
            y,
            "doc: Layouts imported from {}.",
            path.file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default()
        );
        if !self.structs.is_empty() {
            y.push_str("\nstructs:\n");
            for s in &self.structs {
                let _ = writeln!(y, "  {}:", s.name);
                let _ = writeln!(y, "    size: 0x{:x}", s.size);
                if let Some(n) = &s.note {
                    let _ = writeln!(y, "    # {n}");
                }
                block(&mut y, "fields", &s.fields);
            }
        }
        if !self.unions.is_empty() {
            y.push_str("\nunions:\n");
            for u in &self.unions {
                let _ = writeln!(y, "  {}:", u.name);
                let _ = writeln!(y, "    size: 0x{:x}", u.size);
                block(&mut y, "members", &u.members);
            }
        }
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| format!("header{index}"));
        (format!("{stem}.yaml"), y)
    }
}

/// `key:` and its lines indented under it, or `key: {}` when there are none.
fn block(y: &mut String, key: &str, lines: &[String]) {
    if lines.is_empty() {
        let _ = writeln!(y, "    {key}: {{}}");
    } else {
        let _ = writeln!(y, "    {key}:");
        for l in lines {
            let _ = writeln!(y, "      {l}");
        }
    }
}

//! Spec file pages: the YAML with numbered lines, each line an anchor (`#L12`) the item pages
//! link to.

use super::{esc, shell, FileName};
use crate::source::SourceFile;
use std::fmt::Write as _;

/// The page of one spec file.
pub fn page(name: &FileName, f: &SourceFile) -> String {
    let mut body = format!(
        r#"<h1><span class="kind">spec file</span> {}</h1><pre class="source">"#,
        esc(&name.display)
    );
    for (i, line) in f.text.lines().enumerate() {
        let n = i + 1;
        let _ = writeln!(
            body,
            r##"<span id="L{n}"><a class="ln" href="#L{n}">{n:>5}</a> {}</span>"##,
            esc(line)
        );
    }
    body.push_str("</pre>");
    shell("../", &name.display, &body)
}

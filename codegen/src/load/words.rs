//! Reading a structure's `words:`: the dwords and 64-bit pairs that are written whole, each
//! a position (`0x40[31:0]`) or `{ at, doc }`.

use super::Reader;
use crate::syntax::*;
use marked_yaml::types::MarkedMappingNode;
use marked_yaml::Node;

const WORD_KEYS: &[&str] = &["at", "doc"];

impl Reader<'_> {
    /// The `words:` of the structure mapping `map` at `path` (none when absent).
    pub(super) fn words(&mut self, map: &MarkedMappingNode, path: &str) -> Vec<WordDecl> {
        let mut out = Vec::new();
        let Some(node) = map.get_node("words") else {
            return out;
        };
        let Some(words) = self.mapping(node, "`words`", &format!("{path}.words")) else {
            return out;
        };
        for (k, v) in words.iter() {
            let name = self.name(k);
            let wpath = format!("{path}.words.{}", name.value);
            let what = format!("word `{}`", name.value);
            let (at_node, doc) = match v {
                // Shorthand: `name: "0x40[31:0]"`.
                Node::Scalar(_) => (Some(v), None),
                _ => {
                    let Some(m) = self.mapping(v, &what, &wpath) else {
                        continue;
                    };
                    self.check_keys(m, WORD_KEYS, "a word", &wpath);
                    let doc = self.doc(m.get_node("doc"), &wpath);
                    (self.required(m, "at", name.span, &what, &wpath), doc)
                }
            };
            let at_path = format!("{wpath}.at");
            let Some(s) = at_node.and_then(|n| self.scalar(n, "`at`", &at_path)) else {
                continue;
            };
            if let Some(at) = self.position(s, &at_path) {
                out.push(WordDecl { name, at, doc });
            }
        }
        out
    }
}

//! Reading a spec file's commands: opcode, input and output layouts, named `op_mod` values.

use super::Reader;
use crate::syntax::*;
use marked_yaml::Node;

const COMMAND_KEYS: &[&str] = &["opcode", "in", "out", "doc", "op_mod"];

impl Reader<'_> {
    pub(super) fn command(
        &mut self,
        name: Spanned<String>,
        node: &Node,
        path: String,
    ) -> Option<CommandDecl> {
        let map = self.mapping(node, &format!("command `{}`", name.value), &path)?;
        self.check_keys(map, COMMAND_KEYS, "a command", &path);
        let what = format!("command `{}`", name.value);
        let doc = self.doc(map.get_node("doc"), &path);
        let opcode = self
            .required(map, "opcode", name.span, &what, &path)
            .and_then(|n| self.uint(n, "opcode", &format!("{path}.opcode")));
        let input = self
            .required(map, "in", name.span, &what, &path)
            .and_then(|n| self.string(n, "`in`", &format!("{path}.in")));
        let output = self
            .required(map, "out", name.span, &what, &path)
            .and_then(|n| self.string(n, "`out`", &format!("{path}.out")));
        let mut op_mods = Vec::new();
        if let Some(n) = map.get_node("op_mod") {
            if let Some(m) = self.mapping(n, "`op_mod`", &format!("{path}.op_mod")) {
                for (k, v) in m.iter() {
                    let oname = self.name(k);
                    let opath = format!("{path}.op_mod.{}", oname.value);
                    if let Some((val, _doc)) = self.value_and_doc(v, oname.span, "op_mod", &opath) {
                        op_mods.push((oname, val));
                    }
                }
            }
        }
        Some(CommandDecl {
            name,
            doc,
            opcode,
            input,
            output,
            op_mods,
        })
    }
}

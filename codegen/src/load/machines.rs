//! Reading `state_machines:`: states, the mask and object fields, and each transition with
//! the fields it requires or may set.

use super::Reader;
use crate::syntax::*;
use marked_yaml::Node;

const MACHINE_KEYS: &[&str] = &[
    "doc",
    "states",
    "state_field",
    "mask_field",
    "object_field",
    "optional_bits",
    "transitions",
];
const TRANSITION_KEYS: &[&str] = &["doc", "from", "to", "command", "requires", "optional"];

impl Reader<'_> {
    pub(super) fn state_machine(
        &mut self,
        name: Spanned<String>,
        node: &Node,
        path: String,
    ) -> Option<StateMachineDecl> {
        let map = self.mapping(node, &format!("state machine `{}`", name.value), &path)?;
        self.check_keys(map, MACHINE_KEYS, "a state machine", &path);
        let what = format!("state machine `{}`", name.value);
        let doc = self.doc(map.get_node("doc"), &path);
        let states = self
            .required(map, "states", name.span, &what, &path)
            .and_then(|n| self.string(n, "`states`", &format!("{path}.states")));
        let state_field = map
            .get_node("state_field")
            .and_then(|n| self.string(n, "`state_field`", &format!("{path}.state_field")));
        let mask_field = map
            .get_node("mask_field")
            .and_then(|n| self.string(n, "`mask_field`", &format!("{path}.mask_field")));
        let object_field = map
            .get_node("object_field")
            .and_then(|n| self.string(n, "`object_field`", &format!("{path}.object_field")));
        let mut optional_bits = Vec::new();
        if let Some(n) = map.get_node("optional_bits") {
            if let Some(m) = self.mapping(n, "`optional_bits`", &format!("{path}.optional_bits")) {
                for (k, v) in m.iter() {
                    let bname = self.name(k);
                    if let Some(val) = self.uint(
                        v,
                        "mask bit",
                        &format!("{path}.optional_bits.{}", bname.value),
                    ) {
                        optional_bits.push((bname, val));
                    }
                }
            }
        }
        let mut transitions = Vec::new();
        if let Some(n) = self.required(map, "transitions", name.span, &what, &path) {
            if let Some(m) = self.mapping(n, "`transitions`", &format!("{path}.transitions")) {
                for (k, v) in m.iter() {
                    let tname = self.name(k);
                    let tpath = format!("{path}.transitions.{}", tname.value);
                    if let Some(t) = self.transition(tname, v, &tpath) {
                        transitions.push(t);
                    }
                }
            }
        }
        Some(StateMachineDecl {
            name,
            doc,
            states,
            state_field,
            mask_field,
            object_field,
            optional_bits,
            transitions,
        })
    }

    fn transition(
        &mut self,
        name: Spanned<String>,
        node: &Node,
        path: &str,
    ) -> Option<TransitionDecl> {
        let map = self.mapping(node, &format!("transition `{}`", name.value), path)?;
        self.check_keys(map, TRANSITION_KEYS, "a transition", path);
        let what = format!("transition `{}`", name.value);
        let doc = self.doc(map.get_node("doc"), path);
        let from = match self.required(map, "from", name.span, &what, path) {
            Some(n) => {
                let list = self.names(n, "`from`", &format!("{path}.from"));
                if list.len() == 1 && list[0].value == "any" {
                    Vec::new()
                } else {
                    list
                }
            }
            None => Vec::new(),
        };
        let to = self
            .required(map, "to", name.span, &what, path)
            .and_then(|n| self.string(n, "`to`", &format!("{path}.to")));
        let command = self
            .required(map, "command", name.span, &what, path)
            .and_then(|n| self.string(n, "`command`", &format!("{path}.command")));
        let requires = map
            .get_node("requires")
            .map(|n| self.names(n, "a field path", &format!("{path}.requires")))
            .unwrap_or_default();
        let mut optional = Vec::new();
        if let Some(n) = map.get_node("optional") {
            if let Some(m) = self.mapping(n, "`optional`", &format!("{path}.optional")) {
                for (k, v) in m.iter() {
                    let field = self.name(k);
                    if let Some(bit) = self.string(
                        v,
                        "mask bit name",
                        &format!("{path}.optional.{}", field.value),
                    ) {
                        optional.push((field, bit));
                    }
                }
            }
        }
        Some(TransitionDecl {
            name,
            doc,
            from,
            to,
            command,
            requires,
            optional,
        })
    }
}

//! Reading a spec file's access registers: register id, image layout, access directions and
//! the fields that select an instance.

use super::Reader;
use crate::syntax::*;
use marked_yaml::Node;

const ACCESS_REGISTER_KEYS: &[&str] = &["id", "layout", "access", "index", "doc"];

impl Reader<'_> {
    pub(super) fn access_register(
        &mut self,
        name: Spanned<String>,
        node: &Node,
        path: String,
    ) -> Option<AccessRegisterDecl> {
        let what = format!("access register `{}`", name.value);
        let map = self.mapping(node, &what, &path)?;
        self.check_keys(map, ACCESS_REGISTER_KEYS, "an access register", &path);
        let doc = self.doc(map.get_node("doc"), &path);
        let id = self
            .required(map, "id", name.span, &what, &path)
            .and_then(|n| self.uint(n, "register id", &format!("{path}.id")));
        let layout = self
            .required(map, "layout", name.span, &what, &path)
            .and_then(|n| self.string(n, "`layout`", &format!("{path}.layout")));
        let access = self
            .required(map, "access", name.span, &what, &path)
            .and_then(|n| self.string(n, "`access`", &format!("{path}.access")));
        let index = map
            .get_node("index")
            .map(|n| self.names(n, "an index field", &format!("{path}.index")))
            .unwrap_or_default();
        Some(AccessRegisterDecl {
            name,
            doc,
            id,
            layout,
            access,
            index,
        })
    }
}

//! Lowering an access register: its layout looked up by name, its access parsed, its index
//! fields found in the layout.

use super::{find_field_path, unknown};
use crate::diag::{Diagnostic, Diagnostics};
use crate::ir::*;
use crate::syntax;

pub(super) fn lower_access_register(
    ir: &Ir,
    module: usize,
    r: &syntax::AccessRegisterDecl,
    diags: &mut Diagnostics,
) -> Option<AccessRegister> {
    let path = format!("access_registers.{}", r.name.value);
    let layout = r.layout.as_ref()?;
    let Some(structure) = ir.find_struct(&layout.value) else {
        let names: Vec<&str> = ir.structs.iter().map(|s| s.name.as_str()).collect();
        diags.push(unknown(
            "structure",
            layout,
            &names,
            &format!("{path}.layout"),
        ));
        return None;
    };
    let access = r.access.as_ref().and_then(|a| {
        let parsed = RegAccess::parse(&a.value);
        if parsed.is_none() {
            diags.push(
                Diagnostic::error("access", a.span, format!("unknown access `{}`", a.value))
                    .with_path(format!("{path}.access"))
                    .with_hint("use `read`, `write` or `read_write`"),
            );
        }
        parsed
    });
    let mut index_ok = true;
    for f in &r.index {
        if find_field_path(ir, structure, &f.value).is_none() {
            let names: Vec<&str> = structure.fields.iter().map(|f| f.name.as_str()).collect();
            let mut d = Diagnostic::error(
                "unknown-reference",
                f.span,
                format!("`{}` has no field `{}`", structure.name, f.value),
            )
            .with_path(format!("{path}.index"));
            if let Some(s) = crate::load::suggest(&f.value, &names) {
                d = d.with_hint(format!("did you mean `{s}`?"));
            }
            diags.push(d);
            index_ok = false;
        }
    }
    let (Some(id), Some(access), true) = (&r.id, access, index_ok) else {
        return None;
    };
    Some(AccessRegister {
        name: r.name.value.clone(),
        module,
        doc: r.doc.clone(),
        id: id.value,
        layout: layout.value.clone(),
        access,
        index: r.index.iter().map(|f| f.value.clone()).collect(),
        span: r.name.span,
        id_span: id.span,
        layout_span: layout.span,
        index_spans: r.index.iter().map(|f| f.span).collect(),
    })
}

//! What every emitter shares: the names of the target crate ([`Ctx`]) and the rendering of spec
//! documentation as rustdoc lines ([`doc_lines`]). Kept apart from [`super::module`], which
//! calls the emitters, so that no emitter depends on the file that assembles their output.

use super::{Config, Emit};
use proc_macro2::TokenStream;
use quote::quote;

/// What every emitter needs to know about the target crate.
pub struct Ctx {
    /// How generated modules name the runtime: `rt`, imported at the top of each module.
    pub rt: TokenStream,
    /// The runtime's full path (`crate::rt`), for code outside the modules.
    pub rt_full: TokenStream,
    /// Path of the crate providing the view macro (`crate`).
    pub krate: TokenStream,
    /// The attribute to put on `Debug` implementations (empty when unconditional); `None`
    /// when they are not generated.
    pub debug_cfg: Option<TokenStream>,
    /// The same for reflection tables.
    pub reflect_cfg: Option<TokenStream>,
    /// The attribute for the per-layout tables (`FOO_ACCESS`), which both the reflection
    /// index and the decoding `Debug` read: built when either is.
    pub table_cfg: Option<TokenStream>,
}

impl Ctx {
    /// The context for generating with `config`.
    pub fn new(config: &Config) -> Ctx {
        let krate: TokenStream = config
            .runtime_crate
            .parse()
            .unwrap_or_else(|_| quote!(crate));
        let cfg = |e: &Emit| match e {
            Emit::Never => None,
            Emit::Always => Some(quote!()),
            Emit::Feature(f) => Some(quote!(#[cfg(feature = #f)])),
        };
        Ctx {
            rt: quote!(rt),
            rt_full: quote!(#krate::rt),
            krate,
            debug_cfg: cfg(&config.debug),
            reflect_cfg: cfg(&config.reflect),
            table_cfg: table_cfg(&config.debug, &config.reflect),
        }
    }
}

/// When the per-layout tables are needed: whenever the decoding `Debug` or reflection is.
fn table_cfg(debug: &Emit, reflect: &Emit) -> Option<TokenStream> {
    match (debug, reflect) {
        (Emit::Never, Emit::Never) => None,
        (Emit::Always, _) | (_, Emit::Always) => Some(quote!()),
        (Emit::Feature(f), Emit::Never) | (Emit::Never, Emit::Feature(f)) => {
            Some(quote!(#[cfg(feature = #f)]))
        }
        (Emit::Feature(a), Emit::Feature(b)) if a == b => Some(quote!(#[cfg(feature = #a)])),
        (Emit::Feature(a), Emit::Feature(b)) => {
            Some(quote!(#[cfg(any(feature = #a, feature = #b))]))
        }
    }
}

/// Spec documentation as rustdoc lines (one per line of the text), empty when there is none.
pub fn doc_lines(doc: Option<&str>) -> Vec<String> {
    doc.map(|d| d.lines().map(super::names::doc_line).collect())
        .unwrap_or_default()
}

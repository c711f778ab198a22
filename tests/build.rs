//! Generates bindings for the toy spec of the compiler's tests (`codegen/tests/good`) the way
//! a user's crate would: from `build.rs`, into `OUT_DIR`, included by `src/lib.rs`. This
//! exercises the library entry point and gives the tests layouts with unions, selectors,
//! arrays, trailing arrays and a register block.

use prm_codegen::gen::{Config, Emit};
use std::path::PathBuf;

fn main() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let spec = PathBuf::from("../codegen/tests/good");
    if let Err(e) = Config::new().reflect(Emit::Always).write(&spec, &out) {
        panic!("generating the toy bindings failed: {e}");
    }
    // Names that meet std's trait methods (tests/names/trait_names.yaml).
    if let Err(e) = Config::new()
        .reflect(Emit::Always)
        .write(&PathBuf::from("names"), &out.join("names"))
    {
        panic!("generating the trait-name bindings failed: {e}");
    }
}

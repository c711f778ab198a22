//! Feeds arbitrary text to the whole front end (YAML loader, position parser, lowering, every
//! check, both renderers). Any panic is a bug.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let c = prm_codegen::compile_str("fuzz.yaml", text);
    let _ = c.render_human();
    let _ = c.render_json();
    if c.is_ok() {
        let _ = prm_codegen::layout::to_json(&c.ir);
        for s in &c.ir.structs {
            let _ = prm_codegen::show::table(&c.ir, s);
        }
    }
});

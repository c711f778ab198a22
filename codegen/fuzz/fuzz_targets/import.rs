//! Feeds arbitrary text to `prmc import`'s header reader and emitter, then compiles whatever
//! spec it writes. Any panic is a bug.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let imp = prm_codegen::import::import_sources(vec![("fuzz.h".into(), text.to_string())]);
    for d in imp.diagnostics.iter() {
        let _ = prm_codegen::diag::render_human(d, &imp.sources);
    }
    let files = imp.files.into_iter().map(|(n, t)| (n.into(), t)).collect();
    let _ = prm_codegen::compile_sources(files).render_human();
});

//! Feeds arbitrary bytes to `prmc decode`'s input parser (hex dump or raw bytes) and whatever
//! parses to the decoder, through a small spec with every kind of field: a parsed dump must
//! write back identically, and nothing may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use prm_codegen::decode::{decode, hex, tree, Options, Target};
use std::sync::OnceLock;

const SPEC: &str = r#"
enums:
  color: { width: 2, values: { red: { value: 0 }, green: { value: 1 } } }
structs:
  inner:
    size: 0x8
    fields:
      a: { at: "0x00[31:24]" }
      c: { at: "0x00[1:0]", type: color }
      wide: { at: "0x04[31:0]" }
  outer:
    size: 0x20
    fields:
      kind: { at: "0x00[7:0]" }
      flag: { at: "0x04[31]", type: bool }
      nested: { at: "0x08", type: inner }
      u: { at: "0x10", type: choice }
      pas: { at: "0x20", type: u64, count: trailing }
unions:
  choice:
    size: 0x10
    selector: { field: outer.kind }
    members:
      one: { type: inner, when: 1 }
      two: { type: inner, when: 2 }
"#;

fn ir() -> &'static prm_codegen::ir::Ir {
    static C: OnceLock<prm_codegen::Compilation> = OnceLock::new();
    &C.get_or_init(|| prm_codegen::compile_str("fuzz.yaml", SPEC)).ir
}

fuzz_target!(|data: &[u8]| {
    let Ok(buf) = hex::read_input(data) else { return };
    // The round trip through hex text is checked up to 1 MiB of bytes: a `hexdump -C` `*` line
    // lets 80 bytes of input stand for 16 MiB, whose 40 MB of hex text (linear work, 0.5 s in
    // a debug build) takes the sanitizer past the time limit without telling anything a
    // smaller buffer does not.
    if hex::looks_like_text(data) && buf.len() <= 1 << 20 {
        assert_eq!(hex::parse_hex(&hex::to_hex(&buf)).ok(), Some(buf.clone()));
    }
    let ir = ir();
    for name in ["outer", "inner", "choice"] {
        if let Some(t) = Target::find(ir, name) {
            if tree::check_length(ir, t, buf.len()).is_ok() {
                let _ = decode(ir, t, &buf, &Options::default());
            }
        }
    }
});

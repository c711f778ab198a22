//! Every view implements `Debug`, with or without the `debug` feature: without it the view's
//! name, length and bytes in hex; with it the fields decoded. So a user's own
//! `#[derive(Debug)]` struct holding a view compiles either way.

use mlx5_prm::{Cqc, CreateCqIn};

/// What the plain form must print: the bytes in hex, a space after every 4 (computed here,
/// not with the runtime's helper).
fn plain(name: &str, bytes: &[u8]) -> String {
    let hex: Vec<String> = bytes
        .chunks(4)
        .map(|c| c.iter().map(|b| format!("{b:02x}")).collect())
        .collect();
    format!(
        "{name} {{ len: {}, bytes: {} }}",
        bytes.len(),
        hex.join(" ")
    )
}

#[derive(Debug)]
#[allow(dead_code)] // only printed
struct Mine<'a> {
    context: Cqc<&'a [u8]>,
}

#[test]
fn views_print_with_or_without_the_debug_feature() {
    let mut c = Cqc::zeroed();
    c.set_log_cq_size(7);
    c.set_uar_page(0x1234);
    let bytes = c.storage().to_vec();
    let owned = format!("{c:?}");
    let borrowed = format!("{:?}", Cqc::new_unchecked(&bytes[..]));
    assert_eq!(owned, borrowed, "the storage does not change the form");
    if cfg!(feature = "debug") {
        assert!(owned.starts_with("Cqc {"), "{owned}");
        assert!(owned.contains("log_cq_size: 0x0c[28:24] = 0x7"), "{owned}");
        assert!(owned.contains("uar_page: 0x0c[23:0] = 0x1234"), "{owned}");
    } else {
        assert_eq!(owned, plain("Cqc", &bytes));
        assert!(owned.contains("07"), "the field's byte is there: {owned}");
    }
    let mine = format!(
        "{:?}",
        Mine {
            context: Cqc::new_unchecked(&bytes[..])
        }
    );
    assert!(mine.starts_with("Mine { context: Cqc {"), "{mine}");
    // A layout with a nested one and a trailing array prints too.
    let i = CreateCqIn::zeroed();
    let s = format!("{i:?}");
    assert!(s.starts_with("CreateCqIn {"), "{s}");
    if !cfg!(feature = "debug") {
        assert_eq!(s, plain("CreateCqIn", i.storage()));
    }
}

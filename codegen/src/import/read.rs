//! Reading headers within limits, and which `#include`s are followed.
//!
//! `prmc import` reads whatever file it is given and the quoted includes inside it, so, as
//! for spec files (`load::limits`), every cost is bounded before it is paid: a header that is
//! not a regular file (a FIFO would block the read forever, `/dev/zero` never ends) or larger
//! than [`MAX_HEADER_BYTES`] is refused before it is read, and no more than [`MAX_HEADERS`]
//! are read in one import. An include is followed only to a file beside the includer or
//! below its directory: a header cannot make the importer read, and quote in its
//! diagnostics, a file elsewhere (`#include "/etc/shadow"`, `"../../x"`).

use std::io::{self, Read};
use std::path::{Component, Path};

/// Bytes one header may hold: 50 times Linux 7.3's `mlx5_ifc.h` (333,345 bytes).
pub const MAX_HEADER_BYTES: u64 = 16 << 20;

/// Headers one import may read, includes counted. Linux's mlx5 headers include a handful.
pub const MAX_HEADERS: usize = 256;

fn refuse(path: &Path, why: String) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{}: {why}", path.display()),
    )
}

/// The text of header `path`, if it is a regular UTF-8 file of at most [`MAX_HEADER_BYTES`].
pub fn read_header(path: &Path) -> io::Result<String> {
    let meta = std::fs::metadata(path)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    if !meta.is_file() {
        return Err(refuse(
            path,
            "not a regular file: a header is read from a file".into(),
        ));
    }
    let too_big = |bytes: u64| {
        refuse(
            path,
            format!(
                "{bytes} bytes, more than the {} MiB a header may hold",
                MAX_HEADER_BYTES >> 20
            ),
        )
    };
    if meta.len() > MAX_HEADER_BYTES {
        return Err(too_big(meta.len()));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_HEADER_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    // It may have grown since `metadata`.
    if bytes.len() as u64 > MAX_HEADER_BYTES {
        return Err(too_big(bytes.len() as u64));
    }
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let before = &e.as_bytes()[..at];
        let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
        let line_start = before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |n| n + 1);
        // In characters, as diagnostics count columns (what precedes `at` is valid UTF-8).
        let col = std::str::from_utf8(&before[line_start..]).map_or(0, |t| t.chars().count()) + 1;
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{}:{line}:{col}: byte 0x{:02x} is not UTF-8: a header is C source text",
                path.display(),
                e.as_bytes()[at]
            ),
        )
    })
}

/// True if a quoted include names a file the importer follows: a relative path that stays
/// at or below the includer's directory (no root, no `..`).
pub fn followed(include: &str) -> bool {
    !include.is_empty()
        && Path::new(include)
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn includes_stay_below_the_includer() {
        assert!(followed("device.h"));
        assert!(followed("./mlx5/device.h"));
        assert!(!followed("/etc/shadow"));
        assert!(!followed("../secret.h"));
        assert!(!followed("a/../../b.h"));
        assert!(!followed(""));
    }
}

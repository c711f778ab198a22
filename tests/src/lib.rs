//! Cross-crate tests of the workspace: the real spec compiles clean, generated code does not
//! drift from the specs, layouts agree with external references (the Linux kernel's
//! `mlx5_ifc.h`), and end-to-end runs of the driver on the device model.
//!
//! The tests live in `tests/tests/`; this library holds only shared helpers.

use std::path::PathBuf;

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the workspace root")
        .to_path_buf()
}

/// The directory of the real specs.
pub fn spec_dir() -> PathBuf {
    workspace_root().join("spec")
}

//! No code: the package exists for its tests, the compile-fail cases of the driver
//! (`tests/driver/*.rs`) and of the generated crate (`tests/prm/`), each with the `.stderr`
//! rustc must print, run through trybuild with this package's small set of dependencies (see
//! Cargo.toml for why).

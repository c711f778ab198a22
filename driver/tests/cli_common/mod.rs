//! Running the `mlx5` binary in tests (shared by `cli.rs`, `cli_clock.rs` and
//! `cli_health_config.rs`): its exit status and output, and the two expectations every test
//! states, success with nothing on stderr, or failure with exit status 1 and an `mlx5: `
//! message on stderr only.

use std::process::Command;

/// Runs `mlx5 ARGS` (on the model); returns exit status, stdout and stderr.
pub fn mlx5(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_mlx5"))
        .args(args)
        .output()
        .expect("runs mlx5");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).expect("UTF-8"),
        String::from_utf8(out.stderr).expect("UTF-8"),
    )
}

/// The output of a run that must succeed and write nothing to stderr.
pub fn ok(args: &[&str]) -> String {
    let (code, out, err) = mlx5(args);
    assert_eq!(code, 0, "mlx5 {args:?}: {err}");
    assert!(err.is_empty(), "mlx5 {args:?} wrote to stderr: {err}");
    out
}

/// The message of a run that must fail (exit status 1, nothing on stdout).
pub fn fails(args: &[&str]) -> String {
    let (code, out, err) = mlx5(args);
    assert_eq!(code, 1, "mlx5 {args:?} should fail: {out}");
    assert!(out.is_empty(), "{out}");
    assert!(err.starts_with("mlx5: "), "{err}");
    err
}

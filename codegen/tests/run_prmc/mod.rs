//! Running the `prmc` binary the way a user's shell does, for the tests of its command line:
//! its exit status and both output streams, as text.

// Each test binary that includes this module uses a different part of it.
#![allow(dead_code)]

use std::io::Write as _;
use std::process::{Command, Stdio};

/// Runs `prmc ARGS` with an empty standard input: (exit status, stdout, stderr); -1 for a
/// status a signal ended.
pub fn prmc(args: &[&str]) -> (i32, String, String) {
    prmc_with_input(args, "")
}

/// Runs `prmc ARGS` with `stdin` written to its standard input.
pub fn prmc_with_input(args: &[&str], stdin: &str) -> (i32, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_prmc"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("prmc runs");
    // A usage error exits before reading its input: a closed pipe is not the test's failure.
    match child.stdin.take().unwrap().write_all(stdin.as_bytes()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        r => r.unwrap(),
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

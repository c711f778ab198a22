//! Hostile specs: inputs that once crashed, hung or exhausted the compiler (issue 18). Each
//! runs the real `prmc` binary on a spec built in a temporary directory (the large ones are
//! generated here rather than committed) and checks the exit status, the diagnostic, the time
//! taken and, through an address-space limit, that memory stays bounded. The limits they hit
//! are documented in docs/spec-format.md, "Limits".

#![cfg(unix)]

use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Every case must finish well within this (the cases take milliseconds when the limits hold;
/// before them some ran for minutes).
const DEADLINE: Duration = Duration::from_secs(5);

/// Address space `prmc` may use (KiB): far above what a bounded run needs, far below what the
/// unbounded ones took (2.5 to 7.4 GB).
const MEMORY_KIB: u64 = 2 << 20;

/// How a run ended.
struct Run {
    /// The exit status; `None` when killed by a signal (a stack overflow aborts).
    code: Option<i32>,
    stderr: String,
    elapsed: Duration,
}

/// Runs `prmc ARGS` with the memory limit, killing it after twice the deadline.
fn prmc(dir: &Path, args: &[&str]) -> Run {
    let out = dir.join("prmc.stdout");
    let err = dir.join("prmc.stderr");
    let script = format!("ulimit -v {MEMORY_KIB}; exec \"$0\" \"$@\"");
    let start = Instant::now();
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_prmc"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).expect("stdout file"))
        .stderr(std::fs::File::create(&err).expect("stderr file"))
        .spawn()
        .expect("prmc runs");
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if start.elapsed() > 2 * DEADLINE {
            let _ = child.kill();
            break child.wait().expect("wait after kill");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let elapsed = start.elapsed();
    // The head and the tail of stderr: enough for every check, bounded for a flood.
    let bytes = std::fs::read(&err).expect("stderr");
    let keep = 64 << 10;
    let stderr = if bytes.len() <= 2 * keep {
        String::from_utf8_lossy(&bytes).into_owned()
    } else {
        format!(
            "{}\n[...]\n{}",
            String::from_utf8_lossy(&bytes[..keep]),
            String::from_utf8_lossy(&bytes[bytes.len() - keep..])
        )
    };
    Run {
        code: status.code(),
        stderr,
        elapsed,
    }
}

impl Run {
    /// Asserts the exit status, that stderr holds every one of `needles`, and the deadline.
    fn expect(&self, code: i32, needles: &[&str]) {
        assert_eq!(
            self.code,
            Some(code),
            "exit status (a signal shows as None); stderr:\n{}",
            self.stderr
        );
        for n in needles {
            assert!(
                self.stderr.contains(n),
                "stderr lacks {n:?}:\n{}",
                self.stderr
            );
        }
        assert!(
            self.elapsed < DEADLINE,
            "took {:?}\n{}",
            self.elapsed,
            self.stderr
        );
    }
}

/// A spec directory in a fresh temporary directory: `(guard, spec dir)`.
fn spec_dir(files: &[(&str, &[u8])]) -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("spec");
    std::fs::create_dir(&dir).expect("spec dir");
    for (name, text) in files {
        let path = dir.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("sub dir");
        }
        std::fs::write(path, text).expect("write spec");
    }
    (tmp, dir)
}

fn check(tmp: &tempfile::TempDir, dir: &Path) -> Run {
    prmc(tmp.path(), &["check", dir.to_str().expect("utf-8 path")])
}

const SMALL: &str = "structs:\n  a:\n    size: 0x4\n    fields:\n      x: \"0x00[31:0]\"\n";

#[test]
fn deep_block_nesting_is_a_diagnostic_not_a_stack_overflow() {
    // 10,000 nested lists written compactly (`- - - ...`): the YAML loader recursed once per
    // level and aborted the process (exit 134).
    let text = format!(
        "structs:\n  a:\n    size: 0x4\n    fields:\n      x:\n        {}a\n",
        "- ".repeat(10_000)
    );
    let (tmp, dir) = spec_dir(&[("deep.yaml", text.as_bytes())]);
    check(&tmp, &dir).expect(
        1,
        &["deep.yaml:6:129: error: this value is nested 65 levels deep, more than the 64"],
    );
}

#[test]
fn deep_indentation_is_a_diagnostic() {
    // Each key one column deeper than the last, 2,000 levels.
    let mut text = String::from("structs:\n");
    for i in 0..2000 {
        let _ = writeln!(text, "{}k{i}:", " ".repeat(i + 2));
    }
    let (tmp, dir) = spec_dir(&[("deep.yaml", text.as_bytes())]);
    check(&tmp, &dir).expect(
        1,
        &["deep.yaml:65:66: error: this value is nested 65 levels deep"],
    );
}

#[test]
fn deep_flow_nesting_is_a_diagnostic() {
    let text = format!(
        "structs:\n  a:\n    size: 0x4\n    fields:\n      x: {}{}\n",
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    let (tmp, dir) = spec_dir(&[("deep.yaml", text.as_bytes())]);
    check(&tmp, &dir).expect(
        1,
        &["deep.yaml:5:70: error: this value is nested 65 levels deep"],
    );
}

#[test]
fn a_nul_byte_is_reported_and_the_rest_of_the_file_is_still_checked() {
    // Before: the YAML scanner stopped at the NUL, so the bad field after it went unseen
    // ("0 errors").
    let text = b"structs:\n  a:\n    size: 0x8\n    fields:\n      x: \"0x00[31:0]\"\0\n      y: \"0x40[31:0]\"\n";
    let (tmp, dir) = spec_dir(&[("nul.yaml", text)]);
    check(&tmp, &dir).expect(
        1,
        &[
            "nul.yaml:5:22: error: control byte 0x00 (NUL)",
            " 5 |       x: \"0x00[31:0]\"\u{2400}",
            "nul.yaml:6:10: error: `y` ends at byte 0x44, past the end of `a`",
            "2 errors",
        ],
    );
}

#[test]
fn other_control_bytes_are_reported_at_their_column() {
    let text = b"structs:\n  a:\n    size: 0x4\x1b\n    fields:\n      x: \"0x00[31:0]\"\n\x01\x7f";
    let (tmp, dir) = spec_dir(&[("ctl.yaml", text)]);
    check(&tmp, &dir).expect(
        1,
        &[
            "ctl.yaml:3:14: error: control byte 0x1b (ESC)",
            "ctl.yaml:6:1: error: control byte 0x01",
            "ctl.yaml:6:2: error: control byte 0x7f (DEL)",
            "3 errors",
        ],
    );
}

#[test]
fn a_lone_carriage_return_is_reported_and_hides_no_line_from_the_depth_limit() {
    // YAML ends a line at a CR as at an LF, the depth scan and the line numbers only at LF:
    // after `structs:` and a lone CR, 300,000 nested lists reached the parser unseen and
    // overflowed its stack (exit 134; the long loader fuzz run found it under ASan at 3,600).
    // A CR of a CR LF is an ordinary line end.
    let deep = format!("structs:\r{}x\n", "- ".repeat(300_000));
    let first = format!("\r{}x\n", "- ".repeat(300_000));
    let (tmp, dir) = spec_dir(&[
        ("deep.yaml", deep.as_bytes()),
        ("first.yaml", first.as_bytes()),
        ("crlf.yaml", SMALL.replace('\n', "\r\n").as_bytes()),
    ]);
    check(&tmp, &dir).expect(
        1,
        &[
            "deep.yaml:1:9: error: control byte 0x0d (a carriage return without a line feed)",
            "hint: end lines with LF or CR LF",
            "deep.yaml:1:10: error: YAML syntax error",
            "first.yaml:1:1: error: control byte 0x0d (a carriage return without a line feed)",
            "first.yaml:1:130: error: this value is nested 65 levels deep",
            "4 errors",
        ],
    );
}

#[test]
fn a_binary_file_gives_a_bounded_number_of_diagnostics() {
    let text = vec![1u8; 100_000];
    let (tmp, dir) = spec_dir(&[("bin.yaml", &text)]);
    check(&tmp, &dir).expect(1, &["99990 more control bytes", "11 errors"]);
}

#[test]
fn a_symlink_loop_is_reported_once_and_each_file_read_once() {
    // Before: `loop -> ..` made the walk read `a.yaml` 41 times (one duplicate-name error per
    // extra copy) until the path grew too long.
    let (tmp, dir) = spec_dir(&[("a.yaml", SMALL.as_bytes()), ("sub/b.yaml", b"")]);
    std::os::unix::fs::symlink("..", dir.join("sub/loop")).expect("symlink");
    check(&tmp, &dir).expect(
        0,
        &[
            "sub/loop:1:1: warning: this link leads back to",
            "0 errors, 1 warning",
        ],
    );
}

#[test]
fn three_symlink_loops_stay_linear() {
    // Before: three links back to the top ran past 20 s (the walk was exponential).
    let (tmp, dir) = spec_dir(&[("a.yaml", SMALL.as_bytes())]);
    for d in ["x", "y", "z"] {
        std::fs::create_dir(dir.join(d)).expect("dir");
        std::os::unix::fs::symlink("..", dir.join(d).join("up")).expect("symlink");
    }
    check(&tmp, &dir).expect(0, &["0 errors, 3 warnings"]);
}

#[test]
fn two_links_to_one_folder_read_it_once() {
    let (tmp, dir) = spec_dir(&[("shared/a.yaml", SMALL.as_bytes())]);
    std::os::unix::fs::symlink("shared", dir.join("link1")).expect("symlink");
    std::os::unix::fs::symlink("shared", dir.join("link2")).expect("symlink");
    check(&tmp, &dir).expect(0, &["0 errors, 0 warnings in 1 file"]);
}

#[test]
fn a_50_mb_spec_fails_fast_with_the_file_size_diagnostic() {
    // Before: 10.6 s and 2.5 GB to parse.
    let mut text = String::from("structs:\n");
    let mut i = 0;
    while text.len() < 50 << 20 {
        let _ = write!(
            text,
            "  s{i}:\n    size: 0x4\n    fields:\n      x: \"0x00[31:0]\"\n"
        );
        i += 1;
    }
    let (tmp, dir) = spec_dir(&[("big.yaml", text.as_bytes())]);
    check(&tmp, &dir).expect(
        1,
        &[
            "big.yaml:1:1: error: this file is 52428",
            "a spec file may hold; it is not read",
        ],
    );
}

#[test]
fn a_spec_named_link_to_an_endless_device_is_not_read() {
    // `/dev/zero` reports size 0 and never ends: reading it whole exhausted memory.
    let (tmp, dir) = spec_dir(&[("a.yaml", SMALL.as_bytes())]);
    std::os::unix::fs::symlink("/dev/zero", dir.join("zero.yaml")).expect("symlink");
    check(&tmp, &dir).expect(
        1,
        &["zero.yaml:1:1: error: this spec file cannot be read: not a regular file"],
    );
}

#[test]
fn more_files_than_the_limit_is_a_diagnostic() {
    let (tmp, dir) = spec_dir(&[]);
    for i in 0..1025 {
        std::fs::write(dir.join(format!("f{i:04}.yaml")), "").expect("write");
    }
    check(&tmp, &dir).expect(1, &["f1024.yaml:1:1: error: more than 1024 spec files"]);
}

#[test]
fn a_16_mib_structure_is_a_check_error_and_gen_does_not_start() {
    // Before: checked clean in 0.00 s, then `gen` took 22 s and 7.4 GB to write 165 MB.
    let text = b"structs:\n  huge:\n    size: 0xfffff0\n    fields:\n      a: \"0x00[31:0]\"\n";
    let (tmp, dir) = spec_dir(&[("huge.yaml", text)]);
    let msg = "huge.yaml:3:11: error: structure `huge` is 0xfffff0 bytes, more than the 0x10000";
    check(&tmp, &dir).expect(1, &[msg]);
    let out = tmp.path().join("out");
    prmc(
        tmp.path(),
        &[
            "gen",
            dir.to_str().expect("utf-8"),
            "--out",
            out.to_str().expect("utf-8"),
        ],
    )
    .expect(1, &[msg]);
    assert!(!out.join("huge.rs").exists(), "gen wrote output");
}

#[test]
fn an_enum_with_too_many_values_is_a_check_error() {
    let mut text = String::from("enums:\n  e:\n    values:\n");
    for i in 0..5000 {
        let _ = writeln!(text, "      v{i}: {i}");
    }
    let (tmp, dir) = spec_dir(&[("e.yaml", text.as_bytes())]);
    check(&tmp, &dir).expect(1, &["error: enum `e` has 5000 values, more than the 4096"]);
}

#[test]
fn many_large_layouts_are_a_check_error() {
    // Each layout is within the 64 KiB bound, but `gen` would write ~600 KB for each.
    let mut text = String::from("structs:\n");
    for i in 0..200 {
        let _ = write!(
            text,
            "  s{i}:\n    size: 0x10000\n    fields:\n      a: \"0x00[31:0]\"\n"
        );
    }
    let (tmp, dir) = spec_dir(&[("many.yaml", text.as_bytes())]);
    check(&tmp, &dir).expect(
        1,
        &[
            "many.yaml:67:11: error: with this layout the spec's layouts span more than the \
             0x100000 bytes",
            "1 error",
        ],
    );
}

#[test]
fn files_over_the_total_size_are_not_read() {
    // Five files of comments, 1.9 MiB each: the fifth takes the total past 8 MiB.
    let line = format!("# {}\n", "x".repeat(1000));
    let text = line.repeat((19 << 20) / 10 / line.len());
    let names: Vec<String> = (0..5).map(|i| format!("c{i}.yaml")).collect();
    let files: Vec<(&str, &[u8])> = names
        .iter()
        .map(|n| (n.as_str(), text.as_bytes()))
        .collect();
    let (tmp, dir) = spec_dir(&files);
    check(&tmp, &dir).expect(
        1,
        &["c4.yaml:1:1: error: the spec files together exceed 8 MiB, so this file is not read"],
    );
}

#[test]
fn a_fifo_named_like_a_spec_is_not_opened() {
    // Before: reading it blocked forever.
    let (tmp, dir) = spec_dir(&[("a.yaml", SMALL.as_bytes())]);
    let fifo = dir.join("pipe.yaml");
    let made = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success(), "mkfifo failed");
    check(&tmp, &dir).expect(
        1,
        &["pipe.yaml:1:1: error: this spec file cannot be read: not a regular file"],
    );
}

#[test]
fn a_dangling_spec_link_is_a_diagnostic_and_the_rest_is_checked() {
    // Before: the whole run stopped with a usage error (exit 2).
    let (tmp, dir) = spec_dir(&[("a.yaml", SMALL.as_bytes())]);
    std::os::unix::fs::symlink("nowhere.yaml", dir.join("gone.yaml")).expect("symlink");
    check(&tmp, &dir).expect(
        1,
        &[
            "gone.yaml:1:1: error: this spec file cannot be read",
            "1 error, 0 warnings",
        ],
    );
}

#[test]
fn a_long_line_with_many_problems_stays_linear() {
    // 10,000 unknown keys on one 100 KB line. Before: each diagnostic measured its token and
    // showed its line from the start of the line, so the run took minutes.
    let keys: Vec<String> = (0..10_000).map(|i| format!("k{i}: 1")).collect();
    let text = format!("{{{}}}\n", keys.join(", "));
    let (tmp, dir) = spec_dir(&[("long.yaml", text.as_bytes())]);
    check(&tmp, &dir).expect(
        1,
        &[
            "long.yaml:1:2: error: unknown key `k0` in a spec file",
            "long.yaml:1:98882: error: unknown key `k9999`",
            " 1 | … (column 98882 of a line too long to show)",
            "10000 errors",
        ],
    );
}

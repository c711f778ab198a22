//! `prmc`'s command line as clap reads it: the subcommands, their arguments and help texts.

use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "prmc",
    version,
    about = "Checks PRM layout specs and shows their resolved layouts"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Copy, Clone, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// `file:line:col: error: message` with the source line and a caret.
    Human,
    /// One JSON document on stdout.
    Json,
}

/// `prmc diff`'s output formats.
#[derive(Copy, Clone, PartialEq, Eq, ValueEnum)]
pub enum DiffFormat {
    /// Grouped by item, one line per change.
    Text,
    /// The report as one JSON document (see docs/spec-format.md, "Spec diff").
    Json,
}

#[derive(Subcommand)]
pub enum Command {
    /// Checks every spec file under SPEC_DIR and reports all problems; given one FILE, checks
    /// the spec directory it is in (its references need the others) and reports that file's.
    ///
    /// Exit status: 0 when there are no errors, 1 when there are, 2 on a usage error.
    Check {
        /// Directory of `*.yaml` spec files, or one spec file.
        #[arg(default_value = "spec", value_name = "SPEC_DIR|FILE")]
        spec_dir: PathBuf,
        /// Output format for diagnostics.
        #[arg(long, value_enum, default_value_t = Format::Human)]
        format: Format,
    },
    /// Prints what NAME names: a structure or union as a PRM-style table (reserved gaps
    /// included), an enum with its values and the fields of its type, a command (by name or
    /// opcode, e.g. 0x400) with its op_mods and mailbox layouts, or a field path
    /// (`cmd_hca_cap.log_max_qp`, through nested layouts) with its position, type and doc.
    Show {
        /// The structure, union, register block, enum, command, opcode or field path.
        name: String,
        /// Directory of `*.yaml` spec files.
        #[arg(long, default_value = "spec")]
        spec: PathBuf,
        /// Only the rows of a layout whose name contains this (case-insensitive).
        #[arg(long)]
        filter: Option<String>,
    },
    /// Prints every structure's resolved layout, one field per line (tab-separated:
    /// struct, field, bit offset, width, kind, type), or as JSON with --json.
    Layout {
        /// Print the JSON contract documented in docs/spec-format.md.
        #[arg(long)]
        json: bool,
        /// Directory of `*.yaml` spec files.
        #[arg(long, default_value = "spec")]
        spec: PathBuf,
        /// Only this structure or union.
        name: Option<String>,
    },
    /// Generates Rust views from the specs (the checked-in `mlx5-prm/src/generated`).
    Gen {
        /// Directory of `*.yaml` spec files.
        #[arg(default_value = "spec")]
        spec_dir: PathBuf,
        /// Output directory (one file per spec file, plus `mod.rs`).
        #[arg(long, default_value = "mlx5-prm/src/generated")]
        out: PathBuf,
        /// Write nothing; exit 1 when the output directory differs from a fresh generation.
        #[arg(long)]
        check: bool,
        /// Path of the crate that provides the runtime: `crate` inside mlx5-prm,
        /// `::mlx5_prm` for another crate.
        #[arg(long, default_value = "crate")]
        runtime: String,
    },
    /// Imports kernel-style `mlx5_ifc.h` headers as spec YAML (one file per header, following
    /// `#include "..."`), for cross-checks and scale tests.
    Import {
        /// Header files.
        #[arg(required = true)]
        headers: Vec<PathBuf>,
        /// Output directory (not with --only).
        #[arg(long, required_unless_present = "only")]
        out: Option<PathBuf>,
        /// Show the warnings (layouts written in another form than the header's).
        #[arg(long)]
        verbose: bool,
        /// Print only this layout, as a spec file of its own, to stdout (no OUT needed): a
        /// start for adding it to a spec.
        #[arg(long, value_name = "NAME")]
        only: Option<String>,
    },
    /// Compares the spec with a kernel `mlx5_ifc.h`: every layout both define, field by field
    /// (offset, width, count), and every enum with a counterpart among the header's constants,
    /// value by value; each difference with both positions in PRM notation and the spec's
    /// file:line.
    ///
    /// Exit status: 0 when nothing differs (or, with --expected, everything that differs is
    /// listed and every listed difference occurs), 1 otherwise, 2 on a usage error.
    Compare {
        /// The header (`include/linux/mlx5/mlx5_ifc.h`).
        #[arg(long)]
        header: PathBuf,
        /// Directory of `*.yaml` spec files.
        #[arg(long, default_value = "spec")]
        spec: PathBuf,
        /// The intended differences, with their reasons (tests/kernel_differences.yaml).
        #[arg(long)]
        expected: Option<PathBuf>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Human)]
        format: Format,
        /// Only these layouts and enums.
        names: Vec<String>,
    },
    /// Compares two versions of the spec, classifying each change for the wire and the Rust API.
    ///
    /// Per layout, fields added, removed, moved, resized, retyped or renamed; enum values;
    /// commands; constants. Each change is judged for the wire (do the device's bits change?)
    /// and for the generated Rust API (does dependent code break, or silently change
    /// meaning?), with a semver-like verdict (major, minor, patch, none).
    ///
    /// Exit status: 0, or 1 when `--deny LEVEL` is given and the verdict reaches it, or when
    /// an input has errors; 2 on a usage error.
    Diff {
        /// The old version: a spec directory, or a kernel-style header (`mlx5_ifc.h`).
        old: PathBuf,
        /// The new version: a spec directory or a header.
        new: PathBuf,
        /// Output format.
        #[arg(long, value_enum, default_value_t = DiffFormat::Text)]
        format: DiffFormat,
        /// Exit 1 when the verdict reaches this level (`breaking` is `major`).
        #[arg(long, value_name = "LEVEL", value_parser = ["breaking", "major", "minor", "patch"])]
        deny: Option<String>,
    },
    /// Decodes a hex dump (plain, xxd, hexdump -C) or raw bytes through a layout: every field
    /// with its PRM position, kernel bit offset, raw and decoded value.
    ///
    /// Exit status: 0 when decoded, 1 on bad input (truncated, wrong length, bad hex), 2 on a
    /// usage error (an unknown layout).
    Decode {
        /// The structure or union (with --command: the input file).
        layout: Option<String>,
        /// The dump; `-` or none reads stdin.
        file: Option<PathBuf>,
        /// Decode a command's mailbox instead: its opcode (0x400) or name.
        #[arg(long)]
        command: Option<String>,
        /// With --command: the input mailbox (the default).
        #[arg(long = "in", conflicts_with = "output")]
        input: bool,
        /// With --command: the output mailbox.
        #[arg(long = "out")]
        output: bool,
        /// Read a union as this member: MEMBER, or PATH=MEMBER for one union (repeatable).
        #[arg(long)]
        member: Vec<String>,
        /// With --command: the op_mod the command was issued with, for unions of the output
        /// that the input's op_mod selects (QUERY_HCA_CAP's capability page).
        #[arg(long, requires = "command", value_parser = parse_u64)]
        op_mod: Option<u64>,
        /// Elements decoded per array, the first ones (a number, or `all`); the array's line
        /// says how many it has.
        #[arg(long, value_name = "N|all", default_value = "256", value_parser = parse_elements)]
        elements: Elements,
        /// Output format.
        #[arg(long, value_enum, default_value_t = prm_codegen::decode::cli::OutputFormat::Text)]
        format: prm_codegen::decode::cli::OutputFormat,
        /// The input is raw bytes, not a hex dump.
        #[arg(long)]
        binary: bool,
        /// Directory of `*.yaml` spec files.
        #[arg(long, default_value = "spec")]
        spec: PathBuf,
    },
    /// Writes a layout's bytes from `field.path=value` assignments (numbers, enum value names,
    /// true/false) as hex, the inverse of `decode`.
    ///
    /// Exit status: 0 when written, 1 on a bad assignment, 2 on a usage error.
    Encode {
        /// The structure or union (not with --command).
        layout: Option<String>,
        /// Assignments, `field.path=value`.
        assignments: Vec<String>,
        /// Encode a command's mailbox instead: its opcode (0x400) or name; the input's
        /// `opcode` field is filled in unless assigned.
        #[arg(long)]
        command: Option<String>,
        /// With --command: the input mailbox (the default).
        #[arg(long = "in", conflicts_with = "output")]
        input: bool,
        /// With --command: the output mailbox.
        #[arg(long = "out")]
        output: bool,
        /// Start from this dump instead of zeros.
        #[arg(long)]
        base: Option<PathBuf>,
        /// Write raw bytes instead of hex.
        #[arg(long)]
        binary: bool,
        /// Directory of `*.yaml` spec files.
        #[arg(long, default_value = "spec")]
        spec: PathBuf,
    },
    /// Writes a static, offline HTML reference of the spec into OUT: per layout a PRM-style
    /// bit diagram and field table, per enum, command and state machine a page, an index with
    /// a search box, and every spec file with numbered lines (open OUT/index.html).
    ///
    /// Exit status: 0 when written, 1 when the spec has errors, 2 on a usage error.
    Doc {
        /// Directory of `*.yaml` spec files.
        #[arg(long, default_value = "spec")]
        spec: PathBuf,
        /// Output directory.
        #[arg(long)]
        out: PathBuf,
    },
    /// Writes a synthetic spec (for benchmarks) into OUT_DIR.
    #[command(hide = true)]
    Synth {
        /// Where to write.
        out_dir: PathBuf,
        /// Number of structures.
        #[arg(long, default_value_t = 700)]
        structs: usize,
        /// Number of fields in all.
        #[arg(long, default_value_t = 12000)]
        fields: usize,
        /// Number of files.
        #[arg(long, default_value_t = 20)]
        files: usize,
    },
}

/// A number as the spec writes them (decimal, `0x` hex, `0b` binary, `_` separators).
fn parse_u64(s: &str) -> Result<u64, String> {
    prm_codegen::num::parse_uint(s).map_err(|e| format!("`{s}`: {e}"))
}

/// `--elements`: how many elements of each array `decode` shows.
#[derive(Debug, Clone, Copy)]
pub struct Elements(pub Option<u64>);

fn parse_elements(s: &str) -> Result<Elements, String> {
    if s == "all" {
        return Ok(Elements(None));
    }
    parse_u64(s).map(|n| Elements(Some(n)))
}

//! `prmc`: the PRM spec compiler's command line.

use clap::{Parser, Subcommand, ValueEnum};
use prm_codegen::Compilation;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "prmc",
    version,
    about = "Checks PRM layout specs and shows their resolved layouts"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Copy, Clone, PartialEq, Eq, ValueEnum)]
enum Format {
    /// `file:line:col: error: message` with the source line and a caret.
    Human,
    /// One JSON document on stdout.
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// Checks every spec file under SPEC_DIR and reports all problems.
    ///
    /// Exit status: 0 when there are no errors, 1 when there are, 2 on a usage error.
    Check {
        /// Directory of `*.yaml` spec files.
        #[arg(default_value = "spec")]
        spec_dir: PathBuf,
        /// Output format for diagnostics.
        #[arg(long, value_enum, default_value_t = Format::Human)]
        format: Format,
    },
    /// Prints one structure as a PRM-style table, reserved gaps included.
    Show {
        /// The structure, register block or union to show.
        name: String,
        /// Directory of `*.yaml` spec files.
        #[arg(long, default_value = "spec")]
        spec: PathBuf,
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
        /// Output directory.
        #[arg(long)]
        out: PathBuf,
        /// Show the warnings (layouts written in another form than the header's).
        #[arg(long)]
        verbose: bool,
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

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli.command) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("prmc: error: {message}");
            ExitCode::from(2)
        }
    }
}

fn compile(dir: &Path) -> Result<Compilation, String> {
    if !dir.is_dir() {
        return Err(format!("spec directory `{}` does not exist", dir.display()));
    }
    let c = prm_codegen::compile_dir(dir)
        .map_err(|e| format!("cannot read `{}`: {e}", dir.display()))?;
    if c.sources.files.is_empty() {
        return Err(format!(
            "no spec files (*.yaml, *.yml) under `{}`",
            dir.display()
        ));
    }
    Ok(c)
}

/// Compiles and, on errors, prints them and returns exit status 1.
fn compile_clean(dir: &Path) -> Result<Result<Compilation, ExitCode>, String> {
    let c = compile(dir)?;
    if c.is_ok() {
        if !c.diagnostics.is_empty() {
            eprint!("{}", c.render_human());
        }
        Ok(Ok(c))
    } else {
        eprint!("{}", c.render_human());
        Ok(Err(ExitCode::from(1)))
    }
}

fn run(command: Command) -> Result<ExitCode, String> {
    match command {
        Command::Check { spec_dir, format } => {
            let c = compile(&spec_dir)?;
            match format {
                Format::Human => eprint!("{}", c.render_human()),
                Format::Json => print!("{}", c.render_json()),
            }
            Ok(if c.is_ok() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        Command::Show { name, spec } => {
            let c = match compile_clean(&spec)? {
                Ok(c) => c,
                Err(code) => return Ok(code),
            };
            if let Some(s) = c.ir.find_struct(&name) {
                print!("{}", prm_codegen::show::table(&c.ir, s));
                return Ok(ExitCode::SUCCESS);
            }
            if let Some(u) = c.ir.find_union(&name) {
                print!("{}", prm_codegen::show::union_table(&c.ir, u));
                return Ok(ExitCode::SUCCESS);
            }
            let names: Vec<&str> =
                c.ir.structs
                    .iter()
                    .map(|s| s.name.as_str())
                    .chain(c.ir.unions.iter().map(|u| u.name.as_str()))
                    .collect();
            let hint = prm_codegen::load::suggest(&name, &names)
                .map(|s| format!(" (did you mean `{s}`?)"))
                .unwrap_or_default();
            Err(format!(
                "no structure or union named `{name}` in `{}`{hint}",
                spec.display()
            ))
        }
        Command::Layout { json, spec, name } => {
            let c = match compile_clean(&spec)? {
                Ok(c) => c,
                Err(code) => return Ok(code),
            };
            let doc = match name {
                None => prm_codegen::layout::layout(&c.ir),
                Some(n) => prm_codegen::layout::layout_of(&c.ir, &n).ok_or_else(|| {
                    format!("no structure or union named `{n}` in `{}`", spec.display())
                })?,
            };
            if json {
                let text = serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?;
                println!("{text}");
            } else {
                print!("{}", prm_codegen::layout::to_text(&doc));
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Gen {
            spec_dir,
            out,
            check,
            runtime,
        } => {
            let c = match compile_clean(&spec_dir)? {
                Ok(c) => c,
                Err(code) => return Ok(code),
            };
            let mut config = prm_codegen::gen::Config::for_mlx5_prm();
            if runtime != "crate" {
                config = config.runtime_crate(&runtime);
            }
            let files = config.generate(&c.ir).map_err(|e| e.to_string())?;
            if check {
                let differ = prm_codegen::gen::drift(&files, &out).map_err(|e| e.to_string())?;
                if differ.is_empty() {
                    eprintln!("prmc: {} is up to date", out.display());
                    return Ok(ExitCode::SUCCESS);
                }
                for d in &differ {
                    eprintln!("prmc: out of date: {}", out.join(d).display());
                }
                eprintln!("prmc: run `{}`", prm_codegen::gen::REGENERATE);
                return Ok(ExitCode::from(1));
            }
            let written = prm_codegen::gen::write_files(&files, &out).map_err(|e| e.to_string())?;
            let lines: usize = files.iter().map(|f| f.contents.lines().count()).sum();
            eprintln!(
                "prmc: {} files, {lines} lines in {} ({} changed)",
                files.len(),
                out.display(),
                written.len()
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Import {
            headers,
            out,
            verbose,
        } => {
            let imp = prm_codegen::import::import(&headers).map_err(|e| e.to_string())?;
            let errors = imp.diagnostics.error_count();
            if verbose || errors > 0 {
                for d in imp.diagnostics.sorted() {
                    if verbose || d.severity == prm_codegen::diag::Severity::Error {
                        eprint!("{}", prm_codegen::diag::render_human(d, &imp.sources));
                    }
                }
            }
            std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
            for (name, text) in &imp.files {
                let path = out.join(name);
                std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
            }
            eprintln!(
                "prmc: imported {} layouts, {} fields from {} header(s) into {} ({} errors, {} warnings{})",
                imp.layouts,
                imp.fields,
                imp.sources.files.len(),
                out.display(),
                errors,
                imp.diagnostics.warning_count(),
                if verbose { "" } else { "; --verbose shows them" }
            );
            Ok(if errors > 0 {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            })
        }
        Command::Decode {
            layout,
            file,
            command,
            input: _,
            output,
            member,
            format,
            binary,
            spec,
        } => {
            use prm_codegen::decode::cli::{self, Which};
            let c = match compile_clean(&spec)? {
                Ok(c) => c,
                Err(code) => return Ok(code),
            };
            let (which, file) = match (command, layout) {
                (Some(cmd), l) => (Which::Command(cmd, output), file.or(l.map(PathBuf::from))),
                (None, Some(l)) => (Which::Layout(l), file),
                (None, None) => return Err("name a LAYOUT or a --command".into()),
            };
            let json = format == cli::OutputFormat::Json;
            match cli::decode(&c.ir, &which, file.as_deref(), binary, &member, json) {
                Ok(text) => cli::write_stdout(text.as_bytes())?,
                Err(cli::Failure::Usage(m)) => return Err(m),
                Err(cli::Failure::Input(m)) => {
                    eprintln!("prmc: error: {m}");
                    return Ok(ExitCode::from(1));
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Encode {
            layout,
            mut assignments,
            command,
            input: _,
            output,
            base,
            binary,
            spec,
        } => {
            use prm_codegen::decode::cli::{self, Which};
            let c = match compile_clean(&spec)? {
                Ok(c) => c,
                Err(code) => return Ok(code),
            };
            let which = match (command, layout) {
                (Some(cmd), l) => {
                    // With --command every positional is an assignment.
                    assignments.splice(0..0, l);
                    Which::Command(cmd, output)
                }
                (None, Some(l)) => Which::Layout(l),
                (None, None) => return Err("name a LAYOUT or a --command".into()),
            };
            match cli::encode(&c.ir, &which, base.as_ref(), &assignments, binary) {
                Ok(bytes) => cli::write_stdout(&bytes)?,
                Err(cli::Failure::Usage(m)) => return Err(m),
                Err(cli::Failure::Input(m)) => {
                    eprintln!("prmc: error: {m}");
                    return Ok(ExitCode::from(1));
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Synth {
            out_dir,
            structs,
            fields,
            files,
        } => {
            std::fs::create_dir_all(&out_dir).map_err(|e| format!("{}: {e}", out_dir.display()))?;
            for (name, text) in prm_codegen::synth::synthetic_spec(structs, fields, files) {
                let path = out_dir.join(name);
                std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

// Code generation allocates millions of small token trees; mimalloc roughly halves the time
// glibc's allocator spends on them.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

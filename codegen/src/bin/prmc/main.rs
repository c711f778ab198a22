//! `prmc`: the PRM spec compiler's command line.

use clap::Parser;
use prm_codegen::Compilation;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

mod args;

use args::{Cli, Command, DiffFormat, Format};

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
            let mut c;
            if spec_dir.is_file() {
                let dir = match spec_dir.parent() {
                    Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
                    _ => PathBuf::from("."),
                };
                c = compile(&dir)?;
                let others = c.only_file(&spec_dir).ok_or_else(|| {
                    format!(
                        "`{}` is not a spec file (*.yaml, *.yml) of `{}`",
                        spec_dir.display(),
                        dir.display()
                    )
                })?;
                if others > 0 {
                    eprintln!(
                        "prmc: note: {others} error{} in other files of `{}` not shown",
                        if others == 1 { "" } else { "s" },
                        dir.display()
                    );
                }
            } else {
                c = compile(&spec_dir)?;
            }
            match format {
                Format::Human => eprint!("{}", c.render_human()),
                Format::Json => stdout(&c.render_json()),
            }
            Ok(if c.is_ok() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        Command::Show { name, spec, filter } => {
            let c = match compile_clean(&spec)? {
                Ok(c) => c,
                Err(code) => return Ok(code),
            };
            match prm_codegen::show_items::show(&c.ir, &name, filter.as_deref()) {
                prm_codegen::show_items::Shown::Text(t) => {
                    stdout(&t);
                    Ok(ExitCode::SUCCESS)
                }
                prm_codegen::show_items::Shown::Unknown(hint) => {
                    let hint = hint
                        .map(|s| format!(" (did you mean `{s}`?)"))
                        .unwrap_or_default();
                    eprintln!(
                        "prmc: error: no layout, enum, command or field path `{name}` in `{}`{hint}",
                        spec.display()
                    );
                    Ok(ExitCode::from(1))
                }
            }
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
                stdout(&format!("{text}\n"));
            } else {
                stdout(&prm_codegen::layout::to_text(&doc));
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
            // The preamble (and --check) name the command that was run, with its directories.
            let default = spec_dir == Path::new("spec")
                && out == Path::new("mlx5-prm/src/generated")
                && runtime == "crate";
            if !default {
                config.regenerate = regenerate_command(&spec_dir, &out, &runtime);
            }
            let regenerate = config.regenerate.clone();
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
                match prm_codegen::diff::generated::drift_report(&files, &out) {
                    None => eprintln!("prmc: {} holds no generated layouts yet", out.display()),
                    Some(r) if r.changes.is_empty() => {
                        eprintln!("prmc: no layout changed (the difference is in code or docs)")
                    }
                    Some(r) => eprint!("{}", prm_codegen::diff::render::text(&r)),
                }
                eprintln!("prmc: run `{regenerate}`");
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
            only,
        } => {
            let imp = prm_codegen::import::import(&headers).map_err(|e| e.to_string())?;
            if let Some(name) = only {
                return match prm_codegen::import::only(&imp, &name) {
                    Some(text) => {
                        stdout(&text);
                        Ok(ExitCode::SUCCESS)
                    }
                    None => {
                        eprintln!("prmc: error: no layout `{name}` in the header(s)");
                        Ok(ExitCode::from(1))
                    }
                };
            }
            let Some(out) = out else {
                return Err("--out DIR is needed (or --only NAME)".into());
            };
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
                "prmc: imported {} layouts, {} fields, {} enums, {} commands from {} header(s) into {} ({} errors, {} warnings{})",
                imp.layouts,
                imp.fields,
                imp.spec_enums,
                imp.commands,
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
        Command::Compare {
            header,
            spec,
            expected,
            format,
            names,
        } => {
            let c = match compile_clean(&spec)? {
                Ok(c) => c,
                Err(code) => return Ok(code),
            };
            let list = match &expected {
                None => None,
                Some(p) => {
                    // An expected-differences list is a few lines; 1 MiB bounds what a
                    // wrong path (`/dev/zero`) can cost.
                    let mut text = String::new();
                    std::fs::File::open(p)
                        .and_then(|f| {
                            std::io::Read::read_to_string(
                                &mut std::io::Read::take(f, 1 << 20),
                                &mut text,
                            )
                        })
                        .map_err(|e| format!("cannot read `{}`: {e}", p.display()))?;
                    if text.len() >= 1 << 20 {
                        return Err(format!(
                            "`{}`: more than the 1 MiB a list of expected differences may hold",
                            p.display()
                        ));
                    }
                    Some(
                        prm_codegen::compare::expected::Expected::parse(&text)
                            .map_err(|e| format!("{}: {e}", p.display()))?,
                    )
                }
            };
            let (kernel, enums) = match prm_codegen::compare::import_header(&header) {
                Ok(k) => k,
                Err(e) => {
                    eprintln!("prmc: error: {}: {e}", header.display());
                    return Ok(ExitCode::from(1));
                }
            };
            let counterparts = list
                .as_ref()
                .map(|l| l.enum_counterparts.clone())
                .unwrap_or_default();
            let report =
                prm_codegen::compare::compare(&c.ir, &kernel, &enums, &counterparts, &names);
            let problems = list.as_ref().map(|l| l.problems(&report, &names));
            match format {
                Format::Human => stdout(&prm_codegen::compare::render_text(
                    &report,
                    &header.display().to_string(),
                    problems.as_deref(),
                )),
                Format::Json => {
                    let v = serde_json::json!({ "report": report, "problems": problems });
                    stdout(&format!("{v:#}\n"));
                }
            }
            let bad = match &problems {
                Some(p) => !p.is_empty(),
                None => !report.differences.is_empty(),
            };
            Ok(if bad {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            })
        }
        Command::Diff {
            old,
            new,
            format,
            deny,
        } => diff(&old, &new, format, deny.as_deref()),
        Command::Decode {
            layout,
            file,
            command,
            input: _,
            output,
            member,
            op_mod,
            elements,
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
            let picks = cli::Picks {
                member,
                op_mod,
                max_elements: elements.0,
            };
            match cli::decode(&c.ir, &which, file.as_deref(), binary, &picks, json) {
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
        Command::Doc { spec, out } => {
            let c = match compile_clean(&spec)? {
                Ok(c) => c,
                Err(code) => return Ok(code),
            };
            let pages = prm_codegen::doc::render(&c);
            let bytes = prm_codegen::doc::write(&pages, &out)
                .map_err(|e| format!("writing `{}`: {e}", out.display()))?;
            eprintln!(
                "prmc: {} files, {} KiB in {} (open {})",
                pages.len(),
                bytes.div_ceil(1024),
                out.display(),
                out.join("index.html").display()
            );
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

/// The command that regenerates `out` from `spec_dir` as this run was asked to (the
/// directories and runtime it was given, not the defaults).
fn regenerate_command(spec_dir: &Path, out: &Path, runtime: &str) -> String {
    fn quote(s: &str) -> String {
        let plain = !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-./:+=@,".contains(c));
        if plain {
            s.to_string()
        } else {
            format!("'{}'", s.replace('\'', "'\\''"))
        }
    }
    let mut cmd = format!(
        "cargo run -p prm-codegen -- gen {} --out {}",
        quote(&spec_dir.display().to_string()),
        quote(&out.display().to_string())
    );
    if runtime != "crate" {
        cmd.push_str(&format!(" --runtime {}", quote(runtime)));
    }
    cmd
}

/// `prmc diff`: loads both sides, prints the report, gates on `--deny`.
fn diff(
    old: &Path,
    new: &Path,
    format: DiffFormat,
    deny: Option<&str>,
) -> Result<ExitCode, String> {
    use prm_codegen::diff::{self, input::InputError};
    let load = |p: &Path| match diff::input::load(p) {
        Ok(c) => Ok(Ok(c)),
        Err(InputError::Usage(m)) => Err(m),
        Err(InputError::Invalid(text)) => {
            eprint!("{text}");
            Ok(Err(ExitCode::from(1)))
        }
    };
    let o = match load(old)? {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let n = match load(new)? {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let report = diff::diff(
        &o.ir,
        &n.ir,
        &old.display().to_string(),
        &new.display().to_string(),
    );
    let text = match format {
        DiffFormat::Text => diff::render::text(&report),
        DiffFormat::Json => diff::render::json(&report),
    };
    stdout(&text);
    let denied = deny
        .and_then(diff::Level::parse_deny)
        .is_some_and(|level| report.verdict >= level);
    Ok(if denied {
        eprintln!(
            "prmc: verdict {} reaches --deny {}",
            report.verdict.name(),
            deny.unwrap_or_default()
        );
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

// Code generation allocates millions of small token trees; mimalloc roughly halves the time
// glibc's allocator spends on them.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Writes a command's output to stdout. A reader that went away (`prmc layout | head`) ends
/// the output quietly instead of panicking as `print!` would; other write errors are reported.
fn stdout(text: &str) {
    if let Err(e) = prm_codegen::decode::cli::write_stdout(text.as_bytes()) {
        eprintln!("prmc: error: writing the output: {e}");
    }
}

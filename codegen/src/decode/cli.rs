//! What `prmc decode` and `prmc encode` run, kept out of `main.rs` so the command line stays a
//! thin clap layer and the behaviour can be tested as a library.

use super::tree::{check_length, DecodeError, Options, Target};
use super::{encode, hex, render, tree};
use crate::ir::Ir;
use std::path::{Path, PathBuf};

/// Why a command failed; the two map to the exit statuses 2 and 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// A usage error (an unknown layout or command): exit 2.
    Usage(String),
    /// Bad input (the dump, an assignment): exit 1.
    Input(String),
}

impl From<DecodeError> for Failure {
    fn from(e: DecodeError) -> Failure {
        Failure::Input(e.0)
    }
}

/// `prmc decode --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// An indented tree, one field a line: path, PRM position, bit+width, raw, value.
    Text,
    /// One JSON document: `{ "layout", "bytes", "root" }` (see docs/spec-format.md).
    Json,
}

/// Which layout to use: by name, or a command's input or output mailbox.
#[derive(Debug, Clone)]
pub enum Which {
    /// A structure or union by name.
    Layout(String),
    /// A command (opcode or name) and whether its output (`true`) or input is meant.
    Command(String, bool),
}

/// Finds a command by opcode or name.
fn command<'a>(ir: &'a Ir, c: &str) -> Result<&'a crate::ir::Command, Failure> {
    match crate::num::parse_uint(c) {
        Ok(op) => ir.commands.iter().find(|x| x.opcode == op),
        Err(_) => ir.find_command(c),
    }
    .ok_or_else(|| Failure::Usage(format!("no command with opcode or name `{c}` in the spec")))
}

/// Finds the layout.
pub fn target<'a>(ir: &'a Ir, which: &Which) -> Result<Target<'a>, Failure> {
    let name = match which {
        Which::Layout(n) => n.clone(),
        Which::Command(c, out) => {
            let cmd = command(ir, c)?;
            if *out {
                cmd.output.clone()
            } else {
                cmd.input.clone()
            }
        }
    };
    Target::find(ir, &name).ok_or_else(|| {
        let names: Vec<&str> = ir
            .structs
            .iter()
            .map(|s| s.name.as_str())
            .chain(ir.unions.iter().map(|u| u.name.as_str()))
            .collect();
        let hint = crate::load::suggest(&name, &names)
            .map(|s| format!(" (did you mean `{s}`?)"))
            .unwrap_or_default();
        Failure::Usage(format!("no structure or union named `{name}`{hint}"))
    })
}

/// Bytes `prmc decode` reads as its input: the largest layout is 64 KiB
/// (`load::limits::MAX_LAYOUT_BYTES`), which a text dump writes in under 256 KiB, so this is
/// far above any real dump and bounds what `/dev/zero` or an endless pipe can cost.
pub const MAX_INPUT_BYTES: u64 = 16 << 20;

/// Reads a file (`-` or none: stdin), at most [`MAX_INPUT_BYTES`]. Any kind of file is read
/// (`<(command)` gives a pipe), but no more than that.
pub fn read_source(file: Option<&Path>) -> Result<(String, Vec<u8>), Failure> {
    use std::io::Read as _;
    let bounded = |name: String, r: &mut dyn std::io::Read| {
        let mut data = Vec::new();
        r.take(MAX_INPUT_BYTES + 1)
            .read_to_end(&mut data)
            .map_err(|e| Failure::Input(format!("{name}: {e}")))?;
        if data.len() as u64 > MAX_INPUT_BYTES {
            return Err(Failure::Input(format!(
                "{name}: more than the {} MiB a dump may hold",
                MAX_INPUT_BYTES >> 20
            )));
        }
        Ok((name, data))
    };
    match file {
        None => read_source(Some(Path::new("-"))),
        Some(p) if p == Path::new("-") => bounded("<stdin>".into(), &mut std::io::stdin()),
        Some(p) => {
            let name = p.display().to_string();
            let mut f =
                std::fs::File::open(p).map_err(|e| Failure::Input(format!("{name}: {e}")))?;
            bounded(name, &mut f)
        }
    }
}

/// Turns input bytes into the buffer: raw when `binary`, else a text dump when it looks like one.
pub fn bytes_of(name: &str, data: &[u8], binary: bool) -> Result<Vec<u8>, Failure> {
    if binary {
        return Ok(data.to_vec());
    }
    hex::read_input(data).map_err(|e| Failure::Input(format!("{name}:{e}")))
}

/// Every `--member` must name a member of some union, so a typo is not silently ignored.
fn check_members(ir: &Ir, members: &[String]) -> Result<(), Failure> {
    let all: Vec<&str> = ir
        .unions
        .iter()
        .flat_map(|u| u.members.iter().map(|m| m.name.as_str()))
        .collect();
    for m in members {
        let name = m.split_once('=').map_or(m.as_str(), |(_, n)| n);
        if !all.contains(&name) {
            let hint = crate::load::suggest(name, &all)
                .map(|s| format!(" (did you mean `{s}`?)"))
                .unwrap_or_default();
            return Err(Failure::Usage(format!(
                "--member {m}: no union has a member `{name}`{hint}"
            )));
        }
    }
    Ok(())
}

/// How `prmc decode` picks union members the buffer does not decide, and how many elements of
/// each array it shows.
#[derive(Debug, Clone, Default)]
pub struct Picks {
    /// `--member`: `MEMBER` or `PATH=MEMBER`.
    pub member: Vec<String>,
    /// `--op-mod`: the op_mod of the command whose mailbox is decoded.
    pub op_mod: Option<u64>,
    /// `--elements`: elements decoded per array (`None`: all).
    pub max_elements: Option<u64>,
}

/// `prmc decode`: the rendered tree.
pub fn decode(
    ir: &Ir,
    which: &Which,
    file: Option<&Path>,
    binary: bool,
    picks: &Picks,
    json: bool,
) -> Result<String, Failure> {
    let t = target(ir, which)?;
    check_members(ir, &picks.member)?;
    let mut known = Vec::new();
    if let (Some(v), Which::Command(c, _)) = (picks.op_mod, which) {
        let cmd = command(ir, c)?;
        let op_mod = ir
            .find_struct(&cmd.input)
            .and_then(|s| s.fields.iter().find(|f| f.name == "op_mod"));
        let Some(f) = op_mod else {
            return Err(Failure::Usage(format!(
                "--op-mod: the input of {} (`{}`) has no op_mod field",
                cmd.name, cmd.input
            )));
        };
        if f.width < 64 && v >> f.width != 0 {
            return Err(Failure::Usage(format!(
                "--op-mod {v:#x} does not fit {}.op_mod ({} bits)",
                cmd.input, f.width
            )));
        }
        known.push(tree::Known {
            structure: cmd.input.clone(),
            field: "op_mod".into(),
            value: v,
            how: "--op-mod".into(),
        });
    }
    let (name, data) = read_source(file)?;
    let buf = bytes_of(&name, &data, binary)?;
    check_length(ir, t, buf.len()).map_err(|e| Failure::Input(format!("{name}: {e}")))?;
    let opts = Options {
        members: picks.member.clone(),
        known,
        max_elements: picks.max_elements,
    };
    let root = tree::decode(ir, t, &buf, &opts);
    Ok(if json {
        render::json(t.name(), buf.len(), &root)
    } else {
        render::text(t.name(), buf.len(), &root)
    })
}

/// `prmc encode`: the buffer as hex text, or raw bytes with `binary`.
pub fn encode(
    ir: &Ir,
    which: &Which,
    base: Option<&PathBuf>,
    assignments: &[String],
    binary: bool,
) -> Result<Vec<u8>, Failure> {
    let t = target(ir, which)?;
    let base = match base {
        None => None,
        Some(p) => {
            let (name, data) = read_source(Some(p))?;
            Some(bytes_of(&name, &data, false)?)
        }
    };
    let mut pairs = assignments
        .iter()
        .map(|a| encode::split_assignment(a).map(|(p, v)| (p.to_string(), v.to_string())))
        .collect::<Result<Vec<_>, _>>()?;
    // A command's input carries its opcode: fill it in unless the user set it.
    if let (Which::Command(c, false), Target::Struct(s)) = (which, t) {
        let op = command(ir, c)?.opcode;
        let has_field = s.fields.iter().any(|f| f.name == "opcode");
        if has_field && !pairs.iter().any(|(p, _)| p == "opcode") {
            pairs.insert(0, ("opcode".into(), format!("0x{op:x}")));
        }
    }
    let buf = encode::encode(ir, t, base, &pairs)?;
    Ok(if binary {
        buf
    } else {
        hex::to_hex(&buf).into_bytes()
    })
}

/// Writes the output; a reader that went away (`| head`) is not an error.
pub fn write_stdout(bytes: &[u8]) -> Result<(), String> {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(format!("stdout: {e}")),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endless_input_is_refused_at_the_limit() {
        match read_source(Some(Path::new("/dev/zero"))) {
            Err(Failure::Input(m)) => {
                assert_eq!(m, "/dev/zero: more than the 16 MiB a dump may hold")
            }
            other => panic!("{:?}", other.map(|(n, d)| (n, d.len()))),
        }
    }
}

//! `mlx5 reg`: any access register of the spec by name: list them, read one (index fields as
//! `name=value`), or write one. The image is decoded by the generated tables.

use crate::fields;
use crate::{table, Output};
use clap::Subcommand;
use mlx5_driver::backend::Backend;
use mlx5_driver::Hca;
use mlx5_prm::rt::RegisterInfo;

#[derive(Subcommand)]
pub enum Op {
    /// The registers of the spec: id, access, size, index fields.
    List,
    /// Read a register: `mlx5 reg read ppcnt local_port=1 grp=ieee_802_3`.
    Read {
        /// The register's name (`paos`), or its id (`0x5006`).
        name: String,
        /// Index fields (and any other field to send), as NAME=VALUE.
        fields: Vec<String>,
        /// Show the fields that are zero too.
        #[arg(long)]
        all: bool,
    },
    /// Write a register: `mlx5 reg write paos local_port=1 admin_status=down ase=1`. Fields
    /// not given are zero; the device's answer is shown.
    Write {
        /// The register's name or id.
        name: String,
        /// Fields as NAME=VALUE.
        fields: Vec<String>,
    },
}

fn find(name: &str) -> Result<&'static RegisterInfo, String> {
    let by_id = name
        .strip_prefix("0x")
        .and_then(|h| u16::from_str_radix(h, 16).ok())
        .and_then(mlx5_prm::reg::by_id);
    by_id
        .or_else(|| mlx5_prm::reg::by_name(&name.to_ascii_lowercase()))
        .ok_or_else(|| {
            let names: Vec<&str> = mlx5_prm::reg::ALL.iter().map(|r| r.name).collect();
            format!(
                "no register `{name}` in the spec (registers: {})",
                names.join(", ")
            )
        })
}

pub fn run<B: Backend>(hca: &Hca<B>, op: &Op, as_json: bool) -> Result<Output, String> {
    match op {
        Op::List => list(as_json),
        Op::Read { name, fields, all } => access(hca, name, fields, false, *all, as_json),
        Op::Write { name, fields } => access(hca, name, fields, true, false, as_json),
    }
}

fn list(as_json: bool) -> Result<Output, String> {
    let regs = mlx5_prm::reg::ALL;
    if as_json {
        let v: Vec<serde_json::Value> = regs
            .iter()
            .map(|r| {
                serde_json::json!({
                    "name": r.name, "id": r.id, "layout": r.layout, "size": r.size,
                    "access": r.access.name(), "index": r.index, "summary": r.summary,
                })
            })
            .collect();
        return Ok(Output::Json(serde_json::Value::Array(v)));
    }
    let mut s = format!(
        "{:<16} {:<7} {:<10} {:>5}  {:<40} {}\n",
        "register", "id", "access", "bytes", "index", "summary"
    );
    for r in regs {
        s.push_str(&format!(
            "{:<16} {:<7} {:<10} {:>5}  {:<40} {}\n",
            r.name,
            format!("{:#06x}", r.id),
            r.access.name(),
            r.size,
            r.index.join(","),
            r.summary
        ));
    }
    Ok(Output::Text(s))
}

fn access<B: Backend>(
    hca: &Hca<B>,
    name: &str,
    pairs: &[String],
    write: bool,
    all: bool,
    as_json: bool,
) -> Result<Output, String> {
    let reg = find(name)?;
    let layout = mlx5_prm::layout_by_name(reg.layout)
        .ok_or_else(|| format!("no table for {}", reg.layout))?;
    let mut image = vec![0u8; reg.size];
    fields::assign(layout, &mut image, pairs).map_err(|e| format!("{}: {e}", reg.name))?;
    let answer = hca
        .access_reg_raw(reg, write, &image)
        .map_err(|e| e.to_string())?;
    if as_json {
        return Ok(Output::Json(serde_json::json!({
            "register": reg.name,
            "id": reg.id,
            "fields": fields::to_json(layout, &answer),
            "image": answer,
        })));
    }
    let mut rows = Vec::new();
    fields::lines(layout, &answer, all, "", &mut rows);
    let head = format!(
        "{} (register {:#06x}, {}){}:\n",
        reg.name,
        reg.id,
        reg.layout,
        if all {
            ""
        } else {
            ", fields that are not zero"
        }
    );
    Ok(Output::Text(format!("{head}{}", table(&rows))))
}

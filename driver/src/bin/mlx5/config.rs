//! `mlx5 config`: the adapter's non-volatile configuration, as `mlxconfig` shows and sets it:
//! each setting's current value, the value the next reset loads, and the factory default;
//! `set` writes next values, which take effect only after a firmware or function reset.

use crate::{json, Output};
use clap::Subcommand;
use mlx5_driver::backend::Backend;
use mlx5_driver::nvconfig::{NvItem, NvSetting};
use mlx5_driver::Hca;

#[derive(Subcommand)]
pub enum Op {
    /// Every setting (or those named): current, next (after reset) and default values.
    Query {
        /// Settings to show (all when none).
        items: Vec<String>,
    },
    /// Write settings as KEY=VALUE (`sriov_en=1 total_vfs=8 swp_l4_csum_mode=l4_only`); in
    /// force after the next reset.
    Set {
        /// KEY=VALUE pairs.
        #[arg(required = true)]
        pairs: Vec<String>,
    },
    /// Which configuration items exist and may be read or written (MNVQC).
    Caps,
}

pub fn run<B: Backend>(hca: &Hca<B>, op: &Op, as_json: bool) -> Result<Output, String> {
    match op {
        Op::Query { items } => query(hca, items, as_json),
        Op::Set { pairs } => set(hca, pairs, as_json),
        Op::Caps => caps(hca, as_json),
    }
}

fn query<B: Backend>(hca: &Hca<B>, names: &[String], as_json: bool) -> Result<Output, String> {
    let wanted = names
        .iter()
        .map(|n| NvItem::by_name(n).map_err(|e| e.to_string()))
        .collect::<Result<Vec<_>, _>>()?;
    let nv = hca.nv_config();
    let settings: Vec<NvSetting> = if wanted.is_empty() {
        nv.query_all().map_err(|e| e.to_string())?
    } else {
        wanted
            .iter()
            .map(|i| nv.query(*i).map_err(|e| format!("{}: {e}", i.name())))
            .collect::<Result<_, _>>()?
    };
    if as_json {
        return Ok(Output::Json(serde_json::json!({
            "settings": json(&settings)?,
            "reset_required": settings.iter().any(|s| s.pending),
        })));
    }
    Ok(Output::Text(table(&settings)))
}

/// The settings as `mlxconfig query` lays them out; `*` marks a next value that waits for a
/// reset.
fn table(settings: &[NvSetting]) -> String {
    let mut s = format!(
        "Configurations:\n\t{:<26} {:<12} {:<12} {}\n",
        "setting", "current", "next", "default"
    );
    for set in settings {
        let item = NvItem::by_name(set.item).ok();
        let show = |v: u32| item.map_or_else(|| v.to_string(), |i| i.format(v));
        let next = format!("{}{}", if set.pending { "*" } else { "" }, show(set.next));
        s.push_str(
            format!(
                "\t{:<26} {:<12} {:<12} {:<12}{}",
                set.item,
                show(set.current),
                next,
                show(set.default),
                if set.writable { "" } else { " (read only)" }
            )
            .trim_end(),
        );
        s.push('\n');
    }
    if settings.iter().any(|s| s.pending) {
        s.push_str("* next value: in force after the next firmware or function reset.\n");
    }
    s
}

fn set<B: Backend>(hca: &Hca<B>, pairs: &[String], as_json: bool) -> Result<Output, String> {
    // Every pair is checked before anything is written: its form, its value, and what the
    // device's capabilities allow of it (which reads them).
    let mut writes = Vec::new();
    for pair in pairs {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| format!("`{pair}` is not KEY=VALUE"))?;
        let item = NvItem::by_name(key.trim()).map_err(|e| e.to_string())?;
        if !item.writable() {
            return Err(format!("{}: read only", item.name()));
        }
        writes.push((item, item.parse(value).map_err(|e| e.to_string())?));
    }
    let nv = hca.nv_config();
    for &(item, value) in &writes {
        nv.check(item, value).map_err(|e| named(item, &e))?;
    }
    let mut done = Vec::new();
    for (item, value) in writes {
        done.push(nv.set(item, value).map_err(|e| named(item, &e))?);
    }
    let pending = done.iter().any(|d| d.pending);
    if as_json {
        return Ok(Output::Json(serde_json::json!({
            "set": json(&done)?,
            "reset_required": pending,
        })));
    }
    let mut s = String::new();
    for d in &done {
        let item = NvItem::by_name(d.item).map_err(|e| e.to_string())?;
        s.push_str(&format!(
            "{}: next {} (current {})\n",
            d.item,
            item.format(d.next),
            item.format(d.current)
        ));
    }
    s.push_str(if pending {
        "Reset needed: the new values take effect at the next firmware or function reset.\n"
    } else {
        "Nothing waits for a reset: the values written are the ones in force.\n"
    });
    Ok(Output::Text(s))
}

/// The error as text that starts with the setting's name (refusals of the device name the
/// register; say which setting it was).
fn named(item: NvItem, e: &mlx5_driver::Error) -> String {
    let e = e.to_string();
    if e.starts_with(item.name()) {
        e
    } else {
        format!("{}: {e}", item.name())
    }
}

fn caps<B: Backend>(hca: &Hca<B>, as_json: bool) -> Result<Output, String> {
    let caps = hca.nv_config().capabilities().map_err(|e| e.to_string())?;
    if as_json {
        return Ok(Output::Json(json(&caps)?));
    }
    let mut s = format!(
        "{:<23} {:<10} {:<5} {:<6} {}\n",
        "item", "type", "read", "write", "version"
    );
    for c in &caps {
        s.push_str(&format!(
            "{:<23} {:<10} {:<5} {:<6} {}\n",
            c.config_item.unwrap_or("?"),
            format!("{:#010x}", c.type_word),
            c.readable,
            c.writable,
            c.version
        ));
    }
    Ok(Output::Text(s))
}

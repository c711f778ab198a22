//! `mlx5 link`: the port's link as `ethtool DEV` shows it, plus the PRM's view (PTYS mode
//! names, PAOS admin state, PMTU, PFCC); and its changes.

use crate::{json, Output};
use clap::Subcommand;
use mlx5_driver::backend::Backend;
use mlx5_driver::port::{link_modes, Link, LinkMode, OperState, Port};
use mlx5_driver::Hca;
use serde_json::json;

#[derive(Subcommand)]
pub enum Change {
    /// Bring the port up (PAOS admin up).
    Up,
    /// Take the port down (PAOS admin down).
    Down,
    /// Set the MTU (PMTU admin_mtu).
    Mtu {
        /// Bytes.
        mtu: u16,
    },
    /// Limit the modes the port may use (PTYS admin), by `ethtool` or spec name.
    Advertise {
        /// e.g. `25000baseSR/Full` or `eth_25gbase_sr`.
        #[arg(required = true)]
        modes: Vec<String>,
    },
    /// Forward error correction (PPLM), as `ethtool --set-fec DEV encoding E`: auto, off,
    /// baser, rs or llrs.
    Fec {
        /// The encoding.
        encoding: String,
    },
    /// Global pause (PFCC), as `ethtool -A DEV tx on rx off`.
    Pause {
        /// Send pause frames: on or off.
        #[arg(long, value_parser = on_off, action = clap::ArgAction::Set)]
        tx: bool,
        /// Honour received pause frames: on or off.
        #[arg(long, value_parser = on_off, action = clap::ArgAction::Set)]
        rx: bool,
    },
}

fn on_off(s: &str) -> Result<bool, String> {
    match s {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(format!("`{s}` is not on or off")),
    }
}

/// The `Port:` wording of `ethtool` for a PTYS connector.
fn port_name(connector: &str) -> &'static str {
    match connector {
        "fibre" => "FIBRE",
        "da" => "Direct Attach Copper",
        "tp" => "Twisted Pair",
        "aui" => "AUI",
        "bnc" => "BNC",
        "mii" => "MII",
        "none" => "None",
        "other" => "Other",
        _ => "Unknown!",
    }
}

/// The `ethtool` names of `modes`, each once, slowest first.
fn ethtool_names(modes: &[LinkMode]) -> Vec<String> {
    let mut modes = modes.to_vec();
    modes.sort_by_key(|m| (m.speed_mbps, m.bit));
    let mut out: Vec<String> = Vec::new();
    for m in &modes {
        let names: Vec<String> = if m.ethtool.is_empty() {
            vec![format!("({})", m.name)]
        } else {
            m.ethtool.iter().map(|s| s.to_string()).collect()
        };
        for n in names {
            if !out.contains(&n) {
                out.push(n);
            }
        }
    }
    out
}

fn mode_block(label: &str, modes: &[LinkMode]) -> String {
    let names = ethtool_names(modes);
    // Continuation lines line up under the first name: past the label, its colon and the
    // two spaces after it.
    let pad = " ".repeat(label.len() + 3);
    let mut s = format!("\t{label}:");
    if names.is_empty() {
        s.push_str(" Not reported\n");
        return s;
    }
    for (i, n) in names.iter().enumerate() {
        if i == 0 {
            s.push_str(&format!("  {n}\n"));
        } else {
            s.push_str(&format!("\t{pad}{n}\n"));
        }
    }
    s
}

pub fn run<B: Backend>(
    hca: &Hca<B>,
    port_number: u8,
    change: Option<&Change>,
    as_json: bool,
) -> Result<Output, String> {
    let port = hca.port(port_number);
    let e = |e: mlx5_driver::Error| e.to_string();
    match change {
        None => {}
        Some(Change::Up) => {
            port.set_admin(true).map_err(e)?;
        }
        Some(Change::Down) => {
            port.set_admin(false).map_err(e)?;
        }
        Some(Change::Mtu { mtu }) => {
            port.set_mtu(*mtu).map_err(e)?;
        }
        Some(Change::Advertise { modes }) => {
            let link = port.link().map_err(e)?;
            let kind = if link.extended { "extended" } else { "legacy" };
            let mut chosen: Vec<LinkMode> = Vec::new();
            for n in modes {
                let all = link_modes::matching(n, link.extended);
                if all.is_empty() {
                    return Err(format!("`{n}` names no {kind} link mode"));
                }
                // An ethtool name stands for every bit Linux shows by it; of those, the ones
                // the port supports (none: let the device refuse the first).
                let supported: Vec<LinkMode> = all
                    .iter()
                    .copied()
                    .filter(|m| link.supported.contains(m))
                    .collect();
                if supported.is_empty() {
                    chosen.push(all[0]);
                } else {
                    chosen.extend(supported);
                }
            }
            port.set_advertised(&chosen).map_err(e)?;
        }
        Some(Change::Fec { encoding }) => {
            let choice = mlx5_driver::port::FecChoice::parse(encoding).ok_or_else(|| {
                format!("`{encoding}` is not a FEC encoding (auto, off, baser, rs, llrs)")
            })?;
            port.set_fec(choice).map_err(e)?;
        }
        Some(Change::Pause { tx, rx }) => {
            port.set_pause(*tx, *rx).map_err(e)?;
        }
    }
    show(&port, as_json)
}

fn show<B: Backend>(port: &Port<'_, B>, as_json: bool) -> Result<Output, String> {
    let e = |e: mlx5_driver::Error| e.to_string();
    let state = port.state().map_err(e)?;
    let link: Link = port.link().map_err(e)?;
    let mtu = port.mtu().map_err(e)?;
    let pause = port.pause().map_err(e)?;
    let fec = port.fec().map_err(e)?;
    let down_reason = if state.oper == OperState::Up {
        None
    } else {
        port.link_down_reason().map_err(e)?
    };
    if as_json {
        return Ok(Output::Json(json!({
            "port": port.number(),
            "state": json(&state)?,
            "link": json(&link)?,
            "mtu": json(&mtu)?,
            "pause": json(&pause)?,
            "fec": json(&fec)?,
            "link_down_reason": json(&down_reason)?,
        })));
    }
    let on = |b: bool| if b { "on" } else { "off" };
    let mut s = format!("Settings for port {}:\n", port.number());
    s.push_str(&format!(
        "\tSupported ports: [ {} ]\n",
        port_name(link.connector)
    ));
    s.push_str(&mode_block("Supported link modes", &link.supported));
    s.push_str(&mode_block("Advertised link modes", &link.advertised));
    match link.speed_mbps {
        Some(speed) => s.push_str(&format!("\tSpeed: {speed}Mb/s\n\tDuplex: Full\n")),
        None => s.push_str("\tSpeed: Unknown!\n\tDuplex: Unknown! (255)\n"),
    }
    s.push_str(&format!(
        "\tAuto-negotiation: {}\n",
        on(link.autoneg.enabled)
    ));
    s.push_str(&format!("\tPort: {}\n", port_name(link.connector)));
    let oper = match state.oper {
        OperState::Up => "up".to_string(),
        OperState::Down => "down".to_string(),
        OperState::Failed(v) => format!("failed ({v:#x})"),
    };
    let detected = match (state.oper, down_reason) {
        (OperState::Up, _) => "yes".to_string(),
        (_, Some(why)) => format!("no ({why})"),
        (_, None) => "no".to_string(),
    };
    s.push_str(&format!("\tLink detected: {detected}\n"));
    s.push_str(&format!(
        "\tAdministrative state: {}\n\tOperational state: {oper}\n",
        if state.admin_up { "up" } else { "down" }
    ));
    s.push_str(&format!(
        "\tActive link mode: {}\n",
        link.active.map_or("none", |m| m.name)
    ));
    s.push_str(&format!(
        "\tAutonegotiation status: {}\n",
        link.autoneg.status
    ));
    if link.unknown_bits != 0 {
        s.push_str(&format!(
            "\tUnnamed mode bits: {:#010x}\n",
            link.unknown_bits
        ));
    }
    s.push_str(&format!(
        "\tMTU: {} (in use {}, max {})\n",
        mtu.admin, mtu.oper, mtu.max
    ));
    s.push_str(&format!(
        "\tPause: tx {}, rx {}\n",
        on(pause.tx),
        on(pause.rx)
    ));
    // The speed group of the link's speed: what the configured FEC applies to.
    let group = match link.speed_mbps {
        Some(10_000 | 40_000) => Some(0),
        Some(25_000) => Some(1),
        Some(50_000) => Some(2),
        Some(100_000) => Some(3),
        _ => None,
    };
    let word = |w: &str| match w {
        "off" => "Off",
        "baser" => "BaseR",
        "llrs" => "LLRS",
        _ => "RS",
    };
    let configured = group
        .and_then(|g| fec.groups.get(g))
        .and_then(|g| g.chosen)
        .map_or("Auto", |m| word(m.ethtool));
    s.push_str(&format!("\tConfigured FEC encodings: {configured}\n"));
    s.push_str(&format!(
        "\tActive FEC encoding: {}\n",
        fec.active.map_or("None".to_string(), |m| format!(
            "{} ({})",
            word(m.ethtool),
            m.name
        ))
    ));
    Ok(Output::Text(s))
}

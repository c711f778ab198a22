//! PPLM: the forward error correction of a port, as `ethtool --show-fec` shows it (the modes
//! each speed group can use, the one chosen for it, the one active) and `--set-fec` sets it.

use super::Port;
use crate::backend::Backend;
use crate::error::{Error, Result};
use mlx5_prm::reg::Pplm;
use mlx5_prm::PplmFecMode;

/// The speed groups PPLM has a capability and a choice for, in register order.
pub const SPEED_GROUPS: [&str; 4] = ["10g_40g", "25g", "50g", "100g"];

/// One FEC mode: the spec's name and the word `ethtool` uses for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct FecMode {
    /// The spec's name (`rs_528_514`).
    pub name: &'static str,
    /// Its bit in PPLM's masks.
    pub bit: u8,
    /// `ethtool`'s encoding word (`off`, `baser`, `rs`, `llrs`).
    pub ethtool: &'static str,
}

fn mode(m: PplmFecMode) -> FecMode {
    FecMode {
        name: m.spec_name(),
        bit: m.raw(),
        ethtool: match m {
            PplmFecMode::NoFec => "off",
            PplmFecMode::Firecode => "baser",
            PplmFecMode::Llrs2722571 => "llrs",
            _ => "rs",
        },
    }
}

/// The modes whose bits are set in `mask`.
fn modes(mask: u32) -> Vec<FecMode> {
    PplmFecMode::ALL
        .iter()
        .filter(|m| u32::from(m.raw()) < 32 && mask & (1 << m.raw()) != 0)
        .map(|&m| mode(m))
        .collect()
}

/// FEC of one speed group.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct FecGroup {
    /// `10g_40g`, `25g`, `50g` or `100g`.
    pub speeds: &'static str,
    /// Modes the port can use at these speeds.
    pub supported: Vec<FecMode>,
    /// The mode chosen (none: the firmware chooses per link mode).
    pub chosen: Option<FecMode>,
}

/// A port's FEC.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Fec {
    /// The mode in use (none while the link is down).
    pub active: Option<FecMode>,
    /// Per speed group.
    pub groups: Vec<FecGroup>,
}

/// What `ethtool --set-fec encoding …` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FecChoice {
    /// Let the firmware choose per link mode.
    Auto,
    /// One mode, for every speed group that can use it.
    Mode(PplmFecMode),
}

impl FecChoice {
    /// Parses `ethtool`'s words (`auto`, `off`, `baser`, `rs`, `llrs`) or a spec name.
    pub fn parse(s: &str) -> Option<FecChoice> {
        let s = s.to_ascii_lowercase();
        Some(match s.as_str() {
            "auto" => FecChoice::Auto,
            "off" => FecChoice::Mode(PplmFecMode::NoFec),
            "baser" => FecChoice::Mode(PplmFecMode::Firecode),
            "rs" => FecChoice::Mode(PplmFecMode::Rs528514),
            "llrs" => FecChoice::Mode(PplmFecMode::Llrs2722571),
            other => FecChoice::Mode(
                PplmFecMode::ALL
                    .iter()
                    .copied()
                    .find(|m| m.spec_name() == other)?,
            ),
        })
    }
}

impl<B: Backend> Port<'_, B> {
    /// The FEC modes the port can use, the ones chosen, and the one active.
    pub fn fec(&self) -> Result<Fec> {
        let r = self
            .hca
            .read_reg::<Pplm>(|r| r.set_local_port(self.local_port))?;
        let caps = [
            r.fec_override_cap_10g_40g(),
            r.fec_override_cap_25g(),
            r.fec_override_cap_50g(),
            r.fec_override_cap_100g(),
        ];
        let admin = [
            r.fec_override_admin_10g_40g(),
            r.fec_override_admin_25g(),
            r.fec_override_admin_50g(),
            r.fec_override_admin_100g(),
        ];
        Ok(Fec {
            active: modes(r.fec_mode_active()).into_iter().next(),
            groups: SPEED_GROUPS
                .iter()
                .zip(caps.iter().zip(admin))
                .map(|(&speeds, (&cap, adm))| FecGroup {
                    speeds,
                    supported: modes(cap.into()),
                    chosen: modes(adm.into()).into_iter().next(),
                })
                .collect(),
        })
    }

    /// Chooses the FEC (`ethtool --set-fec`): `Auto` clears every choice; a mode is chosen for
    /// every speed group that can use it (the others left to the firmware). A mode no group
    /// can use is refused before anything is sent.
    pub fn set_fec(&self, choice: FecChoice) -> Result<Fec> {
        let now = self.fec()?;
        let bit = |g: &FecGroup, m: PplmFecMode| -> u8 {
            if g.supported.iter().any(|s| s.bit == m.raw()) && m.raw() < 4 {
                1 << m.raw()
            } else {
                0
            }
        };
        let admin: Vec<u8> = match choice {
            FecChoice::Auto => vec![0; 4],
            FecChoice::Mode(m) => now.groups.iter().map(|g| bit(g, m)).collect(),
        };
        if let FecChoice::Mode(m) = choice {
            if admin.iter().all(|&a| a == 0) {
                return Err(Error::InvalidArgument {
                    what: "FEC mode",
                    why: format!(
                        "no speed group of port {} can use {}",
                        self.local_port,
                        m.spec_name()
                    ),
                });
            }
        }
        self.hca.write_reg::<Pplm>(|r| {
            r.set_local_port(self.local_port);
            r.set_fec_override_admin_10g_40g(admin[0]);
            r.set_fec_override_admin_25g(admin[1]);
            r.set_fec_override_admin_50g(admin[2]);
            r.set_fec_override_admin_100g(admin[3]);
        })?;
        self.fec()
    }
}

//! PTYS: the link modes a port supports, advertises and runs at, and its speed.

use super::link_modes::{self, LinkMode};
use super::Port;
use crate::backend::Backend;
use crate::error::{Error, Result};
use mlx5_prm::reg::Ptys;
use mlx5_prm::PtysConnectorType;

/// PTYS's `proto_mask` bit for Ethernet.
const PROTO_ETH: u8 = 0x4;

/// A port's link as PTYS reports it (`ethtool DEV` on Linux).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Link {
    /// True when the device reports the extended masks (`ext_eth_proto_*`): then they are
    /// the ones in use, as Linux does when PCAM reports ptys_extended_ethernet.
    pub extended: bool,
    /// Modes the port supports.
    pub supported: Vec<LinkMode>,
    /// Modes it may advertise or use.
    pub advertised: Vec<LinkMode>,
    /// The mode it runs at (none while down).
    pub active: Option<LinkMode>,
    /// Bits set in the masks that no known mode names (reported, not dropped).
    pub unknown_bits: u32,
    /// Speed in Mb/s (none while down).
    pub speed_mbps: Option<u32>,
    /// Autonegotiation.
    pub autoneg: Autoneg,
    /// The connector, by the spec's name (`fibre`, `da`, …).
    pub connector: &'static str,
}

/// Autonegotiation as PTYS reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Autoneg {
    /// The port can turn autonegotiation off.
    pub can_disable: bool,
    /// Autonegotiation is on.
    pub enabled: bool,
    /// Its status, by the spec's name (`link_up`, `complete`, …), or `unknown`.
    pub status: &'static str,
}

impl<B: Backend> Port<'_, B> {
    /// Link modes and speed.
    pub fn link(&self) -> Result<Link> {
        let r = self.hca.read_reg::<Ptys>(|r| {
            r.set_local_port(self.local_port);
            r.set_proto_mask(PROTO_ETH);
        })?;
        let extended = r.ext_eth_proto_capability() != 0;
        let (cap, admin, oper) = if extended {
            (
                r.ext_eth_proto_capability(),
                r.ext_eth_proto_admin(),
                r.ext_eth_proto_oper(),
            )
        } else {
            (
                r.eth_proto_capability(),
                r.eth_proto_admin(),
                r.eth_proto_oper(),
            )
        };
        // The device reports one oper bit while up; the fastest named one if it sets more.
        let active = link_modes::modes(oper, extended)
            .into_iter()
            .max_by_key(|m| m.speed_mbps);
        Ok(Link {
            extended,
            supported: link_modes::modes(cap, extended),
            advertised: link_modes::modes(admin, extended),
            active,
            unknown_bits: link_modes::unnamed_bits(cap | admin | oper, extended),
            speed_mbps: active.map(|m| m.speed_mbps),
            autoneg: Autoneg {
                can_disable: r.an_disable_cap(),
                enabled: !r.an_disable_admin(),
                status: r.an_status().map_or("unknown", |s| s.spec_name()),
            },
            connector: PtysConnectorType::from_raw(r.connector_type_raw().into())
                .map_or("unknown", |c| c.spec_name()),
        })
    }

    /// Limits the modes the port may advertise or use to `modes`, which must all be of the
    /// kind ([`Link::extended`]) the device uses and among those it supports; the device
    /// refuses an empty or unsupported set with `BAD_PARAM`.
    pub fn set_advertised(&self, modes: &[LinkMode]) -> Result<Link> {
        let extended = self.link()?.extended;
        if let Some(m) = modes.iter().find(|m| m.extended != extended) {
            return Err(Error::InvalidArgument {
                what: "link mode",
                why: format!(
                    "{} is a mode of the {} masks, but the port uses the {} ones",
                    m.name,
                    if m.extended { "extended" } else { "legacy" },
                    if extended { "extended" } else { "legacy" }
                ),
            });
        }
        let mask = link_modes::mask(modes);
        self.hca.write_reg::<Ptys>(|r| {
            r.set_local_port(self.local_port);
            r.set_proto_mask(PROTO_ETH);
            if extended {
                r.set_ext_eth_proto_admin(mask);
            } else {
                r.set_eth_proto_admin(mask);
            }
        })?;
        self.link()
    }
}

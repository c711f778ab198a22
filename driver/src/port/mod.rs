//! A port of the adapter, as `ethtool` and `mlxlink` show it: administrative and operational
//! state (PAOS), link modes and speed (PTYS), FEC (PPLM), MTU (PMTU), pause (PFCC), counters and bit
//! error rates (PPCNT), the module cage it uses (PMLP) and the module's EEPROM (MCIA, decoded
//! by [`crate::module`]). Every read and
//! write goes through the typed register access of [`Hca::read_reg`] / [`Hca::write_reg`], so a
//! failure names the register, the command status and the syndrome.
//!
//! ```
//! # #[cfg(feature = "sim")] {
//! use mlx5_driver::backend::sim::SimBackend;
//! use mlx5_driver::{Hca, HcaConfig};
//!
//! let (backend, _device) = SimBackend::new(mlx5_sim::Config::default());
//! let hca = Hca::bring_up(backend, &HcaConfig::default()).unwrap();
//! let link = hca.port(1).link().unwrap();
//! assert_eq!(link.speed_mbps, Some(100_000));
//! # }
//! ```

mod counters;
mod fec;
mod link;
pub mod link_modes;
mod mcia;
mod pddr;

pub use counters::{BitErrorRate, Counter, CounterGroup, Counters};
pub use fec::{Fec, FecChoice, FecGroup, FecMode};
pub use link::{Autoneg, Link};
pub use link_modes::LinkMode;
pub use mcia::{McIaReader, MCIA_MAX_BYTES};
pub use pddr::LinkDownReason;

use crate::backend::Backend;
use crate::error::Result;
use crate::module::{DecodeOptions, Module, ModuleError};
use crate::Hca;
use mlx5_prm::reg::{Paos, Pfcc, Pmlp, Pmtu};
use mlx5_prm::PaosPortStatus;

/// One port of an HCA (1 for the first), borrowed from it.
pub struct Port<'h, B: Backend> {
    hca: &'h Hca<B>,
    local_port: u8,
}

/// A port's state (PAOS).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct PortState {
    /// The state software asked for.
    pub admin_up: bool,
    /// The state the port is in.
    pub oper: OperState,
}

/// The operational state of a port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub enum OperState {
    /// The link is up.
    Up,
    /// The link is down.
    Down,
    /// Another value: the PRM's report of a port failure.
    Failed(u8),
}

/// A port's MTU (PMTU), in bytes of an Ethernet frame without FCS as the PRM counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Mtu {
    /// The largest the port allows.
    pub max: u16,
    /// The one configured.
    pub admin: u16,
    /// The one in use.
    pub oper: u16,
}

/// Global pause settings (PFCC), as `ethtool -a` shows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Pause {
    /// Pause frames are sent.
    pub tx: bool,
    /// Pause frames received are honoured.
    pub rx: bool,
    /// Priorities with priority flow control on transmit (a bit per priority).
    pub pfc_tx: u8,
    /// Priorities with priority flow control on receive.
    pub pfc_rx: u8,
}

impl<B: Backend> Hca<B> {
    /// Port `local_port` (1 for the first). Nothing is checked until a register is accessed:
    /// a port the device does not have is its `BAD_PARAM`.
    pub fn port(&self, local_port: u8) -> Port<'_, B> {
        Port {
            hca: self,
            local_port,
        }
    }
}

fn oper(raw: u8) -> OperState {
    match PaosPortStatus::from_raw(raw.into()) {
        Some(PaosPortStatus::Up) => OperState::Up,
        Some(PaosPortStatus::Down) => OperState::Down,
        None => OperState::Failed(raw),
    }
}

impl<'h, B: Backend> Port<'h, B> {
    /// The port number.
    pub fn number(&self) -> u8 {
        self.local_port
    }

    /// The HCA it belongs to.
    pub fn hca(&self) -> &'h Hca<B> {
        self.hca
    }

    /// Administrative and operational state.
    pub fn state(&self) -> Result<PortState> {
        let r = self
            .hca
            .read_reg::<Paos>(|r| r.set_local_port(self.local_port))?;
        Ok(PortState {
            admin_up: r.admin_status_raw() == PaosPortStatus::Up.raw(),
            oper: oper(r.oper_status_raw()),
        })
    }

    /// Brings the port up or down (`ip link set up|down` on the wire side): a PAOS write with
    /// `ase` set. Returns the state the device reports afterwards.
    pub fn set_admin(&self, up: bool) -> Result<PortState> {
        let status = if up {
            PaosPortStatus::Up
        } else {
            PaosPortStatus::Down
        };
        let r = self.hca.write_reg::<Paos>(|r| {
            r.set_local_port(self.local_port);
            r.set_admin_status(status);
            r.set_ase(true);
        })?;
        Ok(PortState {
            admin_up: r.admin_status_raw() == PaosPortStatus::Up.raw(),
            oper: oper(r.oper_status_raw()),
        })
    }

    /// The MTU.
    pub fn mtu(&self) -> Result<Mtu> {
        let r = self
            .hca
            .read_reg::<Pmtu>(|r| r.set_local_port(self.local_port))?;
        Ok(Mtu {
            max: r.max_mtu(),
            admin: r.admin_mtu(),
            oper: r.oper_mtu(),
        })
    }

    /// Sets the MTU; the device refuses one outside 64..=max (its `BAD_PARAM`).
    pub fn set_mtu(&self, mtu: u16) -> Result<Mtu> {
        let r = self.hca.write_reg::<Pmtu>(|r| {
            r.set_local_port(self.local_port);
            r.set_admin_mtu(mtu);
        })?;
        Ok(Mtu {
            max: r.max_mtu(),
            admin: r.admin_mtu(),
            oper: r.oper_mtu(),
        })
    }

    /// Global pause and priority flow control.
    pub fn pause(&self) -> Result<Pause> {
        let r = self
            .hca
            .read_reg::<Pfcc>(|r| r.set_local_port(self.local_port))?;
        Ok(Pause {
            tx: r.pptx(),
            rx: r.pprx(),
            pfc_tx: r.pfctx(),
            pfc_rx: r.pfcrx(),
        })
    }

    /// Turns global pause on or off in each direction (`ethtool -A DEV tx on rx on`).
    pub fn set_pause(&self, tx: bool, rx: bool) -> Result<Pause> {
        let r = self.hca.write_reg::<Pfcc>(|r| {
            r.set_local_port(self.local_port);
            r.set_pptx(tx);
            r.set_pprx(rx);
        })?;
        Ok(Pause {
            tx: r.pptx(),
            rx: r.pprx(),
            pfc_tx: r.pfctx(),
            pfc_rx: r.pfcrx(),
        })
    }

    /// The module cage the port's first lane goes to (PMLP): the module number MCIA takes.
    pub fn module_number(&self) -> Result<u8> {
        let r = self
            .hca
            .read_reg::<Pmlp>(|r| r.set_local_port(self.local_port))?;
        let module = r.lane0_module_mapping().module();
        Ok(module)
    }

    /// A reader of the module EEPROM of this port's cage.
    pub fn module_reader(&self) -> Result<McIaReader<'h, B>> {
        Ok(McIaReader::new(self.hca, self.module_number()?))
    }

    /// The module in the port's cage, decoded (`ethtool -m`). A cage without a module is
    /// [`ModuleError::NotPresent`].
    pub fn module(&self, opts: &DecodeOptions) -> std::result::Result<Module, ModuleError> {
        let mut reader = self.module_reader().map_err(|e| ModuleError::Read {
            at: crate::module::EepromAddr {
                i2c_address: 0x50,
                page: 0,
                bank: 0,
                offset: 0,
            },
            source: Box::new(e),
        })?;
        crate::module::read_module(&mut reader, opts)
    }
}

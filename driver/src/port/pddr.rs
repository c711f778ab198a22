//! PDDR's troubleshooting page: why a link is down, as `ethtool DEV` prints after "Link
//! detected: no". The device reports a status opcode; the names are the link extended states
//! Linux's mlx5e maps each opcode to (`ethtool_link_ext_state` and its substates).

use super::Port;
use crate::backend::Backend;
use crate::error::Result;
use mlx5_prm::reg::Pddr;
use mlx5_prm::PddrPageSelect;

/// Why the link is down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct LinkDownReason {
    /// The device's status opcode.
    pub opcode: u16,
    /// The kind of failure (`Autoneg`, `No cable`, …); `None` for an opcode Linux names no
    /// state for.
    pub state: Option<&'static str>,
    /// The detail, where there is one (`No partner detected`).
    pub substate: Option<&'static str>,
}

/// Status opcode → (state, substate), as Linux maps them.
const REASONS: &[(u16, &str, Option<&str>)] = &[
    (2, "Autoneg", Some("No partner detected")),
    (3, "Autoneg", Some("Ack not received")),
    (4, "Autoneg", Some("Next page exchange failed")),
    (36, "Autoneg", Some("No partner detected during force mode")),
    (38, "Autoneg", Some("FEC mismatch during override")),
    (39, "Autoneg", Some("No HCD")),
    (
        5,
        "Link training failure",
        Some("KR frame lock not acquired"),
    ),
    (6, "Link training failure", Some("KR link inhibit timeout")),
    (
        7,
        "Link training failure",
        Some("KR link partner did not set receiver ready"),
    ),
    (8, "Link training failure", None),
    (
        14,
        "Link training failure",
        Some("Remote side is not ready yet"),
    ),
    (
        9,
        "Logical mismatch",
        Some("PCS did not acquire block lock"),
    ),
    (10, "Logical mismatch", Some("PCS did not acquire AM lock")),
    (11, "Logical mismatch", Some("PCS did not get align_status")),
    (12, "Logical mismatch", Some("FC FEC is not locked")),
    (13, "Logical mismatch", Some("RS FEC is not locked")),
    (15, "Bad signal integrity", None),
    (
        17,
        "Bad signal integrity",
        Some("Large number of physical errors"),
    ),
    (42, "Bad signal integrity", Some("Unsupported rate")),
    (1024, "No cable", None),
    (16, "Cable issue", Some("Unsupported cable")),
    (20, "Cable issue", Some("Unsupported cable")),
    (29, "Cable issue", Some("Unsupported cable")),
    (1025, "Cable issue", Some("Unsupported cable")),
    (1029, "Cable issue", Some("Unsupported cable")),
    (1031, "Cable issue", None),
    (1027, "EEPROM issue", None),
    (23, "Calibration failure", None),
    (1032, "Power budget exceeded", None),
    (1030, "Overheat", None),
];

impl LinkDownReason {
    /// The reason for status opcode `opcode`; `None` for 0 (no issue).
    pub fn from_opcode(opcode: u16) -> Option<LinkDownReason> {
        if opcode == 0 {
            return None;
        }
        let known = REASONS.iter().find(|(o, ..)| *o == opcode);
        Some(LinkDownReason {
            opcode,
            state: known.map(|(_, s, _)| *s),
            substate: known.and_then(|(.., d)| *d),
        })
    }
}

impl std::fmt::Display for LinkDownReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.state, self.substate) {
            (Some(s), Some(d)) => write!(f, "{s}, {d}"),
            (Some(s), None) => write!(f, "{s}"),
            _ => write!(f, "status opcode {}", self.opcode),
        }
    }
}

impl<B: Backend> Port<'_, B> {
    /// Why the link is down, from PDDR's troubleshooting page (`None`: the device reports no
    /// issue, as it does while the link is up or was taken down on purpose).
    pub fn link_down_reason(&self) -> Result<Option<LinkDownReason>> {
        let r = self.hca.read_reg::<Pddr>(|r| {
            r.set_local_port(self.local_port);
            r.set_page_select(PddrPageSelect::TroubleshootingInfo);
        })?;
        let opcode = r
            .page_data()
            .pddr_troubleshooting_page()
            .status_opcode()
            .pddr_monitor_opcode()
            .monitor_opcode();
        Ok(LinkDownReason::from_opcode(opcode))
    }
}

//! Choosing the device: `sim` (the in-process model), `sim:threaded` (the model on its own
//! thread) or `vfio:0000:03:00.0` (a function bound to vfio-pci), the same text in every
//! example and tool (`--device`), and [`Hca::open`] to bring it up.

use crate::backend::AnyBackend;
use crate::error::Result;
use crate::hca::{Hca, HcaConfig};
use std::fmt;
use std::str::FromStr;

/// Which device to drive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeviceSpec {
    /// The device model in this process (feature `sim`).
    Sim {
        /// The model runs on a thread of its own rather than inside each register write.
        threaded: bool,
    },
    /// A function through VFIO (feature `vfio`), by PCI address as sysfs names it.
    Vfio(String),
}

impl Default for DeviceSpec {
    fn default() -> Self {
        DeviceSpec::Sim { threaded: false }
    }
}

impl fmt::Display for DeviceSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceSpec::Sim { threaded: false } => f.write_str("sim"),
            DeviceSpec::Sim { threaded: true } => f.write_str("sim:threaded"),
            DeviceSpec::Vfio(addr) => write!(f, "vfio:{addr}"),
        }
    }
}

/// Why a device spec does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{text}' is not a device: {why} (expected sim, sim:threaded or vfio:DDDD:BB:DD.F)")]
pub struct BadDeviceSpec {
    /// What was given.
    pub text: String,
    /// What is wrong.
    pub why: String,
}

impl FromStr for DeviceSpec {
    type Err = BadDeviceSpec;

    fn from_str(text: &str) -> std::result::Result<DeviceSpec, BadDeviceSpec> {
        let bad = |why: String| BadDeviceSpec {
            text: text.to_owned(),
            why,
        };
        match text.split_once(':') {
            None if text == "sim" => Ok(DeviceSpec::Sim { threaded: false }),
            Some(("sim", "threaded")) => Ok(DeviceSpec::Sim { threaded: true }),
            Some(("sim", other)) => Err(bad(format!("unknown model option '{other}'"))),
            Some(("vfio", addr)) => Ok(DeviceSpec::Vfio(vfio_address(addr).map_err(bad)?)),
            _ => Err(bad("unknown kind".into())),
        }
    }
}

/// The canonical form of a PCI address (checked when the VFIO backend is built in).
#[cfg(all(feature = "vfio", target_os = "linux"))]
fn vfio_address(text: &str) -> std::result::Result<String, String> {
    text.parse::<crate::backend::vfio::PciAddress>()
        .map(|a| a.to_string())
        .map_err(|e| e.to_string())
}

#[cfg(not(all(feature = "vfio", target_os = "linux")))]
fn vfio_address(text: &str) -> std::result::Result<String, String> {
    if text.is_empty() {
        return Err("no PCI address after 'vfio:'".into());
    }
    Ok(text.to_owned())
}

impl DeviceSpec {
    /// Opens the device (not yet brought up).
    pub fn open(&self) -> Result<AnyBackend> {
        match self {
            #[cfg(feature = "sim")]
            DeviceSpec::Sim { threaded } => {
                let config = mlx5_sim::Config {
                    mode: if *threaded {
                        mlx5_sim::Mode::Threaded
                    } else {
                        mlx5_sim::Mode::Inline
                    },
                    ..mlx5_sim::Config::default()
                };
                Ok(AnyBackend::Sim(
                    crate::backend::sim::SimBackend::new(config).0,
                ))
            }
            #[cfg(not(feature = "sim"))]
            DeviceSpec::Sim { .. } => Err(crate::Error::BackendNotBuilt {
                spec: self.to_string(),
                feature: "sim",
            }),
            #[cfg(all(feature = "vfio", target_os = "linux"))]
            DeviceSpec::Vfio(addr) => {
                let addr = addr.parse()?;
                Ok(AnyBackend::Vfio(crate::backend::vfio::VfioBackend::open(
                    addr,
                )?))
            }
            #[cfg(not(all(feature = "vfio", target_os = "linux")))]
            DeviceSpec::Vfio(_) => Err(crate::Error::BackendNotBuilt {
                spec: self.to_string(),
                feature: "vfio",
            }),
        }
    }
}

impl Hca<AnyBackend> {
    /// Opens the device `spec` names and brings it up.
    pub fn open(spec: &DeviceSpec, config: &HcaConfig) -> Result<Hca<AnyBackend>> {
        Hca::bring_up(spec.open()?, config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_print_back() {
        for text in ["sim", "sim:threaded"] {
            assert_eq!(text.parse::<DeviceSpec>().unwrap().to_string(), text);
        }
        assert_eq!(DeviceSpec::default().to_string(), "sim");
        let v: DeviceSpec = "vfio:0000:03:00.0".parse().unwrap();
        assert_eq!(v, DeviceSpec::Vfio("0000:03:00.0".into()));
        for bad in ["", "simx", "sim:fast", "vfio:", "pci:03:00.0"] {
            let e = bad.parse::<DeviceSpec>().unwrap_err();
            assert!(e.to_string().contains("expected sim"), "{bad}: {e}");
        }
    }

    /// The chosen backend passes the quarantine through: a buffer the device might still
    /// write stays held until it is released after a reset.
    #[cfg(feature = "sim")]
    #[test]
    fn the_quarantine_goes_through_the_chosen_backend() {
        use crate::backend::DmaAlloc;
        let be = DeviceSpec::default().open().unwrap();
        be.alloc(4096, 4096).unwrap().quarantine();
        assert_eq!(be.quarantined().buffers, 1);
        // SAFETY: the model was never brought up, so it does no DMA at all.
        unsafe { be.release_quarantine() };
        assert_eq!(be.quarantined().buffers, 0);
    }

    #[cfg(all(feature = "vfio", target_os = "linux"))]
    #[test]
    fn vfio_addresses_are_checked_and_made_canonical() {
        let v: DeviceSpec = "vfio:03:00.1".parse().unwrap();
        assert_eq!(v.to_string(), "vfio:0000:03:00.1");
        let e = "vfio:0000:03:20.0".parse::<DeviceSpec>().unwrap_err();
        assert!(e.to_string().contains("device number"), "{e}");
    }

    #[cfg(all(feature = "vfio", target_os = "linux"))]
    #[test]
    fn opening_a_missing_function_says_so() {
        let e = DeviceSpec::Vfio("0000:7f:1f.7".into()).open().unwrap_err();
        assert!(
            e.to_string().contains("no PCI function 0000:7f:1f.7"),
            "{e}"
        );
    }

    #[cfg(not(all(feature = "vfio", target_os = "linux")))]
    #[test]
    fn a_vfio_spec_without_the_backend_names_the_feature() {
        let e = DeviceSpec::Vfio("0000:03:00.0".into()).open().unwrap_err();
        assert!(e.to_string().contains("feature `vfio`"), "{e}");
    }
}

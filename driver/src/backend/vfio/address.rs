//! PCI addresses as Linux names them in sysfs and as users type them: `0000:03:00.0`
//! (domain, bus, device, function), or `03:00.0` for domain 0, as `lspci` prints it.

use super::error::VfioError;
use std::fmt;
use std::str::FromStr;

/// A PCI function's address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PciAddress {
    /// PCI segment (domain), 16 bits.
    pub domain: u16,
    /// Bus number.
    pub bus: u8,
    /// Device number, 0..=31.
    pub device: u8,
    /// Function number, 0..=7.
    pub function: u8,
}

impl PciAddress {
    /// The address, checking the device and function numbers.
    pub fn new(domain: u16, bus: u8, device: u8, function: u8) -> Result<PciAddress, VfioError> {
        if device > 31 || function > 7 {
            return Err(VfioError::BadAddress {
                text: format!("{domain:04x}:{bus:02x}:{device:02x}.{function:x}"),
                why: "the device number goes to 1f and the function to 7",
            });
        }
        Ok(PciAddress {
            domain,
            bus,
            device,
            function,
        })
    }
}

impl fmt::Display for PciAddress {
    /// The canonical form sysfs uses: `0000:03:00.0`, lower case.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:04x}:{:02x}:{:02x}.{:x}",
            self.domain, self.bus, self.device, self.function
        )
    }
}

impl FromStr for PciAddress {
    type Err = VfioError;

    fn from_str(text: &str) -> Result<PciAddress, VfioError> {
        let bad = |why| VfioError::BadAddress {
            text: text.to_owned(),
            why,
        };
        let hex = |s: &str, max_digits: usize, what| {
            if s.is_empty() || s.len() > max_digits || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(bad(what));
            }
            // At most 4 hex digits: fits.
            Ok(u16::from_str_radix(s, 16).unwrap_or(u16::MAX))
        };
        let (slot, function) = text
            .rsplit_once('.')
            .ok_or_else(|| bad("expected DOMAIN:BUS:DEVICE.FUNCTION, e.g. 0000:03:00.0"))?;
        let parts: Vec<&str> = slot.split(':').collect();
        let (domain, bus, device) = match parts[..] {
            [d, b, s] => (hex(d, 4, "the domain is 1 to 4 hex digits")?, b, s),
            [b, s] => (0, b, s),
            _ => {
                return Err(bad(
                    "expected DOMAIN:BUS:DEVICE.FUNCTION, e.g. 0000:03:00.0",
                ))
            }
        };
        let bus = hex(bus, 2, "the bus is 1 or 2 hex digits")? as u8;
        let device = hex(device, 2, "the device is 1 or 2 hex digits")? as u8;
        let function = hex(function, 1, "the function is one digit, 0 to 7")? as u8;
        PciAddress::new(domain, bus, device, function).map_err(|_| {
            bad(if device > 31 {
                "the device number goes to 1f"
            } else {
                "the function number goes to 7"
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_forms_users_type() {
        let a: PciAddress = "0000:03:00.0".parse().unwrap();
        assert_eq!(a, PciAddress::new(0, 3, 0, 0).unwrap());
        assert_eq!("03:00.0".parse::<PciAddress>().unwrap(), a);
        assert_eq!("3:0.0".parse::<PciAddress>().unwrap(), a);
        let b: PciAddress = "ABCD:Ff:1F.7".parse().unwrap();
        assert_eq!(b.to_string(), "abcd:ff:1f.7");
    }

    #[test]
    fn bad_addresses_say_what_is_wrong() {
        for (text, why) in [
            ("", "expected DOMAIN"),
            ("0000:03:00", "expected DOMAIN"),
            ("0000:03:20.0", "device number"),
            ("0000:03:00.8", "function number"),
            ("0000:03:00.10", "one digit"),
            ("00000:03:00.0", "domain"),
            ("0000:103:00.0", "bus"),
            ("0000:0g:00.0", "bus"),
            ("1:2:3:4.0", "expected DOMAIN"),
            ("sim", "expected DOMAIN"),
        ] {
            let e = text.parse::<PciAddress>().unwrap_err().to_string();
            assert!(e.contains(why), "{text:?}: {e}");
            assert!(e.contains(&format!("'{text}'")), "{text:?}: {e}");
        }
    }

    proptest! {
        #[test]
        fn display_and_parse_agree(d: u16, b: u8, s in 0u8..32, f in 0u8..8) {
            let a = PciAddress::new(d, b, s, f).unwrap();
            prop_assert_eq!(a.to_string().parse::<PciAddress>().unwrap(), a);
        }

        #[test]
        fn any_text_parses_or_errs(text in "\\PC{0,24}") {
            let _ = text.parse::<PciAddress>();
        }
    }
}

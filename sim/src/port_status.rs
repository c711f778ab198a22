//! The port as a host sees it from outside the device: its address and state, for a harness
//! that checks what a guest's driver reports (`ip link`, `ethtool`) against the model.

use crate::device::Device;

/// A snapshot of the port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortStatus {
    /// The permanent MAC address (QUERY_NIC_VPORT_CONTEXT's permanent_address).
    pub mac: [u8; 6],
    /// The driver's wish (PAOS admin_status up).
    pub admin_up: bool,
    /// The state in force: admin up and the link up (PAOS oper_status, QUERY_VPORT_STATE).
    pub oper_up: bool,
    /// The port MTU in force (PMTU oper_mtu), bytes of the whole frame.
    pub mtu: u16,
}

impl PortStatus {
    /// The MAC address as Linux prints it: six lowercase hex pairs joined by colons.
    pub fn mac_string(&self) -> String {
        let m = self.mac;
        format!(
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            m[0], m[1], m[2], m[3], m[4], m[5]
        )
    }
}

impl Device {
    /// The port's address and state now.
    pub fn port(&self) -> PortStatus {
        let m = self.core.model();
        let p = &m.port;
        let mut mac = [0u8; 6];
        mac.copy_from_slice(&p.mac.to_be_bytes()[2..]);
        PortStatus {
            mac,
            admin_up: p.admin_up,
            oper_up: p.oper_up(),
            mtu: p.admin_mtu,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{Config, Device};

    #[test]
    fn the_default_port_is_up_with_the_model_address() {
        let dev = Device::new(Config::default());
        let p = dev.port();
        assert_eq!(p.mac_string(), "02:4d:4c:58:35:00");
        assert!(p.admin_up && p.oper_up);
    }
}

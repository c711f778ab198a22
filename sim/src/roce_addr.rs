//! The port's RoCE address (GID) table: what SET_ROCE_ADDRESS writes and QUERY_ROCE_ADDRESS
//! returns. An RC QP on a RoCE path takes its source MAC, VLAN, IP address and RoCE version
//! from the entry its address path's `src_addr_index` names; a RoCE frame arriving is for
//! this device when its destination IP address is one of the table's.

/// One valid entry of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RoceAddr {
    /// The source L3 address, 16 bytes in network order: an IPv4 address in the IPv4-mapped
    /// IPv6 form (`::ffff:a.b.c.d`), as the GID of a RoCEv2 port is.
    pub l3: [u8; 16],
    /// The source MAC.
    pub mac: [u8; 6],
    /// The VLAN the QP's frames carry, if any.
    pub vlan: Option<u16>,
    /// `roce_l3_type`: 0 IPv4, 1 IPv6 (the PRM's encoding).
    pub l3_type: u8,
    /// `roce_version`: 0 RoCE v1, 2 RoCE v2 (the PRM's encoding).
    pub version: u8,
}

/// `roce_l3_type` of an IPv4 entry.
pub(crate) const L3_IPV4: u8 = mlx5_prm::RoceL3Type::Ipv4.raw();
/// `roce_version` of a RoCEv2 entry.
pub(crate) const VERSION_2: u8 = mlx5_prm::RoceVersion::Version2.raw();

/// The table of one port: `size` entries (the RoCE capability's `roce_address_table_size`),
/// each empty until SET_ROCE_ADDRESS writes it.
#[derive(Debug, Clone, Default)]
pub(crate) struct RoceAddrTable {
    entries: Vec<Option<RoceAddr>>,
    /// The indexes of the valid entries, in order: every RoCE packet sent or received asks
    /// whether an address is the device's own, and a port has a handful of addresses in a
    /// table of hundreds of slots.
    valid: Vec<usize>,
}

impl RoceAddrTable {
    /// An empty table of `size` entries.
    pub fn new(size: usize) -> RoceAddrTable {
        RoceAddrTable {
            entries: vec![None; size],
            valid: Vec::new(),
        }
    }

    /// The number of entries (valid or not).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Entry `index`, if it is valid.
    pub fn get(&self, index: usize) -> Option<&RoceAddr> {
        self.entries.get(index).and_then(Option::as_ref)
    }

    /// Writes (or, with `None`, clears) entry `index`; false when the index is outside the
    /// table.
    pub fn set(&mut self, index: usize, entry: Option<RoceAddr>) -> bool {
        let Some(slot) = self.entries.get_mut(index) else {
            return false;
        };
        let on = entry.is_some();
        *slot = entry;
        match (self.valid.binary_search(&index), on) {
            (Err(at), true) => self.valid.insert(at, index),
            (Ok(at), false) => {
                self.valid.remove(at);
            }
            _ => {}
        }
        true
    }

    /// The index of the first valid RoCEv2 entry whose L3 address is `l3`.
    pub fn find_v2(&self, l3: &[u8; 16]) -> Option<usize> {
        self.valid.iter().copied().find(|&i| {
            self.get(i)
                .is_some_and(|e| e.version == VERSION_2 && &e.l3 == l3)
        })
    }

    /// Clears every entry (a reset of the function).
    pub fn clear(&mut self) {
        self.entries.iter_mut().for_each(|e| *e = None);
        self.valid.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v2(last: u8) -> RoceAddr {
        let mut l3 = [0u8; 16];
        l3[10] = 0xff;
        l3[11] = 0xff;
        l3[15] = last;
        RoceAddr {
            l3,
            mac: [2, 0, 0, 0, 0, last],
            vlan: None,
            l3_type: L3_IPV4,
            version: VERSION_2,
        }
    }

    #[test]
    fn lookups_follow_every_write_and_clear() {
        let mut t = RoceAddrTable::new(256);
        assert!(t.set(200, Some(v2(1))));
        assert!(t.set(3, Some(v2(2))));
        assert!(t.set(7, Some(v2(1))));
        assert!(!t.set(256, Some(v2(9))), "outside the table");
        // The first index holding the address, whatever order the writes came in.
        assert_eq!(t.find_v2(&v2(1).l3), Some(7));
        assert_eq!(t.find_v2(&v2(2).l3), Some(3));
        assert!(t.set(7, None));
        assert!(t.set(7, None), "clearing twice is fine");
        assert_eq!(t.find_v2(&v2(1).l3), Some(200));
        // Overwriting an entry replaces what it is found by.
        assert!(t.set(200, Some(v2(5))));
        assert_eq!(t.find_v2(&v2(1).l3), None);
        assert_eq!(t.find_v2(&v2(5).l3), Some(200));
        let v1 = RoceAddr {
            version: 0,
            ..v2(6)
        };
        assert!(t.set(9, Some(v1)));
        assert_eq!(
            t.find_v2(&v1.l3),
            None,
            "a RoCE v1 entry is not a v2 address"
        );
        t.clear();
        assert_eq!(t.find_v2(&v2(2).l3), None);
        assert_eq!(t.get(3), None);
    }
}

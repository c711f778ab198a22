//! Send WQEs built segment by segment with the generated segment views (control, data,
//! remote address, atomic, inline), for tests that post them by hand.

use mlx5_prm::{SendOpcode, WqeAtomicSeg, WqeCtrlSeg, WqeDataSeg, WqeRaddrSeg};

/// Builds send WQEs segment by segment.
pub struct Wqe {
    pub bytes: Vec<u8>,
}

impl Wqe {
    /// A control segment for `opcode` of QP/SQ `qpn`; `signaled` asks for a CQE (ce = 2).
    pub fn new(opcode: SendOpcode, qpn: u32, signaled: bool) -> Wqe {
        let mut bytes = vec![0u8; 16];
        let mut c = WqeCtrlSeg::new_unchecked(&mut bytes[..]);
        c.set_opcode(opcode);
        c.set_qpn(qpn);
        c.set_ce_raw(if signaled { 2 } else { 0 });
        Wqe { bytes }
    }

    pub fn imm(mut self, imm: u32) -> Wqe {
        WqeCtrlSeg::new_unchecked(&mut self.bytes[..16]).set_imm(imm);
        self
    }

    pub fn solicited(mut self) -> Wqe {
        WqeCtrlSeg::new_unchecked(&mut self.bytes[..16]).set_se(true);
        self
    }

    pub fn data(mut self, len: u32, lkey: u32, addr: u64) -> Wqe {
        let mut s = [0u8; 16];
        let mut d = WqeDataSeg::new_unchecked(&mut s[..]);
        d.set_byte_count(len);
        d.set_lkey(lkey);
        d.set_addr(addr);
        self.bytes.extend_from_slice(&s);
        self
    }

    pub fn raddr(mut self, raddr: u64, rkey: u32) -> Wqe {
        let mut s = [0u8; 16];
        let mut r = WqeRaddrSeg::new_unchecked(&mut s[..]);
        r.set_raddr(raddr);
        r.set_rkey(rkey);
        self.bytes.extend_from_slice(&s);
        self
    }

    pub fn atomic(mut self, swap_add: u64, compare: u64) -> Wqe {
        let mut s = [0u8; 16];
        let mut a = WqeAtomicSeg::new_unchecked(&mut s[..]);
        a.set_swap_add(swap_add);
        a.set_compare(compare);
        self.bytes.extend_from_slice(&s);
        self
    }

    /// An inline data segment: byte count with bit 31 set, the data, padding to 16 bytes.
    pub fn inline(mut self, data: &[u8]) -> Wqe {
        let at = self.bytes.len();
        self.bytes
            .extend_from_slice(&(0x8000_0000u32 | data.len() as u32).to_be_bytes());
        self.bytes.extend_from_slice(data);
        let len = self.bytes.len();
        self.bytes.resize(at + (len - at).div_ceil(16) * 16, 0);
        self
    }

    /// Raw bytes (already in 16-byte units).
    pub fn raw(mut self, seg: &[u8]) -> Wqe {
        self.bytes.extend_from_slice(seg);
        self
    }

    /// The WQE with its DS count filled in.
    pub fn build(mut self) -> Vec<u8> {
        let ds = (self.bytes.len() / 16) as u8;
        WqeCtrlSeg::new_unchecked(&mut self.bytes[..16]).set_ds(ds);
        self.bytes
    }
}

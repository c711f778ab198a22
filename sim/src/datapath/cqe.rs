//! A CQE built as eight 64-bit words, the numeric values of its big-endian 8-byte units,
//! from the PRM's field positions (the generated `Field` constants).
//!
//! The hot paths build their CQEs this way and hand the words to [`cq::post_words`]
//! (super::cq::post_words), which stores each with one 8-byte write. Built with the generated
//! setters in a byte array instead, a CQE was written field by field in narrow pieces and then
//! copied in 8-byte loads, which stalled on store forwarding, on top of the setters' own
//! read-modify-writes. PRM fields never straddle a dword, so a field always lies in one word.

use mlx5_prm::rt::Field;
use mlx5_prm::{Cqe64, CqeL3HdrType, CqeL4HdrType, CqeOpcode};

/// The words of a CQE, all fields 0 at first.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CqeWords(pub [u64; 8]);

impl CqeWords {
    /// A CQE for `opcode` of queue `qpn`, WQE index `wqe_counter` (as [`super::cq::cqe`]).
    #[inline]
    pub fn new(opcode: CqeOpcode, qpn: u32, wqe_counter: u16) -> CqeWords {
        let mut c = CqeWords::default();
        c.set(Cqe64::OPCODE, opcode.raw().into());
        c.set(Cqe64::QPN, qpn.into());
        c.set(Cqe64::WQE_COUNTER, wqe_counter.into());
        c
    }

    /// Sets `field` to `value` (truncated to the field's width).
    #[inline]
    pub fn set(&mut self, field: Field, value: u64) {
        let (word, bit) = (field.bit_offset / 64, field.bit_offset % 64);
        let width = field.width as usize;
        debug_assert!(bit + width <= 64, "fields never straddle a word");
        let shift = 64 - bit - width;
        let mask = (u64::MAX >> (64 - width)) << shift;
        self.0[word] = (self.0[word] & !mask) | ((value << shift) & mask);
    }

    /// The value of `field`.
    #[inline]
    pub fn get(&self, field: Field) -> u64 {
        let (word, bit) = (field.bit_offset / 64, field.bit_offset % 64);
        let width = field.width as usize;
        (self.0[word] >> (64 - bit - width)) & (u64::MAX >> (64 - width))
    }

    /// The receive fields of an Ethernet CQE.
    #[inline]
    pub fn set_rx(&mut self, byte_cnt: u32, l3: CqeL3HdrType, l4: CqeL4HdrType) {
        self.set(Cqe64::BYTE_CNT, byte_cnt.into());
        self.set(Cqe64::L3_HDR_TYPE, l3.raw().into());
        self.set(Cqe64::L4_HDR_TYPE, l4.raw().into());
        self.set(Cqe64::L2_OK, 1);
    }

    /// The CQE as bytes.
    #[cfg(test)]
    pub fn to_bytes(self) -> [u8; 64] {
        let mut b = [0u8; 64];
        for (chunk, w) in b.chunks_exact_mut(8).zip(self.0) {
            chunk.copy_from_slice(&w.to_be_bytes());
        }
        b
    }

    /// A CQE given as bytes.
    pub fn from_bytes(b: &[u8; 64]) -> CqeWords {
        let mut w = [0u64; 8];
        for (w, chunk) in w.iter_mut().zip(b.chunks_exact(8)) {
            let mut c = [0u8; 8];
            c.copy_from_slice(chunk);
            *w = u64::from_be_bytes(c);
        }
        CqeWords(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_match_the_generated_setters() {
        let mut c = CqeWords::new(CqeOpcode::RespSend, 0xab_cdef, 0x1234);
        c.set_rx(60, CqeL3HdrType::Ipv4, CqeL4HdrType::Udp);
        c.set(Cqe64::S_WQE_OPCODE, 0xa);
        let mut g = Cqe64::zeroed();
        g.set_opcode(CqeOpcode::RespSend);
        g.set_qpn(0xab_cdef);
        g.set_wqe_counter(0x1234);
        g.set_byte_cnt(60);
        g.set_l3_hdr_type(CqeL3HdrType::Ipv4);
        g.set_l4_hdr_type(CqeL4HdrType::Udp);
        g.set_l2_ok(true);
        g.set_s_wqe_opcode(0xa);
        assert_eq!(c.to_bytes(), *g.storage());
        assert_eq!(CqeWords::from_bytes(g.storage()), c);
        assert_eq!(c.get(Cqe64::QPN), 0xab_cdef);
        assert_eq!(c.get(Cqe64::OPCODE), CqeOpcode::RespSend.raw().into());
        c.set(Cqe64::TIMESTAMP, u64::MAX - 1);
        assert_eq!(c.get(Cqe64::TIMESTAMP), u64::MAX - 1, "a whole word");
        // Values wider than the field are cut to it.
        let mut t = CqeWords::default();
        t.set(Cqe64::OPCODE, 0xff);
        assert_eq!(t.to_bytes()[63], 0xf0);
    }
}

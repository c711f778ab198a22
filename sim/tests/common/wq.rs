//! The CREATE_SQ and CREATE_RQ inputs the tests start from: a cyclic work queue in RST of 64
//! WQEs of 64 bytes (one page of ring), its page list of one entry after the context. A test
//! changes what it is about in a closure over the context; the rest stays as written here, once.

use mlx5_prm::cmd;
use mlx5_prm::rt::{BytesMut, Command};
use mlx5_prm::{RqMemType, RqState, Rqc, SqState, Sqc, WqType};

/// WQEs per queue (of 64 bytes: one page).
pub const WQES: u16 = 64;

/// Where the page list starts in both inputs (after the context); it has room for one page.
const PAGE_LIST: usize = 0x110;

/// What a work queue is made on: its CQ, protection domain, doorbell record and ring page
/// (IO addresses).
#[derive(Clone, Copy)]
pub struct Wq {
    pub cqn: u32,
    pub pd: u32,
    pub dbr: u64,
    pub ring: u64,
}

impl Wq {
    /// CREATE_SQ's input for an SQ on `self` ringing through UAR page `uar`; `tweak` then
    /// changes its context.
    pub fn create_sq(&self, uar: u32, tweak: impl FnOnce(&mut Sqc<&mut [u8]>)) -> Vec<u8> {
        let mut buf = vec![0u8; PAGE_LIST + 8];
        let mut i = cmd::CreateSq::input(&mut buf[..], 0).unwrap();
        let mut c = i.ctx_mut();
        c.set_state(SqState::Rst);
        c.set_cqn(self.cqn);
        let mut w = c.wq_mut();
        self.fill(&mut w);
        w.set_uar_page(uar);
        tweak(&mut c);
        buf.write_be64(PAGE_LIST, self.ring);
        buf
    }

    /// CREATE_RQ's input for an RQ (WQEs inline in its memory) on `self`; `tweak` then
    /// changes its context.
    pub fn create_rq(&self, tweak: impl FnOnce(&mut Rqc<&mut [u8]>)) -> Vec<u8> {
        let mut buf = vec![0u8; PAGE_LIST + 8];
        let mut i = cmd::CreateRq::input(&mut buf[..], 0).unwrap();
        let mut c = i.ctx_mut();
        c.set_state(RqState::Rst);
        c.set_mem_rq_type(RqMemType::MemoryRqInline);
        c.set_cqn(self.cqn);
        self.fill(&mut c.wq_mut());
        tweak(&mut c);
        buf.write_be64(PAGE_LIST, self.ring);
        buf
    }

    /// The work queue context both share.
    fn fill(&self, w: &mut mlx5_prm::Wq<impl BytesMut>) {
        w.set_wq_type(WqType::Cyclic);
        w.set_log_wq_stride(6);
        w.set_log_wq_sz(WQES.trailing_zeros() as u8);
        w.set_pd(self.pd);
        w.set_dbr_addr(self.dbr);
    }
}

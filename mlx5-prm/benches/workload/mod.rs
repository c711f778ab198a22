//! The accessor workloads shared by the criterion benchmark (`benches/accessors.rs`) and the
//! instruction-count example (`examples/accessor_counts.rs`): seven fields of 1,024 CQ
//! contexts, read or written by generated accessors, hand-written shift/mask code, and bitvec.

#![allow(dead_code)]

use bitvec::prelude::*;
use mlx5_prm::Cqc;

pub const N: usize = 1024;

pub fn contexts() -> Vec<Cqc> {
    (0..N)
        .map(|i| {
            let mut b = [0u8; 64];
            for (j, x) in b.iter_mut().enumerate() {
                *x = (i * 31 + j * 7) as u8;
            }
            Cqc::new_checked(b).unwrap()
        })
        .collect()
}

#[inline(always)]
fn be32(b: &[u8; 64], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

#[inline(never)]
pub fn read_generated(cs: &[Cqc]) -> u64 {
    cs.iter()
        .map(|c| {
            u64::from(c.log_cq_size())
                + u64::from(c.uar_page())
                + u64::from(c.cqe_sz_raw())
                + u64::from(c.oi())
                + c.dbr_addr()
                + u64::from(c.cq_period())
                + u64::from(c.cq_max_count())
        })
        .fold(0, u64::wrapping_add)
}

#[inline(never)]
pub fn read_hand(bs: &[[u8; 64]]) -> u64 {
    bs.iter()
        .map(|b| {
            u64::from((be32(b, 0x0c) >> 24) & 0x1f)
                + u64::from(be32(b, 0x0c) & 0xff_ffff)
                + u64::from((be32(b, 0x00) >> 21) & 0x7)
                + u64::from((be32(b, 0x00) >> 17) & 0x1)
                + u64::from_be_bytes(b[0x38..0x40].try_into().unwrap())
                + u64::from((be32(b, 0x10) >> 16) & 0xfff)
                + u64::from(be32(b, 0x10) & 0xffff)
        })
        .fold(0, u64::wrapping_add)
}

#[inline(never)]
pub fn read_bitvec(bs: &[[u8; 64]]) -> u64 {
    bs.iter()
        .map(|b| {
            let v = b.view_bits::<Msb0>();
            v[0x63..0x68].load_be::<u64>()
                + v[0x68..0x80].load_be::<u64>()
                + v[0x08..0x0b].load_be::<u64>()
                + v[0x0e..0x0f].load_be::<u64>()
                + v[0x1c0..0x200].load_be::<u64>()
                + v[0x84..0x90].load_be::<u64>()
                + v[0x90..0xa0].load_be::<u64>()
        })
        .fold(0, u64::wrapping_add)
}

#[inline(never)]
pub fn write_generated(cs: &mut [Cqc]) {
    for (i, c) in cs.iter_mut().enumerate() {
        c.set_log_cq_size((i & 0x1f) as u8);
        c.set_uar_page(i as u32 & 0xff_ffff);
        c.set_cqe_sz_raw((i & 1) as u8);
        c.set_oi(i & 2 != 0);
        c.set_dbr_addr(i as u64 * 64);
        c.set_cq_period((i & 0xfff) as u16);
        c.set_cq_max_count(i as u16);
    }
}

#[inline(always)]
fn rmw(b: &mut [u8; 64], at: usize, shift: u32, mask: u32, v: u32) {
    let old = be32(b, at);
    let new = (old & !(mask << shift)) | ((v & mask) << shift);
    b[at..at + 4].copy_from_slice(&new.to_be_bytes());
}

#[inline(never)]
pub fn write_hand(bs: &mut [[u8; 64]]) {
    for (i, b) in bs.iter_mut().enumerate() {
        rmw(b, 0x0c, 24, 0x1f, (i & 0x1f) as u32);
        rmw(b, 0x0c, 0, 0xff_ffff, i as u32 & 0xff_ffff);
        rmw(b, 0x00, 21, 0x7, (i & 1) as u32);
        rmw(b, 0x00, 17, 0x1, u32::from(i & 2 != 0));
        b[0x38..0x40].copy_from_slice(&(i as u64 * 64).to_be_bytes());
        rmw(b, 0x10, 16, 0xfff, (i & 0xfff) as u32);
        rmw(b, 0x10, 0, 0xffff, u32::from(i as u16));
    }
}

#[inline(never)]
pub fn write_bitvec(bs: &mut [[u8; 64]]) {
    for (i, b) in bs.iter_mut().enumerate() {
        let v = b.view_bits_mut::<Msb0>();
        v[0x63..0x68].store_be(i as u64 & 0x1f);
        v[0x68..0x80].store_be(i as u64 & 0xff_ffff);
        v[0x08..0x0b].store_be(i as u64 & 1);
        v[0x0e..0x0f].store_be(u64::from(i & 2 != 0));
        v[0x1c0..0x200].store_be(i as u64 * 64);
        v[0x84..0x90].store_be(i as u64 & 0xfff);
        v[0x90..0xa0].store_be(i as u64 & 0xffff);
    }
}

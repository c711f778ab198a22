//! Accessors compiled on their own, so their machine code can be read: the zero-cost test
//! (`tests/zero_cost.rs`) builds this with `--emit asm` and checks each `probe_*` function.
//!
//! Run by hand: `cargo rustc --release -p mlx5-prm --example asm_probe -- --emit asm`.

use mlx5_prm::Cqc;

/// A 5-bit field inside a dword: `0x0c[28:24]`.
#[no_mangle]
pub fn probe_get_log_cq_size(c: &Cqc) -> u8 {
    c.log_cq_size()
}

/// The same field, written by hand as the kernel's `MLX5_GET` computes it.
#[no_mangle]
pub fn probe_hand_log_cq_size(b: &[u8; 64]) -> u8 {
    ((u32::from_be_bytes([b[12], b[13], b[14], b[15]]) >> 24) & 0x1f) as u8
}

/// A one-bit flag: `0x00[17]`.
#[no_mangle]
pub fn probe_get_oi(c: &Cqc) -> bool {
    c.oi()
}

/// A whole 64-bit quantity: `0x38[63:0]`.
#[no_mangle]
pub fn probe_get_dbr_addr(c: &Cqc) -> u64 {
    c.dbr_addr()
}

/// A 24-bit field: `0x0c[23:0]`.
#[no_mangle]
pub fn probe_get_uar_page(c: &Cqc) -> u32 {
    c.uar_page()
}

/// A read-modify-write of a 5-bit field.
#[no_mangle]
pub fn probe_set_log_cq_size(c: &mut Cqc, v: u8) {
    c.set_log_cq_size(v)
}

fn main() {
    let mut c = Cqc::zeroed();
    probe_set_log_cq_size(&mut c, 3);
    println!(
        "{} {} {} {} {}",
        probe_get_log_cq_size(&c),
        probe_hand_log_cq_size(c.storage()),
        probe_get_oi(&c),
        probe_get_dbr_addr(&c),
        probe_get_uar_page(&c)
    );
}

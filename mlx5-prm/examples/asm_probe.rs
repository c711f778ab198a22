//! Accessors compiled on their own, so their machine code can be read: the zero-cost test
//! (`tests/zero_cost.rs`) builds this with `--emit asm` and checks each `probe_*` function.
//!
//! Run by hand: `cargo rustc --release -p mlx5-prm-asm-probe --bin asm_probe -- --emit asm`
//! (the test's way: `mlx5-prm/asm-probe` builds this file without mlx5-prm's
//! dev-dependencies), or as the example it also is.

use mlx5_prm::{CqArmCmd, CqDoorbellRecordArmWord, Cqc, UarPageCqArmWord, UarPageEqArmWord};

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

/// A read-modify-write of a 5-bit field, which lies within one byte: a byte read-modify-write.
#[no_mangle]
pub fn probe_set_log_cq_size(c: &mut Cqc, v: u8) {
    c.set_log_cq_size(v)
}

/// A read-modify-write of a 24-bit field, spread over three bytes: the dword's.
#[no_mangle]
pub fn probe_set_uar_page(c: &mut Cqc, v: u32) {
    c.set_uar_page(v)
}

/// [`probe_get_log_cq_size`] on a view borrowed from a slice with `from_slice`, passed by
/// value (a pointer, as `&Cqc` is): the length is in the type, so it is the same code.
#[no_mangle]
pub fn probe_get_log_cq_size_ref(c: Cqc<&[u8; 64]>) -> u8 {
    c.log_cq_size()
}

/// [`probe_set_log_cq_size`] on a view borrowed mutably with `from_slice_mut`.
#[no_mangle]
pub fn probe_set_log_cq_size_mut(mut c: Cqc<&mut [u8; 64]>, v: u8) {
    c.set_log_cq_size(v)
}

/// The CQ arm doorbell (`uar_page` word `cq_arm`, one 64-bit store) through the generated
/// word builder, with the arguments `driver/src/cq/mod.rs` passes.
#[no_mangle]
pub fn probe_build_cq_arm(sn: u8, cmd: CqArmCmd, ci: u32, cqn: u32) -> u64 {
    UarPageCqArmWord::new()
        .cq_arm_sn(sn & 3)
        .cq_arm_cmd(cmd)
        .cq_arm_ci(ci & 0xff_ffff)
        .cq_arm_cqn(cqn)
        .bits()
}

/// The same word composed by hand with shifts and masks, as C drivers write it, with the CQ
/// number masked to its 24 bits as the builder's setter does.
#[no_mangle]
pub fn probe_hand_cq_arm(sn: u8, cmd: CqArmCmd, ci: u32, cqn: u32) -> u64 {
    let high = (u32::from(sn & 3) << 28) | (u32::from(cmd.raw()) << 24) | (ci & 0xff_ffff);
    (u64::from(high) << 32) | u64::from(cqn & 0xff_ffff)
}

/// The hand composition `driver/src/cq/mod.rs` used before it moved to the builder: the CQ number
/// left unmasked (the device hands out numbers below 2^24).
#[no_mangle]
pub fn probe_driver_cq_arm(sn: u8, cmd: CqArmCmd, ci: u32, cqn: u32) -> u64 {
    let high = (u32::from(sn & 3) << 28) | (u32::from(cmd.raw()) << 24) | (ci & 0xff_ffff);
    (u64::from(high) << 32) | u64::from(cqn)
}

/// The EQ arm doorbell (`uar_page` word `eq_arm`) through the builder.
#[no_mangle]
pub fn probe_build_eq_arm(eqn: u8, ci: u32) -> u32 {
    UarPageEqArmWord::new()
        .eq_arm_eqn(eqn)
        .eq_arm_ci(ci & 0xff_ffff)
        .bits()
}

/// The same word composed by hand (as `driver/src/eq.rs` wrote it before the builder).
#[no_mangle]
pub fn probe_hand_eq_arm(eqn: u8, ci: u32) -> u32 {
    (u32::from(eqn) << 24) | (ci & 0xff_ffff)
}

/// The CQ doorbell record's arm word through the builder.
#[no_mangle]
pub fn probe_build_cq_record_arm(sn: u8, cmd: CqArmCmd, ci: u32) -> u32 {
    CqDoorbellRecordArmWord::new()
        .arm_sn(sn & 3)
        .arm_cmd(cmd)
        .arm_ci(ci & 0xff_ffff)
        .bits()
}

/// The same word by hand (the high dword of the arm doorbell).
#[no_mangle]
pub fn probe_hand_cq_record_arm(sn: u8, cmd: CqArmCmd, ci: u32) -> u32 {
    (u32::from(sn & 3) << 28) | (u32::from(cmd.raw()) << 24) | (ci & 0xff_ffff)
}

fn main() {
    let mut c = Cqc::zeroed();
    probe_set_log_cq_size(&mut c, 3);
    probe_set_uar_page(&mut c, 0x12_3456);
    let mut slice = [0u8; 80];
    probe_set_log_cq_size_mut(Cqc::from_slice_mut(&mut slice).unwrap(), 3);
    println!(
        "{}",
        probe_get_log_cq_size_ref(Cqc::from_slice(&slice).unwrap())
    );
    println!(
        "{} {} {} {} {}",
        probe_get_log_cq_size(&c),
        probe_hand_log_cq_size(c.storage()),
        probe_get_oi(&c),
        probe_get_dbr_addr(&c),
        probe_get_uar_page(&c)
    );
    let cmd = CqArmCmd::ReqNotSol;
    println!(
        "{:x} {:x} {:x} {:x} {:x} {:x} {:x}",
        probe_build_cq_arm(1, cmd, 7, 9),
        probe_hand_cq_arm(1, cmd, 7, 9),
        probe_driver_cq_arm(1, cmd, 7, 9),
        probe_build_eq_arm(3, 5),
        probe_hand_eq_arm(3, 5),
        probe_build_cq_record_arm(1, cmd, 7),
        probe_hand_cq_record_arm(1, cmd, 7)
    );
}

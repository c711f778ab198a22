//! Word builders: a word declared under `words:` in the spec (the CQ arm doorbell, the EQ
//! doorbells, the CQ doorbell record's words) is composed from its typed fields and stored
//! with one access, with the same bits the field setters would leave.

use mlx5_prm::rt::{Mmio32, MmioBytes, Overflow, RegisterFile};
use mlx5_prm::{
    CqArmCmd, CqDoorbellRecord, CqDoorbellRecordArmWord, UarPage, UarPageCqArmWord,
    UarPageEqArmWord, UarPageEqUpdateWord,
};

#[test]
fn the_cq_arm_doorbell_is_one_64_bit_value() {
    let w = UarPageCqArmWord::new()
        .cq_arm_sn(2)
        .cq_arm_cmd(CqArmCmd::ReqNotSol)
        .cq_arm_ci(0x12_3456)
        .cq_arm_cqn(0xab_cdef);
    // First dword: sn at 29:28, cmd at 26:24, ci at 23:0; second: the CQ number.
    assert_eq!(w.bits(), 0x2112_3456_00ab_cdef);
    assert_eq!(UarPageCqArmWord::OFFSET, 0x20);
    // A field set twice keeps the last value only.
    assert_eq!(w.cq_arm_sn(1).bits(), 0x1112_3456_00ab_cdef);
    assert_eq!(
        UarPageCqArmWord::new().try_cq_arm_ci(1 << 24),
        Err(Overflow {
            field: "cq_arm_ci",
            value: 1 << 24,
            max: 0xff_ffff
        })
    );
}

#[test]
fn builders_agree_with_the_field_setters() {
    // The doorbell record's arm word, built, equals what the three setters write.
    let mut by_fields = CqDoorbellRecord::zeroed();
    by_fields.set_arm_sn(3);
    by_fields.set_arm_cmd(CqArmCmd::ReqNot);
    by_fields.set_arm_ci(0x77);
    let mut by_word = CqDoorbellRecord::zeroed();
    by_word.write_arm_with(|w| w.arm_sn(3).arm_cmd(CqArmCmd::ReqNot).arm_ci(0x77));
    assert_eq!(by_word.storage(), by_fields.storage());
    let w = CqDoorbellRecordArmWord::new().arm_sn(3).arm_ci(0x77);
    assert_eq!(w.bits(), 0x3000_0077);
}

#[test]
fn a_register_word_is_stored_through_the_register_block() {
    let regs = RegisterFile::<{ 0x1000 / 4 }>::default();
    let mut uar = UarPage::new_checked(MmioBytes::new(&regs, 0x1000)).unwrap();
    uar.write_eq_arm(UarPageEqArmWord::new().eq_arm_eqn(5).eq_arm_ci(0x10));
    uar.write_eq_update_with(|w| w.eq_update_eqn(6).eq_update_ci(0x20));
    uar.write_cq_arm(UarPageCqArmWord::new().cq_arm_ci(1).cq_arm_cqn(2));
    assert_eq!(regs.read32(0x40), 0x0500_0010);
    assert_eq!(regs.read32(0x48), 0x0600_0020);
    assert_eq!((regs.read32(0x20), regs.read32(0x24)), (1, 2));
    assert_eq!(UarPageEqUpdateWord::OFFSET, 0x48);
}

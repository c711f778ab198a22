//! Setters of fields that lie within one byte read and write only that byte on ordinary
//! memory, and leave exactly the bytes the dword read-modify-write left (the kernel's
//! `MLX5_SET`); device memory and register blocks keep whole-dword accesses.

use mlx5_prm::rt::{self, Bytes, BytesMut, DeviceBytes, Mmio32, MmioBytes};
use mlx5_prm::Cqc;
use proptest::prelude::*;
use std::cell::{Cell, RefCell};

/// The dword read-modify-write, written out as `MLX5_SET` computes it: the reference.
fn dword_rmw(buf: &mut [u8], at: usize, shift: u32, mask: u32, value: u32) {
    let word: [u8; 4] = buf[at..at + 4].try_into().unwrap();
    let old = u32::from_be_bytes(word);
    let new = (old & !(mask << shift)) | ((value & mask) << shift);
    buf[at..at + 4].copy_from_slice(&new.to_be_bytes());
}

/// A field shape: `(shift, mask)` with `shift + width <= 32`, narrow and byte-sized widths
/// drawn often (those take the byte path), any width otherwise.
fn field() -> impl Strategy<Value = (u32, u32)> {
    prop_oneof![1u32..=8, 1u32..=32]
        .prop_flat_map(|width| (0..=32 - width, Just(width)))
        .prop_map(|(shift, width)| {
            let mask = if width == 32 {
                u32::MAX
            } else {
                (1 << width) - 1
            };
            (shift, mask)
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

    #[test]
    fn byte_and_dword_read_modify_writes_leave_the_same_bytes(
        (shift, mask) in field(),
        value in any::<u32>(),
        init in any::<[u8; 16]>(),
        at in 0usize..=12,
    ) {
        let mut want = init;
        dword_rmw(&mut want, at, shift, mask, value);

        // Owned array, slice, vector: the byte path where the field allows it.
        let mut array = init;
        rt::set32(&mut array, at, shift, mask, value);
        prop_assert_eq!(array, want);
        let mut slice = init;
        rt::set32(&mut &mut slice[..], at, shift, mask, value);
        prop_assert_eq!(slice, want);
        let mut vec = init.to_vec();
        rt::set32(&mut vec, at, shift, mask, value);
        prop_assert_eq!(&vec[..], &want[..]);
        // Through the array accessors, which locate a field by its MSB-first bit offset.
        if at % 4 == 0 {
            let width = 32 - mask.leading_zeros();
            let bit = at * 8 + (32 - width - shift) as usize;
            let mut bits = init;
            rt::set_bits(&mut bits, bit, width, u64::from(value));
            prop_assert_eq!(bits, want);
            prop_assert_eq!(rt::get_bits(&bits, bit, width), u64::from(value & mask));
        }

        // Device memory: the dword path, with the same result.
        let mut shared = init;
        {
            // SAFETY: `shared` is a live local array, not otherwise accessed while `device`
            // (this block) lives, and no other thread sees it.
            let mut device = unsafe { DeviceBytes::new(shared.as_mut_ptr(), shared.len()) };
            rt::set32(&mut device, at, shift, mask, value);
        }
        prop_assert_eq!(shared, want);
    }

    #[test]
    fn fields_outside_one_byte_are_left_to_the_dword(
        value in any::<u32>(),
        init in any::<[u8; 8]>(),
    ) {
        // Fields across a byte boundary (bits 8..7, 16..15, 9..6, 8..0), and masks reaching
        // past the dword's top, whose excess bits the dword path drops: all left to it.
        for (shift, mask) in [(7, 0x3), (15, 0x3), (6, 0xf), (0, 0x1ff), (30, 0xf), (31, 0x3)] {
            let mut want = init;
            dword_rmw(&mut want, 4, shift, mask, value);
            let mut got = init;
            rt::set32(&mut got, 4, shift, mask, value);
            prop_assert_eq!(got, want, "shift {} mask {:#x}", shift, mask);
        }
    }
}

/// Ordinary memory that logs each access as `(width, offset)`; `BYTES` is its
/// [`BytesMut::BYTE_RMW`].
struct Logged<'a, const BYTES: bool> {
    bytes: &'a mut [u8],
    base: usize,
    log: &'a RefCell<Vec<(&'static str, usize)>>,
}

impl<const BYTES: bool> Logged<'_, BYTES> {
    fn note(&self, what: &'static str, at: usize) {
        self.log.borrow_mut().push((what, self.base + at));
    }
}

impl<const BYTES: bool> Bytes for Logged<'_, BYTES> {
    type Sub<'b>
        = &'b [u8]
    where
        Self: 'b;
    fn len(&self) -> usize {
        self.bytes.len()
    }
    fn read_u8(&self, at: usize) -> u8 {
        self.note("read8", at);
        self.bytes.read_u8(at)
    }
    fn read_be32(&self, at: usize) -> u32 {
        self.note("read32", at);
        self.bytes.read_be32(at)
    }
    fn read_bytes(&self, at: usize, out: &mut [u8]) {
        self.bytes.read_bytes(at, out)
    }
    fn sub(&self, at: usize, len: usize) -> &[u8] {
        self.bytes.sub(at, len)
    }
}

impl<const BYTES: bool> BytesMut for Logged<'_, BYTES> {
    type SubMut<'b>
        = Logged<'b, BYTES>
    where
        Self: 'b;
    const BYTE_RMW: bool = BYTES;
    fn write_u8(&mut self, at: usize, value: u8) {
        self.note("write8", at);
        self.bytes.write_u8(at, value)
    }
    fn write_be32(&mut self, at: usize, value: u32) {
        self.note("write32", at);
        self.bytes.write_be32(at, value)
    }
    fn write_bytes(&mut self, at: usize, data: &[u8]) {
        self.bytes.write_bytes(at, data)
    }
    fn sub_mut(&mut self, at: usize, len: usize) -> Logged<'_, BYTES> {
        Logged {
            bytes: self.bytes.sub_mut(at, len),
            base: self.base + at,
            log: self.log,
        }
    }
}

/// The accesses a `log_cq_size` (bits 4..0 of byte 12) and a `uar_page` (bits 23..0 of the
/// dword at 12) setter make on storage with `BYTE_RMW == BYTES`.
fn accesses<const BYTES: bool>() -> [Vec<(&'static str, usize)>; 2] {
    let mut buf = [0u8; 64];
    let log = RefCell::new(Vec::new());
    let mut cqc = Cqc::new_unchecked(Logged::<BYTES> {
        bytes: &mut buf,
        base: 0,
        log: &log,
    });
    cqc.set_log_cq_size(9);
    let narrow = log.take();
    cqc.set_uar_page(0x12_3456);
    let wide = log.take();
    assert_eq!(cqc.log_cq_size(), 9);
    assert_eq!(cqc.uar_page(), 0x12_3456);
    [narrow, wide]
}

#[test]
fn ordinary_memory_updates_a_narrow_field_by_its_byte() {
    let [narrow, wide] = accesses::<true>();
    assert_eq!(narrow, [("read8", 12), ("write8", 12)]);
    assert_eq!(wide, [("read32", 12), ("write32", 12)]);
}

#[test]
fn storage_that_does_not_opt_in_keeps_dword_accesses() {
    let [narrow, wide] = accesses::<false>();
    assert_eq!(narrow, [("read32", 12), ("write32", 12)]);
    assert_eq!(wide, narrow);
    // Device memory does not opt in: its hand-over words are read as dwords on the other
    // side, and a byte store racing a dword load is a mixed-size race.
    const { assert!(!<DeviceBytes<'static> as BytesMut>::BYTE_RMW) };
    const { assert!(<[u8; 4] as BytesMut>::BYTE_RMW && <&mut [u8] as BytesMut>::BYTE_RMW) };
}

/// A register block that counts its register reads and writes.
#[derive(Default)]
struct Counted {
    regs: [Cell<u32>; 16],
    reads: Cell<usize>,
    writes: Cell<usize>,
}

impl Mmio32 for Counted {
    fn read32(&self, offset: usize) -> u32 {
        self.reads.set(self.reads.get() + 1);
        self.regs[offset / 4].get()
    }
    fn write32(&self, offset: usize, value: u32) {
        self.writes.set(self.writes.get() + 1);
        self.regs[offset / 4].set(value)
    }
}

#[test]
fn a_register_block_is_updated_with_one_read_and_one_write() {
    let regs = Counted::default();
    let mut cqc = Cqc::new_unchecked(MmioBytes::new(&regs, 64));
    cqc.set_log_cq_size(9);
    // Byte accesses on a register block are done as dword ones: a byte read-modify-write
    // would read the register twice.
    assert_eq!((regs.reads.get(), regs.writes.get()), (1, 1));
    assert_eq!(regs.regs[3].get(), 9 << 24);
}

#[test]
fn the_byte_path_checks_the_whole_dword() {
    // A 13-byte buffer holds byte 12 but not the dword at 12: refused as by the dword path,
    // with the same message, and nothing is written.
    let mut buf = [0u8; 13];
    let m = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        Cqc::new_unchecked(&mut buf[..]).set_log_cq_size(1)
    }))
    .unwrap_err();
    let m = m.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(
        m.contains("byte access 12+4 beyond a 13-byte buffer"),
        "{m}"
    );
    assert_eq!(buf, [0; 13]);
}

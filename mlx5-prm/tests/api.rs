//! The generated API on the real spec: construction, typed getters and setters, overflow
//! handling, enums that never lose a value, sub-views, trailing arrays, commands typed by
//! opcode, device-shared memory and `Debug`.

use mlx5_prm::cmd::{CreateCq, DestroyCq};
use mlx5_prm::rt::{Command, DeviceBytes, LayoutError, Overflow, UnknownValue, View};
use mlx5_prm::{CqPeriodMode, Cqc, CqeSize, CreateCqIn, CreateCqOut};

#[test]
fn checked_construction_reports_short_buffers() {
    let short = [0u8; 0x3c];
    // Matched, not unwrapped: a view is `Debug` only with the `debug` feature.
    let Err(err) = Cqc::new_checked(&short[..]) else {
        panic!("a short buffer was accepted");
    };
    assert_eq!(
        err,
        LayoutError {
            layout: "cqc",
            needed: 0x40,
            actual: 0x3c
        }
    );
    assert_eq!(
        err.to_string(),
        "buffer of 60 bytes is too short for `cqc` (64 bytes)"
    );
    assert!(Cqc::new_checked(&[0u8; 0x40][..]).is_ok());
    assert_eq!(Cqc::SIZE, 0x40);
    assert_eq!(<Cqc<&[u8]> as View<&[u8]>>::SIZE, 0x40);
}

#[test]
fn getters_and_setters_follow_the_prm_numbering() {
    let mut c = Cqc::zeroed();
    c.set_log_cq_size(10);
    c.set_uar_page(0xabcdef);
    c.set_dbr_addr(0x1122_3344_5566_7788);
    c.set_oi(true);
    // 0x0c[28:24] = 10, 0x0c[23:0] = 0xabcdef: dword 0x0c is 0x0aabcdef, big-endian.
    assert_eq!(&c.storage()[0x0c..0x10], &[0x0a, 0xab, 0xcd, 0xef]);
    assert_eq!(
        &c.storage()[0x38..0x40],
        &0x1122_3344_5566_7788u64.to_be_bytes()
    );
    // 0x00[17] is bit 1 of byte 1 (bits 23..16 of the dword).
    assert_eq!(c.storage()[1], 0x02);
    assert_eq!(
        (c.log_cq_size(), c.uar_page(), c.dbr_addr(), c.oi()),
        (10, 0xabcdef, 0x1122_3344_5566_7788, true)
    );
    assert_eq!(Cqc::LOG_CQ_SIZE.bit_offset, 0x63);
    assert_eq!(Cqc::LOG_CQ_SIZE.width, 5);
    assert_eq!(Cqc::FIELDS.len(), 24);
}

#[test]
fn try_set_refuses_values_that_do_not_fit() {
    let mut c = Cqc::zeroed();
    assert_eq!(
        c.try_set_log_cq_size(32),
        Err(Overflow {
            field: "log_cq_size",
            value: 32,
            max: 31
        })
    );
    assert_eq!(c.log_cq_size(), 0, "a refused value changes nothing");
    assert_eq!(c.try_set_log_cq_size(31), Ok(()));
    assert_eq!(c.log_cq_size(), 31);
}

#[test]
#[should_panic(expected = "too wide for `log_cq_size`")]
#[cfg(debug_assertions)]
fn set_asserts_on_overflow_in_debug_builds() {
    Cqc::zeroed().set_log_cq_size(32);
}

#[test]
fn enums_are_typed_and_never_lose_a_value() {
    let mut c = Cqc::zeroed();
    c.set_cqe_sz(CqeSize::Bytes128);
    c.set_cq_period_mode(CqPeriodMode::UponCqe);
    assert_eq!(c.cqe_sz(), Ok(CqeSize::Bytes128));
    assert_eq!(c.cq_period_mode(), Ok(CqPeriodMode::UponCqe));
    c.set_cqe_sz_raw(5);
    assert_eq!(
        c.cqe_sz(),
        Err(UnknownValue {
            enumeration: "cqe_size",
            raw: 5
        })
    );
    assert_eq!(c.cqe_sz_raw(), 5);
    assert_eq!(CqeSize::try_from(1u64), Ok(CqeSize::Bytes128));
    assert_eq!(CqeSize::Bytes64.spec_name(), "bytes_64");
}

#[test]
fn nested_structures_are_sub_views() {
    let mut input = CreateCqIn::zeroed();
    input.cq_context_mut().set_log_cq_size(7);
    assert_eq!(input.cq_context().log_cq_size(), 7);
    // cq_context sits at 0x10, so its dword 0x0c is the input's dword 0x1c.
    assert_eq!(input.storage()[0x1c], 7);
}

#[test]
fn trailing_arrays_are_sized_by_the_buffer() {
    let mut buf = vec![0u8; CreateCqIn::SIZE + 3 * 8];
    let mut input = CreateCqIn::new_checked(&mut buf[..]).unwrap();
    assert_eq!(input.pas_len(), 3);
    input.set_pas(2, 0xdead_beef_0000_1000).unwrap();
    assert_eq!(input.pas(2), Some(0xdead_beef_0000_1000));
    assert_eq!(input.pas(3), None);
    assert!(input.set_pas(3, 0).is_err());
    assert_eq!(
        input.pas_iter().collect::<Vec<_>>(),
        [0, 0, 0xdead_beef_0000_1000]
    );
    assert_eq!(
        &buf[CreateCqIn::SIZE + 16..],
        &0xdead_beef_0000_1000u64.to_be_bytes()
    );
}

#[test]
fn commands_tie_opcode_input_and_output() {
    let mut buf = [0u8; 0x110];
    let input = CreateCq::input(&mut buf[..], 0).unwrap();
    assert_eq!(input.opcode(), 0x400);
    assert_eq!(CreateCq::OPCODE, 0x400);
    assert_eq!(DestroyCq::OPCODE, 0x401);
    let too_short = [0u8; 8];
    assert!(DestroyCq::output(&too_short[..]).is_err());
    let mut out = [0u8; 0x10];
    out[0x0b] = 0x2a;
    let out: CreateCqOut<&[u8]> = CreateCq::output(&out[..]).unwrap();
    assert_eq!(out.cqn(), 0x2a);
    // `CreateCq::Input<B>` is `CreateCqIn<B>`: the types line up at compile time.
    fn takes_create_cq_input(_: &<CreateCq as Command>::Input<&mut [u8]>) {}
    let mut b = [0u8; 0x110];
    takes_create_cq_input(&CreateCqIn::new_checked(&mut b[..]).unwrap());
}

#[test]
fn device_memory_is_reached_without_references() {
    // Stands in for a DMA ring: the bytes are only touched through volatile accesses.
    let mut ring = vec![0u64; 8]; // 64 bytes, 8-byte aligned
    let ptr = ring.as_mut_ptr().cast::<u8>();
    // SAFETY: `ring` outlives the window and is not otherwise accessed while it is used.
    let mem = unsafe { DeviceBytes::new(ptr, 64) };
    {
        let mut c = Cqc::new_checked(mem).unwrap();
        c.set_log_cq_size(6);
        c.set_dbr_addr(0x1000);
        assert_eq!((c.log_cq_size(), c.dbr_addr()), (6, 0x1000));
    }
    // Byte 0x0c holds 0x0c[31:24]: log_cq_size sits in its low five bits.
    assert_eq!(ring[1].to_ne_bytes()[4], 6);
}

#[test]
#[cfg(feature = "debug")]
fn debug_decodes_fields_and_flags_reserved_bits() {
    let mut c = Cqc::zeroed();
    c.set_cqe_sz(CqeSize::Bytes128);
    c.set_log_cq_size(4);
    let text = format!("{c:?}");
    // Each field with its PRM position, enum values by the spec's names.
    assert!(
        text.starts_with("Cqc { status: 0x00[31:28] = 0x0, "),
        "{text}"
    );
    assert!(text.contains("cqe_sz: 0x00[23:21] = bytes_128"), "{text}");
    assert!(text.contains("log_cq_size: 0x0c[28:24] = 0x4"), "{text}");
    assert!(text.contains("dbr_addr: 0x38[63:0] = 0x0 }"), "{text}");
    assert!(!text.contains("reserved_bits_set"), "{text}");
    let mut bytes = *c.storage();
    bytes[0x04] = 0x80; // dword 0x04 is wholly reserved
    let text = format!("{:?}", Cqc::new_checked(bytes).unwrap());
    assert!(
        text.contains("reserved_bits_set: [0x04: 0x80000000]"),
        "{text}"
    );
    c.set_cqe_sz_raw(6);
    assert!(format!("{c:?}").contains("cqe_sz: 0x00[23:21] = unknown(0x6)"));
}

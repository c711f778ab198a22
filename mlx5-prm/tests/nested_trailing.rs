//! Trailing arrays inside nested views: a nested structure that ends its parent and itself
//! runs on past its fixed part (CREATE_SQ's `ctx.wq.pas`, CREATE_RQ's, SET_FTE's
//! `flow_context.destination`) gets the rest of the buffer, so its array is reachable through
//! the typed API and bounds-checked against the real buffer, at the offsets the kernel's
//! `MLX5_ADDR_OF` gives.

use mlx5_prm::cmd::{CreateRq, CreateSq, SetFte};
use mlx5_prm::rt::{Command, View};
use mlx5_prm::{
    CreateRqIn, CreateSqIn, DestFormatStruct, FlowContext, FlowCounterList, FlowDestinationType,
    Rqc, SetFteIn, Sqc, Wq,
};

/// Byte offset of CREATE_SQ's page list, as `MLX5_ADDR_OF(create_sq_in, in, ctx.wq.pas)`.
const SQ_PAS: usize = (CreateSqIn::CTX.bit_offset + Sqc::WQ.bit_offset + Wq::PAS.bit_offset) / 8;

#[test]
fn create_sq_page_list_through_the_nested_views() {
    assert_eq!(SQ_PAS, 0x110);
    let mut buf = vec![0u8; 0x110 + 3 * 8];
    let mut input = CreateSq::input(&mut buf[..], 0).unwrap();
    let mut ctx = input.ctx_mut();
    let mut wq = ctx.wq_mut();
    assert_eq!(wq.pas_len(), 3);
    for i in 0..3 {
        let mut pa = wq.pas_mut(i).unwrap();
        let addr = 0x1_2345_0000u64 + (i as u64) * 0x1000;
        pa.set_pa_h((addr >> 32) as u32);
        pa.set_pa_l((addr as u32) >> 12);
    }
    // Past the buffer: refused, nothing written.
    assert!(wq.pas_mut(3).is_none());
    assert!(wq.pas_mut(usize::MAX).is_none());
    // The bytes sit where the kernel puts them.
    assert_eq!(&buf[SQ_PAS..SQ_PAS + 8], &[0, 0, 0, 1, 0x23, 0x45, 0, 0]);
    assert_eq!(
        &buf[SQ_PAS + 16..SQ_PAS + 24],
        &[0, 0, 0, 1, 0x23, 0x45, 0x20, 0]
    );
    // And read back through the read-only views.
    let input = CreateSqIn::new_checked(&buf[..]).unwrap();
    let pages: Vec<u64> = input
        .ctx()
        .wq()
        .pas_iter()
        .map(|p| (u64::from(p.pa_h()) << 32) | (u64::from(p.pa_l()) << 12))
        .collect();
    assert_eq!(pages, [0x1_2345_0000, 0x1_2345_1000, 0x1_2345_2000]);
}

#[test]
fn create_rq_page_list_through_the_nested_views() {
    let mut buf = vec![0u8; 0x110 + 8];
    let mut input = CreateRq::input(&mut buf[..], 0).unwrap();
    let mut ctx = input.ctx_mut();
    ctx.wq_mut().pas_mut(0).unwrap().set_pa_l(0xabcde);
    assert!(ctx.wq_mut().pas_mut(1).is_none());
    let at = (CreateRqIn::CTX.bit_offset + Rqc::WQ.bit_offset + Wq::PAS.bit_offset) / 8;
    assert_eq!(&buf[at + 4..at + 8], &0xabcd_e000u32.to_be_bytes());
}

#[test]
fn a_buffer_with_only_the_fixed_part_has_no_elements() {
    let mut buf = [0u8; 0x110];
    let mut input = CreateSq::input(&mut buf[..], 0).unwrap();
    assert_eq!(input.ctx_mut().wq_mut().pas_len(), 0);
    assert!(input.ctx().wq().pas(0).is_none());
}

#[test]
fn set_fte_destinations_at_either_stride() {
    let dests = (SetFteIn::FLOW_CONTEXT.bit_offset + FlowContext::DESTINATION.bit_offset) / 8;
    assert_eq!(dests, 0x340);
    // Three 8-byte entries (extended_destination clear: two destinations, one counter).
    let mut buf = vec![0u8; 0x340 + 3 * 8];
    let mut input = SetFte::input(&mut buf[..], 0).unwrap();
    let mut fc = input.flow_context_mut();
    fc.set_destination_list_size(2);
    fc.set_flow_counter_list_size(1);
    for (i, tir) in [(0usize, 0x11u32), (1, 0x22)] {
        let mut d = fc.destination_as_mut::<DestFormatStruct<_>>(i).unwrap();
        d.set_destination_type(FlowDestinationType::Tir);
        d.set_destination_id(tir);
    }
    fc.destination_as_mut::<FlowCounterList<_>>(2)
        .unwrap()
        .set_flow_counter_id(0x99);
    assert!(fc.destination_as_mut::<DestFormatStruct<_>>(3).is_none());
    assert_eq!(&buf[dests..dests + 4], &[2, 0, 0, 0x11]);
    assert_eq!(&buf[dests + 8..dests + 12], &[2, 0, 0, 0x22]);
    assert_eq!(&buf[dests + 16..dests + 20], &[0, 0, 0, 0x99]);

    // With extended_destination the entries are 16 bytes apart: the list's own element type.
    let mut buf = vec![0u8; 0x340 + 2 * 16];
    let mut input = SetFte::input(&mut buf[..], 0).unwrap();
    let mut fc = input.flow_context_mut();
    fc.set_extended_destination(true);
    assert_eq!(fc.destination_len(), 2);
    let mut e = fc.destination_mut(1).unwrap();
    let mut ext = e.extended_dest_format_mut();
    ext.destination_entry_mut().set_destination_id(0x33);
    ext.set_packet_reformat_id(0x44);
    assert_eq!(&buf[dests + 16..dests + 20], &[0, 0, 0, 0x33]);
    assert_eq!(&buf[dests + 24..dests + 28], &[0, 0, 0, 0x44]);
}

#[test]
fn nested_views_of_short_unchecked_buffers_are_still_refused() {
    // A view made without checking its length panics (as slicing does) rather than reading
    // past the buffer; the nested view's tail never reaches beyond it.
    let v = CreateSqIn::new_unchecked(&[0u8; 0x40][..]);
    let r = std::panic::catch_unwind(|| v.ctx().wq().log_wq_sz());
    assert!(r.is_err());
    let ok = CreateSqIn::new_checked(&[0u8; 0x118][..]).unwrap();
    assert_eq!(ok.ctx().storage().len(), 0x118 - 0x20);
    assert_eq!(<Sqc<&[u8]> as View<&[u8]>>::SIZE, 0xf0);
}

//! The trailing lists of the setup commands, written through the typed nested views that run
//! on to the end of the input: a work queue's page list (CREATE_SQ's and CREATE_RQ's
//! `ctx.wq.pas`) and a flow entry's destination list (SET_FTE's `flow_context.destination`).
//! Each index is checked against the input's real length, and a value too wide for its field
//! is the generated setter's error, returned.

use crate::error::{Error, Result};
use mlx5_prm::rt::{BytesMut, Overflow, View};
use mlx5_prm::{CmdPas, DestFormatStruct, FlowContext, FlowDestinationType, Wq};

/// Bytes per page address of a work queue's page list (`cmd_pas`).
pub(crate) const PAS: usize = <CmdPas<[u8; 8]> as View<[u8; 8]>>::SIZE;
/// Bytes per SET_FTE destination with `extended_destination` clear (the kernel's default, and
/// what this driver sends): `dest_format_struct`.
pub(crate) const DEST: usize = <DestFormatStruct<[u8; 8]> as View<[u8; 8]>>::SIZE;
/// Page size of the rings' page lists (`log_wq_pg_sz` 0: 4 KiB).
pub(crate) const PAGE: usize = 4096;
/// Flow table action bit: forward to the destination list.
pub(crate) const ACTION_FWD: u16 = 0x4;

/// An index past the end of a trailing array (the input was sized for fewer elements), as
/// the generated setters report it.
fn past_end(field: &'static str, index: usize, len: usize) -> Error {
    Error::Field(Overflow {
        field,
        value: index as u64,
        max: len.saturating_sub(1) as u64,
    })
}

/// Writes a work queue's page list: each page address split into its high dword and bits
/// 31..12 (`cmd_pas`). A page address that is not 4 KiB aligned is refused.
pub(crate) fn set_wq_pages<Bm: BytesMut>(wq: &mut Wq<Bm>, pages: &[u64]) -> Result<()> {
    let len = wq.pas_len();
    for (k, &addr) in pages.iter().enumerate() {
        if addr % PAGE as u64 != 0 {
            return Err(Error::InvalidArgument {
                what: "work queue page list",
                why: format!("page address 0x{addr:x} is not 4 KiB aligned"),
            });
        }
        let mut pa = wq.pas_mut(k).ok_or_else(|| past_end("pas", k, len))?;
        pa.set_pa_h((addr >> 32) as u32);
        pa.try_set_pa_l((addr as u32) >> 12)?;
    }
    Ok(())
}

/// Makes a flow entry forward to TIR `tirn`: the forward action and a one-element destination
/// list, at the 8-byte stride of `extended_destination` clear.
pub(crate) fn forward_to_tir<Bm: BytesMut>(fc: &mut FlowContext<Bm>, tirn: u32) -> Result<()> {
    fc.set_action(ACTION_FWD);
    fc.set_destination_list_size(1);
    let len = fc.destination_len();
    let mut d = fc
        .destination_as_mut::<DestFormatStruct<_>>(0)
        .ok_or_else(|| past_end("destination", 0, len))?;
    d.set_destination_type(FlowDestinationType::Tir);
    d.try_set_destination_id(tirn)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use mlx5_prm::cmd::{CreateRq, CreateSq, SetFte};
    use mlx5_prm::rt::Command;

    /// Where the kernel puts the lists (`MLX5_ADDR_OF` over `mlx5_ifc.h`): CREATE_SQ's and
    /// CREATE_RQ's `ctx.wq.pas` at 0x20 + 0x30 + 0xc0, SET_FTE's `flow_context.destination`
    /// at 0x40 + 0x300. Written down here, not derived from the generated constants.
    const WQ_PAS: usize = 0x110;
    const FTE_DEST: usize = 0x340;

    #[test]
    fn page_lists_sit_where_the_kernel_puts_them() {
        let pages = [0x1_2345_6000u64, 0x1_2345_7000, 0xffff_ffff_ffff_f000];
        let mut buf = vec![0u8; WQ_PAS + pages.len() * PAS];
        let mut input = CreateSq::input(&mut buf[..], 0).unwrap();
        set_wq_pages(&mut input.ctx_mut().wq_mut(), &pages).unwrap();
        for (k, p) in pages.iter().enumerate() {
            let at = WQ_PAS + k * 8;
            assert_eq!(buf[at..at + 8], p.to_be_bytes(), "page {k}");
        }
        let mut buf = vec![0u8; WQ_PAS + PAS];
        let mut input = CreateRq::input(&mut buf[..], 0).unwrap();
        set_wq_pages(&mut input.ctx_mut().wq_mut(), &pages[..1]).unwrap();
        assert_eq!(buf[WQ_PAS..WQ_PAS + 8], pages[0].to_be_bytes());
    }

    #[test]
    fn a_page_list_longer_than_its_input_or_misaligned_is_refused() {
        let mut buf = vec![0u8; WQ_PAS + 2 * PAS];
        let mut input = CreateSq::input(&mut buf[..], 0).unwrap();
        let e = set_wq_pages(&mut input.ctx_mut().wq_mut(), &[0x1000, 0x2000, 0x3000]);
        match e {
            Err(Error::Field(o)) => assert_eq!((o.field, o.value, o.max), ("pas", 2, 1)),
            other => panic!("{other:?}"),
        }
        let e = set_wq_pages(&mut input.ctx_mut().wq_mut(), &[0x1000, 0x2800]);
        assert!(matches!(e, Err(Error::InvalidArgument { .. })), "{e:?}");
    }

    #[test]
    fn the_destination_sits_where_the_kernel_puts_it() {
        let mut buf = vec![0u8; FTE_DEST + DEST];
        let mut input = SetFte::input(&mut buf[..], 0).unwrap();
        forward_to_tir(&mut input.flow_context_mut(), 0xab_cdef).unwrap();
        // destination_type TIR (2) in the top byte, the TIR number in the low 24 bits.
        assert_eq!(buf[FTE_DEST..FTE_DEST + 4], [2, 0xab, 0xcd, 0xef]);
        let fc = mlx5_prm::SetFteIn::new_checked(&buf[..]).unwrap();
        assert_eq!(fc.flow_context().destination_list_size(), 1);
        assert_eq!(fc.flow_context().action(), ACTION_FWD);
        // A TIR number too wide for its 24 bits, or no room for the entry: the setter's error.
        let mut buf = vec![0u8; FTE_DEST + DEST];
        let mut input = SetFte::input(&mut buf[..], 0).unwrap();
        let e = forward_to_tir(&mut input.flow_context_mut(), 1 << 24);
        assert!(
            matches!(e, Err(Error::Field(o)) if o.field == "destination_id"),
            "{e:?}"
        );
        let mut buf = vec![0u8; FTE_DEST];
        let mut input = SetFte::input(&mut buf[..], 0).unwrap();
        let e = forward_to_tir(&mut input.flow_context_mut(), 1);
        assert!(
            matches!(e, Err(Error::Field(o)) if o.field == "destination"),
            "{e:?}"
        );
    }
}

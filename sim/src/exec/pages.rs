//! QUERY_PAGES and MANAGE_PAGES: the firmware page pool as the driver sees it.

use super::{out, Ctx, Req};
use crate::dma::DMA_PAGE_SIZE;
use crate::fail::{ensure, Fail, Outcome};
use crate::pages::Stage;
use crate::syndrome as s;
use mlx5_prm::cmd;
use mlx5_prm::{ManagePagesIn, ManagePagesOut, QueryPagesIn, QueryPagesOut};

/// Bytes per page address in a page list.
const PAS: usize = 8;

/// QUERY_PAGES: the outstanding demand of the stage op_mod names (boot 1, init 2, regular 3).
pub(super) fn query(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let input = QueryPagesIn::new_unchecked(req.input);
    ensure(
        input.function_id() == 0,
        Fail::bad_param(s::PAGES_BAD_FUNCTION),
    )?;
    let stage = match req.op_mod {
        1 => Stage::Boot,
        2 => Stage::Init,
        _ => Stage::Regular,
    };
    let mut o = out::<cmd::QueryPages>(0);
    let mut v = QueryPagesOut::new_unchecked(&mut o[..]);
    v.set_embedded_cpu_function(input.embedded_cpu_function());
    v.set_function_id(0);
    v.set_num_pages(cx.m.pages.wanted(stage) as u32);
    Ok(o)
}

/// MANAGE_PAGES: op_mod 1 gives the listed pages, 2 takes up to `input_num_entries` pages back
/// (as many as are held; listed in the output, output_num_entries says how many), 0 reports
/// that the driver could not allocate them. The output must have room for all pages asked
/// for.
pub(super) fn manage(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let input = ManagePagesIn::new_unchecked(req.input);
    ensure(
        input.function_id() == 0,
        Fail::bad_param(s::PAGES_BAD_FUNCTION),
    )?;
    let n = input.input_num_entries();
    match req.op_mod {
        1 => {
            ensure(
                input.pas_len() as u64 >= u64::from(n),
                Fail::inp_len(s::INPUT_LIST_TOO_SHORT),
            )?;
            let pages: Vec<u64> = input.pas_iter().take(n as usize).collect();
            let dma = cx.dma;
            cx.m.pages
                .give(&pages, |p| dma.is_mapped(p, DMA_PAGE_SIZE))?;
            Ok(out::<cmd::ManagePages>(0))
        }
        2 => {
            let n = n as usize;
            let room = req
                .out_len
                .saturating_sub(super::out_size::<cmd::ManagePages>())
                / PAS;
            ensure(room >= n, Fail::outp_len(s::OUTPUT_LIST_TOO_SHORT))?;
            let pages = cx.m.pages.take(n);
            let mut o = out::<cmd::ManagePages>(pages.len() * PAS);
            let mut v = ManagePagesOut::new_unchecked(&mut o[..]);
            v.set_output_num_entries(pages.len() as u32);
            for (i, p) in pages.into_iter().enumerate() {
                let _ = v.set_pas(i, p);
            }
            Ok(o)
        }
        _ => {
            cx.m.pages.cannot_give(n);
            Ok(out::<cmd::ManagePages>(0))
        }
    }
}

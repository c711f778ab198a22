//! Memory keys: CREATE_MKEY, DESTROY_MKEY and QUERY_MKEY. The model keeps the context and the
//! translation entries the create carried; the data path translates through them
//! (`datapath::mem`).

use super::{out, Ctx, Req};
use crate::budget::Charged;
use crate::fail::{ensure, Fail, Outcome};
use crate::model::Model;
use crate::syndrome as s;
use mlx5_prm::cmd;
use mlx5_prm::{CreateMkeyIn, CreateMkeyOut, DestroyMkeyIn, Mkc, QueryMkeyIn, QueryMkeyOut};

/// Offset of the translation entries in the create input and the query output.
const TRANSLATIONS: usize = 0x110;
/// Bytes of translations QUERY_MKEY returns.
const QUERY_TRANSLATIONS: usize = 0x20;
/// Access modes the model accepts: PA, MTT, KLM, KSM.
const MAX_ACCESS_MODE: u8 = 3;

/// One memory key.
#[derive(Debug, Clone)]
pub(crate) struct Mkey {
    pub ctx: Mkc,
    /// Translation entries (octwords) given at creation.
    pub translations: Vec<u8>,
    /// What the data path checks, decoded from `ctx` (see [`Region`]).
    pub region: Region,
}

/// The fields of an mkey context the data path checks on every access, decoded once when the
/// key is created: an mkey never changes afterwards (the model has no UMR), and decoding them
/// from the context's bits at every access was a large part of translating an address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Region {
    /// mkey_7_0: the tag the key's low byte must match.
    pub tag: u8,
    pub free: bool,
    pub pd: u32,
    pub length64: bool,
    pub start: u64,
    pub len: u64,
    /// Rights: local read, local write, remote read, remote write, atomic.
    pub lr: bool,
    pub lw: bool,
    pub rr: bool,
    pub rw: bool,
    pub a: bool,
    /// access_mode_4_2 << 2 | access_mode_1_0.
    pub mode: u8,
    pub log_page_size: u8,
}

impl Mkey {
    /// A key with context `ctx`.
    pub fn new(ctx: Mkc, translations: Vec<u8>) -> Mkey {
        let region = Region {
            tag: ctx.mkey_7_0(),
            free: ctx.free(),
            pd: ctx.pd(),
            length64: ctx.length64(),
            start: ctx.start_addr(),
            len: ctx.len(),
            lr: ctx.lr(),
            lw: ctx.lw(),
            rr: ctx.rr(),
            rw: ctx.rw(),
            a: ctx.a(),
            mode: (ctx.access_mode_4_2() << 2) | ctx.access_mode_1_0(),
            log_page_size: ctx.log_page_size(),
        };
        Mkey {
            ctx,
            translations,
            region,
        }
    }
}

impl Charged for Mkey {
    /// The translation entries: as many as the guest sent, up to a whole mailbox chain.
    fn charged(&self) -> u64 {
        self.translations.len() as u64
    }
}

/// CREATE_MKEY: the PD must exist; the input must carry translations_octword_actual_size
/// octwords of translations, no more than the context's translations_octword_size makes room
/// for (the PRM's rule: the rest of the table, if any, is written later by UMR).
pub(super) fn create(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let input = CreateMkeyIn::new_unchecked(req.input);
    let ctx = input.memory_key_mkey_entry();
    let mode = (ctx.access_mode_4_2() << 2) | ctx.access_mode_1_0();
    ensure(
        mode <= MAX_ACCESS_MODE,
        Fail::bad_param(s::MKEY_BAD_ACCESS_MODE),
    )?;
    ensure(
        input.translations_octword_actual_size() <= ctx.translations_octword_size(),
        Fail::bad_param(s::MKEY_TRANSLATIONS_TOO_MANY),
    )?;
    let pd = ctx.pd();
    cx.m.pds.check(pd, s::MKEY_PD_UNKNOWN)?;
    let octwords = input.translations_octword_actual_size() as usize;
    let translations = octwords
        .checked_mul(16)
        .and_then(|n| req.input.get(TRANSLATIONS..TRANSLATIONS.checked_add(n)?))
        .ok_or(Fail::inp_len(s::MKEY_TRANSLATIONS_SHORT))?
        .to_vec();
    let mut stored = Mkc::zeroed();
    stored.storage_mut().copy_from_slice(ctx.storage());
    let limit = Model::limit(cx.m.gen().log_max_mkey());
    let mkey = Mkey::new(stored, translations);
    let index = cx.m.mkeys.insert_charged(mkey, limit, &mut cx.m.storage)?;
    cx.m.pds.hold(pd);
    let mut o = out::<cmd::CreateMkey>(0);
    CreateMkeyOut::new_unchecked(&mut o[..]).set_mkey_index(index);
    Ok(o)
}

/// DESTROY_MKEY.
pub(super) fn destroy(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let index = DestroyMkeyIn::new_unchecked(req.input).mkey_index();
    let mkey = cx.m.mkeys.remove_charged(index, &mut cx.m.storage)?;
    cx.m.pds.release(mkey.ctx.pd());
    Ok(out::<cmd::DestroyMkey>(0))
}

/// QUERY_MKEY: the context and the first translation entries.
pub(super) fn query(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let index = QueryMkeyIn::new_unchecked(req.input).mkey_index();
    let mkey = cx.m.mkeys.get(index)?;
    let mut o = out::<cmd::QueryMkey>(0);
    let mut v = QueryMkeyOut::new_unchecked(&mut o[..]);
    v.memory_key_mkey_entry_mut()
        .storage_mut()
        .copy_from_slice(mkey.ctx.storage());
    let n = mkey.translations.len().min(QUERY_TRANSLATIONS);
    o[TRANSLATIONS..TRANSLATIONS + n].copy_from_slice(&mkey.translations[..n]);
    Ok(o)
}

//! Flow steering of the NIC receive and transmit namespaces: CREATE_FLOW_TABLE,
//! CREATE_FLOW_GROUP, SET_FLOW_TABLE_ENTRY and SET_FLOW_TABLE_ROOT build it up;
//! DELETE_FLOW_TABLE_ENTRY, DESTROY_FLOW_GROUP and DESTROY_FLOW_TABLE take it down again, in
//! that order (an entry before its group, every group before its table). The model checks the
//! structure (types, ranges, overlaps, references to TIRs and tables) and keeps it, with the
//! match criteria and values the data path steers received frames by.
//!
//! Levels keep the graph loop-free, as the PRM intends and Linux assumes (`fs_core.c` only
//! forwards to a table of a higher level, and chains misses to the next level): a table's
//! level is at most [`MAX_FT_LEVEL`]; an entry's FLOW_TABLE destination and a table's miss
//! table must be of the same type and of a higher level (so never the table itself).
//! `ignore_flow_level`, which lifts the rule on hardware that advertises it, is refused: the
//! model does not. The data path bounds its walk regardless (`datapath/steer.rs`).

use super::{out, Ctx, Req};
use crate::budget::Charged;
use crate::datapath::matcher::Criteria;
use crate::fail::{ensure, Fail, Outcome};
use crate::syndrome as s;
use crate::table::{Table, TableErrors};
use mlx5_prm::cmd;
use mlx5_prm::{
    CreateFlowGroupIn, CreateFlowGroupOut, CreateFlowTableIn, CreateFlowTableOut, DeleteFteIn,
    DestFormatStruct, DestroyFlowGroupIn, DestroyFlowTableIn, FlowContext, FlowDestinationType,
    FlowTableMissAction, FlowTableType, SetFlowTableRootIn, SetFteIn,
};
use std::collections::BTreeMap;

/// Largest log_size of a table (the flow-table capabilities' log_max_ft_size).
pub(crate) const MAX_LOG_SIZE: u8 = 24;
/// Most tables, groups and entries (over all tables) the model keeps: what a guest can make
/// the model allocate is bounded. Tables and entries are advertised as log_max_ft_num and
/// log_max_flow.
pub(crate) const LOG_MAX_TABLES: u8 = 16;
const MAX_TABLES: u64 = 1 << LOG_MAX_TABLES;
const MAX_GROUPS: u64 = 1 << 20;
pub(crate) const LOG_MAX_ENTRIES: u8 = 16;
const MAX_ENTRIES: u64 = 1 << LOG_MAX_ENTRIES;
/// Most destinations of one entry (log_max_destination).
pub(crate) const LOG_MAX_DESTINATIONS: u8 = 5;
/// Highest table level (flow table capabilities' max_ft_level, the model's choice; Linux
/// needs at least 3 in NIC RX for its Ethernet function).
pub(crate) const MAX_FT_LEVEL: u8 = 64;
/// match_criteria_enable bits: the seven parts of fte_match_param.
pub(crate) const CRITERIA_PARTS: u8 = 0x7f;
/// Actions the model accepts: allow, drop, forward to the destination list, count.
const ACTION_ALLOW: u16 = 0x1;
pub(crate) const ACTION_DROP: u16 = 0x2;
pub(crate) const ACTION_FWD: u16 = 0x4;
const ACTION_COUNT: u16 = 0x8;
/// Byte offset of the destination list in SET_FTE's input.
const DESTINATIONS: usize =
    (SetFteIn::FLOW_CONTEXT.bit_offset + FlowContext::DESTINATION.bit_offset) / 8;
/// Bytes per destination or counter entry, plain and extended.
const DEST_SIZE: usize = 8;
const EXT_DEST_SIZE: usize = 16;
/// Byte offset and length of the match criteria in CREATE_FLOW_GROUP's input, and of the
/// match value in SET_FTE's.
const CRITERIA: usize = CreateFlowGroupIn::MATCH_CRITERIA.bit_offset / 8;
const MATCH_VALUE: usize =
    (SetFteIn::FLOW_CONTEXT.bit_offset + FlowContext::MATCH_VALUE.bit_offset) / 8;
const MATCH_LEN: usize = FlowContext::MATCH_VALUE.width as usize / 8;

/// The `MATCH_LEN` bytes at `at` of an input (zeros past its end).
fn match_bytes(input: &[u8], at: usize) -> Vec<u8> {
    let mut v = vec![0u8; MATCH_LEN];
    if let Some(src) = input.get(at..) {
        let n = src.len().min(MATCH_LEN);
        v[..n].copy_from_slice(&src[..n]);
    }
    v
}

/// One flow table.
#[derive(Debug, Clone)]
pub(crate) struct FlowTable {
    pub table_type: u8,
    /// Level in its namespace: forwards and misses go only to higher levels.
    pub level: u8,
    pub log_size: u8,
    pub entries: BTreeMap<u32, Fte>,
    /// Its groups' index ranges, first index to last: they never overlap, so a new range
    /// overlaps one exactly when the range starting last at or before its end reaches it. A
    /// scan of every group of every table made each CREATE_FLOW_GROUP cost as much as the
    /// groups made before it (up to 2^20).
    pub groups: BTreeMap<u32, u32>,
    /// Where frames that match no entry go (table_miss_action fwd); `None`: dropped.
    pub miss: Option<u32>,
}

/// One flow group: an index range of a table sharing a match mask.
#[derive(Debug, Clone)]
pub(crate) struct FlowGroup {
    pub table: u32,
    pub start: u32,
    pub end: u32,
    /// The match criteria (fte_match_param, 512 bytes: the mask of the group's entries) under
    /// match_criteria_enable (which parts of it count), compiled for the data path.
    pub compiled: Criteria,
}

/// A destination of an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dest {
    Tir(u32),
    Table(u32),
}

/// One flow table entry.
#[derive(Debug, Clone)]
pub(crate) struct Fte {
    pub action: u16,
    pub flow_tag: u32,
    pub dests: Vec<Dest>,
    /// The match value (fte_match_param, 512 bytes) under its group's compiled criteria (see
    /// [`Criteria::masked`]).
    pub masked: Vec<u8>,
    /// The group's compiled criteria, copied (a group cannot change, nor go while it has
    /// entries), so steering needs no group lookup per entry.
    pub criteria: Criteria,
}

/// A table's entries are charged one by one (see [`Fte`]'s charge).
impl Charged for FlowTable {}

/// What a group's range costs in its table's map (see [`FTE_PLACE`]).
const GROUP_PLACE: u64 = 3 * std::mem::size_of::<(u32, u32)>() as u64;

impl Charged for FlowGroup {
    /// The compiled criteria (a few bytes per mask byte the guest set, up to 448) and its
    /// range's place in its table's map.
    fn charged(&self) -> u64 {
        GROUP_PLACE + self.compiled.kept()
    }
}

/// What an entry's place in its table's map costs: a B-tree node holds up to 11 entries and
/// (the root aside) at least 5, so under three times the entry with its key.
const FTE_PLACE: u64 = 3 * std::mem::size_of::<(u32, Fte)>() as u64;

impl Charged for Fte {
    /// The masked value, the group's criteria copied, the destinations, and (an entry lives
    /// in its table's map, not in a [`Table`] that charges its slot) its place in the map.
    fn charged(&self) -> u64 {
        FTE_PLACE
            + (self.masked.len() + std::mem::size_of_val(self.dests.as_slice())) as u64
            + self.criteria.kept()
    }
}

/// Every table and group, and the root table of each type.
#[derive(Debug)]
pub(crate) struct FlowTables {
    pub tables: Table<FlowTable>,
    pub groups: Table<FlowGroup>,
    pub roots: BTreeMap<u8, u32>,
    /// Entries over all tables.
    pub entries: u64,
}

impl Default for FlowTables {
    fn default() -> Self {
        FlowTables {
            tables: Table::new(
                1,
                0xff_ffff,
                TableErrors {
                    unknown: s::FT_UNKNOWN,
                    busy: s::FT_BUSY,
                    limit: s::FT_LIMIT,
                },
            ),
            groups: Table::new(
                1,
                0xff_ffff,
                TableErrors {
                    unknown: s::FG_UNKNOWN,
                    busy: s::FG_UNKNOWN,
                    limit: s::FG_LIMIT,
                },
            ),
            roots: BTreeMap::new(),
            entries: 0,
        }
    }
}

/// The table type, if it is one of the NIC namespaces.
fn nic_type(t: Result<FlowTableType, mlx5_prm::rt::UnknownValue>) -> Outcome<u8> {
    match t {
        Ok(t @ (FlowTableType::NicRx | FlowTableType::NicTx)) => Ok(t.raw()),
        _ => Err(Fail::bad_param(s::FT_BAD_TYPE)),
    }
}

/// Table `id`, which must be of type `ty`.
fn table_of(flow: &FlowTables, id: u32, ty: u8, syndrome: u32) -> Outcome<&FlowTable> {
    match flow.tables.get(id) {
        Ok(t) if t.table_type == ty => Ok(t),
        _ => Err(Fail::bad_res(syndrome)),
    }
}

/// CREATE_FLOW_TABLE.
pub(super) fn create_table(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let input = CreateFlowTableIn::new_unchecked(req.input);
    ensure(!input.other_vport(), Fail::bad_param(s::OTHER_FUNCTION))?;
    let ty = nic_type(input.table_type())?;
    let ctx = input.flow_table_context();
    ensure(
        ctx.log_size() <= MAX_LOG_SIZE,
        Fail::bad_param(s::FT_BAD_SIZE),
    )?;
    let level = ctx.level();
    ensure(level <= MAX_FT_LEVEL, Fail::bad_param(s::FT_BAD_LEVEL))?;
    let flow = &mut cx.m.flow;
    let miss = match ctx.table_miss_action() {
        Ok(FlowTableMissAction::Default) => None,
        Ok(FlowTableMissAction::Fwd) => {
            let id = ctx.table_miss_id();
            let next = table_of(flow, id, ty, s::FT_MISS_TABLE_UNKNOWN)?;
            ensure(next.level > level, Fail::bad_param(s::FT_MISS_LEVEL))?;
            Some(id)
        }
        _ => return Err(Fail::bad_param(s::FT_BAD_MISS_ACTION)),
    };
    let table = FlowTable {
        table_type: ty,
        level,
        log_size: ctx.log_size(),
        entries: BTreeMap::new(),
        groups: BTreeMap::new(),
        miss,
    };
    let id = flow
        .tables
        .insert_charged(table, MAX_TABLES, &mut cx.m.storage)?;
    if let Some(miss) = miss {
        flow.tables.hold(miss);
    }
    let mut o = out::<cmd::CreateFlowTable>(0);
    CreateFlowTableOut::new_unchecked(&mut o[..]).set_table_id(id);
    Ok(o)
}

/// CREATE_FLOW_GROUP: a non-empty range inside the table, overlapping no other group.
pub(super) fn create_group(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let input = CreateFlowGroupIn::new_unchecked(req.input);
    ensure(!input.other_vport(), Fail::bad_param(s::OTHER_FUNCTION))?;
    let ty = nic_type(input.table_type())?;
    let flow = &mut cx.m.flow;
    let table_id = input.table_id();
    let table = table_of(flow, table_id, ty, s::FT_UNKNOWN)?;
    let (start, end) = (input.start_flow_index(), input.end_flow_index());
    ensure(
        start <= end && u64::from(end) < 1u64 << table.log_size,
        Fail::bad_param(s::FG_BAD_RANGE),
    )?;
    let overlaps = table
        .groups
        .range(..=end)
        .next_back()
        .is_some_and(|(_, &last)| last >= start);
    ensure(!overlaps, Fail::bad_param(s::FG_OVERLAP))?;
    let criteria_enable = input.match_criteria_enable();
    ensure(
        criteria_enable & !CRITERIA_PARTS == 0,
        Fail::bad_param(s::FG_BAD_CRITERIA),
    )?;
    let group = FlowGroup {
        table: table_id,
        start,
        end,
        compiled: Criteria::new(criteria_enable, &match_bytes(req.input, CRITERIA)),
    };
    let id = flow
        .groups
        .insert_charged(group, MAX_GROUPS, &mut cx.m.storage)?;
    flow.tables.get_mut(table_id)?.groups.insert(start, end);
    flow.tables.hold(table_id);
    let mut o = out::<cmd::CreateFlowGroup>(0);
    CreateFlowGroupOut::new_unchecked(&mut o[..]).set_group_id(id);
    Ok(o)
}

/// Reads and checks the destination and counter lists of a SET_FTE input for an entry of a
/// table of type `ty` at `level`.
fn destinations(
    cx: &Ctx<'_>,
    input: &[u8],
    fc: &FlowContext<&[u8]>,
    ty: u8,
    level: u8,
) -> Outcome<Vec<Dest>> {
    let stride = if fc.extended_destination() {
        EXT_DEST_SIZE
    } else {
        DEST_SIZE
    };
    let (ndest, ncount) = (
        fc.destination_list_size() as usize,
        fc.flow_counter_list_size() as usize,
    );
    let fits = (ndest + ncount)
        .checked_mul(stride)
        .and_then(|n| n.checked_add(DESTINATIONS))
        .is_some_and(|end| end <= input.len());
    ensure(fits, Fail::inp_len(s::FTE_LIST_SHORT))?;
    ensure(
        ndest <= 1 << LOG_MAX_DESTINATIONS,
        Fail::bad_param(s::FTE_TOO_MANY_DESTS),
    )?;
    let mut dests = Vec::with_capacity(ndest);
    for i in 0..ndest {
        let at = DESTINATIONS + i * stride;
        let d = DestFormatStruct::new_unchecked(&input[at..at + DEST_SIZE]);
        let id = d.destination_id();
        dests.push(match d.destination_type() {
            Ok(FlowDestinationType::Tir) => {
                cx.m.tirs.check(id, s::FTE_DEST_UNKNOWN)?;
                Dest::Tir(id)
            }
            Ok(FlowDestinationType::FlowTable) => {
                let next = table_of(&cx.m.flow, id, ty, s::FTE_DEST_UNKNOWN)?;
                ensure(next.level > level, Fail::bad_param(s::FTE_DEST_LEVEL))?;
                Dest::Table(id)
            }
            _ => return Err(Fail::bad_param(s::FTE_DEST_BAD_TYPE)),
        });
    }
    // The model has no flow counters, so any counter in the list is unknown.
    ensure(ncount == 0, Fail::bad_res(s::FTE_COUNTER_UNKNOWN))?;
    Ok(dests)
}

fn hold(cx: &mut Ctx<'_>, dests: &[Dest]) {
    for d in dests {
        match *d {
            Dest::Tir(id) => cx.m.tirs.hold(id),
            Dest::Table(id) => cx.m.flow.tables.hold(id),
        }
    }
}

fn release(cx: &mut Ctx<'_>, dests: &[Dest]) {
    for d in dests {
        match *d {
            Dest::Tir(id) => cx.m.tirs.release(id),
            Dest::Table(id) => cx.m.flow.tables.release(id),
        }
    }
}

/// SET_FLOW_TABLE_ENTRY: op_mod 0 writes a new entry, 1 replaces an existing one.
pub(super) fn set_entry(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let input = SetFteIn::new_unchecked(req.input);
    ensure(!input.other_vport(), Fail::bad_param(s::OTHER_FUNCTION))?;
    let ty = nic_type(input.table_type())?;
    let table_id = input.table_id();
    let index = input.flow_index();
    let fc = input.flow_context();
    let group_id = fc.group_id();
    let table = table_of(&cx.m.flow, table_id, ty, s::FT_UNKNOWN)?;
    let exists = table.entries.contains_key(&index);
    let level = table.level;
    ensure(
        !input.ignore_flow_level(),
        Fail::bad_param(s::FTE_IGNORE_FLOW_LEVEL),
    )?;
    let group = match cx.m.flow.groups.get(group_id) {
        Ok(g) if g.table == table_id => g,
        _ => return Err(Fail::bad_res(s::FG_UNKNOWN)),
    };
    ensure(
        (group.start..=group.end).contains(&index),
        Fail::bad_param(s::FTE_INDEX_OUTSIDE_GROUP),
    )?;
    match req.op_mod {
        0 => ensure(!exists, Fail::bad_param(s::FTE_EXISTS))?,
        _ => ensure(exists, Fail::bad_param(s::FTE_NOT_FOUND))?,
    }
    ensure(
        exists || cx.m.flow.entries < MAX_ENTRIES,
        Fail::lim(s::FTE_LIMIT),
    )?;
    let action = fc.action();
    let known = ACTION_ALLOW | ACTION_DROP | ACTION_FWD | ACTION_COUNT;
    let fwd = action & ACTION_FWD != 0;
    ensure(
        action & !known == 0 && fwd == (fc.destination_list_size() > 0),
        Fail::bad_param(s::FTE_BAD_ACTION),
    )?;
    let value = match_bytes(req.input, MATCH_VALUE);
    let masked = group.compiled.masked(&value);
    let criteria = group.compiled.clone();
    let dests = destinations(cx, req.input, &fc, ty, level)?;
    let entry = Fte {
        action,
        flow_tag: fc.flow_tag(),
        dests,
        masked,
        criteria,
    };
    let old = match table_of(&cx.m.flow, table_id, ty, s::FT_UNKNOWN)?
        .entries
        .get(&index)
    {
        Some(old) => old.charged(),
        None => 0,
    };
    cx.m.storage.replace(old, entry.charged())?;
    hold(cx, &entry.dests);
    let table = cx.m.flow.tables.get_mut(table_id)?;
    match table.entries.insert(index, entry) {
        Some(old) => release(cx, &old.dests),
        None => cx.m.flow.entries += 1,
    }
    Ok(out::<cmd::SetFte>(0))
}

/// SET_FLOW_TABLE_ROOT: the table where steering of its type starts.
pub(super) fn set_root(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let input = SetFlowTableRootIn::new_unchecked(req.input);
    ensure(
        !input.other_vport() && !input.table_of_other_vport(),
        Fail::bad_param(s::OTHER_FUNCTION),
    )?;
    let ty = nic_type(input.table_type())?;
    let id = input.table_id();
    let flow = &mut cx.m.flow;
    table_of(flow, id, ty, s::FT_UNKNOWN)?;
    flow.tables.hold(id);
    if let Some(old) = flow.roots.insert(ty, id) {
        flow.tables.release(old);
    }
    Ok(out::<cmd::SetFlowTableRoot>(0))
}

/// DELETE_FLOW_TABLE_ENTRY: removes the entry at flow_index and drops its references to the
/// TIRs and tables it forwarded to, which may then be destroyed.
pub(super) fn delete_entry(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let input = DeleteFteIn::new_unchecked(req.input);
    ensure(!input.other_vport(), Fail::bad_param(s::OTHER_FUNCTION))?;
    let ty = nic_type(input.table_type())?;
    let table_id = input.table_id();
    let index = input.flow_index();
    let table = table_of(&cx.m.flow, table_id, ty, s::FT_UNKNOWN)?;
    ensure(
        table.entries.contains_key(&index),
        Fail::bad_param(s::FTE_NOT_FOUND),
    )?;
    let entry = cx.m.flow.tables.get_mut(table_id)?.entries.remove(&index);
    if let Some(entry) = entry {
        cx.m.storage.refund(entry.charged());
        cx.m.flow.entries = cx.m.flow.entries.saturating_sub(1);
        release(cx, &entry.dests);
    }
    Ok(out::<cmd::DeleteFte>(0))
}

/// DESTROY_FLOW_GROUP: the group must belong to the named table and hold no entry; its index
/// range becomes free for a new group.
pub(super) fn destroy_group(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let input = DestroyFlowGroupIn::new_unchecked(req.input);
    ensure(!input.other_vport(), Fail::bad_param(s::OTHER_FUNCTION))?;
    let ty = nic_type(input.table_type())?;
    let table_id = input.table_id();
    let group_id = input.group_id();
    let flow = &mut cx.m.flow;
    let table = table_of(flow, table_id, ty, s::FT_UNKNOWN)?;
    let group = match flow.groups.get(group_id) {
        Ok(g) if g.table == table_id => g,
        _ => return Err(Fail::bad_res(s::FG_UNKNOWN)),
    };
    // An entry lies in its group's range (SET_FTE), and ranges do not overlap.
    let (start, end) = (group.start, group.end);
    let in_use = table.entries.range(start..=end).next().is_some();
    ensure(!in_use, Fail::bad_param(s::FG_NOT_EMPTY))?;
    flow.groups.remove_charged(group_id, &mut cx.m.storage)?;
    flow.tables.get_mut(table_id)?.groups.remove(&start);
    flow.tables.release(table_id);
    Ok(out::<cmd::DestroyFlowGroup>(0))
}

/// DESTROY_FLOW_TABLE: the table must have no groups (hence no entries) left, and no other
/// table may lead to it (as its miss table or through an entry's destination).
///
/// The root table is a special case. The PRM gives no way to unset a root other than making
/// another table the root, and a driver tearing steering down destroys its root table last.
/// The model therefore lets DESTROY_FLOW_TABLE take the current root of its type when it is
/// otherwise unused: the table stops being the root and its hold is released, and until
/// SET_FLOW_TABLE_ROOT names a new one, steering of that type finds no root (received frames
/// are dropped).
pub(super) fn destroy_table(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let input = DestroyFlowTableIn::new_unchecked(req.input);
    ensure(!input.other_vport(), Fail::bad_param(s::OTHER_FUNCTION))?;
    let ty = nic_type(input.table_type())?;
    let id = input.table_id();
    let flow = &mut cx.m.flow;
    let table = table_of(flow, id, ty, s::FT_UNKNOWN)?;
    ensure(
        table.groups.is_empty() && table.entries.is_empty(),
        Fail::bad_param(s::FT_NOT_EMPTY),
    )?;
    let is_root = flow.roots.get(&ty) == Some(&id);
    let others = flow.tables.refs(id).saturating_sub(u32::from(is_root));
    ensure(others == 0, Fail::busy(s::FT_BUSY))?;
    if is_root {
        flow.roots.remove(&ty);
        flow.tables.release(id);
    }
    let table = flow.tables.remove_charged(id, &mut cx.m.storage)?;
    if let Some(miss) = table.miss {
        flow.tables.release(miss);
    }
    Ok(out::<cmd::DestroyFlowTable>(0))
}

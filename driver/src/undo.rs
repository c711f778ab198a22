//! Device objects owned by the driver, and the undo list every `create` builds them on.
//!
//! An [`Object`] is one thing the device made (a CQ, an mkey, an SQ, a flow entry...) and the
//! DMA memory it uses. Dropping it destroys the device object, then frees the memory, or, if
//! the destroy failed or never completed (the device may still write the memory), hands the
//! memory to the backend's quarantine. An [`Undo`] is a list of them in the order they were
//! made: a `create` that builds several pushes each one as it is made, so an early return
//! (`?`) undoes everything in reverse; the finished resource keeps the list, and its drop or
//! `destroy` is the same reverse walk. Once a destroy fails, the memory of the objects after
//! it in the walk (made before it, so possibly used by it) is quarantined too, even where
//! their own destroy succeeds.

use crate::backend::{Backend, DmaBuf};
use crate::error::Result;
use crate::hca::Hca;
use mlx5_prm::cmd::*;
use mlx5_prm::FlowTableType;
use std::sync::atomic::{AtomicBool, Ordering};

/// Which device object, and the numbers its destroy command needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A completion queue.
    Cq(u32),
    /// A queue pair.
    Qp(u32),
    /// A memory key, by index.
    Mkey(u32),
    /// An Ethernet send queue.
    Sq(u32),
    /// An Ethernet receive queue.
    Rq(u32),
    /// A transport interface send object.
    Tis(u32),
    /// A transport interface receive object.
    Tir(u32),
    /// A NIC receive flow table.
    FlowTable(u32),
    /// A flow group of a NIC receive table.
    FlowGroup { table: u32, group: u32 },
    /// A flow table entry.
    Fte { table: u32, index: u32 },
    /// A queue counter set.
    QCounter(u8),
}

impl Kind {
    /// What it is called in messages.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Cq(_) => "cq",
            Kind::Qp(_) => "qp",
            Kind::Mkey(_) => "mkey",
            Kind::Sq(_) => "sq",
            Kind::Rq(_) => "rq",
            Kind::Tis(_) => "tis",
            Kind::Tir(_) => "tir",
            Kind::FlowTable(_) => "flow table",
            Kind::FlowGroup { .. } => "flow group",
            Kind::Fte { .. } => "flow entry",
            Kind::QCounter(_) => "queue counter",
        }
    }

    /// Runs the destroy command. Only [`Object::destroy`] calls it: once, for an object made
    /// on `hca` and still alive, after everything that used it is gone.
    fn destroy<B: Backend>(self, hca: &Hca<B>) -> Result<()> {
        let nic_rx = FlowTableType::NicRx;
        // SAFETY: each command destroys exactly the object `self` names, which its `Object`
        // owns and destroys once (the `live` flag), after its users (resources borrow it, and
        // undo lists destroy in reverse order of making); the memory is freed only after
        // success, quarantined otherwise. None of them gives the device memory.
        unsafe {
            match self {
                Kind::Cq(n) => hca.run::<DestroyCq>(0, |i| i.set_cqn(n)).map(drop),
                Kind::Qp(n) => hca.run::<DestroyQp>(0, |i| i.set_qpn(n)).map(drop),
                Kind::Mkey(n) => hca.run::<DestroyMkey>(0, |i| i.set_mkey_index(n)).map(drop),
                Kind::Sq(n) => hca.run::<DestroySq>(0, |i| i.set_sqn(n)).map(drop),
                Kind::Rq(n) => hca.run::<DestroyRq>(0, |i| i.set_rqn(n)).map(drop),
                Kind::Tis(n) => hca.run::<DestroyTis>(0, |i| i.set_tisn(n)).map(drop),
                Kind::Tir(n) => hca.run::<DestroyTir>(0, |i| i.set_tirn(n)).map(drop),
                Kind::FlowTable(t) => hca
                    .run::<DestroyFlowTable>(0, |i| {
                        i.set_table_type(nic_rx);
                        i.set_table_id(t);
                    })
                    .map(drop),
                Kind::FlowGroup { table, group } => hca
                    .run::<DestroyFlowGroup>(0, |i| {
                        i.set_table_type(nic_rx);
                        i.set_table_id(table);
                        i.set_group_id(group);
                    })
                    .map(drop),
                Kind::Fte { table, index } => hca
                    .run::<DeleteFte>(0, |i| {
                        i.set_table_type(nic_rx);
                        i.set_table_id(table);
                        i.set_flow_index(index);
                    })
                    .map(drop),
                Kind::QCounter(n) => hca
                    .run::<DeallocQCounter>(0, |i| i.set_counter_set_id(n))
                    .map(drop),
            }
        }
    }
}

/// One device object of HCA `'h` and the memory it uses (see the module docs).
pub(crate) struct Object<'h, B: Backend> {
    hca: &'h Hca<B>,
    kind: Kind,
    memory: Vec<DmaBuf>,
    /// Set when another object that used this one's memory could not be destroyed: the memory
    /// is then quarantined even if this destroy succeeds.
    tainted: AtomicBool,
    live: bool,
}

impl<'h, B: Backend> Object<'h, B> {
    /// The object `kind`, just made on `hca`, using `memory`.
    pub(crate) fn new(hca: &'h Hca<B>, kind: Kind, memory: Vec<DmaBuf>) -> Self {
        Object {
            hca,
            kind,
            memory,
            tainted: AtomicBool::new(false),
            live: true,
        }
    }

    /// The HCA it belongs to.
    pub(crate) fn hca(&self) -> &'h Hca<B> {
        self.hca
    }

    /// Its `i`-th buffer, in the order given to [`Object::new`].
    pub(crate) fn memory(&self, i: usize) -> &DmaBuf {
        &self.memory[i]
    }

    /// Quarantine this object's memory when it goes, whatever its destroy says.
    pub(crate) fn taint(&self) {
        self.tainted.store(true, Ordering::Relaxed);
    }

    /// Destroys the object (once): frees its memory when the destroy succeeded and nothing
    /// tainted it, else quarantines it. After a health syndrome no command is sent (none
    /// would complete): the memory is quarantined.
    pub(crate) fn destroy(&mut self) -> Result<()> {
        if !std::mem::take(&mut self.live) {
            return Ok(());
        }
        let result = self
            .hca
            .check_health()
            .and_then(|()| self.kind.destroy(self.hca));
        let memory = std::mem::take(&mut self.memory);
        if result.is_err() || *self.tainted.get_mut() {
            for m in memory {
                m.quarantine();
            }
        }
        result
    }
}

impl<B: Backend> Drop for Object<'_, B> {
    fn drop(&mut self) {
        let kind = self.kind;
        if let Err(e) = self.destroy() {
            log::warn!("destroying {} {kind:?} on drop: {e}", kind.name());
        }
    }
}

/// One entry of an [`Undo`] list.
enum Entry<'h, B: Backend> {
    /// An object made on the way.
    Object(Object<'h, B>),
    /// Something outside the list that the objects made after this entry use (a CQ, a
    /// packet pool): if one of those cannot be destroyed, this marks its memory for
    /// quarantine.
    Used(Box<dyn Fn() + 'h>),
}

/// Objects in the order they were made, destroyed in reverse (see the module docs).
pub(crate) struct Undo<'h, B: Backend> {
    objects: Vec<Entry<'h, B>>,
}

impl<'h, B: Backend> Undo<'h, B> {
    /// An empty list.
    pub(crate) fn new() -> Self {
        Undo {
            objects: Vec::new(),
        }
    }

    /// Adds `kind`, just made on `hca` with `memory`.
    pub(crate) fn push(&mut self, hca: &'h Hca<B>, kind: Kind, memory: Vec<DmaBuf>) {
        self.objects
            .push(Entry::Object(Object::new(hca, kind, memory)));
    }

    /// Notes that what is made from now on uses something outside the list; `taint` marks
    /// that for quarantine if one of those objects cannot be destroyed.
    pub(crate) fn uses(&mut self, taint: impl Fn() + 'h) {
        self.objects.push(Entry::Used(Box::new(taint)));
    }

    /// Destroys everything, last made first, going past failures; returns the first. After
    /// a failure, the memory of the rest (and of what they use) is quarantined.
    pub(crate) fn destroy(&mut self) -> Result<()> {
        let mut first = None;
        while let Some(entry) = self.objects.pop() {
            match entry {
                Entry::Object(mut o) => {
                    if first.is_some() {
                        o.taint();
                    }
                    if let Err(e) = o.destroy() {
                        log::warn!("destroying {} {:?}: {e}", o.kind.name(), o.kind);
                        first.get_or_insert(e);
                    }
                }
                Entry::Used(taint) => {
                    if first.is_some() {
                        taint();
                    }
                }
            }
        }
        first.map_or(Ok(()), Err)
    }
}

impl<B: Backend> Drop for Undo<'_, B> {
    fn drop(&mut self) {
        if let Err(e) = self.destroy() {
            log::warn!("undoing on drop: {e}");
        }
    }
}

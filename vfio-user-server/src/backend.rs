//! The vfio-user side of the function: what each client message does (the crate's
//! `ServerBackend`): region reads and writes to configuration space and BAR 0, DMA_MAP and
//! DMA_UNMAP of guest memory, SET_IRQS, DEVICE_RESET.
//!
//! Everything here runs on the socket thread and returns quickly: BAR writes only hand work
//! to the model's firmware thread. Every request is checked; a bad one gets an error reply
//! (an `io::Error` the crate turns into one), never a panic. The crate's error reply carries
//! errno 0 for a backend's error, so each refusal's errno is also handed to the relay
//! ([`Refusals`]), which puts it in the reply on its way out.

use crate::guestmem::{GuestMemory, MapError};
use crate::model::Model;
use crate::msix::{prepare_eventfd, IrqAction, Msix};
use crate::pci::{
    ConfigEffect, ConfigSpace, CONFIG_SIZE, MSIX_ENTRY_SIZE, MSIX_PBA_OFFSET, MSIX_TABLE_OFFSET,
};
use crate::relay::validate::cmd;
use crate::relay::Refusals;
use crate::stats::Stats;
use log::{info, warn};
use std::fs::File;
use std::io;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use vfio_bindings::bindings::vfio::{
    VFIO_IRQ_SET_ACTION_MASK, VFIO_IRQ_SET_ACTION_TRIGGER, VFIO_IRQ_SET_ACTION_TYPE_MASK,
    VFIO_IRQ_SET_ACTION_UNMASK, VFIO_IRQ_SET_DATA_EVENTFD, VFIO_IRQ_SET_DATA_NONE,
    VFIO_IRQ_SET_DATA_TYPE_MASK, VFIO_PCI_BAR0_REGION_INDEX, VFIO_PCI_CONFIG_REGION_INDEX,
    VFIO_PCI_ERR_IRQ_INDEX, VFIO_PCI_MSIX_IRQ_INDEX, VFIO_PCI_REQ_IRQ_INDEX,
};
use vfio_user::{DmaMapFlags, DmaUnmapFlags, ServerBackend};

pub use crate::model::MSIX_VECTORS;

fn invalid(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg.into())
}

fn map_err(e: MapError) -> io::Error {
    io::Error::from_raw_os_error(e.errno())
}

/// The errno an error reply should carry for `e`.
fn errno_of(e: &io::Error) -> i32 {
    match e.raw_os_error() {
        Some(n) if n > 0 => n,
        _ if e.kind() == io::ErrorKind::InvalidInput => libc::EINVAL,
        _ => libc::EIO,
    }
}

/// The model a connection drives, shared with the control channel (which may look at it or
/// poke it from another thread).
pub type SharedModel = Arc<Mutex<Model>>;

/// One PCI function for one client connection.
pub struct Function {
    model: SharedModel,
    config: ConfigSpace,
    msix: Arc<Msix>,
    mem: GuestMemory,
    /// MSI-X table entries as the client wrote them, for clients that leave the table to the
    /// device (QEMU emulates it and never writes here).
    table: Vec<u8>,
    err_fd: Option<File>,
    req_fd: Option<File>,
    stats: Arc<Stats>,
    /// Where refusals' errnos go (the relay's), if anywhere.
    refusals: Option<Arc<Refusals>>,
}

impl std::fmt::Debug for Function {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Function")
            .field("config", &self.config)
            .field("regions", &self.mem.len())
            .finish_non_exhaustive()
    }
}

impl Function {
    /// A function at power-on around `model`, raising its interrupts through `msix`.
    pub fn new(model: SharedModel, msix: Arc<Msix>, stats: Arc<Stats>) -> Function {
        let bar = lock(&model).bar_size();
        let f = Function {
            model,
            config: ConfigSpace::new(bar, msix.len() as u16),
            msix,
            mem: GuestMemory::default(),
            table: vec![0; usize::from(MSIX_VECTORS) * MSIX_ENTRY_SIZE as usize],
            err_fd: None,
            req_fd: None,
            stats,
            refusals: None,
        };
        f.connect_interrupts();
        f.follow_bus_master();
        f
    }

    /// Hands the errno of every request refused from now on to `refusals`, in order (the
    /// relay in front of the crate reads them back; without a relay nobody would).
    pub fn report_refusals(&mut self, refusals: Arc<Refusals>) {
        self.refusals = Some(refusals);
    }

    /// Passes `r` on, telling the relay first if it is a refusal of `command`.
    fn noted<T>(&self, command: u16, r: io::Result<T>) -> io::Result<T> {
        if let (Err(e), Some(q)) = (&r, &self.refusals) {
            q.push(command, errno_of(e));
        }
        r
    }

    /// Makes the model and the MSI-X vectors obey the command register's Bus Master Enable
    /// bit (off at power-on and after a reset, set by the guest's `pci_set_master`): while
    /// it is clear the model holds the work behind BAR writes and no message is sent.
    fn follow_bus_master(&self) {
        let on = self.config.bus_master();
        lock(&self.model).set_bus_master(on);
        self.msix.set_bus_master(on);
    }

    fn connect_interrupts(&self) {
        let msix = self.msix.clone();
        let stats = self.stats.clone();
        lock(&self.model).set_interrupt_sink(Arc::new(move |v| {
            if !msix.raise(v) {
                stats.bad_vectors.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }

    /// Power-on state again (DEVICE_RESET, FLR): the model reset (its objects, pages, EQs
    /// and command queue gone; the guest memory the client mapped stays mapped), the
    /// configuration space at its reset values, no pending interrupts.
    pub fn reset(&mut self, why: &str) {
        info!("function reset ({why}): device model back to power-on, guest memory kept");
        lock(&self.model).reset();
        self.config.reset();
        self.msix.reset();
        self.table.fill(0);
        self.follow_bus_master();
        self.stats.resets.fetch_add(1, Ordering::Relaxed);
    }

    /// The end of the connection: the model lets go of guest memory before it is unmapped.
    pub fn shutdown(&mut self) {
        lock(&self.model).unmap_all_dma();
        let n = self.mem.take_all().len();
        if n > 0 {
            info!("released {n} guest memory regions");
        }
    }

    fn config_write(&mut self, offset: u64, data: &[u8]) -> io::Result<()> {
        let bus_master = self.config.bus_master();
        let effect = self
            .config
            .write(offset, data)
            .ok_or_else(|| invalid("configuration write outside the 4 KiB space"))?;
        match effect {
            ConfigEffect::None => {}
            ConfigEffect::FunctionReset => self.reset("function level reset"),
            ConfigEffect::MsixControl { masked, .. } => self.msix.set_function_mask(masked),
        }
        if self.config.bus_master() != bus_master {
            info!(
                "bus mastering {} by the guest",
                if bus_master { "disabled" } else { "enabled" }
            );
            self.follow_bus_master();
        }
        Ok(())
    }

    fn bar_read(&mut self, offset: u64, data: &mut [u8]) -> io::Result<()> {
        if !matches!(data.len(), 1 | 2 | 4 | 8) {
            self.stats.bad_bar.fetch_add(1, Ordering::Relaxed);
            return Err(invalid("BAR reads are 1, 2, 4 or 8 bytes"));
        }
        let end = offset.checked_add(data.len() as u64);
        if end.is_none_or(|e| e > self.config.bar0_size()) {
            self.stats.bad_bar.fetch_add(1, Ordering::Relaxed);
            data.fill(0xff);
            return Ok(());
        }
        let table_end = MSIX_TABLE_OFFSET + self.table.len() as u64;
        if (MSIX_TABLE_OFFSET..table_end).contains(&offset) {
            let at = (offset - MSIX_TABLE_OFFSET) as usize;
            for (i, b) in data.iter_mut().enumerate() {
                *b = self.table.get(at + i).copied().unwrap_or(0);
            }
        } else if (MSIX_PBA_OFFSET..MSIX_PBA_OFFSET + 8 * self.msix.pba().len() as u64)
            .contains(&offset)
        {
            let bytes: Vec<u8> = self
                .msix
                .pba()
                .iter()
                .flat_map(|w| w.to_le_bytes())
                .collect();
            let at = (offset - MSIX_PBA_OFFSET) as usize;
            for (i, b) in data.iter_mut().enumerate() {
                *b = bytes.get(at + i).copied().unwrap_or(0);
            }
        } else if offset < lock(&self.model).bar_size() {
            lock(&self.model).bar_read(offset, data);
        } else {
            data.fill(0);
        }
        Ok(())
    }

    fn bar_write(&mut self, offset: u64, data: &[u8]) -> io::Result<()> {
        if !matches!(data.len(), 1 | 2 | 4 | 8) {
            self.stats.bad_bar.fetch_add(1, Ordering::Relaxed);
            return Err(invalid("BAR writes are 1, 2, 4 or 8 bytes"));
        }
        let end = offset.checked_add(data.len() as u64);
        if end.is_none_or(|e| e > self.config.bar0_size()) {
            self.stats.bad_bar.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        let table_end = MSIX_TABLE_OFFSET + self.table.len() as u64;
        if (MSIX_TABLE_OFFSET..table_end).contains(&offset) {
            let at = (offset - MSIX_TABLE_OFFSET) as usize;
            let n = data.len().min(self.table.len() - at);
            self.table[at..at + n].copy_from_slice(&data[..n]);
            // Vector control (dword 3 of the entry), bit 0: masked.
            let entry = at / MSIX_ENTRY_SIZE as usize;
            let ctl = entry * MSIX_ENTRY_SIZE as usize + 12;
            if (at..at + n).contains(&ctl) {
                self.msix.set_vector_mask(entry, self.table[ctl] & 1 != 0);
            }
        } else if offset < lock(&self.model).bar_size()
            && !(MSIX_PBA_OFFSET..MSIX_PBA_OFFSET + 8 * 32).contains(&offset)
        {
            lock(&self.model).bar_write(offset, data);
        }
        Ok(())
    }
}

fn lock(m: &SharedModel) -> std::sync::MutexGuard<'_, Model> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The requests themselves; [`ServerBackend`] below reports each one's refusal.
impl Function {
    fn do_region_read(&mut self, region: u32, offset: u64, data: &mut [u8]) -> io::Result<()> {
        match region {
            VFIO_PCI_CONFIG_REGION_INDEX => self
                .config
                .read(offset, data)
                .ok_or_else(|| invalid("configuration read outside the 4 KiB space")),
            VFIO_PCI_BAR0_REGION_INDEX => self.bar_read(offset, data),
            _ => Err(invalid(format!("region {region} has no space"))),
        }
    }

    fn do_region_write(&mut self, region: u32, offset: u64, data: &[u8]) -> io::Result<()> {
        match region {
            VFIO_PCI_CONFIG_REGION_INDEX => self.config_write(offset, data),
            VFIO_PCI_BAR0_REGION_INDEX => self.bar_write(offset, data),
            _ => Err(invalid(format!("region {region} has no space"))),
        }
    }

    fn do_dma_map(
        &mut self,
        flags: DmaMapFlags,
        offset: u64,
        address: u64,
        size: u64,
        fd: Option<File>,
    ) -> io::Result<()> {
        let writable = flags.contains(DmaMapFlags::WRITE);
        let region = self
            .mem
            .map(address, size, offset, fd.as_ref(), writable)
            .map_err(|e| {
                warn!("DMA_MAP {address:#x}+{size:#x} refused: {e}");
                map_err(e)
            })?;
        self.stats.dma_maps.fetch_add(1, Ordering::Relaxed);
        if !writable {
            self.stats
                .dma_maps_read_only
                .fetch_add(1, Ordering::Relaxed);
        }
        match &region.map {
            // A read-only region (mapped PROT_READ here) goes to the model as one: it reads
            // it (send gathers), and a write it would make there is a DMA fault.
            Some(map) => {
                let (iova, ptr, len) = (region.iova, map.ptr(), map.len());
                let model = lock(&self.model);
                // SAFETY: the mapping lives in self.mem until dma_unmap/shutdown, which take
                // it away from the model first; a read-only one is only ever read.
                let mapped = unsafe {
                    if writable {
                        model.map_dma(iova, ptr, len)
                    } else {
                        model.map_dma_read_only(iova, ptr, len)
                    }
                };
                if let Err(e) = mapped {
                    warn!("the model refused {iova:#x}+{len:#x}: {e}");
                }
            }
            None => {
                info!("DMA_MAP {address:#x}+{size:#x} without a file: the device cannot reach it")
            }
        }
        Ok(())
    }

    fn do_dma_unmap(&mut self, flags: DmaUnmapFlags, address: u64, size: u64) -> io::Result<()> {
        if flags.contains(DmaUnmapFlags::UNMAP_ALL) {
            self.shutdown();
            return Ok(());
        }
        // Every region inside the range, none cut through (a virtual IOMMU's invalidation
        // may cover many pages mapped one by one).
        self.mem.covered(address, size).map_err(map_err)?;
        // The model first: it returns when none of its threads can touch the memory.
        if let Err(e) = lock(&self.model).unmap_dma(address, size) {
            warn!("the model's unmap of {address:#x}+{size:#x}: {e}");
        }
        let regions = self.mem.unmap(address, size).map_err(map_err)?;
        drop(regions); // the last view of a file unmaps it
        Ok(())
    }

    fn do_set_irqs(
        &mut self,
        index: u32,
        flags: u32,
        start: u32,
        count: u32,
        fds: Vec<File>,
    ) -> io::Result<()> {
        let action = match flags & VFIO_IRQ_SET_ACTION_TYPE_MASK {
            VFIO_IRQ_SET_ACTION_MASK => IrqAction::Mask,
            VFIO_IRQ_SET_ACTION_UNMASK => IrqAction::Unmask,
            VFIO_IRQ_SET_ACTION_TRIGGER => IrqAction::Trigger,
            _ => return Err(invalid("SET_IRQS: one action bit, please")),
        };
        let data = flags & VFIO_IRQ_SET_DATA_TYPE_MASK;
        if data != VFIO_IRQ_SET_DATA_NONE && data != VFIO_IRQ_SET_DATA_EVENTFD {
            return Err(invalid("SET_IRQS: data must be NONE or EVENTFD"));
        }
        if data == VFIO_IRQ_SET_DATA_NONE && !fds.is_empty() {
            return Err(invalid("SET_IRQS: file descriptors with DATA_NONE"));
        }
        match index {
            VFIO_PCI_MSIX_IRQ_INDEX => {
                self.msix
                    .set(action, start, count, fds)
                    .map_err(|e| invalid(e.to_string()))?;
            }
            VFIO_PCI_ERR_IRQ_INDEX | VFIO_PCI_REQ_IRQ_INDEX => {
                if start > 0 || count > 1 || fds.len() > 1 {
                    return Err(invalid("the error and request interrupts have one vector"));
                }
                // The same rule as the vectors': only an eventfd, never blocking.
                if let Some(fd) = fds.first() {
                    prepare_eventfd(fd)
                        .map_err(|_| invalid("SET_IRQS: the descriptor is not an eventfd"))?;
                }
                let slot = if index == VFIO_PCI_ERR_IRQ_INDEX {
                    &mut self.err_fd
                } else {
                    &mut self.req_fd
                };
                if action == IrqAction::Trigger {
                    *slot = fds.into_iter().next();
                }
            }
            _ => return Err(invalid(format!("interrupt index {index} has no vectors"))),
        }
        Ok(())
    }
}

impl ServerBackend for Function {
    fn region_read(&mut self, region: u32, offset: u64, data: &mut [u8]) -> io::Result<()> {
        let r = self.do_region_read(region, offset, data);
        self.noted(cmd::REGION_READ, r)
    }

    fn region_write(&mut self, region: u32, offset: u64, data: &[u8]) -> io::Result<()> {
        let r = self.do_region_write(region, offset, data);
        self.noted(cmd::REGION_WRITE, r)
    }

    fn dma_map(
        &mut self,
        flags: DmaMapFlags,
        offset: u64,
        address: u64,
        size: u64,
        fd: Option<File>,
    ) -> io::Result<()> {
        let r = self.do_dma_map(flags, offset, address, size, fd);
        self.noted(cmd::DMA_MAP, r)
    }

    fn dma_unmap(&mut self, flags: DmaUnmapFlags, address: u64, size: u64) -> io::Result<()> {
        let r = self.do_dma_unmap(flags, address, size);
        self.noted(cmd::DMA_UNMAP, r)
    }

    fn reset(&mut self) -> io::Result<()> {
        Function::reset(self, "DEVICE_RESET");
        Ok(())
    }

    fn set_irqs(
        &mut self,
        index: u32,
        flags: u32,
        start: u32,
        count: u32,
        fds: Vec<File>,
    ) -> io::Result<()> {
        let r = self.do_set_irqs(index, flags, start, count, fds);
        self.noted(cmd::SET_IRQS, r)
    }
}

/// Bytes of configuration space, for the region table.
pub const CONFIG_REGION_SIZE: u64 = CONFIG_SIZE as u64;

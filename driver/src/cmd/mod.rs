//! The command interface: one 4 KiB page of command queue entries, inline data plus chained
//! mailboxes, the ownership hand-off, completion with a deadline, and typed errors.
//!
//! Commands run one at a time (the driver is synchronous). Regular commands use slot 0 and
//! page-management commands the last slot, as Linux does, so a page request served while a
//! regular command is outstanding never shares its entry.

mod mailbox;
mod trace;

use crate::backend::{Backend, Barriers, DmaAlloc, DmaBuf, Events, Mmio, Regs};
use crate::eq::{Event, EventQueue};
use crate::error::{Error, Result};
use crate::recent::Recent;
use mailbox::Chain;
use mlx5_prm::rt::{Bytes, BytesMut, Command, MmioBytes, OpMod, View};
use mlx5_prm::{CmdDeliveryStatus, CmdQueueEntry, CmdQueueEntryType, CmdStatus, InitialSeg};
use std::mem::ManuallyDrop;
use std::time::{Duration, Instant};

/// Bytes of input and output carried in the entry itself.
const INLINE: usize = mlx5_prm::CMD_INLINE_DATA_SIZE as usize;
/// The command interface revision this driver implements.
pub const CMD_IF_REV: u16 = mlx5_prm::CMD_IF_REV as u16;
/// Byte offset of the command doorbell in the initialization segment.
const DOORBELL: usize = 0x18;
/// Bytes every command output starts with: the status and the syndrome (`0x00`..`0x08`),
/// which the driver reads whatever the command.
const OUT_HEADER: usize = 8;

/// What a finished command looked like, for callers that record the sequence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Executed {
    /// Command name as the spec writes it.
    pub command: &'static str,
    /// Opcode.
    pub opcode: u16,
    /// op_mod.
    pub op_mod: u16,
    /// How long it took, doorbell to ownership.
    pub elapsed: Duration,
}

/// Events met while waiting for command completions, kept for the HCA's event poll. Bounded:
/// past `MAX_STASHED` (a device flooding events nobody polls for) the oldest are dropped and
/// counted.
#[derive(Debug, Default)]
pub struct Stash {
    events: std::collections::VecDeque<Event>,
    dropped: u64,
}

/// Most events a [`Stash`] keeps.
const MAX_STASHED: usize = 4096;

impl Stash {
    /// Keeps `e`.
    pub fn push(&mut self, e: Event) {
        if self.events.len() == MAX_STASHED {
            self.events.pop_front();
            self.dropped += 1;
            log::warn!(
                "{} events dropped while nobody polled for them",
                self.dropped
            );
        }
        self.events.push_back(e);
    }

    /// Takes every event kept, oldest first.
    pub fn take(&mut self) -> Vec<Event> {
        self.events.drain(..).collect()
    }

    /// Events dropped because the stash was full.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
}

/// Where command completions arrive in event mode, and where other events met meanwhile go.
pub struct EventSink<'a> {
    /// The EQ subscribed to command-completion events.
    pub eq: &'a mut EventQueue,
    /// Events that are not command completions, for the caller to handle.
    pub stash: &'a mut Stash,
}

impl EventSink<'_> {
    /// The same sink for a shorter borrow (to pass it to several commands in turn).
    pub fn reborrow(&mut self) -> EventSink<'_> {
        EventSink {
            eq: self.eq,
            stash: self.stash,
        }
    }
}

/// The command queue.
///
/// Its memory is freed only when the device is known to be done with it
/// ([`CmdQueue::retire`] after DISABLE_HCA); dropped any other way, the entry page and the
/// mailboxes go to quarantine. Mailboxes of a command that never completed are quarantined at
/// once (the device may still write them).
///
/// A raw command can give the device any memory or take any object from under its owner, so
/// making a queue and running commands through it are `unsafe`: [`Hca`](crate::Hca) does
/// both for safe code, and [`Hca::query`](crate::Hca::query) runs the commands that cannot.
pub struct CmdQueue {
    /// Taken out only by `drop`.
    page: ManuallyDrop<DmaBuf>,
    log_size: u8,
    log_stride: u8,
    token: u8,
    timeout: Duration,
    mailboxes: Vec<DmaBuf>,
    /// Slots whose command never completed: the device still owns them.
    stuck: u32,
    /// The device no longer reaches the queue: its memory may be freed.
    quiet: bool,
    history: Recent<Executed>,
}

impl Drop for CmdQueue {
    fn drop(&mut self) {
        // SAFETY: `page` is taken once, here, and never used again.
        let page = unsafe { ManuallyDrop::take(&mut self.page) };
        if self.quiet && self.stuck == 0 {
            return;
        }
        page.quarantine();
        for b in self.mailboxes.drain(..) {
            b.quarantine();
        }
    }
}

impl CmdQueue {
    /// Reads the queue geometry, allocates the page and tells the device where it is.
    ///
    /// # Safety
    ///
    /// The device behind `be` takes its commands from this queue alone from now on: no
    /// [`Hca`](crate::Hca) or other queue is driving it (the device would then read and write
    /// memory the other driver frees or reuses as it sees fit). The queue, and the
    /// [`EventQueue`]s and [`Pages`](crate::pages::Pages) it serves, are used with `be` only
    /// (an EQ destroyed or a page taken back through another device's queue would be freed
    /// while this device still writes it).
    pub unsafe fn new<B: Backend>(be: &B, timeout: Duration, history: usize) -> Result<CmdQueue> {
        // SAFETY: only read.
        let regs = unsafe { Regs::new(be.mmio()) };
        let seg = InitialSeg::new_unchecked(MmioBytes::new(regs, 0x400c));
        let rev = seg.cmd_interface_rev();
        if rev != CMD_IF_REV {
            return Err(Error::CmdInterfaceRevision {
                found: rev,
                expected: CMD_IF_REV,
            });
        }
        let (log_size, log_stride) = (seg.log_cmdq_size(), seg.log_cmdq_stride());
        // The PRM allows at most 32 entries, each at least 64 bytes, all in one 4 KiB page.
        if log_size > 5 || log_stride < 6 || log_size + log_stride > 12 {
            return Err(Error::CmdQueueGeometry {
                log_size,
                log_stride,
            });
        }
        let page = be.dma().alloc(4096, 4096)?;
        let iova = page.iova();
        // SAFETY: writes the address of `page`, which the queue keeps until the device is
        // quiet (`retire`) and quarantines otherwise; the caller promised that this queue
        // alone drives the device.
        let regs = unsafe { Regs::new(be.mmio()) };
        let mut seg = InitialSeg::new_unchecked(MmioBytes::new(regs, 0x400c));
        seg.set_cmdq_phy_addr_63_32((iova >> 32) as u32);
        // Writing the low word (with nic_interface 0 = full driver) completes the address.
        // SAFETY: as above.
        unsafe { be.mmio().write32(0x14, iova as u32 & !0xfff) };
        B::Barriers::to_device();
        Ok(CmdQueue {
            page: ManuallyDrop::new(page),
            log_size,
            log_stride,
            token: 0,
            timeout,
            mailboxes: Vec::new(),
            stuck: 0,
            quiet: false,
            history: Recent::new(history),
        })
    }

    /// Ends the queue. With `quiet` (DISABLE_HCA succeeded: the device no longer reaches host
    /// memory) and no slot stuck with a command, its memory is freed; otherwise quarantined.
    /// Without `quiet` this is what dropping the queue does.
    ///
    /// # Safety
    ///
    /// With `quiet`, the device no longer reaches the queue's memory: DISABLE_HCA completed
    /// successfully through this queue (and no later command enabled the function again).
    pub unsafe fn retire(mut self, quiet: bool) {
        self.quiet = quiet;
    }

    /// Slots whose command never completed.
    pub fn stuck_slots(&self) -> u32 {
        self.stuck.count_ones()
    }

    /// The last commands executed, and how many ran in all.
    pub fn history(&self) -> &Recent<Executed> {
        &self.history
    }

    /// The per-command deadline.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The slot for a command: the last one for page management, the first free one of the
    /// others otherwise; slots stuck with a command that never completed are skipped.
    fn slot(&self, opcode: u16) -> Option<usize> {
        let n = 1usize << self.log_size;
        let free = |s: &usize| self.stuck & (1 << s) == 0;
        let page_slot = n - 1;
        if opcode == mlx5_prm::cmd::ManagePages::OPCODE && free(&page_slot) {
            return Some(page_slot);
        }
        (0..n).find(free)
    }

    fn next_token(&mut self) -> u8 {
        self.token = self.token.wrapping_add(1);
        if self.token == 0 {
            self.token = 1;
        }
        self.token
    }

    /// Runs command `C`: builds its input with `fill` (the opcode and op_mod are already
    /// written; `extra_in` bytes follow the fixed part, for trailing arrays; an error from
    /// `fill`, a setter's, stops the command before it is sent), and returns the output bytes
    /// (the fixed part plus `extra_out`), after checking the status.
    ///
    /// # Safety
    ///
    /// As for [`CmdQueue::exec`].
    pub unsafe fn run<C, B, F>(
        &mut self,
        be: &B,
        op_mod: C::OpMod,
        extra_in: usize,
        extra_out: usize,
        fill: F,
    ) -> Result<Vec<u8>>
    where
        C: Command,
        B: Backend,
        F: FnOnce(&mut C::Input<&mut [u8]>) -> Result<()>,
    {
        // SAFETY: the caller's promise for `run` is the one `run_with` asks.
        unsafe { self.run_with::<C, B, F>(be, None, op_mod, extra_in, extra_out, fill) }
    }

    /// [`CmdQueue::run`], waiting for completion through `events` when given: the command
    /// completion EQE names the slot, then the entry is read. Other events met while waiting
    /// are kept in the sink for the caller.
    ///
    /// # Safety
    ///
    /// As for [`CmdQueue::exec`].
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn run_with<C, B, F>(
        &mut self,
        be: &B,
        events: Option<EventSink<'_>>,
        op_mod: C::OpMod,
        extra_in: usize,
        extra_out: usize,
        fill: F,
    ) -> Result<Vec<u8>>
    where
        C: Command,
        B: Backend,
        F: FnOnce(&mut C::Input<&mut [u8]>) -> Result<()>,
    {
        let in_len = <C::Input<&mut [u8]> as View<&mut [u8]>>::SIZE + extra_in;
        let out_len = <C::Output<&[u8]> as View<&[u8]>>::SIZE + extra_out;
        let mut input = vec![0u8; in_len];
        {
            let mut view = C::input(&mut input[..], op_mod)?;
            fill(&mut view)?;
        }
        // SAFETY: the caller's promise for `run_with` is the one `exec` asks.
        unsafe {
            self.exec(
                be,
                events,
                C::NAME,
                C::OPCODE,
                op_mod.raw(),
                &input,
                out_len,
            )
        }
    }

    /// Runs one command given as raw input bytes; returns `out_len` output bytes. An
    /// `out_len` under 8 (no room for the status and syndrome every output starts with) is
    /// refused before anything is sent.
    ///
    /// # Safety
    ///
    /// The command does what the caller is prepared for, whatever the device makes of it:
    ///
    /// - every host address it gives the device (firmware pages, ring and doorbell-record
    ///   addresses, page lists of CREATE_CQ/EQ/QP/SQ/RQ/MKEY, ...) is memory the caller keeps
    ///   allocated, and out of every other use, until the device is known to be done with it
    ///   (its object destroyed successfully, the page taken back, the function disabled) or
    ///   hands to quarantine ([`DmaBuf::quarantine`]) otherwise;
    /// - it destroys, modifies or takes back nothing another owner tracks (the EQ, pages,
    ///   UAR, PD or transport domain of an [`Hca`](crate::Hca), the objects of its resources),
    ///   whose memory that owner would then free, or whose use would reach memory it no longer
    ///   keeps;
    /// - it does not re-enable or re-initialise a function whose memory was freed as quiet.
    ///
    /// Commands that only read the device's state (queries, register reads) satisfy this.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn exec<B: Backend>(
        &mut self,
        be: &B,
        mut events: Option<EventSink<'_>>,
        name: &'static str,
        opcode: u16,
        op_mod: u16,
        input: &[u8],
        out_len: usize,
    ) -> Result<Vec<u8>> {
        if out_len < OUT_HEADER {
            return Err(Error::NotSent {
                command: name,
                opcode,
                why: "its output is shorter than the 8 bytes of status and syndrome",
            });
        }
        let slot = self.slot(opcode).ok_or(Error::NotSent {
            command: name,
            opcode,
            why: "every command slot is held by a command that timed out",
        })?;
        let token = self.next_token();
        trace::dump(name, "in", input);

        let in_chain = Chain::build(
            be,
            &mut self.mailboxes,
            input.len().saturating_sub(INLINE),
            token,
        )?;
        let out_chain = Chain::build(
            be,
            &mut self.mailboxes,
            out_len.saturating_sub(INLINE),
            token,
        )?;
        in_chain.write_data(&input[input.len().min(INLINE)..]);

        let at = slot << self.log_stride;
        let mut entry = CmdQueueEntry::new_unchecked(self.page.slice(at, 64));
        entry.storage_mut().write_bytes(0, &[0u8; 64]);
        entry.set_type(CmdQueueEntryType::PcieCmdIfTransport);
        entry.set_input_length(input.len() as u32);
        entry.set_output_length(out_len as u32);
        let mut inline = [0u8; INLINE];
        inline[..input.len().min(INLINE)].copy_from_slice(&input[..input.len().min(INLINE)]);
        entry.set_command_input_inline_data(&inline);
        let (hi, lo) = in_chain.head();
        entry.set_input_mailbox_pointer_63_32(hi);
        entry.set_input_mailbox_pointer_31_9(lo >> 9);
        let (hi, lo) = out_chain.head();
        entry.set_output_mailbox_pointer_63_32(hi);
        entry.set_output_mailbox_pointer_31_9(lo >> 9);
        entry.set_token(token);
        entry.set_ownership(true);
        // The signature makes the XOR of all 64 bytes 0xff.
        let mut all = [0u8; 64];
        entry.storage().read_bytes(0, &mut all);
        let xor = all.iter().fold(0u8, |a, b| a ^ b);
        entry.set_signature(!xor);

        // In event mode, completions of earlier commands still in the EQ must not be taken for
        // this one's: read them out first (other events are kept).
        if let Some(sink) = events.as_mut() {
            for e in sink.eq.poll(be) {
                if !matches!(e, Event::CommandCompletion { .. }) {
                    sink.stash.push(e);
                }
            }
        }

        // Everything above must reach memory before the device sees the doorbell.
        B::Barriers::to_device();
        let start = Instant::now();
        // SAFETY: the entry, its mailboxes and what the command names are kept as the
        // caller promised (and the mailboxes quarantined if it never completes).
        unsafe { be.mmio().write32(DOORBELL, 1 << slot) };

        let deadline = start + self.timeout;
        let mut announced = false;
        loop {
            match events.as_mut() {
                // Event mode: the completion EQE for this slot comes first; the entry is read
                // once it has been seen.
                Some(sink) => {
                    for e in sink.eq.poll(be) {
                        match e {
                            Event::CommandCompletion { vector } if vector & (1 << slot) != 0 => {
                                announced = true
                            }
                            Event::CommandCompletion { .. } => {}
                            other => sink.stash.push(other),
                        }
                    }
                    if announced && !entry.ownership() {
                        break;
                    }
                }
                None => {
                    if !entry.ownership() {
                        break;
                    }
                }
            }
            if Instant::now() >= deadline {
                // The device still owns the entry and may write the mailboxes later: keep them
                // out of reuse.
                let (a, b) = (in_chain.into_buffers(), out_chain.into_buffers());
                for buf in a.into_iter().chain(b) {
                    buf.quarantine();
                }
                self.stuck |= 1 << slot;
                return Err(Error::CommandTimeout {
                    command: name,
                    opcode,
                    timeout: self.timeout,
                });
            }
            // In event mode the completion's EQE raises the interrupt that ends the wait;
            // before the EQ exists nothing does, so the entry itself is polled.
            if events.is_some() {
                be.events().wait_for_event(deadline);
            } else {
                be.events()
                    .wait(deadline.min(Instant::now() + crate::backend::POLL_STEP));
            }
        }
        B::Barriers::from_device();
        let elapsed = start.elapsed();

        let delivery = entry.status_raw();
        let mut output = vec![0u8; out_len];
        let inline_out = entry.command_output_inline_data();
        let n = out_len.min(INLINE);
        output[..n].copy_from_slice(&inline_out[..n]);
        let read = out_chain.read_data(&mut output[n..], token);
        self.mailboxes.extend(in_chain.into_buffers());
        self.mailboxes.extend(out_chain.into_buffers());
        self.history.push(Executed {
            command: name,
            opcode,
            op_mod,
            elapsed,
        });

        if delivery != 0 {
            return Err(Error::Delivery {
                command: name,
                opcode,
                status: delivery,
                status_name: CmdDeliveryStatus::from_raw(u64::from(delivery))
                    .map_or("unknown", |s| s.spec_name()),
            });
        }
        read.map_err(|what| Error::BadDeviceValue {
            command: name,
            what,
        })?;
        trace::dump(name, "out", &output);
        let status = output.first().copied().unwrap_or(0xff);
        let syndrome = mlx5_prm::rt::output_syndrome(&output[..]);
        if status != 0 {
            return Err(Error::Command {
                command: name,
                opcode,
                op_mod,
                status,
                status_name: CmdStatus::from_raw(u64::from(status))
                    .map_or("unknown", |s| s.spec_name()),
                syndrome,
            });
        }
        Ok(output)
    }
}

#[cfg(all(test, feature = "sim"))]
mod tests;

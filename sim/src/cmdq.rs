//! The command queue as the device serves it: read an entry the doorbell handed over, check
//! the descriptor and both mailbox chains, run the command, write the output inline and into
//! the output mailboxes, then return the entry: delivery status first, a barrier, ownership
//! cleared last. If an EQ subscribes to command-completion events, an EQE follows.

use crate::dma::DmaSpace;
use crate::exec::{self, Executed};
use crate::faults::FaultInjector;
use crate::mailbox::{self, Chain, Dir, DATA, INLINE};
use crate::model::Model;
use mlx5_prm::rt::{Bytes as _, BytesMut as _, DeviceBytes};
use mlx5_prm::{CmdDeliveryStatus, CmdQueueEntry, CmdQueueEntryType, HcaCmdifChecksum};
use std::sync::atomic::{fence, Ordering};

/// Size of an entry.
const ENTRY: usize = mlx5_prm::CMD_QUEUE_ENTRY_SIZE as usize;
/// Offset of the inline output in the entry.
const OUTPUT_INLINE: usize = CmdQueueEntry::COMMAND_OUTPUT_INLINE_DATA.bit_offset / 8;

/// What happened to an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Served {
    /// The entry is not mapped: nothing can be read or written back.
    Unreachable,
    /// The entry is owned by software; the doorbell bit is ignored.
    NotOwned,
    /// Fault injection: the entry stays with the device forever.
    Hung,
    /// Returned with a delivery error; the command did not run. The entry's 16 inline input
    /// bytes come along (for the host's trace).
    Rejected(CmdDeliveryStatus, [u8; INLINE]),
    /// The command ran and the entry was returned; the output is cut to what was written.
    Done(Executed),
}

/// Serves the entry at `entry_iova`.
pub(crate) fn serve(
    m: &mut Model,
    dma: &DmaSpace,
    faults: &FaultInjector,
    entry_iova: u64,
) -> Served {
    let Some(mut window) = dma.window(entry_iova, ENTRY) else {
        m.dma_faults += 1;
        return Served::Unreachable;
    };
    // A snapshot: the device works from what the driver posted, whatever it writes later.
    let mut entry = CmdQueueEntry::zeroed();
    window.read_bytes(0, entry.storage_mut());
    if !entry.ownership() {
        return Served::NotOwned;
    }
    let inline = entry.command_input_inline_data();
    let opcode = u16::from_be_bytes([inline[0], inline[1]]);
    if faults.hangs(opcode) {
        return Served::Hung;
    }
    match check_and_run(m, dma, faults, &entry, &inline) {
        Ok((mut executed, out_blocks)) => {
            write_output(
                dma,
                &mut window,
                &executed.output,
                &out_blocks,
                entry.output_length(),
            );
            give_back(&mut window, CmdDeliveryStatus::Ok);
            let written = (entry.output_length() as usize).max(INLINE);
            executed.output.truncate(written);
            Served::Done(executed)
        }
        Err(status) => {
            give_back(&mut window, status);
            Served::Rejected(status, inline)
        }
    }
}

/// Checks the descriptor and the chains, then runs the command.
fn check_and_run(
    m: &mut Model,
    dma: &DmaSpace,
    faults: &FaultInjector,
    entry: &CmdQueueEntry,
    inline: &[u8; INLINE],
) -> Result<(Executed, Vec<u64>), CmdDeliveryStatus> {
    let checksums = m.gen().cmdif_checksum_raw() == HcaCmdifChecksum::Enabled.raw();
    if checksums && mailbox::xor(entry.storage()) != 0xff {
        return Err(CmdDeliveryStatus::SignatErr);
    }
    if entry.type_raw() != CmdQueueEntryType::PcieCmdIfTransport.raw() {
        return Err(CmdDeliveryStatus::CmdDescrErr);
    }
    let raw = entry.storage();
    let (in_low, out_low) = (raw.read_be32(0x0c), raw.read_be32(0x34));
    let in_len = entry.input_length() as usize;
    let out_len = entry.output_length() as usize;
    // A pointer's low 9 bits are not address bits (the field is bits 31:9); set ones mean a
    // misaligned mailbox. Pointers of chains the command does not use are not looked at.
    if in_len > INLINE && in_low & 0x1ff != 0 {
        return Err(CmdDeliveryStatus::InPtrAlignErr);
    }
    if out_len > INLINE && out_low & 0x1ff != 0 {
        return Err(CmdDeliveryStatus::OutPtrAlignErr);
    }
    let token = entry.token();
    let in_blocks = mailbox::walk(
        dma,
        Chain {
            first: (u64::from(entry.input_mailbox_pointer_63_32()) << 32) | u64::from(in_low),
            token,
            len: in_len.saturating_sub(INLINE),
            dir: Dir::Input,
            checksums,
        },
        &mut m.dma_faults,
    )?;
    let out_blocks = mailbox::walk(
        dma,
        Chain {
            first: (u64::from(entry.output_mailbox_pointer_63_32()) << 32) | u64::from(out_low),
            token,
            len: out_len.saturating_sub(INLINE),
            dir: Dir::Output,
            checksums,
        },
        &mut m.dma_faults,
    )?;
    let mut input = Vec::with_capacity(in_len.min(INLINE + DATA * in_blocks.len()));
    input.extend_from_slice(&inline[..in_len.min(INLINE)]);
    let mut rest = in_len.saturating_sub(INLINE);
    for b in &in_blocks {
        let n = rest.min(DATA);
        input.extend_from_slice(&b.image.storage()[..n]);
        rest -= n;
    }
    let executed = exec::execute(m, dma, faults, inline, &input, out_len);
    Ok((executed, out_blocks.iter().map(|b| b.addr).collect()))
}

/// Writes the output: 16 bytes inline (always, so the status is visible even with a short
/// output_length), the rest into the output blocks, never beyond `out_len`.
fn write_output(
    dma: &DmaSpace,
    entry: &mut DeviceBytes<'_>,
    output: &[u8],
    blocks: &[u64],
    out_len: u32,
) {
    let mut head = [0u8; INLINE];
    let n = output.len().min(INLINE);
    head[..n].copy_from_slice(&output[..n]);
    entry.write_bytes(OUTPUT_INLINE, &head);
    let limit = output.len().min(out_len as usize);
    for (i, &addr) in blocks.iter().enumerate() {
        let start = INLINE + i * DATA;
        if start >= limit {
            break;
        }
        let chunk = &output[start..limit.min(start + DATA)];
        if let Some(mut w) = dma.window(addr, chunk.len()) {
            w.write_bytes(0, chunk);
        }
    }
}

/// Returns the entry: the delivery status with ownership still set, a barrier, then
/// ownership cleared, so the driver that sees ownership 0 sees everything before it.
fn give_back(entry: &mut DeviceBytes<'_>, status: CmdDeliveryStatus) {
    fence(Ordering::Release);
    let mut view = CmdQueueEntry::new_unchecked(entry.clone());
    view.set_status(status);
    fence(Ordering::Release);
    view.set_ownership(false);
}

//! Posting one command as a driver does, for the harnesses that drive a device over guest RAM
//! of their own: the input's mailbox chain, an empty chain for the output, and the queue entry
//! in slot 0, each block and the entry with its signature (which the model checks only once a
//! program enabled command checksums, SET_HCA_CAP cmdif_checksum, and ignores otherwise).
//!
//! Included by path (`#[path]`) into `sim/tests/drive` (the `device` fuzz target and its
//! property test) and `sim/tests/roce_bad_input` (the `roce_rx` fuzz target and its tests).

#![allow(dead_code)]

use mlx5_prm::{CmdIfBox, CmdQueueEntry};

/// Data bytes per mailbox block, and the distance between blocks in a chain.
const BLOCK_DATA: usize = 512;
const BLOCK_STRIDE: u64 = 1024;

/// Where a harness keeps its command queue and mailboxes, and how many blocks each chain has
/// room for.
pub struct CommandArea {
    pub cmdq: u64,
    pub in_boxes: u64,
    pub out_boxes: u64,
    pub boxes: usize,
}

impl CommandArea {
    /// The most input, or output, bytes one command can carry: the entry's 16 and the blocks'.
    pub const fn max_len(&self) -> usize {
        16 + self.boxes * BLOCK_DATA
    }

    /// Writes, through `write` (IO address, bytes), `input` (up to [`Self::max_len`] bytes) with
    /// room for `out_len` bytes of output (likewise), as command `token` owned by the device.
    /// The caller rings the doorbell.
    pub fn post(&self, input: &[u8], out_len: usize, token: u8, mut write: impl FnMut(u64, &[u8])) {
        let input = &input[..input.len().min(self.max_len())];
        let out_len = out_len.min(self.max_len());
        let rest = input.get(16..).unwrap_or(&[]);
        let mut chain = |at: u64, payload: &[u8], n: usize| {
            for i in 0..n {
                let mut b = CmdIfBox::zeroed();
                let chunk = payload.get(i * BLOCK_DATA..).unwrap_or(&[]);
                let k = chunk.len().min(BLOCK_DATA);
                b.storage_mut()[..k].copy_from_slice(&chunk[..k]);
                if i + 1 < n {
                    let next = at + (i as u64 + 1) * BLOCK_STRIDE;
                    b.set_next_pointer_63_32((next >> 32) as u32);
                    b.set_next_pointer_31_10((next as u32) >> 10);
                }
                b.set_block_number(i as u32);
                b.set_token(token);
                let mut raw = *b.storage();
                raw[0x23e] = 0xff ^ xor(&raw[0x200..0x23e]);
                raw[0x23f] = 0xff ^ xor(&raw[..0x23f]);
                write(at + i as u64 * BLOCK_STRIDE, &raw);
            }
        };
        chain(self.in_boxes, rest, rest.len().div_ceil(BLOCK_DATA));
        chain(
            self.out_boxes,
            &[],
            out_len.saturating_sub(16).div_ceil(BLOCK_DATA),
        );
        let mut e = CmdQueueEntry::zeroed();
        e.set_type_raw(7);
        e.set_input_length(input.len() as u32);
        let mut inline = [0u8; 16];
        let n = input.len().min(16);
        inline[..n].copy_from_slice(&input[..n]);
        e.set_command_input_inline_data(&inline);
        e.set_input_mailbox_pointer_63_32((self.in_boxes >> 32) as u32);
        e.set_input_mailbox_pointer_31_9((self.in_boxes as u32) >> 9);
        e.set_output_mailbox_pointer_63_32((self.out_boxes >> 32) as u32);
        e.set_output_mailbox_pointer_31_9((self.out_boxes as u32) >> 9);
        e.set_output_length(out_len as u32);
        e.set_token(token);
        e.set_ownership(true);
        let mut raw = *e.storage();
        raw[0x3d] = 0;
        raw[0x3d] = 0xff ^ xor(&raw);
        write(self.cmdq, &raw);
    }
}

/// The XOR of `bytes`, which a signature makes 0xff.
fn xor(bytes: &[u8]) -> u8 {
    bytes.iter().fold(0, |a, b| a ^ b)
}

//! Mailbox chains: the part of a command's input or output beyond the 16 inline bytes, in
//! 512-byte data blocks linked by big-endian next pointers, each stamped with its block
//! number and the command's token.

use crate::backend::{Backend, DmaAlloc, DmaBuf};
use crate::error::Result;
use mlx5_prm::rt::{Bytes, BytesMut};
use mlx5_prm::CmdIfBox;

/// Data bytes per block.
pub const BLOCK_DATA: usize = mlx5_prm::CMD_MAILBOX_DATA_SIZE as usize;
/// Blocks are allocated 1 KiB apart (the next pointer keeps bits 63:10).
const BLOCK_ALIGN: usize = 1024;

/// A chain of mailbox blocks for one direction of one command.
pub struct Chain {
    blocks: Vec<DmaBuf>,
}

impl Chain {
    /// Takes (or allocates) enough blocks for `len` bytes, links them and stamps them with
    /// `token`; `pool` holds blocks of earlier commands for reuse.
    pub fn build<B: Backend>(
        be: &B,
        pool: &mut Vec<DmaBuf>,
        len: usize,
        token: u8,
    ) -> Result<Chain> {
        let n = len.div_ceil(BLOCK_DATA);
        let mut blocks = Vec::with_capacity(n);
        for _ in 0..n {
            let b = match pool.pop() {
                Some(b) => b,
                None => be.dma().alloc(BLOCK_ALIGN, BLOCK_ALIGN)?,
            };
            b.bytes().write_bytes(0, &[0u8; BLOCK_ALIGN]);
            blocks.push(b);
        }
        for i in 0..n {
            let next = blocks.get(i + 1).map_or(0, |b| b.iova());
            let mut view = CmdIfBox::new_unchecked(
                blocks[i].slice(0, mlx5_prm::CMD_MAILBOX_BLOCK_SIZE as usize),
            );
            view.set_next_pointer_63_32((next >> 32) as u32);
            view.set_next_pointer_31_10((next as u32) >> 10);
            view.set_block_number(i as u32);
            view.set_token(token);
        }
        Ok(Chain { blocks })
    }

    /// `(high, low)` 32 bits of the first block's address, or zero for an empty chain.
    pub fn head(&self) -> (u32, u32) {
        let a = self.blocks.first().map_or(0, |b| b.iova());
        ((a >> 32) as u32, a as u32)
    }

    /// Copies `data` into the blocks' data areas.
    pub fn write_data(&self, data: &[u8]) {
        for (b, chunk) in self.blocks.iter().zip(data.chunks(BLOCK_DATA)) {
            b.bytes().write_bytes(0, chunk);
        }
    }

    /// Copies the blocks' data into `out`, checking that the device kept each block's number
    /// and token.
    pub fn read_data(&self, out: &mut [u8], token: u8) -> Result<(), String> {
        for (i, (b, chunk)) in self
            .blocks
            .iter()
            .zip(out.chunks_mut(BLOCK_DATA))
            .enumerate()
        {
            let view =
                CmdIfBox::new_unchecked(b.slice(0, mlx5_prm::CMD_MAILBOX_BLOCK_SIZE as usize));
            if view.block_number() != i as u32 || view.token() != token {
                return Err(format!(
                    "output mailbox {i} came back as block {} with token {} (expected {token})",
                    view.block_number(),
                    view.token()
                ));
            }
            b.bytes().read_bytes(0, chunk);
        }
        Ok(())
    }

    /// The blocks, for reuse.
    pub fn into_buffers(self) -> Vec<DmaBuf> {
        self.blocks
    }
}

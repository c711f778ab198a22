//! Mailbox chains: the 576-byte `cmd_if_box` blocks that carry a command's input and output
//! beyond the 16 bytes inline in the entry.
//!
//! The device checks each block as it walks the chain: the block is mapped, its token equals
//! the entry's, its block number counts from 0, the next pointer keeps the 1 KiB alignment its
//! field implies, and (when command checksums are enabled) the block signatures are right.
//! A chain that ends before the length is covered is a length error. Every failure is a
//! delivery status: the command never runs.

use crate::dma::DmaSpace;
use mlx5_prm::rt::Bytes as _;
use mlx5_prm::{CmdDeliveryStatus, CmdIfBox};

/// Payload bytes per block.
pub(crate) const DATA: usize = mlx5_prm::CMD_MAILBOX_DATA_SIZE as usize;
/// Size of a block.
pub(crate) const BLOCK: usize = mlx5_prm::CMD_MAILBOX_BLOCK_SIZE as usize;
/// Bytes that travel inline in the entry.
pub(crate) const INLINE: usize = mlx5_prm::CMD_INLINE_DATA_SIZE as usize;
/// Longest chain the device follows (32 MiB of payload), so a looping or absurd chain ends.
const MAX_BLOCKS: usize = 1 << 16;

/// Which chain is walked: selects the delivery statuses for pointer and length errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dir {
    Input,
    Output,
}

impl Dir {
    fn align_err(self) -> CmdDeliveryStatus {
        match self {
            Dir::Input => CmdDeliveryStatus::InPtrAlignErr,
            Dir::Output => CmdDeliveryStatus::OutPtrAlignErr,
        }
    }

    fn length_err(self) -> CmdDeliveryStatus {
        match self {
            Dir::Input => CmdDeliveryStatus::InLengthErr,
            Dir::Output => CmdDeliveryStatus::OutLengthErr,
        }
    }
}

/// XOR of all bytes.
pub(crate) fn xor(bytes: &[u8]) -> u8 {
    bytes.iter().fold(0, |a, b| a ^ b)
}

/// A chain to walk: first block pointer, token, bytes beyond the inline part.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Chain {
    pub first: u64,
    pub token: u8,
    pub len: usize,
    pub dir: Dir,
    pub checksums: bool,
}

/// One checked block: its address and contents.
pub(crate) struct Block {
    pub addr: u64,
    pub image: CmdIfBox,
}

/// Walks the chain, checking every block; returns the blocks that carry `len` bytes.
pub(crate) fn walk(
    dma: &DmaSpace,
    chain: Chain,
    faults: &mut u64,
) -> Result<Vec<Block>, CmdDeliveryStatus> {
    let count = chain.len.div_ceil(DATA);
    if count > MAX_BLOCKS {
        return Err(chain.dir.length_err());
    }
    let mut blocks = Vec::with_capacity(count.min(64));
    let mut ptr = chain.first;
    for i in 0..count {
        if ptr == 0 {
            return Err(chain.dir.length_err());
        }
        let Some(window) = dma.window(ptr, BLOCK) else {
            // The device cannot fetch the block: on hardware an IOMMU fault, which firmware
            // reports as its own error.
            *faults += 1;
            return Err(CmdDeliveryStatus::FwErr);
        };
        let mut image = CmdIfBox::zeroed();
        window.read_bytes(0, image.storage_mut());
        if chain.checksums {
            let raw = image.storage();
            if xor(&raw[0x200..0x23f]) != 0xff || xor(&raw[..]) != 0xff {
                return Err(CmdDeliveryStatus::SignatErr);
            }
        }
        if image.token() != chain.token {
            return Err(CmdDeliveryStatus::TokErr);
        }
        if image.block_number() as usize != i {
            return Err(CmdDeliveryStatus::BadBlkNumErr);
        }
        let next_low = image.storage().read_be32(0x234);
        let next = (u64::from(image.next_pointer_63_32()) << 32) | u64::from(next_low);
        if i + 1 < count && next_low & 0x3ff != 0 {
            return Err(chain.dir.align_err());
        }
        blocks.push(Block { addr: ptr, image });
        ptr = next;
    }
    Ok(blocks)
}

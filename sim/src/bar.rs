//! The layout of BAR 0: the initialization segment at offset 0, then one 4 KiB UAR page per
//! UAR index. Indices below [`FIRST_UAR`] would overlap the 0x400c-byte initialization
//! segment and are never handed out.

/// BAR 0 length: 8 MiB, room for 2040 UAR pages.
pub const BAR_SIZE: usize = 8 << 20;
/// Size of one UAR page (log_uar_page_sz 0).
pub const UAR_PAGE_SIZE: usize = mlx5_prm::UAR_PAGE_SIZE as usize;
/// First UAR index ALLOC_UAR hands out.
pub const FIRST_UAR: u32 = 8;
/// Last UAR index.
pub const LAST_UAR: u32 = (BAR_SIZE / UAR_PAGE_SIZE) as u32 - 1;
/// Length of the initialization segment.
pub const INIT_SEG_SIZE: usize = 0x400c;

/// Offsets inside a UAR page.
pub mod uar {
    /// 64-bit CQ arm doorbell (high dword: sn, cmd, ci; low dword: cqn).
    pub const CQ_DOORBELL: usize = 0x20;
    /// EQ doorbell that updates the consumer index and arms the EQ.
    pub const EQ_ARM: usize = 0x40;
    /// EQ doorbell that only updates the consumer index.
    pub const EQ_UPDATE: usize = 0x48;
    /// First BlueFlame register.
    pub const BF_START: usize = 0x800;
}

/// What a BAR offset addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// A register of the initialization segment.
    InitSeg(usize),
    /// A register in UAR page `index`, at `offset` inside it.
    Uar { index: u32, offset: usize },
    /// Unused BAR space: reads 0, writes are dropped.
    Hole,
}

/// Decodes an access of `width` bytes (4 or 8) at `offset`; `None` if it is unaligned or
/// outside the BAR.
pub fn decode(offset: usize, width: usize) -> Option<Target> {
    if offset % width != 0 || offset.checked_add(width)? > BAR_SIZE {
        return None;
    }
    Some(if offset + width <= INIT_SEG_SIZE {
        Target::InitSeg(offset)
    } else if offset >= FIRST_UAR as usize * UAR_PAGE_SIZE {
        Target::Uar {
            index: (offset / UAR_PAGE_SIZE) as u32,
            offset: offset % UAR_PAGE_SIZE,
        }
    } else {
        Target::Hole
    })
}

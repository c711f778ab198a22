//! The hand-written runtime that generated code builds on (the role svd2rust's `generic.rs`
//! plays): byte storage traits, big-endian bit access, device-shared memory, MMIO register
//! access, command and access register typing, and errors. Nothing here is specific to one
//! layout; the generated modules only supply offsets, widths and names.

mod access;
mod bytes;
mod command;
mod command_info;
mod copy;
mod decoded;
mod device;
mod error;
pub mod fmt;
mod layout;
mod mmio;
pub mod reflect;
mod register;
pub mod shared;
pub mod sm;
pub mod typestate;
mod view;
mod view_of;

pub use access::*;
pub use bytes::{Bytes, BytesMut};
pub use command::{output_status, output_syndrome, Command, OpMod};
pub use command_info::{CommandInfo, OpModInfo};
pub use device::DeviceBytes;
pub use error::{LayoutError, Overflow, UnknownValue};
pub use layout::Layout;
pub use mmio::{Mmio32, MmioBytes, MmioPtr, RegisterFile};
pub use register::{AccessReg, Readable, RegAccess, RegisterInfo, Writable};
pub use view::{check_len, fixed_prefix, fixed_prefix_mut, View};
pub use view_of::{ByteArray, FixedLayout, ViewLayout};

/// A field's place in its layout: the facts `mlx5_ifc.h` encodes, as constants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// The field's name as the spec writes it.
    pub name: &'static str,
    /// Absolute MSB-first bit offset from the start of the layout (of element 0 for arrays).
    pub bit_offset: usize,
    /// Width in bits (of one element for arrays).
    pub width: u32,
}

impl Field {
    /// A field of `width` bits at MSB-first `bit_offset`.
    pub const fn new(name: &'static str, bit_offset: usize, width: u32) -> Field {
        Field {
            name,
            bit_offset,
            width,
        }
    }
}

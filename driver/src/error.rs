//! Driver errors. Each names what failed and keeps the device's own words: for commands the
//! command's name, opcode, status and syndrome.

use mlx5_prm::CmdStatus;
use std::time::Duration;

/// Everything that can go wrong talking to the device.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Firmware kept the initializing bit set past the deadline.
    #[error("firmware not ready after {waited:?} (initializing bit still set)")]
    FirmwareNotReady {
        /// How long the driver waited.
        waited: Duration,
    },
    /// The device speaks a command interface revision this driver does not.
    #[error("command interface revision {found} is not supported (need {expected})")]
    CmdInterfaceRevision {
        /// Revision the device reports.
        found: u16,
        /// Revision the driver implements.
        expected: u16,
    },
    /// The device's command queue geometry is outside what the PRM allows.
    #[error("command queue geometry not supported: log size {log_size}, log stride {log_stride}")]
    CmdQueueGeometry {
        /// log2 of the number of entries.
        log_size: u8,
        /// log2 of the entry stride.
        log_stride: u8,
    },
    /// A command completed with a non-zero status.
    #[error("{command} (opcode 0x{opcode:x}, op_mod 0x{op_mod:x}) failed: status 0x{status:02x} ({status_name}), syndrome 0x{syndrome:08x}")]
    Command {
        /// The command's name as the spec writes it.
        command: &'static str,
        /// Its opcode.
        opcode: u16,
        /// Its op_mod.
        op_mod: u16,
        /// The status byte.
        status: u8,
        /// The status's PRM name, or "unknown".
        status_name: &'static str,
        /// The firmware's syndrome.
        syndrome: u32,
    },
    /// The device refused the command entry itself (delivery status in the entry).
    #[error("{command} (opcode 0x{opcode:x}) was not delivered: delivery status 0x{status:02x} ({status_name})")]
    Delivery {
        /// The command's name.
        command: &'static str,
        /// Its opcode.
        opcode: u16,
        /// The delivery status.
        status: u8,
        /// Its PRM name, or "unknown".
        status_name: &'static str,
    },
    /// A command was never sent: the device never saw it.
    #[error("{command} (opcode 0x{opcode:x}) was not sent: {why}")]
    NotSent {
        /// The command's name.
        command: &'static str,
        /// Its opcode.
        opcode: u16,
        /// Why: the command interface is closed, every slot is held by a command that timed
        /// out, or the command asked for an output too short to hold its status.
        why: &'static str,
    },
    /// A command did not complete before its deadline (the device saw it, whatever the
    /// deadline was, zero included).
    #[error("{command} (opcode 0x{opcode:x}) did not complete within {timeout:?}")]
    CommandTimeout {
        /// The command's name.
        command: &'static str,
        /// Its opcode.
        opcode: u16,
        /// The deadline that passed.
        timeout: Duration,
    },
    /// The device returned something the driver cannot trust (a count beyond what was asked,
    /// an output too short for its layout...).
    #[error("{command}: the device returned an invalid value: {what}")]
    BadDeviceValue {
        /// The command or structure concerned.
        command: &'static str,
        /// What was wrong.
        what: String,
    },
    /// DMA memory could not be allocated.
    #[error("DMA allocation of {len} bytes failed: {reason}")]
    Dma {
        /// Bytes asked for.
        len: usize,
        /// Why.
        reason: String,
    },
    /// The device reported a firmware error in its health buffer.
    #[error("device health error: syndrome 0x{syndrome:02x}")]
    Health {
        /// The health syndrome.
        syndrome: u8,
    },
    /// A work request of a queue completed with an error CQE (the queue is now in error).
    #[error("{queue} 0x{number:x}: work request {wqe_counter} failed: {error}")]
    WorkRequest {
        /// The kind of queue ("sq", "rq").
        queue: &'static str,
        /// Its number.
        number: u32,
        /// The WQE counter the error CQE names.
        wqe_counter: u16,
        /// The syndrome.
        error: crate::cq::CqeError,
    },
    /// A layout did not fit its buffer (a driver bug: sizes come from the generated types).
    #[error(transparent)]
    Layout(#[from] mlx5_prm::rt::LayoutError),
    /// A value did not fit its field or array (from a generated setter).
    #[error(transparent)]
    Field(#[from] mlx5_prm::rt::Overflow),
    /// The caller asked for something the driver or the device does not allow (a bad
    /// configuration, a frame longer than a buffer, a packet that cannot be sent...).
    #[error("{what}: invalid argument: {why}")]
    InvalidArgument {
        /// The call or setting concerned.
        what: &'static str,
        /// What was wrong.
        why: String,
    },
    /// A queue has no room for another work request.
    #[error("{queue} full ({capacity} outstanding)")]
    QueueFull {
        /// The queue ("send queue", "receive queue").
        queue: &'static str,
        /// Its capacity.
        capacity: usize,
    },
    /// Inline data longer than a work request can carry.
    #[error("{len} inline bytes for {op} (at most {max})")]
    InlineTooLong {
        /// Bytes given.
        len: usize,
        /// The most allowed for this operation (0: the operation carries none).
        max: usize,
        /// The operation.
        op: &'static str,
    },
    /// Two resources of different HCAs (or a packet of another pool) were put together; the
    /// request was refused before anything reached the device.
    #[error("{what} belongs to another {owner}")]
    ForeignResource {
        /// The resource given.
        what: &'static str,
        /// What it should have belonged to ("HCA", "pool").
        owner: &'static str,
    },
    /// A resource cannot be destroyed yet: others still use it (it goes when the last does).
    #[error("{what} is still used by {users} other resource(s); it is destroyed with the last")]
    InUse {
        /// The resource.
        what: &'static str,
        /// How many others hold it.
        users: usize,
    },
    /// Something of the device only one resource may hold at a time is held already (the NIC
    /// receive root flow table, by other Ethernet queues of the HCA); refused before anything
    /// reached the device. It is free again when its holder is dropped.
    #[error("{what} is already held by {holder} of this HCA (free again when they are dropped)")]
    Claimed {
        /// What was asked for.
        what: &'static str,
        /// What holds it.
        holder: &'static str,
    },
    /// The device asked for more firmware pages than the driver allows; refused (and the
    /// device told so) before anything was allocated.
    #[error(
        "the device asked for {requested} firmware pages with {held} held; the limit is {limit}"
    )]
    PageLimit {
        /// Pages asked for.
        requested: u64,
        /// Pages the device already holds.
        held: usize,
        /// [`crate::HcaConfig::max_firmware_pages`].
        limit: usize,
    },
    /// Teardown did not complete: the first failure, and the DMA memory left in quarantine
    /// because the device may still write it.
    #[error("teardown failed ({buffers} DMA buffers, {bytes} bytes quarantined): {first}")]
    Teardown {
        /// The first failure.
        first: Box<Error>,
        /// Buffers quarantined (by the backend, this HCA's whole life).
        buffers: usize,
        /// Their bytes.
        bytes: usize,
    },
    /// An access to a register (ACCESS_REGISTER) failed; `source` is the command's error.
    #[error("{direction} of register {register} (id 0x{id:04x}) failed: {source}")]
    Register {
        /// The register's name as the spec writes it (`paos`).
        register: &'static str,
        /// Its register id.
        id: u16,
        /// `read` or `write`.
        direction: &'static str,
        /// What the command reported.
        source: Box<Error>,
    },
    /// A device spec names a backend this build does not have.
    #[error("device '{spec}' needs the driver built with feature `{feature}`")]
    BackendNotBuilt {
        /// The spec as given.
        spec: String,
        /// The cargo feature that provides the backend.
        feature: &'static str,
    },
    /// The function could not be opened through VFIO.
    #[cfg(all(feature = "vfio", target_os = "linux"))]
    #[error(transparent)]
    Vfio(Box<crate::backend::vfio::VfioError>),
}

#[cfg(all(feature = "vfio", target_os = "linux"))]
impl From<crate::backend::vfio::VfioError> for Error {
    fn from(e: crate::backend::vfio::VfioError) -> Error {
        // Boxed: the VFIO errors carry paths and lists, and every `Result` of the driver
        // would otherwise grow to their size.
        Error::Vfio(Box::new(e))
    }
}

impl Error {
    /// Whether a failed command reached the device, which may then have acted on it whatever
    /// it reported: every failure but the driver's own before the doorbell (no free slot,
    /// no memory for mailboxes, a value that did not fit its field). Memory such a command
    /// gave the device is not freed on the device's word that it failed.
    pub fn reached_device(&self) -> bool {
        matches!(
            self,
            Error::CommandTimeout { .. }
                | Error::Command { .. }
                | Error::Delivery { .. }
                | Error::BadDeviceValue { .. }
        )
    }

    /// The command status, for command errors.
    pub fn status(&self) -> Option<u8> {
        match self {
            Error::Command { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The status as the spec's enum, for command errors with a known status.
    pub fn cmd_status(&self) -> Option<CmdStatus> {
        self.status()
            .and_then(|s| CmdStatus::from_raw(u64::from(s)))
    }
}

/// A specialised result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

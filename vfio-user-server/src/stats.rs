//! Counts the server keeps over its whole life (the model keeps its own per device).

use std::sync::atomic::AtomicU64;

/// Server-side counters, shared by the socket thread, the model's threads (interrupts) and
/// the control channel.
#[derive(Debug, Default)]
pub struct Stats {
    /// Client connections served (the current one included).
    pub sessions: AtomicU64,
    /// BAR accesses the server refused before the model: bad sizes, past the BAR's end.
    pub bad_bar: AtomicU64,
    /// Interrupts the model raised on vectors the function does not have.
    pub bad_vectors: AtomicU64,
    /// Function resets (DEVICE_RESET, FLR).
    pub resets: AtomicU64,
    /// DMA_MAP requests accepted.
    pub dma_maps: AtomicU64,
    /// Of those, the ones the guest made for the device to read only (given to the model as
    /// read-only regions).
    pub dma_maps_read_only: AtomicU64,
    /// Client messages the relay refused (answered with an error, never forwarded).
    pub rejected: AtomicU64,
    /// Connections the relay closed on a message it could not frame (a size no message can
    /// have, the client gone mid-message).
    pub relay_closed: AtomicU64,
}

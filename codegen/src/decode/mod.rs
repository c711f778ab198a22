//! `prmc decode` and `prmc encode`: a hex dump read through a layout of the spec, and back.
//!
//! - [`hex`] reads the input (plain hex, `xxd`, `hexdump -C` or raw bytes);
//! - [`bits`] reads and writes fields with the kernel's MSB-first bit numbering;
//! - [`tree`] decodes a buffer into a tree of every field;
//! - [`encode`] builds a buffer from `path=value` assignments;
//! - [`render`] prints the tree as text or JSON;
//! - [`cli`] is what the two subcommands run.
//!
//! Nothing here panics on any input: bad input is a [`DecodeError`] or an
//! [`hex::InputError`] with its line and column.

pub mod bits;
pub mod cli;
pub mod encode;
pub mod hex;
pub mod render;
pub mod tree;

pub use tree::{decode, DecodeError, Node, Options, Target};

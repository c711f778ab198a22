//! Access registers in the IR: what ACCESS_REGISTER reaches by register id.

use crate::source::Span;
use serde::Serialize;

/// The directions an access register may be accessed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RegAccess {
    /// Read only (op_mod 1).
    Read,
    /// Write only (op_mod 0).
    Write,
    /// Both.
    ReadWrite,
}

impl RegAccess {
    /// The spellings the spec accepts, in the order the hint lists them.
    pub const NAMES: &'static [&'static str] = &["read", "write", "read_write"];

    /// Parses the spec's spelling.
    pub fn parse(s: &str) -> Option<RegAccess> {
        Some(match s {
            "read" => RegAccess::Read,
            "write" => RegAccess::Write,
            "read_write" => RegAccess::ReadWrite,
            _ => return None,
        })
    }

    /// The spec's spelling.
    pub fn name(self) -> &'static str {
        match self {
            RegAccess::Read => "read",
            RegAccess::Write => "write",
            RegAccess::ReadWrite => "read_write",
        }
    }

    /// True when the register may be read.
    pub fn readable(self) -> bool {
        self != RegAccess::Write
    }

    /// True when the register may be written.
    pub fn writable(self) -> bool {
        self != RegAccess::Read
    }
}

/// An access register: reached with ACCESS_REGISTER by its id, its image laid out by a struct.
#[derive(Debug, Clone, Serialize)]
pub struct AccessRegister {
    /// Name.
    pub name: String,
    /// Module index.
    pub module: usize,
    /// Meaning.
    pub doc: Option<String>,
    /// The register id (access_register_in.register_id).
    pub id: u64,
    /// The struct that lays out the register image.
    pub layout: String,
    /// The directions it may be accessed in.
    pub access: RegAccess,
    /// Fields of the layout that select one instance (a port, a counter group, a page).
    pub index: Vec<String>,
    /// Where the name was written.
    #[serde(skip)]
    pub span: Span,
    /// Where the id was written.
    #[serde(skip)]
    pub id_span: Span,
    /// Where the layout was written.
    #[serde(skip)]
    pub layout_span: Span,
    /// Where each index field was written.
    #[serde(skip)]
    pub index_spans: Vec<Span>,
}

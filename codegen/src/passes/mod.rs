//! The checks: one file per rule, each a function from the IR to diagnostics.
//!
//! Passes never change the IR and never stop early; every pass runs on every compilation so a
//! user sees all problems at once. Each diagnostic carries the pass's stable `code`.

use crate::diag::Diagnostics;
use crate::ir::Ir;

pub mod access_registers;
pub mod arrays;
pub mod bounds;
pub mod commands;
pub mod cycles;
pub mod duplicates;
pub mod dword_boundary;
pub mod enum_fit;
pub mod field_types;
pub mod limits;
pub mod naming;
pub mod nested_span;
pub mod opcodes;
pub mod overlap;
pub mod reserved_names;
pub mod state_machines;
pub mod struct_size;
pub mod unions;
pub mod words;

/// One check.
pub struct Pass {
    /// Stable name (also the diagnostic code it raises).
    pub name: &'static str,
    /// What it enforces, in one line.
    pub summary: &'static str,
    /// The check itself.
    pub run: fn(&Ir, &mut Diagnostics),
}

/// Every check, in the order they run.
pub const PASSES: &[Pass] = &[
    Pass {
        name: "duplicate-name",
        summary: "a name is defined once per namespace",
        run: duplicates::run,
    },
    Pass {
        name: "naming",
        summary: "names are snake_case",
        run: naming::run,
    },
    Pass {
        name: "size-alignment",
        summary: "structure and union sizes are non-zero multiples of 4 bytes",
        run: struct_size::run,
    },
    Pass {
        name: "layout-limit",
        summary: "layouts stay within the documented size and item limits",
        run: limits::run,
    },
    Pass {
        name: "field-type",
        summary: "a field's width suits its type",
        run: field_types::run,
    },
    Pass {
        name: "out-of-bounds",
        summary: "fields lie inside their structure",
        run: bounds::run,
    },
    Pass {
        name: "overlap",
        summary: "fields of a structure do not share bits",
        run: overlap::run,
    },
    Pass {
        name: "dword-boundary",
        summary: "fields stay inside one dword unless whole aligned dwords",
        run: dword_boundary::run,
    },
    Pass {
        name: "array",
        summary: "array counts and trailing arrays are well formed",
        run: arrays::run,
    },
    Pass {
        name: "enum-fit",
        summary: "enum values fit the fields that use them",
        run: enum_fit::run,
    },
    Pass {
        name: "nested-span",
        summary: "a nested structure's span equals that structure's size",
        run: nested_span::run,
    },
    Pass {
        name: "cycle",
        summary: "structures do not contain themselves",
        run: cycles::run,
    },
    Pass {
        name: "union",
        summary: "union members fit and selector values are distinct",
        run: unions::run,
    },
    Pass {
        name: "duplicate-opcode",
        summary: "each opcode belongs to one command",
        run: opcodes::run,
    },
    Pass {
        name: "command-header",
        summary: "command layouts carry the PRM's common header",
        run: commands::run,
    },
    Pass {
        name: "access-register",
        summary: "access register ids are distinct and fit 16 bits; images have a fixed size; index fields are scalars",
        run: access_registers::run,
    },
    Pass {
        name: "reserved-name",
        summary: "reserved_at_X names match their real offset",
        run: reserved_names::run,
    },
    Pass {
        name: "state-machine",
        summary: "state machines name distinct mask bits that fit the mask field",
        run: state_machines::run,
    },
    Pass {
        name: "word",
        summary:
            "words written as one store are aligned, inside, apart, and hold whole scalar fields",
        run: words::run,
    },
];

/// Runs every check.
pub fn run_all(ir: &Ir, diags: &mut Diagnostics) {
    for pass in PASSES {
        (pass.run)(ir, diags);
    }
}

/// `structs.x` or `registers.x`, the YAML path prefix of a structure.
pub(crate) fn struct_path(s: &crate::ir::Struct) -> String {
    let section = if s.register_block {
        "registers"
    } else {
        "structs"
    };
    format!("{section}.{}", s.name)
}

/// Formats a bit range for messages in both numberings: `` `0x3c[7:4]` (bits 0x1e0..0x1e4) ``.
pub(crate) fn bits(start: u64, end: u64) -> String {
    match crate::position::prm_notation(start, end.saturating_sub(start)) {
        Some(n) => format!("`{n}` (bits 0x{start:x}..0x{end:x})"),
        None => format!("bits 0x{start:x}..0x{end:x}"),
    }
}

//! The documented limits on spec input (docs/spec-format.md, "Limits").
//!
//! A spec is read from files anyone can hand to `prmc`, so every cost the compiler pays must
//! be bounded by something checked *before* that cost is paid: a file's size before it is
//! read, its nesting depth before the YAML parser recurses into it, the number of files
//! before they are opened, a layout's size and item counts before `gen` turns them into code.
//! Each limit sits far above anything the PRM needs: the largest real values (the repository's
//! `spec/` and the import of the kernel 7.3 `mlx5_ifc.h`) are given next to each constant, so
//! a limit is only ever hit by a mistake or a hostile file.

/// Bytes one spec file may hold. The largest real spec file is the import of the whole
/// kernel 7.3 `mlx5_ifc.h`: 282,285 bytes (the repository's largest is 40,508). Parsing costs
/// about 75 bytes of memory per byte of YAML: a 2 MiB file takes 0.35 s and 156 MB (release).
pub const MAX_FILE_BYTES: u64 = 2 << 20;

/// Bytes all spec files of one compilation may hold together: four maximal files (1.8 s and
/// 366 MB in a release build). The repository's 23 files hold 332,481.
pub const MAX_TOTAL_BYTES: u64 = 8 << 20;

/// Spec files one compilation may read. The repository has 23, the kernel import 2.
pub const MAX_FILES: usize = 1024;

/// Nesting levels of YAML collections (mappings, lists, flow `{}` / `[]`) in one file, as
/// estimated by [`super::prescan`]. The deepest real spec nests 7 levels; the YAML loader
/// recurses once per level and overflows the stack somewhere between 8,000 and 10,000.
pub const MAX_DEPTH: usize = 64;

/// Bytes one structure, register block or union may span. The largest PRM layout is the
/// initialization segment, 0x400c bytes (16,396); command mailboxes and capability pages are
/// at most 0x1010. `gen` writes code per dword of a layout (a reserved-bit mask per dword in
/// its reflection table), so the size bounds its output; 64 KiB is four times the largest real
/// layout.
pub const MAX_LAYOUT_BYTES: u64 = 64 << 10;

/// Bytes all layouts of one compilation may span together. A layout's size costs a few bytes
/// of spec but code per dword in `gen`, so without this bound a spec of many 5-line layouts at
/// [`MAX_LAYOUT_BYTES`] would still make `gen` write gigabytes. The real totals are 60,408
/// bytes (the repository's 279 layouts) and 123,460 (the kernel import's 767).
pub const MAX_TOTAL_LAYOUT_BYTES: u64 = 1 << 20;

/// Items of one layout: fields of a structure, values of an enum, members of a union. `gen`
/// writes accessors and reflection rows per item, so this bounds its output per
/// layout. The largest real counts are 337 fields (`cmd_hca_cap`), 206 enum values (the
/// kernel's command opcodes) and 66 union members.
pub const MAX_ITEMS: usize = 4096;

/// Control bytes reported one by one in a file; the rest are counted in one more diagnostic,
/// so a binary file does not produce millions of lines.
pub const MAX_CONTROL_REPORTS: usize = 10;

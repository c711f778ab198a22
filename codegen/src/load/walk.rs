//! Finding and reading the spec files under a directory, within the limits.
//!
//! Symbolic links are followed (a spec tree may link in a shared folder), but every real
//! directory and file is visited once, remembered by device and inode: two links to one
//! folder read it once, and a link back to a folder above it (a loop) is reported and not
//! entered, so the walk is linear in the number of real files instead of following the loop
//! until the path is too long. The walk itself is `walkdir`'s, whose loop detection compares
//! a linked directory with its ancestors.
//!
//! A file's size is checked before it is read, and the read itself stops one byte past the
//! limit (a link to `/dev/zero` has size 0 but never ends). Problems found here are kept as
//! [`Problem`]s and become diagnostics once the compilation exists ([`report`]).

use super::limits::{MAX_FILES, MAX_FILE_BYTES, MAX_TOTAL_BYTES};
use crate::diag::Diagnostic;
use crate::source::Span;
use crate::Compilation;
use std::collections::HashSet;
use std::io::Read as _;
use std::path::{Path, PathBuf};

/// Something the walk or the reading found wrong with a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// A directory link points back to a folder it is in: not followed.
    SymlinkLoop {
        /// The link.
        link: PathBuf,
        /// The folder it leads back to.
        target: PathBuf,
    },
    /// A spec file larger than [`MAX_FILE_BYTES`]: not read.
    FileTooLarge {
        /// The file.
        path: PathBuf,
        /// Its size, or the bytes read before stopping.
        bytes: u64,
    },
    /// Reading this file would take the compilation past [`MAX_TOTAL_BYTES`]: it and the
    /// files after it are not read.
    TotalTooLarge {
        /// The first file left out.
        path: PathBuf,
        /// How many files were left out.
        skipped: usize,
    },
    /// More than [`MAX_FILES`] spec files: the walk stopped here.
    TooManyFiles {
        /// The first file left out.
        path: PathBuf,
    },
    /// A `*.yaml` path that is not a regular file (a FIFO, a device), or that cannot be read.
    Unreadable {
        /// The path.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

impl Problem {
    fn path(&self) -> &Path {
        match self {
            Problem::SymlinkLoop { link: p, .. }
            | Problem::FileTooLarge { path: p, .. }
            | Problem::TotalTooLarge { path: p, .. }
            | Problem::TooManyFiles { path: p }
            | Problem::Unreadable { path: p, .. } => p,
        }
    }

    fn diagnostic(&self, span: Span) -> Diagnostic {
        match self {
            Problem::SymlinkLoop { target, .. } => Diagnostic::warning(
                "symlink-loop",
                span,
                format!(
                    "this link leads back to `{}`, a folder it is in; it is not followed",
                    target.display()
                ),
            )
            .with_hint("remove the link: every spec file under the folder is read once anyway"),
            Problem::FileTooLarge { bytes, .. } => Diagnostic::error(
                "file-size",
                span,
                format!(
                    "this file is {} bytes, more than the {MAX_FILE_BYTES} ({} MiB) a spec file \
                     may hold; it is not read",
                    bytes,
                    MAX_FILE_BYTES >> 20
                ),
            )
            .with_hint("split it into several files (one per PRM chapter, as in spec/)"),
            Problem::TotalTooLarge { skipped, .. } => Diagnostic::error(
                "file-size",
                span,
                format!(
                    "the spec files together exceed {} MiB, so this file{} not read",
                    MAX_TOTAL_BYTES >> 20,
                    match skipped {
                        0 | 1 => " is".to_string(),
                        n => format!(" and {} more are", n - 1),
                    }
                ),
            )
            .with_hint("check that the folder holds only spec files"),
            Problem::TooManyFiles { .. } => Diagnostic::error(
                "file-count",
                span,
                format!(
                    "more than {MAX_FILES} spec files: this one and those after it are not read"
                ),
            )
            .with_hint("check that the folder is a spec folder (prmc reads every *.yaml under it)"),
            Problem::Unreadable { reason, .. } => Diagnostic::error(
                "unreadable",
                span,
                format!("this spec file cannot be read: {reason}"),
            ),
        }
    }
}

/// Whether `path` names a spec file.
fn is_spec(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("yaml" | "yml")
    )
}

/// A real file or directory: device and inode where the platform has them, else its
/// canonical path.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Identity {
    #[cfg(unix)]
    Inode(u64, u64),
    #[cfg_attr(unix, allow(dead_code))]
    Path(PathBuf),
}

fn identity(path: &Path, meta: &std::fs::Metadata) -> Identity {
    #[cfg(unix)]
    {
        let _ = path;
        use std::os::unix::fs::MetadataExt as _;
        Identity::Inode(meta.dev(), meta.ino())
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        Identity::Path(path.canonicalize().unwrap_or_else(|_| path.to_path_buf()))
    }
}

/// The spec files under `dir` (recursively, links followed, each real file once, at most
/// [`MAX_FILES`]), sorted, and the problems met. An error only when `dir` itself cannot be
/// read.
pub fn spec_paths(dir: &Path) -> std::io::Result<(Vec<PathBuf>, Vec<Problem>)> {
    let mut out = Vec::new();
    let mut problems = Vec::new();
    let mut dirs = HashSet::new();
    let mut files = HashSet::new();
    let mut it = walkdir::WalkDir::new(dir)
        .follow_links(true)
        .sort_by_file_name()
        .into_iter();
    while let Some(entry) = it.next() {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                let path = e.path().map(Path::to_path_buf).unwrap_or_default();
                if let Some(target) = e.loop_ancestor() {
                    problems.push(Problem::SymlinkLoop {
                        link: path,
                        target: target.to_path_buf(),
                    });
                } else if e.depth() == 0 {
                    return Err(e.into());
                } else if is_spec(&path)
                    || e.io_error()
                        .is_some_and(|io| io.kind() != std::io::ErrorKind::NotFound)
                {
                    problems.push(Problem::Unreadable {
                        reason: e
                            .io_error()
                            .map_or_else(|| e.to_string(), |io| io.to_string()),
                        path,
                    });
                }
                continue;
            }
        };
        let path = entry.path();
        let ty = entry.file_type();
        if ty.is_dir() {
            let first = entry
                .metadata()
                .map(|m| dirs.insert(identity(path, &m)))
                .unwrap_or(true);
            if !first {
                it.skip_current_dir();
            }
            continue;
        }
        if !is_spec(path) {
            continue;
        }
        if !ty.is_file() {
            problems.push(Problem::Unreadable {
                path: path.to_path_buf(),
                reason: "not a regular file".into(),
            });
            continue;
        }
        let meta = match entry.metadata() {
            Ok(m) => m,
            Err(e) => {
                problems.push(Problem::Unreadable {
                    path: path.to_path_buf(),
                    reason: e.to_string(),
                });
                continue;
            }
        };
        if !files.insert(identity(path, &meta)) {
            continue;
        }
        if out.len() == MAX_FILES {
            problems.push(Problem::TooManyFiles {
                path: path.to_path_buf(),
            });
            break;
        }
        out.push(path.to_path_buf());
    }
    out.sort();
    Ok((out, problems))
}

/// Reads at most `MAX_FILE_BYTES + 1` bytes of `path`: `Err(bytes)` when it is larger.
fn read_bounded(path: &Path) -> std::io::Result<Result<Vec<u8>, u64>> {
    let file = std::fs::File::open(path)?;
    let size = file.metadata()?.len();
    if size > MAX_FILE_BYTES {
        return Ok(Err(size));
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Ok(Err(bytes.len() as u64));
    }
    Ok(Ok(bytes))
}

/// Spec files read: `(path, bytes)`.
pub type Files = Vec<(PathBuf, Vec<u8>)>;

/// Reads the spec files under `dir` within the limits: `(path, bytes)` of each file read, and
/// the problems met (report them with [`report`] once the files are compiled).
pub fn read_specs(dir: &Path) -> std::io::Result<(Files, Vec<Problem>)> {
    let (paths, mut problems) = spec_paths(dir)?;
    let mut files = Vec::new();
    let mut total = 0u64;
    let mut over: Option<(PathBuf, usize)> = None;
    for path in paths {
        if let Some((_, skipped)) = &mut over {
            *skipped += 1;
            continue;
        }
        match read_bounded(&path) {
            Ok(Ok(bytes)) => {
                total += bytes.len() as u64;
                if total > MAX_TOTAL_BYTES {
                    over = Some((path, 1));
                } else {
                    files.push((path, bytes));
                }
            }
            Ok(Err(bytes)) => problems.push(Problem::FileTooLarge { path, bytes }),
            Err(e) => problems.push(Problem::Unreadable {
                path,
                reason: e.to_string(),
            }),
        }
    }
    if let Some((path, skipped)) = over {
        problems.push(Problem::TotalTooLarge { path, skipped });
    }
    Ok((files, problems))
}

/// Adds the problems to a compilation as diagnostics. Each path gets a source entry with no
/// text (added after lowering, so it makes no module) for the diagnostic to point at.
pub fn report(c: &mut Compilation, problems: Vec<Problem>) {
    for p in problems {
        let file = c.sources.add(p.path(), String::new());
        let span = Span {
            file,
            line: 1,
            col: 1,
            len: 1,
        };
        c.diagnostics.push(p.diagnostic(span));
    }
}

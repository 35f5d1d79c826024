//! Walking a workspace: which files lode indexes, and reading them safely.

use parking_lot::Mutex;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use ignore::WalkState;
use ignore::overrides::OverrideBuilder;

use crate::error::IndexError;
use lode_syntax::Language;

/// Files larger than this are skipped unless configured otherwise.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 1024 * 1024;

/// How many leading bytes are checked for a NUL byte to detect binary files.
const BINARY_PROBE_BYTES: usize = 8 * 1024;

/// Excluded everywhere, on top of ignore files: lode's own data and dependency folders.
pub const DEFAULT_EXCLUDES: &[&str] = &[".lode/", ".git/", "node_modules/"];

/// What to walk and what to leave out.
#[derive(Clone, Debug)]
pub struct ScanOptions {
    /// Files above this size are skipped.
    pub max_file_bytes: u64,
    /// Extra gitignore-style globs to exclude (e.g. `vendor/`, `*.min.js`).
    pub exclude: Vec<String>,
}

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions {
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            exclude: Vec::new(),
        }
    }
}

/// A file the walk found and lode can index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScannedFile {
    /// Relative to the workspace root, with `/` separators.
    pub rel_path: String,
    pub abs_path: PathBuf,
    pub size: u64,
    /// Modification time in nanoseconds since the epoch (0 when unknown).
    pub mtime_ns: i64,
    pub language: Language,
}

/// A directory the walk entered, with what tells whether its listing or its ignore rules
/// changed since: its own mtime (entries added, removed, renamed) and the newest mtime of its
/// `.gitignore` / `.ignore` (rules edited in place).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirStamp {
    /// Relative to the root, `/`-separated; empty for the root itself.
    pub rel_path: String,
    pub mtime_ns: i64,
    pub ignore_mtime_ns: i64,
}

/// The result of a walk.
#[derive(Debug, Default)]
pub struct Scan {
    /// Sorted by `rel_path`.
    pub files: Vec<ScannedFile>,
    /// Files skipped for exceeding the size cap.
    pub skipped_too_large: usize,
    /// Every directory entered, sorted by `rel_path`.
    pub dirs: Vec<DirStamp>,
}

/// Modification time in nanoseconds since the epoch (0 when unknown).
pub fn mtime_ns(metadata: &fs::Metadata) -> i64 {
    metadata
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as i64)
}

/// The stamp of directory `dir` (absolute), or `None` when it is gone.
pub fn stamp_dir(dir: &Path, rel_path: String) -> Option<DirStamp> {
    let metadata = fs::metadata(dir).ok()?;
    if !metadata.is_dir() {
        return None;
    }
    let ignore_mtime_ns = [".gitignore", ".ignore"]
        .iter()
        .filter_map(|name| fs::metadata(dir.join(name)).ok())
        .map(|m| mtime_ns(&m))
        .max()
        .unwrap_or(0);
    Some(DirStamp {
        rel_path,
        mtime_ns: mtime_ns(&metadata),
        ignore_mtime_ns,
    })
}

/// Walks `root` (which must be canonical) honouring .gitignore, .ignore, global git excludes and
/// the configured excludes. Symlinks are followed only while they resolve inside `root`.
pub fn scan(root: &Path, options: &ScanOptions) -> Result<Scan, IndexError> {
    let walker = walk_builder(root, root, options)?.build_parallel();

    let found: Mutex<Vec<ScannedFile>> = Mutex::new(Vec::new());
    let dirs: Mutex<Vec<DirStamp>> = Mutex::new(Vec::new());
    let too_large = std::sync::atomic::AtomicUsize::new(0);
    walker.run(|| {
        let found = &found;
        let dirs = &dirs;
        let too_large = &too_large;
        Box::new(move |entry| {
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if entry.file_type().is_some_and(|t| t.is_dir()) {
                let rel_path = relative_path(root, entry.path()).unwrap_or_default();
                if let Some(stamp) = stamp_dir(entry.path(), rel_path) {
                    dirs.lock().push(stamp);
                }
                return WalkState::Continue;
            }
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            let path = entry.path();
            let Some(language) = Language::from_path(path).or_else(|| by_shebang(path)) else {
                return WalkState::Continue;
            };
            let Ok(metadata) = entry.metadata() else {
                return WalkState::Continue;
            };
            if metadata.len() > options.max_file_bytes {
                too_large.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                return WalkState::Continue;
            }
            let Some(rel_path) = relative_path(root, path) else {
                return WalkState::Continue;
            };
            let mtime_ns = mtime_ns(&metadata);
            let file = ScannedFile {
                rel_path,
                abs_path: path.to_path_buf(),
                size: metadata.len(),
                mtime_ns,
                language,
            };
            found.lock().push(file);
            WalkState::Continue
        })
    });
    let mut files = found.into_inner();
    files.sort_by(|a, b| a.rel_path.cmp(&b.rel_path));
    files.dedup_by(|a, b| a.rel_path == b.rel_path);
    let mut dirs = dirs.into_inner();
    dirs.sort_by(|a, b| a.rel_path.cmp(&b.rel_path));
    dirs.dedup_by(|a, b| a.rel_path == b.rel_path);
    Ok(Scan {
        files,
        skipped_too_large: too_large.into_inner(),
        dirs,
    })
}

/// The walker [`scan`] uses, starting at `start` (`root` or a directory under it): ignore files
/// of `start`'s ancestors apply as they do in a walk from `root`, and so do the excludes.
fn walk_builder(
    root: &Path,
    start: &Path,
    options: &ScanOptions,
) -> Result<ignore::WalkBuilder, IndexError> {
    let mut overrides = OverrideBuilder::new(root);
    for pattern in DEFAULT_EXCLUDES
        .iter()
        .copied()
        .chain(options.exclude.iter().map(String::as_str))
    {
        overrides
            .add(&format!("!{pattern}"))
            .map_err(|e| IndexError::Glob {
                glob: pattern.to_string(),
                message: e.to_string(),
            })?;
    }
    let overrides = overrides.build().map_err(|e| IndexError::Glob {
        glob: options.exclude.join(", "),
        message: e.to_string(),
    })?;
    let canonical_root = root.to_path_buf();
    let mut builder = ignore::WalkBuilder::new(start);
    builder
        .hidden(true)
        .git_ignore(true)
        .git_global(true)
        .git_exclude(true)
        .ignore(true)
        .parents(true)
        .require_git(false)
        .follow_links(true)
        .overrides(overrides)
        .filter_entry(move |entry| {
            if !entry.path_is_symlink() {
                return true;
            }
            // A symlink is followed only when its target stays inside the workspace.
            fs::canonicalize(entry.path()).is_ok_and(|target| target.starts_with(&canonical_root))
        });
    Ok(builder)
}

/// The entries of directory `dir` (under `root`, itself admitted by the walk) that a walk from
/// `root` would enter or index, as absolute paths with whether each is a directory. Lets a
/// watcher judge a new file without walking the whole tree.
pub fn admitted_entries(
    root: &Path,
    dir: &Path,
    options: &ScanOptions,
) -> Result<Vec<(PathBuf, bool)>, IndexError> {
    let mut entries = Vec::new();
    for entry in walk_builder(root, dir, options)?.max_depth(Some(1)).build() {
        let Ok(entry) = entry else { continue };
        if entry.depth() == 0 {
            continue;
        }
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        entries.push((entry.into_path(), is_dir));
    }
    Ok(entries)
}

/// `path` relative to `root` with `/` separators, or `None` when it is outside or not UTF-8.
pub fn relative_path(root: &Path, path: &Path) -> Option<String> {
    let relative = path.strip_prefix(root).ok()?;
    let parts: Option<Vec<&str>> = relative
        .components()
        .map(|c| c.as_os_str().to_str())
        .collect();
    let joined = parts?.join("/");
    (!joined.is_empty()).then_some(joined)
}

/// The text of a source file: `None` for binary files (a NUL byte in the first 8 KiB).
/// Invalid UTF-8 is replaced, a UTF-8 byte order mark dropped.
pub fn read_source(path: &Path, max_bytes: u64) -> Result<Option<String>, IndexError> {
    let file = fs::File::open(path).map_err(|source| IndexError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    // Sized up front: through `take`, `read_to_end` cannot see the file's length and would
    // grow the buffer by doubling, copying it each time.
    let length = file.metadata().map_or(0, |metadata| metadata.len());
    let capacity = usize::try_from(length.min(max_bytes) + 1).unwrap_or(0);
    let mut bytes = Vec::with_capacity(capacity);
    file.take(max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| IndexError::Read {
            path: path.to_path_buf(),
            source,
        })?;
    if bytes.len() as u64 > max_bytes {
        return Ok(None);
    }
    Ok(decode_source(bytes))
}

/// The language a file without a known name declares on a `#!` first line; only files without
/// an extension are opened for it (scripts in `bin/`), so the walk reads almost nothing more.
fn by_shebang(path: &Path) -> Option<Language> {
    use std::io::Read as _;
    let name = path.file_name()?.to_str()?;
    if name.contains('.') {
        return None;
    }
    let mut head = [0u8; 128];
    let read = fs::File::open(path).ok()?.read(&mut head).ok()?;
    let head = std::str::from_utf8(&head[..read]).unwrap_or_else(|error| {
        std::str::from_utf8(&head[..error.valid_up_to()]).unwrap_or_default()
    });
    Language::from_shebang(head)
}

/// Writes `bytes` to `path` through a temporary file in the same directory, synced, given the
/// old file's permissions and renamed over it: a crash leaves the old file or the new one whole,
/// never a mix. `path` should be canonical (a symlink there is replaced, not written through).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    let parent = path.parent().ok_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, "path has no parent")
    })?;
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut temp = tempfile::Builder::new()
        .prefix(&format!(".{name}.lode-"))
        .suffix(".tmp")
        .tempfile_in(parent)?;
    temp.write_all(bytes)?;
    temp.as_file().sync_all()?;
    if let Ok(old) = fs::metadata(path) {
        fs::set_permissions(temp.path(), old.permissions())?;
    }
    // On failure the temporary file is removed when `temp` is dropped.
    temp.persist(path).map_err(|error| error.error)?;
    Ok(())
}

/// Decodes file bytes as text, or `None` when they look binary.
pub fn decode_source(bytes: Vec<u8>) -> Option<String> {
    let probe = &bytes[..bytes.len().min(BINARY_PROBE_BYTES)];
    if probe.contains(&0) {
        return None;
    }
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        // Not UTF-8: most such source files are Latin-1 (or Windows-1252, which differs only in
        // punctuation at 0x80-0x9F); read every byte as its Latin-1 character, so names, comments
        // and line numbers come through instead of replacement characters.
        Err(invalid) => invalid
            .as_bytes()
            .iter()
            .map(|&byte| char::from(byte))
            .collect(),
    };
    Some(match text.strip_prefix('\u{feff}') {
        Some(stripped) => stripped.to_string(),
        None => text,
    })
}

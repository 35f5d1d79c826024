//! Workspace confinement: every path a model gives is resolved here to a canonical path inside
//! one of the workspace roots, or refused. The policy judges edits by the resolved path, and the
//! agent's file tools open only what this module resolved.
//!
//! Symlinks are resolved (a link inside the workspace pointing outside is refused, one pointing
//! elsewhere inside is fine); `..` is resolved against the real directories; a file that does not
//! exist yet is placed by canonicalising its nearest existing ancestor, and the missing rest may
//! not contain `..`.

use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

/// Why a path was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathErrorKind {
    /// The path is malformed (empty, a NUL byte, `..` below a missing directory, a file used as
    /// a directory): a corrected path may work.
    Invalid,
    /// The path resolves outside every root.
    Outside,
    /// The file system could not answer (or there is no root at all).
    Failed,
}

/// A path that cannot be resolved inside the workspace, with a message for the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct PathError {
    pub kind: PathErrorKind,
    pub message: String,
    /// Whether a corrected path may succeed.
    pub retryable: bool,
}

impl PathError {
    fn new(kind: PathErrorKind, message: impl Into<String>, retryable: bool) -> PathError {
        PathError {
            kind,
            message: message.into(),
            retryable,
        }
    }
}

/// A model-given path after confinement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPath {
    /// Canonical absolute path (for a missing file: canonical ancestor plus the missing rest).
    pub absolute: PathBuf,
    /// The root it lies in.
    pub root: PathBuf,
    /// Whether the root is the primary one (the one the index covers).
    pub in_primary_root: bool,
    /// Whether the path exists now.
    pub exists: bool,
}

impl ResolvedPath {
    /// Workspace-relative, `/`-separated form (see [`display_path`]).
    pub fn display(&self, roots: &[PathBuf]) -> String {
        display_path(roots, &self.absolute)
    }
}

fn outside(raw: &str, roots: &[PathBuf]) -> PathError {
    let roots: Vec<String> = roots.iter().map(|r| r.display().to_string()).collect();
    PathError::new(
        PathErrorKind::Outside,
        format!(
            "`{raw}` resolves outside the workspace ({}); file tools only work inside it. \
             Use a path relative to the workspace root.",
            roots.join(", ")
        ),
        false,
    )
}

/// Resolves `raw` (relative to the primary root, or absolute) to a canonical path inside one of
/// `roots`.
pub fn resolve_path(roots: &[PathBuf], raw: &str) -> Result<ResolvedPath, PathError> {
    let Some(primary) = roots.first() else {
        return Err(PathError::new(
            PathErrorKind::Failed,
            "this session has no workspace root",
            false,
        ));
    };
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        return Err(PathError::new(
            PathErrorKind::Invalid,
            "the path is empty; give a path relative to the workspace root",
            true,
        ));
    }
    if trimmed.contains('\0') {
        return Err(PathError::new(
            PathErrorKind::Invalid,
            "the path contains a NUL byte",
            true,
        ));
    }
    let expanded = if trimmed == "~" || trimmed.starts_with("~/") {
        // The model sometimes writes home-relative paths; they are outside unless the workspace
        // is under home, which canonicalisation below decides.
        match dirs::home_dir() {
            Some(home) => home.join(trimmed.trim_start_matches('~').trim_start_matches('/')),
            None => return Err(outside(raw, roots)),
        }
    } else {
        PathBuf::from(trimmed)
    };
    let joined = if expanded.is_absolute() {
        expanded
    } else {
        primary.join(expanded)
    };
    let (absolute, exists) = canonicalize_allowing_missing(&joined, raw, roots)?;
    let canonical_roots: Vec<PathBuf> = roots
        .iter()
        .map(|root| fs::canonicalize(root).unwrap_or_else(|_| root.clone()))
        .collect();
    for (index, root) in canonical_roots.iter().enumerate() {
        if absolute.starts_with(root) {
            return Ok(ResolvedPath {
                absolute,
                root: root.clone(),
                in_primary_root: index == 0,
                exists,
            });
        }
    }
    Err(outside(raw, roots))
}

/// Canonicalises `path`; when it does not exist, canonicalises the nearest existing ancestor and
/// appends the missing components (which must be plain names).
fn canonicalize_allowing_missing(
    path: &Path,
    raw: &str,
    roots: &[PathBuf],
) -> Result<(PathBuf, bool), PathError> {
    match fs::canonicalize(path) {
        Ok(canonical) => return Ok((canonical, true)),
        Err(error) if error.kind() == io::ErrorKind::NotFound => {}
        Err(error) => {
            return Err(PathError::new(
                PathErrorKind::Failed,
                format!("cannot resolve `{raw}`: {error}"),
                false,
            ));
        }
    }
    let mut missing: Vec<&std::ffi::OsStr> = Vec::new();
    let mut ancestor = path;
    loop {
        if let Ok(metadata) = fs::symlink_metadata(ancestor) {
            if metadata.file_type().is_symlink() && fs::metadata(ancestor).is_err() {
                // A dangling link: writing through it would create its target, wherever it is.
                return Err(PathError::new(
                    PathErrorKind::Outside,
                    format!(
                        "`{raw}` goes through the symlink {} whose target does not exist; \
                         refusing to follow it",
                        ancestor.display()
                    ),
                    false,
                ));
            }
            break;
        }
        let Some(parent) = ancestor.parent() else {
            return Err(outside(raw, roots));
        };
        match ancestor.components().next_back() {
            Some(Component::Normal(name)) => missing.push(name),
            Some(Component::CurDir) => {}
            _ => {
                return Err(PathError::new(
                    PathErrorKind::Invalid,
                    format!(
                        "`{raw}` uses `..` below a directory that does not exist; \
                         give the path without `..`"
                    ),
                    true,
                ));
            }
        }
        ancestor = parent;
    }
    let mut resolved = fs::canonicalize(ancestor).map_err(|error| {
        PathError::new(
            PathErrorKind::Failed,
            format!("cannot resolve `{raw}`: {error}"),
            false,
        )
    })?;
    if !missing.is_empty() && !resolved.is_dir() {
        return Err(PathError::new(
            PathErrorKind::Invalid,
            format!(
                "`{raw}`: {} is a file, not a directory",
                display_path(roots, &resolved)
            ),
            true,
        ));
    }
    for name in missing.iter().rev() {
        resolved.push(name);
    }
    Ok((resolved, false))
}

/// The workspace-relative, `/`-separated form of an absolute path: relative to the primary root
/// when inside it, the absolute path otherwise.
pub fn display_path(roots: &[PathBuf], absolute: &Path) -> String {
    for root in roots {
        if let Ok(relative) = absolute.strip_prefix(root) {
            let parts: Vec<String> = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if parts.is_empty() {
                return ".".to_owned();
            }
            let joined = parts.join("/");
            return if Some(root) == roots.first() {
                joined
            } else {
                format!("{}/{joined}", root.display())
            };
        }
    }
    absolute.display().to_string()
}

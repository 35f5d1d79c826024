//! Workspace confinement: every path a model gives a file tool is resolved here to a canonical
//! path inside one of the workspace roots, or refused.
//!
//! Symlinks are resolved (a link inside the workspace pointing outside is refused, one pointing
//! elsewhere inside is fine); `..` is resolved against the real directories; a file that does not
//! exist yet is placed by canonicalising its nearest existing ancestor, and the missing rest may
//! not contain `..`.

use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use super::{ToolError, ToolErrorCategory};

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

fn outside(raw: &str, roots: &[PathBuf]) -> ToolError {
    let roots: Vec<String> = roots.iter().map(|r| r.display().to_string()).collect();
    ToolError::new(
        ToolErrorCategory::OutsideWorkspace,
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
pub fn resolve_path(roots: &[PathBuf], raw: &str) -> Result<ResolvedPath, ToolError> {
    let Some(primary) = roots.first() else {
        return Err(ToolError::new(
            ToolErrorCategory::Failed,
            "this session has no workspace root",
            false,
        ));
    };
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        return Err(ToolError::new(
            ToolErrorCategory::InvalidArguments,
            "the path is empty; give a path relative to the workspace root",
            true,
        ));
    }
    if trimmed.contains('\0') {
        return Err(ToolError::new(
            ToolErrorCategory::InvalidArguments,
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
) -> Result<(PathBuf, bool), ToolError> {
    match fs::canonicalize(path) {
        Ok(canonical) => return Ok((canonical, true)),
        Err(error) if error.kind() == io::ErrorKind::NotFound => {}
        Err(error) => {
            return Err(ToolError::new(
                ToolErrorCategory::Failed,
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
                return Err(ToolError::new(
                    ToolErrorCategory::OutsideWorkspace,
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
                return Err(ToolError::new(
                    ToolErrorCategory::InvalidArguments,
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
        ToolError::new(
            ToolErrorCategory::Failed,
            format!("cannot resolve `{raw}`: {error}"),
            false,
        )
    })?;
    if !missing.is_empty() && !resolved.is_dir() {
        return Err(ToolError::new(
            ToolErrorCategory::InvalidArguments,
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

/// Why a `file://` URI names no local file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FileUriError {
    #[error("uri must be a file:// URI, got {0:?}")]
    NotFile(String),
    #[error("uri is not valid UTF-8 once decoded: {0:?}")]
    NotUtf8(String),
    #[error("uri must name an absolute path, got {0:?}")]
    NotAbsolute(String),
}

/// The absolute path a `file://` URI names (`file:///abs` or `file://localhost/abs`), with its
/// `%XX` escapes decoded. Where the path is used (inside the workspace or not) is for
/// [`resolve_path`] to decide.
pub fn file_uri_to_path(uri: &str) -> Result<PathBuf, FileUriError> {
    let rest = uri
        .strip_prefix("file://")
        .ok_or_else(|| FileUriError::NotFile(uri.to_owned()))?;
    // `file://localhost/abs` names the same file as `file:///abs`.
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    let decoded = percent_decode(rest).ok_or_else(|| FileUriError::NotUtf8(uri.to_owned()))?;
    let path = PathBuf::from(decoded);
    if !path.is_absolute() {
        return Err(FileUriError::NotAbsolute(uri.to_owned()));
    }
    Ok(path)
}

/// Decodes `%XX` escapes; a `%` not followed by two hex digits stays as it is. `None` when the
/// decoded bytes are not UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let escaped = (bytes[index] == b'%')
            .then(|| text.get(index + 1..index + 3))
            .flatten()
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escaped {
            Some(decoded) => {
                out.push(decoded);
                index += 3;
            }
            None => {
                out.push(bytes[index]);
                index += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_become_absolute_paths() {
        assert_eq!(
            file_uri_to_path("file:///work/my%20crate/src/lib.rs"),
            Ok(PathBuf::from("/work/my crate/src/lib.rs"))
        );
        assert_eq!(
            file_uri_to_path("file://localhost/a/b%C3%A9.rs"),
            Ok(PathBuf::from("/a/bé.rs"))
        );
        // A stray `%` stays; so does one at the very end.
        assert_eq!(
            file_uri_to_path("file:///a/100%zz/%"),
            Ok(PathBuf::from("/a/100%zz/%"))
        );
    }

    #[test]
    fn other_uris_are_refused_with_the_reason() {
        assert!(matches!(
            file_uri_to_path("https://example.com/a.rs"),
            Err(FileUriError::NotFile(_))
        ));
        assert!(matches!(
            file_uri_to_path("file:///a/%FF.rs"),
            Err(FileUriError::NotUtf8(_))
        ));
        assert!(matches!(
            file_uri_to_path("file://src/main.rs"),
            Err(FileUriError::NotAbsolute(_))
        ));
    }
}

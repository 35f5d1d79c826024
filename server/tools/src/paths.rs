//! Workspace confinement: every path a model gives a file tool is resolved to a canonical path
//! inside one of the workspace roots, or refused. The resolution itself lives in the policy crate
//! (`lode_policy::paths`); this module gives its errors the tools' categories.
//!
//! Symlinks are resolved (a link inside the workspace pointing outside is refused, one pointing
//! elsewhere inside is fine); `..` is resolved against the real directories; a file that does not
//! exist yet is placed by canonicalising its nearest existing ancestor, and the missing rest may
//! not contain `..`.

use std::path::PathBuf;

use lode_policy::paths::{PathError, PathErrorKind};
pub use lode_policy::paths::{ResolvedPath, display_path};

use super::{ToolError, ToolErrorCategory};

impl From<PathError> for ToolError {
    fn from(error: PathError) -> ToolError {
        let category = match error.kind {
            PathErrorKind::Invalid => ToolErrorCategory::InvalidArguments,
            PathErrorKind::Outside => ToolErrorCategory::OutsideWorkspace,
            PathErrorKind::Failed => ToolErrorCategory::Failed,
        };
        ToolError::new(category, error.message, error.retryable)
    }
}

/// Resolves `raw` (relative to the primary root, or absolute) to a canonical path inside one of
/// `roots`: the policy's resolution (`lode_policy::paths`), so a tool opens exactly the file the
/// policy judged.
pub fn resolve_path(roots: &[PathBuf], raw: &str) -> Result<ResolvedPath, ToolError> {
    lode_policy::paths::resolve_path(roots, raw).map_err(ToolError::from)
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

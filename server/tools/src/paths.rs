//! Workspace confinement: every path a model gives a file tool is resolved to a canonical path
//! inside one of the workspace roots, or refused. The resolution itself lives in the policy crate
//! (`lode_policy::paths`); this module gives its errors the tools' categories.
//!
//! Symlinks are resolved (a link inside the workspace pointing outside is refused, one pointing
//! elsewhere inside is fine); `..` is resolved against the real directories; a file that does not
//! exist yet is placed by canonicalising its nearest existing ancestor, and the missing rest may
//! not contain `..`.

use std::path::{Path, PathBuf};

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

/// Why a `file://` URI names no local file, or a path has no `file://` URI.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FileUriError {
    #[error("uri must be a file:// URI, got {0:?}")]
    NotFile(String),
    #[error("uri is not valid UTF-8 once decoded: {0:?}")]
    NotUtf8(String),
    #[error("uri must name an absolute path on this machine, got {0:?}")]
    NotAbsolute(String),
    #[error("{0:?} is not an absolute path, so it has no file:// URI")]
    RelativePath(PathBuf),
}

/// The absolute path a `file://` URI names (`file:///abs` or `file://localhost/abs`), with its
/// `%XX` escapes decoded (a `%` not followed by two hex digits stays as it is) and its query
/// and fragment left out. Where the path is used (inside the workspace or not) is for
/// [`resolve_path`] to decide.
pub fn file_uri_to_path(uri: &str) -> Result<PathBuf, FileUriError> {
    let parsed = url::Url::parse(uri).map_err(|_| FileUriError::NotFile(uri.to_owned()))?;
    if parsed.scheme() != "file" {
        return Err(FileUriError::NotFile(uri.to_owned()));
    }
    // Fails for a host other than `localhost` (`file://src/main.rs` names `/main.rs` on the
    // host `src`, not a relative path).
    let path = parsed
        .to_file_path()
        .map_err(|()| FileUriError::NotAbsolute(uri.to_owned()))?;
    // Decoded bytes that are not UTF-8 could name a file on Unix, but every path lode works
    // with is text.
    if path.to_str().is_none() {
        return Err(FileUriError::NotUtf8(uri.to_owned()));
    }
    Ok(path)
}

/// The `file://` URI of an absolute path: every byte outside the URL path set escaped (spaces,
/// `#`, `?`, `%`, non-ASCII as its UTF-8 bytes).
pub fn path_to_file_uri(path: &Path) -> Result<String, FileUriError> {
    url::Url::from_file_path(path)
        .map(String::from)
        .map_err(|()| FileUriError::RelativePath(path.to_owned()))
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

    #[test]
    fn paths_become_file_uris_and_back() {
        for (path, uri) in [
            ("/w/a b.rs", "file:///w/a%20b.rs"),
            ("/w/100%/x#1?.rs", "file:///w/100%25/x%231%3F.rs"),
            ("/w/é/日本.rs", "file:///w/%C3%A9/%E6%97%A5%E6%9C%AC.rs"),
            ("/C:/w/a.rs", "file:///C:/w/a.rs"),
        ] {
            assert_eq!(path_to_file_uri(Path::new(path)).as_deref(), Ok(uri));
            assert_eq!(file_uri_to_path(uri), Ok(PathBuf::from(path)), "{uri}");
        }
        assert!(matches!(
            path_to_file_uri(Path::new("src/main.rs")),
            Err(FileUriError::RelativePath(_))
        ));
    }

    #[test]
    fn only_local_file_uris_name_paths() {
        for uri in [
            "http://example.com/a.rs",
            "untitled:Untitled-1",
            "a.rs",
            "/a.rs",
            "",
        ] {
            assert!(
                matches!(file_uri_to_path(uri), Err(FileUriError::NotFile(_))),
                "{uri}"
            );
        }
        assert!(matches!(
            file_uri_to_path("file://example.com/a.rs"),
            Err(FileUriError::NotAbsolute(_))
        ));
        // The query and fragment are not part of the path; the scheme is case-insensitive.
        assert_eq!(
            file_uri_to_path("FILE:///a/b.rs?x=1#L3"),
            Ok(PathBuf::from("/a/b.rs"))
        );
    }
}

//! Workspace confinement, the one path door: every path a model, an MCP client or an editor
//! gives is resolved here to a canonical path inside one of the workspace roots, or refused. The
//! policy judges edits by the resolved path; the agent's file tools, `lode mcp`'s `read_file`
//! and edits, and the LSP code actions open only what this module resolved ([`PathDoor`]).
//!
//! Every use gets the same confinement ([`resolve_path`]): symlinks are resolved (a link inside
//! the workspace pointing outside is refused, one pointing elsewhere inside is fine, and so is a
//! path through a linked directory only when the directory's target is inside); `..` is resolved
//! against the real directories; an absolute path is taken only when it lands inside a root; a
//! file that does not exist yet is placed by canonicalising its nearest existing ancestor, the
//! missing rest may not contain `..`, and a dangling link is never followed. A [`PathUse`] adds
//! what a caller needs on top (an existing regular file; never under `.git/` or `.lode/`), and
//! [`PathDoor::sealing`] keeps a directory (lode's index) out of reach.

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

    /// Whether the path is under a `.git` or `.lode` directory at any depth below its root
    /// (ASCII case ignored: on a case-insensitive file system `.GIT` is `.git`).
    pub fn is_protected(&self) -> bool {
        self.absolute
            .strip_prefix(&self.root)
            .unwrap_or(&self.absolute)
            .components()
            .any(|component| match component {
                Component::Normal(part) => part.to_str().is_some_and(|part| {
                    part.eq_ignore_ascii_case(".git") || part.eq_ignore_ascii_case(".lode")
                }),
                _ => false,
            })
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

/// What a caller does with a path, on top of the confinement every use gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathUse {
    /// Whatever the agent's file tools do: the path may name a directory or a file that does
    /// not exist yet. `.git/` and `.lode/` are left to the policy's must-ask.
    Any,
    /// Read an existing regular file.
    ReadFile,
    /// Change an existing regular file, never one under `.git/` or `.lode/` at any depth (hooks
    /// and configuration run code or steer lode), whatever case the directory is spelt in.
    EditFile,
}

/// The one door from a given path to the file system: [`resolve_path`]'s confinement to the
/// roots, what the [`PathUse`] requires, and directories no path may reach (lode's index).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathDoor {
    roots: Vec<PathBuf>,
    /// Canonical directories nothing is read from or written to through the door.
    sealed: Vec<PathBuf>,
}

impl PathDoor {
    /// A door to `roots` (the first is the primary one, relative paths start there).
    pub fn new(roots: Vec<PathBuf>) -> PathDoor {
        PathDoor {
            roots,
            sealed: Vec::new(),
        }
    }

    /// The same door, with `dir` (and everything under it) out of reach.
    pub fn sealing(mut self, dir: &Path) -> PathDoor {
        self.sealed
            .push(fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf()));
        self
    }

    /// The roots the door opens onto.
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// Resolves `raw` (relative to the primary root, or absolute) for `usage`, or refuses it.
    pub fn resolve(&self, raw: &str, usage: PathUse) -> Result<ResolvedPath, PathError> {
        let resolved = resolve_path(&self.roots, raw)?;
        if self
            .sealed
            .iter()
            .any(|sealed| resolved.absolute.starts_with(sealed))
        {
            return Err(PathError::new(
                PathErrorKind::Outside,
                format!("`{raw}` is part of lode's index, which is never read or written this way"),
                false,
            ));
        }
        if usage == PathUse::EditFile && resolved.is_protected() {
            return Err(PathError::new(
                PathErrorKind::Outside,
                format!(
                    "`{raw}` is under .git/ or .lode/ (hooks and configuration run code or steer \
                     lode), which lode never edits this way"
                ),
                false,
            ));
        }
        if usage != PathUse::Any {
            if !resolved.exists {
                return Err(PathError::new(
                    PathErrorKind::Invalid,
                    format!("no file `{raw}` in the workspace"),
                    true,
                ));
            }
            if !resolved.absolute.is_file() {
                return Err(PathError::new(
                    PathErrorKind::Invalid,
                    format!("`{raw}` is not a file"),
                    true,
                ));
            }
        }
        Ok(resolved)
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// `dir/repo` (the root) holding files, a `.git/`, links out and in; `dir/outside` and
    /// `dir/repo-evil` beside it.
    fn scene() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(dir.path()).unwrap();
        let root = base.join("repo");
        let outside = base.join("outside");
        for sub in [
            "src",
            ".git/hooks",
            "vendor/x/.git",
            ".GIT",
            ".lode/index",
            "linked-in",
        ] {
            fs::create_dir_all(root.join(sub)).unwrap();
        }
        fs::create_dir_all(&outside).unwrap();
        fs::create_dir_all(base.join("repo-evil")).unwrap();
        fs::write(base.join("repo-evil/x.rs"), "").unwrap();
        fs::write(outside.join("secret.rs"), "secret").unwrap();
        for file in [
            "src/lib.rs",
            "src/ünïcode.rs",
            ".git/config",
            ".git/hooks/pre.py",
            "vendor/x/.git/config",
            ".GIT/config",
            ".lode/index/catalog.sqlite",
            "linked-in/a.rs",
        ] {
            fs::write(root.join(file), "x").unwrap();
        }
        symlink(outside.join("secret.rs"), root.join("src/link.rs")).unwrap();
        symlink(&outside, root.join("outdir")).unwrap();
        symlink(root.join("linked-in"), root.join("indir")).unwrap();
        symlink(base.join("nowhere"), root.join("dangling")).unwrap();
        (dir, root, outside)
    }

    fn refused(door: &PathDoor, raw: &str, usage: PathUse) -> PathErrorKind {
        match door.resolve(raw, usage) {
            Ok(resolved) => panic!("{raw} ({usage:?}) resolved to {resolved:?}"),
            Err(error) => error.kind,
        }
    }

    #[test]
    fn escapes_are_refused_for_every_use() {
        let (_dir, root, outside) = scene();
        let door = PathDoor::new(vec![root.clone()]);
        let absolute = outside.join("secret.rs").display().to_string();
        let sibling = root.with_file_name("repo-evil").join("x.rs");
        let sibling = sibling.display().to_string();
        for usage in [PathUse::Any, PathUse::ReadFile, PathUse::EditFile] {
            for raw in [
                "../outside/secret.rs",
                "src/../../outside/secret.rs",
                absolute.as_str(),
                sibling.as_str(),
                "src/link.rs",
                "outdir/secret.rs",
                "outdir/new.rs",
                "outdir/../outside/secret.rs",
                "outdir/../repo-evil/x.rs",
                "/etc/passwd",
                "dangling",
                "dangling/new.rs",
            ] {
                assert_eq!(refused(&door, raw, usage), PathErrorKind::Outside, "{raw}");
            }
        }
    }

    #[test]
    fn paths_inside_resolve_to_their_canonical_form() {
        let (_dir, root, _outside) = scene();
        let door = PathDoor::new(vec![root.clone()]);
        let inside = door.resolve("src/lib.rs", PathUse::EditFile).unwrap();
        assert_eq!(inside.absolute, root.join("src/lib.rs"));
        assert!(inside.exists && inside.in_primary_root);
        assert_eq!(inside.display(door.roots()), "src/lib.rs");
        let absolute = root.join("src/lib.rs").display().to_string();
        assert_eq!(
            door.resolve(&absolute, PathUse::ReadFile).unwrap().absolute,
            root.join("src/lib.rs")
        );
        // A link to a directory inside the root is followed to it.
        assert_eq!(
            door.resolve("indir/a.rs", PathUse::EditFile)
                .unwrap()
                .absolute,
            root.join("linked-in/a.rs")
        );
        assert_eq!(
            door.resolve("src/./../src/ünïcode.rs", PathUse::ReadFile)
                .unwrap()
                .absolute,
            root.join("src/ünïcode.rs")
        );
        // A new file is placed under its existing directory.
        let new = door.resolve("src/new/deeper.rs", PathUse::Any).unwrap();
        assert_eq!(new.absolute, root.join("src/new/deeper.rs"));
        assert!(!new.exists);
    }

    #[test]
    fn what_each_use_requires() {
        let (_dir, root, _outside) = scene();
        let door = PathDoor::new(vec![root.clone()]).sealing(&root.join(".lode/index"));
        assert_eq!(
            refused(&door, "src/missing.rs", PathUse::ReadFile),
            PathErrorKind::Invalid
        );
        assert_eq!(
            refused(&door, "src/missing.rs", PathUse::EditFile),
            PathErrorKind::Invalid
        );
        assert_eq!(
            refused(&door, "src", PathUse::ReadFile),
            PathErrorKind::Invalid
        );
        assert_eq!(
            refused(&door, "missing/../src/lib.rs", PathUse::Any),
            PathErrorKind::Invalid
        );
        // A file used as a directory: the file system's own error.
        assert!(door.resolve("src/lib.rs/new.rs", PathUse::Any).is_err());
        for raw in ["", "  ", "src/\0lib.rs"] {
            assert_eq!(refused(&door, raw, PathUse::Any), PathErrorKind::Invalid);
        }
        // Reads may look into .git/; edits never go under .git/ or .lode/, at any depth, in
        // any case, however the path gets there.
        assert!(door.resolve(".git/config", PathUse::ReadFile).is_ok());
        assert!(door.resolve(".git/hooks/pre.py", PathUse::Any).is_ok());
        for raw in [
            ".git/config",
            ".git/hooks/pre.py",
            "vendor/x/.git/config",
            ".GIT/config",
            "src/../.git/config",
        ] {
            assert_eq!(
                refused(&door, raw, PathUse::EditFile),
                PathErrorKind::Outside,
                "{raw}"
            );
        }
        // The sealed index is out of reach for every use.
        for usage in [PathUse::Any, PathUse::ReadFile, PathUse::EditFile] {
            assert_eq!(
                refused(&door, ".lode/index/catalog.sqlite", usage),
                PathErrorKind::Outside
            );
        }
        assert_eq!(
            PathDoor::new(Vec::new())
                .resolve("src/lib.rs", PathUse::Any)
                .unwrap_err()
                .kind,
            PathErrorKind::Failed
        );
    }

    #[test]
    fn a_second_root_is_inside_too() {
        let (_dir, root, outside) = scene();
        let door = PathDoor::new(vec![root.clone(), outside.clone()]);
        let absolute = outside.join("secret.rs").display().to_string();
        let resolved = door.resolve(&absolute, PathUse::ReadFile).unwrap();
        assert!(!resolved.in_primary_root);
        assert_eq!(resolved.root, outside);
    }
}

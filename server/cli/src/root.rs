//! Finding the workspace root when none is given.

use std::path::{Path, PathBuf};

/// The nearest ancestor of `start` (itself included) holding `.lode/` or `.git`, else `start`.
pub fn discover_root(start: &Path) -> PathBuf {
    for dir in start.ancestors() {
        if dir.join(".lode").is_dir() || dir.join(".git").exists() {
            return dir.to_path_buf();
        }
    }
    start.to_path_buf()
}

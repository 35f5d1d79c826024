//! Finding the workspace root when none is given.

use std::path::{Path, PathBuf};

/// The nearest ancestor of `start` (itself included) holding `.lode/` or `.git`, else `start`.
/// The file system's root and the home directory are never discovered as an ancestor: a stray
/// `/.lode` or `~/.git` would otherwise make every project below them one workspace, indexed
/// whole (they are still used when `start` is that directory itself).
pub fn discover_root(start: &Path) -> PathBuf {
    discover_below(
        start,
        std::env::var_os("HOME").map(PathBuf::from).as_deref(),
    )
}

fn discover_below(start: &Path, home: Option<&Path>) -> PathBuf {
    for dir in start.ancestors() {
        let too_wide = dir != start && (dir.parent().is_none() || Some(dir) == home);
        if too_wide {
            break;
        }
        if dir.join(".lode").is_dir() || dir.join(".git").exists() {
            return dir.to_path_buf();
        }
    }
    start.to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_marker_above_home_or_at_the_file_system_root_is_not_taken() {
        let temp = tempfile::tempdir().unwrap();
        let home = temp.path().join("home");
        let project = home.join("code/project");
        let nested = project.join("src/deep");
        std::fs::create_dir_all(&nested).unwrap();
        // A project with its own marker is found from below.
        std::fs::create_dir_all(project.join(".git")).unwrap();
        assert_eq!(discover_below(&nested, Some(&home)), project);
        // A marker in the home directory itself is not an ancestor root.
        std::fs::remove_dir_all(project.join(".git")).unwrap();
        std::fs::create_dir_all(home.join(".lode")).unwrap();
        assert_eq!(discover_below(&nested, Some(&home)), nested);
        // ... but is used when lode starts in the home directory itself.
        assert_eq!(discover_below(&home, Some(&home)), home);
        // Without markers (and the file system's root never counts) it is the start itself.
        std::fs::remove_dir_all(home.join(".lode")).unwrap();
        assert_eq!(discover_below(&nested, None), nested);
    }
}

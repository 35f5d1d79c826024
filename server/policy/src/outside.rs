//! Whether a read-only command's arguments reach outside the workspace. Without the sandbox this
//! is what keeps an allowlisted `cat` or `grep` from reading `~/.ssh/id_rsa` unasked; with the
//! sandbox, the kernel refuses such reads and this check is not needed.

use std::path::{Component, Path, PathBuf};

use super::shell::Segment;

/// Characters that make the shell expand a word into paths it alone knows.
const GLOB_CHARS: &[char] = &['*', '?', '['];

/// Whether any path the segment's arguments or input redirects name resolves outside `roots`
/// (or cannot be placed: `~`, globs). Relative paths are taken from the primary root, which is
/// never less strict than the real working directory inside it.
pub fn reads_outside(segment: &Segment, roots: &[PathBuf]) -> bool {
    let Some(primary) = roots.first() else {
        return true;
    };
    let arguments = segment.words.iter().skip(1).filter_map(|word| {
        if let Some(option) = word.strip_prefix('-') {
            // `--file=/x` names a path; `-n` does not.
            option.split_once('=').map(|(_, value)| value.to_owned())
        } else {
            Some(word.clone())
        }
    });
    arguments
        .chain(segment.reads_from.iter().cloned())
        .any(|word| word_outside(&word, primary, roots))
}

fn word_outside(word: &str, primary: &Path, roots: &[PathBuf]) -> bool {
    if word.is_empty() {
        return false;
    }
    if word.starts_with('~') || word.contains(GLOB_CHARS) {
        return true;
    }
    let path = Path::new(word);
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        primary.join(path)
    };
    // An existing path is judged where its symlinks lead; a missing one by its components.
    let resolved = std::fs::canonicalize(&joined).unwrap_or_else(|_| normalize(&joined));
    !roots.iter().any(|root| resolved.starts_with(root))
}

/// `a/b/../c` → `a/c`, without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze;

    fn outside(command: &str, root: &Path) -> bool {
        let analysis = analyze(command);
        analysis
            .segments
            .iter()
            .any(|segment| reads_outside(segment, &[root.to_path_buf()]))
    }

    #[test]
    fn paths_are_judged_where_they_lead() {
        let temp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(temp.path()).unwrap().join("ws");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/lib.rs"), "").unwrap();
        std::os::unix::fs::symlink("/etc", root.join("etc-link")).unwrap();
        for inside in [
            "cat src/lib.rs",
            "grep -n foo src",
            "ls",
            "wc -l src/lib.rs src/missing.rs",
            "head -n 5 ./src/../src/lib.rs",
        ] {
            assert!(!outside(inside, &root), "{inside}");
        }
        for escaping in [
            "cat /etc/passwd",
            "cat ~/.ssh/id_rsa",
            "cat ../secret",
            "cat src/../../secret",
            "cat etc-link/passwd",
            "grep --file=/etc/passwd x src",
            "cat < /etc/passwd",
            "cat *",
            "find / -name id_rsa",
        ] {
            assert!(outside(escaping, &root), "{escaping}");
        }
    }
}

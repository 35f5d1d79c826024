//! Path globs as lode's users write them (`lode search --path`, the policy's path rules, the
//! tools' `path_glob`): anchored like gitignore patterns. Defined here, the lowest crate that
//! filters by them, so that every caller means the same thing by a glob.

use globset::{GlobBuilder, GlobMatcher};

/// Compiles a path glob over workspace-relative paths: a glob without `/` matches at any depth
/// (`*.rs` is `**/*.rs`), one with `/` is anchored at the root (a leading `./` or `/` is
/// dropped), and one ending in `/` matches everything under that directory. `*` never crosses
/// a `/`.
pub fn path_glob_matcher(glob: &str) -> Result<GlobMatcher, globset::Error> {
    let anchored = if glob.contains('/') {
        glob.trim_start_matches("./")
            .trim_start_matches('/')
            .to_string()
    } else {
        format!("**/{glob}")
    };
    let anchored = if anchored.ends_with('/') {
        format!("{anchored}**")
    } else {
        anchored
    };
    GlobBuilder::new(&anchored)
        .literal_separator(true)
        .build()
        .map(|g| g.compile_matcher())
}

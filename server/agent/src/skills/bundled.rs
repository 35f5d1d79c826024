//! The skills that ship inside the `lode` binary: the repository's `skills/<name>/SKILL.md`
//! files, compiled in so a fresh clone and an installed binary behave the same.

/// (folder name, SKILL.md text) of every bundled skill.
pub const BUNDLED_SKILLS: &[(&str, &str)] = &[
    (
        "code-review",
        include_str!("../../../../skills/code-review/SKILL.md"),
    ),
    (
        "git-workflow",
        include_str!("../../../../skills/git-workflow/SKILL.md"),
    ),
    (
        "rust-compile-errors",
        include_str!("../../../../skills/rust-compile-errors/SKILL.md"),
    ),
    (
        "safe-refactoring",
        include_str!("../../../../skills/safe-refactoring/SKILL.md"),
    ),
    (
        "writing-tests",
        include_str!("../../../../skills/writing-tests/SKILL.md"),
    ),
];

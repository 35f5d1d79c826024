//! The watcher on a real index: file-system events applied file by file with the walk's ignore
//! rules. (The flush socket under malformed input is tested with the wire format, in
//! `watch::protocol`.)

use std::path::{Path, PathBuf};

use lode_index::{Workspace, WorkspaceOptions};

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn indexed() -> (tempfile::TempDir, Workspace) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, ".gitignore", "generated/\n");
    write(root, "src/lib.rs", "pub fn alpha() {}\n");
    write(root, "src/old.rs", "pub fn beta() {}\n");
    std::fs::create_dir_all(root.join("generated")).unwrap();
    let workspace = Workspace::open(WorkspaceOptions::new(root)).unwrap();
    workspace.refresh(&|_| {}).unwrap();
    (dir, workspace)
}

fn names(workspace: &Workspace, name: &str) -> Vec<String> {
    workspace
        .symbols(name, 10)
        .unwrap()
        .into_iter()
        .map(|hit| format!("{}:{}", hit.path, hit.name))
        .collect()
}

fn abs(workspace: &Workspace, rel: &str) -> PathBuf {
    workspace.root().join(rel)
}

#[test]
fn events_are_applied_file_by_file_with_the_walks_ignore_rules() {
    let (dir, workspace) = indexed();
    let root = dir.path();
    write(root, "src/lib.rs", "pub fn alpha_changed() {}\n");
    write(root, "src/new.rs", "pub fn gamma() {}\n");
    write(root, "generated/out.rs", "pub fn ignored_fn() {}\n");
    std::fs::remove_file(root.join("src/old.rs")).unwrap();
    let paths: Vec<PathBuf> = ["src/lib.rs", "src/new.rs", "generated/out.rs", "src/old.rs"]
        .iter()
        .map(|rel| abs(&workspace, rel))
        .collect();
    let report = workspace.apply_disk_changes(&paths, false).unwrap();
    assert!(!report.rescanned, "{report:?}");
    assert_eq!(report.stats.parsed, 2, "{report:?}");
    assert_eq!(report.stats.removed, 1, "{report:?}");
    assert_eq!(
        names(&workspace, "alpha_changed"),
        ["src/lib.rs:alpha_changed"]
    );
    assert_eq!(names(&workspace, "gamma"), ["src/new.rs:gamma"]);
    assert!(names(&workspace, "ignored_fn").is_empty());
    assert!(names(&workspace, "beta").is_empty());

    // A new directory can hold anything: a refresh, which finds its files.
    write(root, "src/deep/er.rs", "pub fn delta() {}\n");
    let report = workspace
        .apply_disk_changes(&[abs(&workspace, "src/deep")], false)
        .unwrap();
    assert!(report.rescanned);
    assert_eq!(names(&workspace, "delta"), ["src/deep/er.rs:delta"]);

    // An ignore file changed: a refresh too, which now leaves src/new.rs out.
    write(root, ".gitignore", "generated/\nsrc/new.rs\n");
    let report = workspace
        .apply_disk_changes(&[abs(&workspace, ".gitignore")], false)
        .unwrap();
    assert!(report.rescanned);
    assert!(names(&workspace, "gamma").is_empty());

    // Nothing lode indexes: no write at all.
    let before = workspace.symbols("alpha_changed", 1).unwrap();
    let report = workspace
        .apply_disk_changes(
            &[
                abs(&workspace, "target/debug/x.o"),
                abs(&workspace, "README"),
            ],
            false,
        )
        .unwrap();
    assert_eq!(report.stats.parsed + report.stats.removed, 0);
    assert_eq!(workspace.symbols("alpha_changed", 1).unwrap(), before);
}

//! The workspace index end to end, on real files in a temporary directory: a real SQLite
//! catalog, a real tantivy index on disk, real tree-sitter parses.

use std::fs;
use std::path::Path;

use lode_index::{Language, MapRequest, ScanOptions, SearchRequest, Workspace, WorkspaceOptions};

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

fn no_progress(_: lode_index::RefreshProgress) {}

fn open(root: &Path) -> Workspace {
    Workspace::open(WorkspaceOptions::new(root)).unwrap()
}

const LIB_RS: &str = r#"
/// Reads the configuration file from disk.
pub fn parse_config_file(path: &str) -> Config {
    let text = std::fs::read_to_string(path).unwrap();
    Config::from_text(&text)
}

pub struct Config {
    pub retries: u32,
}

impl Config {
    pub fn from_text(text: &str) -> Config {
        Config { retries: text.len() as u32 }
    }
}
"#;

const MAIN_RS: &str = r#"
mod lib;

fn main() {
    let config = lib::parse_config_file("lode.toml");
    println!("{}", config.retries);
}
"#;

const TOOL_PY: &str = r#"
class ConnectionPool:
    def acquire_connection(self, timeout):
        return self.queue.get(timeout=timeout)

def drain_pool(pool):
    pool.acquire_connection(5)
"#;

fn sample_workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "src/lib.rs", LIB_RS);
    write(dir.path(), "src/main.rs", MAIN_RS);
    write(dir.path(), "tools/pool.py", TOOL_PY);
    write(
        dir.path(),
        "README.md",
        "# Sample\n\nA sample workspace about connection pools.\n",
    );
    dir
}

#[test]
fn refresh_indexes_then_reparses_only_what_changed() {
    let dir = sample_workspace();
    let workspace = open(dir.path());
    let first = workspace.refresh(&no_progress).unwrap();
    assert_eq!((first.files, first.parsed, first.unchanged), (4, 4, 0));
    assert!(first.total_definitions >= 6, "{first:?}");

    let again = workspace.refresh(&no_progress).unwrap();
    assert_eq!((again.parsed, again.unchanged, again.removed), (0, 4, 0));
    assert_eq!(again.total_chunks, first.total_chunks);

    write(
        dir.path(),
        "tools/pool.py",
        &TOOL_PY.replace("drain_pool", "empty_pool"),
    );
    fs::remove_file(dir.path().join("README.md")).unwrap();
    let changed = workspace.refresh(&no_progress).unwrap();
    assert_eq!((changed.parsed, changed.removed, changed.files), (1, 1, 3));
    assert!(workspace.symbols("drain_pool", 5).unwrap().is_empty());
    assert_eq!(
        workspace.symbols("empty_pool", 5).unwrap()[0].path,
        "tools/pool.py"
    );
    assert!(
        workspace
            .search(&SearchRequest::new("sample workspace"))
            .unwrap()
            .iter()
            .all(|h| h.path != "README.md")
    );
}

/// A refresh deletes a file's old chunks from the lexical index only when the catalog knew
/// the file; new files are added without a delete. Either way every chunk is there once.
#[test]
fn lexical_hits_follow_new_edited_and_removed_files_without_duplicates() {
    let dir = sample_workspace();
    let workspace = open(dir.path());
    let cold = workspace.refresh(&no_progress).unwrap();
    assert_eq!(workspace.lexical_document_count(), cold.total_chunks);
    let in_step = |stats: lode_index::RefreshStats| {
        assert_eq!(
            workspace.lexical_document_count(),
            stats.total_chunks,
            "{stats:?}"
        );
    };
    // The chunks holding `word` itself (a query also matches the parts of an identifier).
    let hits = |word: &str| -> Vec<(String, u32)> {
        workspace
            .search(&SearchRequest::new(word))
            .unwrap()
            .into_iter()
            .filter(|hit| hit.snippet.contains(word))
            .map(|hit| (hit.path, hit.start_line))
            .collect()
    };
    let before = hits("acquire_connection");
    assert!(!before.is_empty());

    write(
        dir.path(),
        "src/extra.rs",
        "pub fn frobnicate_widgets() -> u32 {\n    7\n}\n",
    );
    write(
        dir.path(),
        "tools/pool.py",
        &TOOL_PY.replace("acquire_connection", "borrow_connection"),
    );
    let changed = workspace.refresh(&no_progress).unwrap();
    assert_eq!(changed.parsed, 2, "{changed:?}");
    in_step(changed);
    assert_eq!(
        hits("frobnicate_widgets"),
        [("src/extra.rs".to_string(), 1)]
    );
    assert!(hits("acquire_connection").is_empty());
    assert_eq!(hits("borrow_connection"), before);

    // The new file is known now: editing it again replaces its chunks.
    write(
        dir.path(),
        "src/extra.rs",
        "pub fn polish_gadgets() -> u32 {\n    8\n}\n",
    );
    in_step(workspace.refresh(&no_progress).unwrap());
    assert!(hits("frobnicate_widgets").is_empty());
    assert_eq!(hits("polish_gadgets"), [("src/extra.rs".to_string(), 1)]);

    // Removed, then created again with the same text: one copy, not two.
    fs::remove_file(dir.path().join("src/extra.rs")).unwrap();
    in_step(workspace.refresh(&no_progress).unwrap());
    assert!(hits("polish_gadgets").is_empty());
    write(
        dir.path(),
        "src/extra.rs",
        "pub fn polish_gadgets() -> u32 {\n    8\n}\n",
    );
    in_step(workspace.refresh(&no_progress).unwrap());
    assert_eq!(hits("polish_gadgets"), [("src/extra.rs".to_string(), 1)]);
}

#[test]
fn an_unchanged_file_with_a_new_mtime_is_hashed_not_parsed() {
    let dir = sample_workspace();
    let workspace = open(dir.path());
    workspace.refresh(&no_progress).unwrap();
    // Rewrite identical content: the mtime changes, the hash does not.
    std::thread::sleep(std::time::Duration::from_millis(20));
    write(dir.path(), "src/lib.rs", LIB_RS);
    let stats = workspace.refresh(&no_progress).unwrap();
    assert_eq!((stats.parsed, stats.unchanged), (0, 4));
}

#[test]
fn search_ranks_the_defining_chunk_first_and_filters() {
    let dir = sample_workspace();
    let workspace = open(dir.path());
    workspace.refresh(&no_progress).unwrap();

    let hits = workspace
        .search(&SearchRequest::new("parseConfigFile"))
        .unwrap();
    assert_eq!(hits[0].path, "src/lib.rs");
    assert_eq!(hits[0].symbol.as_deref(), Some("parse_config_file"));
    assert_eq!(hits[0].language, "rust");
    assert!(
        hits[0].snippet.contains("parse_config_file"),
        "{}",
        hits[0].snippet
    );

    let python_only = workspace
        .search(&SearchRequest {
            language: Some(Language::Python),
            ..SearchRequest::new("connection pool")
        })
        .unwrap();
    assert!(!python_only.is_empty());
    assert!(python_only.iter().all(|h| h.language == "python"));

    let in_src = workspace
        .search(&SearchRequest {
            path_glob: Some("src/**".into()),
            ..SearchRequest::new("config")
        })
        .unwrap();
    assert!(!in_src.is_empty());
    assert!(in_src.iter().all(|h| h.path.starts_with("src/")));

    let nothing = workspace.search(&SearchRequest::new("zebrafish")).unwrap();
    assert!(nothing.is_empty());
}

#[test]
fn symbols_and_references_by_name() {
    let dir = sample_workspace();
    let workspace = open(dir.path());
    workspace.refresh(&no_progress).unwrap();

    let exact = workspace.symbols("from_text", 10).unwrap();
    assert_eq!(exact[0].name, "from_text");
    assert_eq!(exact[0].kind, "method");
    assert_eq!(exact[0].scope, vec!["impl Config".to_string()]);

    let fuzzy = workspace.symbols("parsecfg", 10).unwrap();
    assert_eq!(
        fuzzy.first().map(|h| h.name.as_str()),
        Some("parse_config_file")
    );

    let refs = workspace.references("parse_config_file", 10).unwrap();
    assert_eq!(refs.len(), 1);
    assert_eq!((refs[0].path.as_str(), refs[0].line), ("src/main.rs", 5));
    assert_eq!(refs[0].scope, vec!["main".to_string()]);
}

#[test]
fn update_and_remove_single_files_publish_at_once() {
    let dir = sample_workspace();
    let workspace = open(dir.path());
    workspace.refresh(&no_progress).unwrap();

    // An editor buffer that is not saved: the index sees it, the disk does not.
    let buffer = "pub fn unsaved_buffer_function() -> u32 { 42 }\n";
    assert!(
        workspace
            .update_file(Path::new("src/lib.rs"), buffer)
            .unwrap()
    );
    let hits = workspace
        .search(&SearchRequest::new("unsaved buffer function"))
        .unwrap();
    assert_eq!(hits[0].path, "src/lib.rs");
    assert!(
        workspace
            .symbols("parse_config_file", 5)
            .unwrap()
            .is_empty()
    );

    // Absolute paths work too; unknown file kinds are declined.
    assert!(
        workspace
            .remove_file(&dir.path().join("tools/pool.py"))
            .unwrap()
    );
    assert!(workspace.symbols("ConnectionPool", 5).unwrap().is_empty());
    assert!(!workspace.update_file(Path::new("image.png"), "x").unwrap());
    assert!(
        workspace
            .update_file(Path::new("/elsewhere/x.rs"), "fn x() {}")
            .is_err()
    );

    // A later refresh restores what is on disk.
    let stats = workspace.refresh(&no_progress).unwrap();
    assert_eq!(stats.parsed, 2);
    assert_eq!(workspace.symbols("parse_config_file", 5).unwrap().len(), 1);
}

#[test]
fn scanning_skips_ignored_binary_large_and_escaping_files() {
    let dir = sample_workspace();
    let root = dir.path();
    write(root, ".gitignore", "generated/\n");
    write(root, "generated/out.rs", "fn generated_code() {}");
    write(root, "vendor/dep.rs", "fn vendored_code() {}");
    fs::write(root.join("blob.rs"), b"fn x() {}\0\0binary").unwrap();
    write(
        root,
        "huge.rs",
        &format!("fn huge_file() {{}}\n// {}\n", "x".repeat(4096)),
    );
    fs::write(root.join("latin1.py"), b"def caf\xe9_latin():\n    pass\n").unwrap();
    let outside = tempfile::tempdir().unwrap();
    write(outside.path(), "secret.rs", "fn outside_secret() {}");
    std::os::unix::fs::symlink(outside.path(), root.join("escape")).unwrap();
    std::os::unix::fs::symlink(root.join("src"), root.join("inside_link")).unwrap();

    let mut options = WorkspaceOptions::new(root);
    options.scan = ScanOptions {
        max_file_bytes: 2048,
        exclude: vec!["vendor/".into()],
    };
    let workspace = Workspace::open(options).unwrap();
    let stats = workspace.refresh(&no_progress).unwrap();
    assert_eq!(stats.skipped_binary, 1);
    assert_eq!(stats.skipped_too_large, 1);

    for absent in [
        "generated_code",
        "vendored_code",
        "huge_file",
        "outside_secret",
        "x",
    ] {
        assert!(
            workspace
                .symbols(absent, 5)
                .unwrap()
                .iter()
                .all(|h| h.name != absent),
            "{absent} indexed"
        );
    }
    // Invalid UTF-8 is read lossily: the file is indexed, not fatal.
    let lossy = workspace.search(&SearchRequest::new("latin")).unwrap();
    assert!(lossy.iter().any(|h| h.path == "latin1.py"));
    // A symlink that stays inside the root is followed.
    assert!(
        workspace
            .symbols("parse_config_file", 5)
            .unwrap()
            .iter()
            .any(|h| h.path == "inside_link/lib.rs")
    );
}

#[test]
fn a_lexical_index_behind_the_catalog_is_rebuilt_on_open() {
    let dir = sample_workspace();
    let index_dir;
    {
        let workspace = open(dir.path());
        workspace.refresh(&no_progress).unwrap();
        index_dir = workspace.index_dir().to_path_buf();
    }
    // Simulate a crash between the catalog commit and the lexical commit.
    let conn = rusqlite::Connection::open(index_dir.join("catalog.sqlite")).unwrap();
    conn.execute(
        "UPDATE meta SET value = value + 1 WHERE key = 'generation'",
        [],
    )
    .unwrap();
    drop(conn);

    let workspace = open(dir.path());
    assert_eq!(workspace.repairs().len(), 1, "{:?}", workspace.repairs());
    assert!(workspace.repairs()[0].contains("rebuilt"));
    assert_eq!(
        workspace
            .search(&SearchRequest::new("parse_config_file"))
            .unwrap()[0]
            .path,
        "src/lib.rs"
    );
    // Healthy now: a second open repairs nothing.
    drop(workspace);
    assert!(open(dir.path()).repairs().is_empty());
}

/// A cold build's checkpoints commit the catalog but not the lexical index, which it publishes
/// once at its end (a segment per commit would leave a dozen small ones behind, or a merge to
/// pay for): however many checkpoints, at most two segments remain.
#[test]
fn a_cold_build_ends_with_at_most_two_lexical_segments_however_many_checkpoints() {
    let dir = tempfile::tempdir().unwrap();
    let files = 40;
    for i in 0..files {
        write(
            dir.path(),
            &format!("src/module_{i}.rs"),
            &format!("pub fn distinct_function_{i}() -> u32 {{\n    {i}\n}}\n"),
        );
    }
    let mut options = WorkspaceOptions::new(dir.path());
    options.checkpoint_files = 3;
    let workspace = Workspace::open(options).unwrap();
    let stats = workspace.refresh(&no_progress).unwrap();
    assert_eq!(stats.parsed, files);
    let segments = workspace.lexical_segment_count();
    assert!((1..=2).contains(&segments), "{segments} lexical segments");
    for i in 0..files {
        let hits = workspace
            .search(&SearchRequest::new(format!("distinct_function_{i}")))
            .unwrap();
        assert_eq!(hits[0].path, format!("src/module_{i}.rs"));
    }
    // The merged segment carries the catalog's generation: nothing to repair on reopen.
    drop(workspace);
    assert!(open(dir.path()).repairs().is_empty());

    // Incremental refreshes merge as before (tantivy's policy): the edit is found.
    write(
        dir.path(),
        "src/module_7.rs",
        "pub fn renamed_function() -> u32 {\n    7\n}\n",
    );
    let workspace = open(dir.path());
    assert_eq!(workspace.refresh(&no_progress).unwrap().parsed, 1);
    let hits = workspace
        .search(&SearchRequest::new("renamed_function"))
        .unwrap();
    assert_eq!(hits[0].path, "src/module_7.rs");
    assert!(
        workspace
            .search(&SearchRequest::new("distinct_function_7"))
            .unwrap()
            .iter()
            .all(|hit| !hit.snippet.contains("distinct_function_7"))
    );
}

#[test]
fn a_corrupt_catalog_or_lexical_index_is_detected_and_rebuilt() {
    let dir = sample_workspace();
    let index_dir;
    {
        let workspace = open(dir.path());
        workspace.refresh(&no_progress).unwrap();
        index_dir = workspace.index_dir().to_path_buf();
    }
    fs::write(index_dir.join("lexical/meta.json"), b"{ not json").unwrap();
    let workspace = open(dir.path());
    assert!(!workspace.repairs().is_empty());
    assert!(
        !workspace
            .search(&SearchRequest::new("ConnectionPool"))
            .unwrap()
            .is_empty()
    );
    drop(workspace);

    for suffix in ["-wal", "-shm"] {
        let _ = fs::remove_file(format!(
            "{}{suffix}",
            index_dir.join("catalog.sqlite").display()
        ));
    }
    fs::write(index_dir.join("catalog.sqlite"), vec![0x42u8; 8192]).unwrap();
    let workspace = open(dir.path());
    assert!(
        workspace.repairs().iter().any(|r| r.contains("catalog")),
        "{:?}",
        workspace.repairs()
    );
    let stats = workspace.refresh(&no_progress).unwrap();
    assert_eq!(stats.parsed, 4);
    assert_eq!(
        workspace
            .search(&SearchRequest::new("ConnectionPool"))
            .unwrap()[0]
            .path,
        "tools/pool.py"
    );
}

#[test]
fn readers_see_the_writes_of_another_handle() {
    let dir = sample_workspace();
    let first = open(dir.path());
    first.refresh(&no_progress).unwrap();
    let second = open(dir.path());
    first
        .update_file(Path::new("src/lib.rs"), "fn freshly_written_by_first() {}")
        .unwrap();
    // The second handle sees the first one's commit once it reloads (the CLI opens fresh).
    second.reload().unwrap();
    let hits = second
        .search(&SearchRequest::new("freshly written by first"))
        .unwrap();
    assert_eq!(hits[0].path, "src/lib.rs");
}

#[test]
fn substring_symbol_searches_see_names_written_after_the_last_search() {
    let dir = sample_workspace();
    let writer = open(dir.path());
    writer.refresh(&no_progress).unwrap();
    let reader = open(dir.path());
    // The full pass over every name runs (nothing starts with the query) and keeps the names.
    assert!(reader.symbols("zqxw", 10).unwrap().is_empty());
    // Another handle writes a name holding the query: the next search must see it.
    writer
        .update_file(Path::new("src/lib.rs"), "fn has_zqxw_inside() {}")
        .unwrap();
    let hits = reader.symbols("zqxw", 10).unwrap();
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0].name, "has_zqxw_inside");
    writer.remove_file(Path::new("src/lib.rs")).unwrap();
    assert!(reader.symbols("zqxw", 10).unwrap().is_empty());
}

#[test]
fn repo_map_prefers_what_the_focus_file_uses_and_fits_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "src/storage.rs",
        "pub struct BlockStorage;\nimpl BlockStorage {\n    pub fn write_block(&self) {}\n    pub fn read_block(&self) {}\n}\n",
    );
    write(
        root,
        "src/network.rs",
        "pub struct PeerConnection;\nimpl PeerConnection {\n    pub fn send_frame(&self) {}\n}\npub fn dial_peer() -> PeerConnection { PeerConnection }\n",
    );
    write(
        root,
        "src/sync.rs",
        "use crate::storage::BlockStorage;\npub fn sync_blocks(store: &BlockStorage) {\n    store.write_block();\n    store.read_block();\n}\n",
    );
    write(
        root,
        "src/gossip.rs",
        "use crate::network::PeerConnection;\npub fn gossip(peer: &PeerConnection) {\n    peer.send_frame();\n    let _ = crate::network::dial_peer();\n}\n",
    );
    let workspace = open(root);
    workspace.refresh(&no_progress).unwrap();

    let map = workspace
        .repo_map(&MapRequest {
            max_tokens: 40,
            focus_files: vec!["src/sync.rs".into()],
            mentions: vec![],
        })
        .unwrap();
    assert!(map.tokens <= 40, "{} tokens", map.tokens);
    assert!(map.text.contains("src/storage.rs:"), "{}", map.text);
    assert!(
        !map.text.contains("src/sync.rs:"),
        "focus files are left out:\n{}",
        map.text
    );
    let first_file = &map
        .files
        .iter()
        .max_by(|a, b| a.rank.total_cmp(&b.rank))
        .unwrap()
        .path;
    assert_eq!(first_file, "src/storage.rs");

    let mentioned = workspace
        .repo_map(&MapRequest {
            max_tokens: 40,
            focus_files: vec![],
            mentions: vec!["dial_peer".into()],
        })
        .unwrap();
    assert!(mentioned.text.contains("dial_peer"), "{}", mentioned.text);

    let big = workspace
        .repo_map(&MapRequest {
            max_tokens: 10_000,
            ..MapRequest::default()
        })
        .unwrap();
    assert!(
        big.text.contains("│    pub fn write_block(&self) {}"),
        "methods sit under their impl:\n{}",
        big.text
    );
    assert!(big.text.contains("│impl BlockStorage {"), "{}", big.text);
}

#[test]
fn a_second_writer_is_refused_while_a_reader_is_never_blocked() {
    let dir = sample_workspace();
    let workspace = open(dir.path());
    workspace.refresh(&no_progress).unwrap();
    // Another process holding the writer lock: an advisory lock on `writer.lock` in the index
    // directory (flock, which a second open file in this process contends for like another
    // process would).
    let held = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(workspace.index_dir().join("writer.lock"))
        .unwrap();
    held.try_lock().unwrap();
    assert!(matches!(
        workspace.refresh(&no_progress),
        Err(lode_index::IndexError::Locked { .. })
    ));
    assert!(matches!(
        workspace.update_file(Path::new("src/lib.rs"), "fn x() {}"),
        Err(lode_index::IndexError::Locked { .. })
    ));
    // Reading goes on, and a fresh open of a healthy index needs no lock.
    assert!(
        !workspace
            .search(&SearchRequest::new("config"))
            .unwrap()
            .is_empty()
    );
    assert!(open(dir.path()).repairs().is_empty());
    drop(held);
    assert!(workspace.refresh(&no_progress).is_ok());
}

#[test]
fn quick_refresh_sees_edits_without_walking_and_walks_when_the_tree_changes() {
    use lode_index::RefreshMode::{Full, Quick};
    let dir = sample_workspace();
    let root = dir.path();
    let workspace = open(root);

    // No full walk recorded yet: quick falls back to walking.
    assert!(workspace.refresh_with(Quick, &no_progress).unwrap().walked);
    let nothing = workspace.refresh_with(Quick, &no_progress).unwrap();
    assert!(!nothing.walked);
    assert_eq!((nothing.parsed, nothing.unchanged), (0, 4));

    // An in-place edit: found by stat, no walk.
    std::thread::sleep(std::time::Duration::from_millis(20));
    write(
        root,
        "tools/pool.py",
        &TOOL_PY.replace("drain_pool", "flush_pool"),
    );
    let edited = workspace.refresh_with(Quick, &no_progress).unwrap();
    assert!(!edited.walked);
    assert_eq!(edited.parsed, 1);
    assert_eq!(
        workspace.symbols("flush_pool", 5).unwrap()[0].path,
        "tools/pool.py"
    );

    // A new file changes its directory: walk.
    std::thread::sleep(std::time::Duration::from_millis(20));
    write(root, "src/extra.rs", "pub fn brand_new_function() {}\n");
    let added = workspace.refresh_with(Quick, &no_progress).unwrap();
    assert!(added.walked);
    assert_eq!(added.parsed, 1);

    // A deleted file: walk, and it is gone.
    std::thread::sleep(std::time::Duration::from_millis(20));
    fs::remove_file(root.join("src/extra.rs")).unwrap();
    let removed = workspace.refresh_with(Quick, &no_progress).unwrap();
    assert!(removed.walked);
    assert_eq!(removed.removed, 1);
    assert!(
        workspace
            .symbols("brand_new_function", 5)
            .unwrap()
            .is_empty()
    );

    // An ignore rule edited in place (the directory's mtime may not change): walk.
    write(root, ".gitignore", "# nothing yet\n");
    workspace.refresh_with(Quick, &no_progress).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let gitignore = root.join(".gitignore");
    let mut text = fs::read_to_string(&gitignore).unwrap();
    text.push_str("tools/\n");
    fs::OpenOptions::new()
        .write(true)
        .open(&gitignore)
        .unwrap()
        .set_len(0)
        .unwrap();
    fs::write(&gitignore, text).unwrap();
    let ignored = workspace.refresh_with(Quick, &no_progress).unwrap();
    assert!(ignored.walked);
    assert!(workspace.symbols("ConnectionPool", 5).unwrap().is_empty());

    // Other scan settings never trust a walk made with different ones.
    let mut options = WorkspaceOptions::new(root);
    options.scan.exclude = vec!["README.md".into()];
    let other = Workspace::open(options).unwrap();
    assert!(other.refresh_with(Quick, &no_progress).unwrap().walked);
    assert!(other.refresh_with(Full, &no_progress).unwrap().walked);
}

#[test]
fn a_catalog_only_handle_defers_the_lexical_index_to_the_next_handle_that_needs_it() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "src/pool.rs",
        "/// Opens the connection pool.\npub fn open_pool() -> Pool { make_pool() }\n",
    );
    let mut options = WorkspaceOptions::new(dir.path());
    options.defer_derived = true;
    let catalog_only = Workspace::open(options).unwrap();
    catalog_only.refresh(&no_progress).unwrap();
    // Symbols, references and the map come from the catalog alone.
    assert_eq!(catalog_only.symbols("open_pool", 5).unwrap().len(), 1);
    assert_eq!(catalog_only.references("make_pool", 5).unwrap().len(), 1);
    // The lexical index was left for later: nothing is searchable through this handle.
    assert!(
        catalog_only
            .search(&SearchRequest::new("connection pool"))
            .unwrap()
            .is_empty()
    );
    drop(catalog_only);

    // A handle that needs the lexical index builds it from the catalog on open.
    let full = open(dir.path());
    assert!(
        full.repairs()
            .iter()
            .any(|r| r.contains("lexical index not built yet")),
        "{:?}",
        full.repairs()
    );
    let hits = full.search(&SearchRequest::new("connection pool")).unwrap();
    assert_eq!(hits[0].path, "src/pool.rs");
}

/// With no focus and no mention, the map opens with the repository's own code: definitions in
/// test fixtures and vendored code are weighed down, however much their own files use them.
/// A focus on a fixture file still brings its neighbours.
#[test]
fn an_unguided_repo_map_puts_fixtures_and_vendored_code_last() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "src/engine.rs",
        "pub fn run_engine() {}\npub fn stop_engine() {}\n",
    );
    write(
        root,
        "src/main.rs",
        "fn main() {\n    crate::engine::run_engine();\n}\n",
    );
    let calls = "    sample_helper();\n".repeat(20);
    for n in 0..4 {
        write(
            root,
            &format!("tests/fixtures/sample/src/user_{n}.rs"),
            &format!("pub fn user_{n}() {{\n{calls}}}\n"),
        );
        write(
            root,
            &format!("vendor/dep/src/caller_{n}.rs"),
            &format!("pub fn caller_{n}() {{\n    vendored_util();\n    vendored_util();\n}}\n"),
        );
    }
    write(
        root,
        "tests/fixtures/sample/src/helper.rs",
        "pub fn sample_helper() {}\n",
    );
    write(
        root,
        "vendor/dep/src/util.rs",
        "pub fn vendored_util() {}\n",
    );
    let workspace = open(root);
    workspace.refresh(&no_progress).unwrap();

    // A budget for a couple of definitions: the best-ranked ones.
    let map = |focus_files: Vec<String>| {
        workspace
            .repo_map(&MapRequest {
                max_tokens: 25,
                focus_files,
                mentions: vec![],
            })
            .unwrap()
            .text
    };
    let unguided = map(vec![]);
    assert!(unguided.contains("run_engine"), "{unguided}");
    assert!(!unguided.contains("sample_helper"), "{unguided}");
    assert!(!unguided.contains("vendored_util"), "{unguided}");

    let focused = map(vec!["tests/fixtures/sample/src/user_0.rs".into()]);
    assert!(focused.contains("sample_helper"), "{focused}");
}

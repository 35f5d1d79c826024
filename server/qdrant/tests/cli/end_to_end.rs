//! `lode index` and `lode search --mode semantic` with `--vectors qdrant`, the `lode` binary
//! talking to a STAND-IN Qdrant server (no Qdrant server can be installed on the machines these
//! tests run on; see `../standin/mod.rs`). Registered as a test of the `lode` package (it needs
//! the binary), so it lives outside lode-qdrant's automatically discovered tests.

#[path = "../standin/mod.rs"]
mod standin;

use std::path::Path;
use std::process::{Command, Output};

use standin::StandIn;

fn lode(root: &Path, args: &[&str], url: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lode"))
        .args(args)
        .args(["--root", root.to_str().unwrap()])
        .args(["--vectors", "qdrant", "--qdrant-url", url])
        .args(["--qdrant-api-key-env", "LODE_TEST_QDRANT_KEY"])
        .env("LODE_TEST_QDRANT_KEY", "test-key")
        .env_remove("LODE_VECTORS")
        .env_remove("LODE_EMBEDDER")
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn index_and_semantic_search_through_qdrant() {
    let server = StandIn::start(Some("test-key"));
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("src")).unwrap();
    std::fs::write(
        root.path().join("src/net.rs"),
        "/// Opens a TCP connection to the server and retries on failure.\npub fn connect_with_retries(host: &str) -> u32 {\n    host.len() as u32\n}\n",
    )
    .unwrap();
    std::fs::write(
        root.path().join("src/color.py"),
        "def blend_colors(first, second):\n    \"\"\"Mix two RGB colours half and half.\"\"\"\n    return [(a + b) / 2 for a, b in zip(first, second)]\n",
    )
    .unwrap();

    let index = lode(root.path(), &["index"], &server.url);
    assert!(index.status.success(), "{}", text(&index.stderr));

    let db = server.db.lock().unwrap();
    assert_eq!(db.collections.len(), 1, "one collection for the workspace");
    assert!(db.api_keys.iter().all(|k| k.as_deref() == Some("test-key")));
    drop(db);
    let collection = server
        .db
        .lock()
        .unwrap()
        .collections
        .keys()
        .next()
        .unwrap()
        .clone();
    assert!(
        server.point_count(&collection).unwrap() >= 3,
        "chunks and the metadata point"
    );
    // The embedded store was not used.
    assert!(!root.path().join(".lode/index/vectors").exists());

    let search = lode(
        root.path(),
        &[
            "search",
            "--mode",
            "semantic",
            "--no-refresh",
            "mix two colours",
        ],
        &server.url,
    );
    assert!(search.status.success(), "{}", text(&search.stderr));
    let out = text(&search.stdout);
    let first = out.lines().find(|l| l.contains("src/")).unwrap_or_default();
    assert!(first.contains("src/color.py"), "{out}");
}

#[test]
fn an_unreachable_qdrant_is_a_clear_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("a.rs"), "fn a() {}\n").unwrap();
    let url = format!("http://127.0.0.1:{port}");
    let index = lode(root.path(), &["index"], &url);
    assert!(!index.status.success());
    let stderr = text(&index.stderr);
    assert!(stderr.contains("cannot reach Qdrant"), "{stderr}");
    assert!(stderr.contains(&url), "{stderr}");
}

//! `lode index` and `lode search --mode semantic` with `--vectors qdrant`: the `lode` binary
//! talking to a REAL Qdrant server (lode-qdrant's `tests/real_server/mod.rs` starts it on free
//! loopback ports with an API key and a temporary storage directory; the test fails when there
//! is no binary). A suite of the `lode` package's end-to-end tests (it needs the binary).

use crate::real_server;

use std::path::Path;
use std::process::{Command, Output};

use real_server::{RealQdrant, rest_get};

const KEY: &str = "test-key-7f3a";

fn lode_with_key(root: &Path, args: &[&str], url: &str, key: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lode"))
        .args(args)
        .args(["--root", root.to_str().unwrap()])
        .args(["--vectors", "qdrant", "--qdrant-url", url])
        .args(["--qdrant-api-key-env", "LODE_TEST_QDRANT_KEY"])
        .env("LODE_TEST_QDRANT_KEY", key)
        .env("LODE_DAEMON", "never")
        .env_remove("LODE_VECTORS")
        .env_remove("LODE_EMBEDDER")
        .env_remove("LODE_INDEX_DIR")
        .output()
        .unwrap()
}

fn lode(root: &Path, args: &[&str], url: &str) -> Output {
    lode_with_key(root, args, url, KEY)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The first line of `lode search` output that names a file.
fn first_hit(output: &Output) -> String {
    text(&output.stdout)
        .lines()
        .find(|l| l.contains(".rs") || l.contains(".py"))
        .unwrap_or_default()
        .to_string()
}

/// `"points_count":N` of a collection, as Qdrant's REST API reports it.
fn points_count(server: &RealQdrant, collection: &str) -> usize {
    let info = rest_get(server, &format!("/collections/{collection}"));
    let after = info
        .split_once("\"points_count\":")
        .unwrap_or_else(|| panic!("no points_count: {info}"))
        .1;
    let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().unwrap()
}

/// The names in `GET /collections`.
fn collections(server: &RealQdrant) -> Vec<String> {
    rest_get(server, "/collections")
        .split("\"name\":\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next().map(str::to_string))
        .collect()
}

#[test]
fn index_update_and_semantic_search_through_a_real_qdrant() {
    let mut server = RealQdrant::start_with_key(Some(KEY));
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
    let names = collections(&server);
    assert_eq!(
        names.len(),
        1,
        "one collection for the workspace: {names:?}"
    );
    let collection = &names[0];
    assert!(collection.starts_with("lode-"), "{collection}");
    // Two chunks and the metadata point.
    assert_eq!(points_count(&server, collection), 3);
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
    assert!(
        first_hit(&search).contains("src/color.py"),
        "{}",
        text(&search.stdout)
    );
    // The language filter reaches Qdrant's payload index.
    let search = lode(
        root.path(),
        &[
            "search",
            "--mode",
            "semantic",
            "--no-refresh",
            "--lang",
            "rust",
            "mix two colours",
        ],
        &server.url,
    );
    let out = text(&search.stdout);
    assert!(!out.contains("color.py"), "{out}");

    // An update and a deletion go through the next `lode index`.
    std::fs::write(
        root.path().join("src/color.py"),
        "def parse_timestamp(text):\n    \"\"\"Parse an ISO 8601 timestamp into seconds since the epoch.\"\"\"\n    return int(text)\n",
    )
    .unwrap();
    std::fs::remove_file(root.path().join("src/net.rs")).unwrap();
    let index = lode(root.path(), &["index"], &server.url);
    assert!(index.status.success(), "{}", text(&index.stderr));
    assert_eq!(points_count(&server, collection), 2);
    let search = lode(
        root.path(),
        &[
            "search",
            "--mode",
            "semantic",
            "--no-refresh",
            "parse a timestamp",
        ],
        &server.url,
    );
    assert!(search.status.success(), "{}", text(&search.stderr));
    let out = text(&search.stdout);
    assert!(first_hit(&search).contains("src/color.py"), "{out}");
    assert!(!out.contains("net.rs"), "{out}");

    // The server crashes (SIGKILL): lode says what is wrong and exits non-zero ...
    server.kill();
    let semantic = ["search", "--mode", "semantic", "parse a timestamp"];
    let search = lode(root.path(), &semantic, &server.url);
    assert!(!search.status.success(), "{}", text(&search.stdout));
    let stderr = text(&search.stderr);
    assert!(stderr.contains("cannot reach Qdrant"), "{stderr}");
    assert!(stderr.contains(&server.url), "{stderr}");
    // ... and once it is back on the same storage, everything is there again.
    server.restart();
    assert_eq!(points_count(&server, collection), 2);
    let search = lode(root.path(), &semantic, &server.url);
    assert!(search.status.success(), "{}", text(&search.stderr));
    assert!(
        first_hit(&search).contains("src/color.py"),
        "{}",
        text(&search.stdout)
    );
}

#[test]
fn a_wrong_api_key_is_a_clear_error_and_is_not_printed() {
    let server = RealQdrant::start_with_key(Some(KEY));
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("a.rs"), "fn a() {}\n").unwrap();
    let index = lode_with_key(root.path(), &["index"], &server.url, "wrong-key-91c2");
    assert!(!index.status.success());
    let stderr = text(&index.stderr);
    assert!(stderr.contains("check the API key"), "{stderr}");
    assert!(stderr.contains(&server.url), "{stderr}");
    assert!(!stderr.contains("wrong-key-91c2"), "{stderr}");
    assert!(!stderr.contains(KEY), "{stderr}");
    assert!(collections(&server).is_empty());
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

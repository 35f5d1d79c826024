//! End-to-end: headless Neovim (Debian's `neovim`, installed by scripts/install-test-tools.sh)
//! with editors/neovim/lode.lua drives the real `lode lsp`: workspace symbols, a definition,
//! and an unsaved edit visible to `workspace/symbol`.

mod support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::write;

#[test]
fn neovim_finds_symbols_definitions_and_unsaved_text() {
    if Command::new("nvim").arg("--version").output().is_err() {
        assert!(
            std::env::var_os("CI").is_none(),
            "nvim is missing: run scripts/install-test-tools.sh"
        );
        eprintln!("skipping: nvim is not installed (run scripts/install-test-tools.sh)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir(root.join(".git")).unwrap();
    write(
        &root,
        "src/store.rs",
        "pub struct Store;\n\npub fn helper() -> u32 {\n    1\n}\n",
    );
    write(
        &root,
        "src/other.rs",
        "pub fn helper() -> u32 {\n    2\n}\n",
    );
    write(
        &root,
        "src/main.rs",
        "mod other;\nmod store;\n\nuse crate::store::helper;\n\nfn main() {\n    helper();\n}\n",
    );
    let out = root.join("nvim-result.json");
    let repository = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut child = Command::new("nvim")
        .args(["--headless", "--clean", "-c", "filetype on", "-c"])
        .arg(format!(
            "luafile {}",
            repository.join("tests/lsp_neovim.lua").display()
        ))
        .current_dir(&root)
        .env("LODE_TEST_ROOT", &root)
        .env("LODE_TEST_OUT", &out)
        .env("LODE_BIN", env!("CARGO_BIN_EXE_lode"))
        .env("LODE_EDITORS", repository.join("editors"))
        .env_remove("LODE_INDEX_DIR")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("nvim starts");
    // The script exits by itself (xpcall); this only keeps a broken setup from hanging.
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("nvim did not finish");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let result = std::fs::read_to_string(&out).unwrap_or_default();
    assert!(status.success(), "nvim failed: {result}");
    let result: serde_json::Value = serde_json::from_str(&result).expect("the script wrote JSON");
    // The struct, then the module `store` declared in main.rs (a case-insensitive match).
    assert_eq!(
        result["symbols"],
        serde_json::json!(["Store@store.rs", "store@main.rs"]),
        "{result}"
    );
    // Imported store.rs before other.rs.
    assert_eq!(
        result["definitions"],
        serde_json::json!(["store.rs:2", "other.rs:0"]),
        "{result}"
    );
    assert_eq!(
        result["unsaved"],
        serde_json::json!(["typed_in_neovim@main.rs"]),
        "{result}"
    );
}

//! End-to-end: headless Neovim (Debian's `neovim`, installed by scripts/install-test-tools.sh)
//! with editors/neovim/lode.lua drives the real `lode lsp`: workspace symbols, a definition,
//! an unsaved edit visible to `workspace/symbol`, and a "fix this diagnostic" code action run by
//! the agent against the scripted LLM server (in process, over HTTP) whose `workspace/applyEdit`
//! Neovim's own handler applies to the buffer.

use crate::support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use lode_llm_script::{Script, ScriptedServer};
use support::{fixtures, write};

#[test]
fn neovim_finds_symbols_definitions_unsaved_text_and_applies_a_code_action() {
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
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let script = Script::load(&fixtures().join("llm/lsp_neovim.json")).unwrap();
    let server = runtime.block_on(ScriptedServer::start(script)).unwrap();
    write(
        &root,
        ".lode/config.toml",
        &format!(
            "[[llm.providers]]\nname = \"scripted\"\nkind = \"openai\"\nbase_url = \"{}\"\n\
             model = \"scripted-model\"\ncontext_window = 32000\nmax_tokens = 2000\n\n\
             [lsp.diagnostics]\nenabled = false\n",
            server.openai_base_url()
        ),
    );
    let home = tempfile::tempdir().unwrap();
    let out = root.join("nvim-result.json");
    let repository = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut child = Command::new("nvim")
        .args(["--headless", "--clean", "-c", "filetype on", "-c"])
        .arg(format!(
            "luafile {}",
            repository.join("tests/e2e/lsp_neovim.lua").display()
        ))
        .current_dir(&root)
        .env("LODE_TEST_ROOT", &root)
        .env("LODE_TEST_OUT", &out)
        .env("LODE_BIN", env!("CARGO_BIN_EXE_lode"))
        .env("LODE_EDITORS", repository.join("editors"))
        .env_remove("LODE_INDEX_DIR")
        .env("LODE_CONFIG", support::workspace_config_env(&root))
        .env("XDG_CONFIG_HOME", home.path().join("config"))
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
    // The agent edited the buffer's text (with the unsaved line), Neovim applied it to the
    // buffer, the disk changed only when Neovim wrote the buffer.
    let on_disk =
        "mod other;\nmod store;\n\nuse crate::store::helper;\n\nfn main() {\n    helper();\n}";
    let fixed = "mod other;\nmod store;\n\nuse crate::store::helper;\n\nfn main() {\n    let _ = helper();\n}\nfn typed_in_neovim() {}";
    assert_eq!(
        result["buffer"],
        serde_json::json!(fixed.split('\n').collect::<Vec<_>>()),
        "{result}"
    );
    assert_eq!(result["disk_before_write"], on_disk, "{result}");
    assert_eq!(result["disk_after_write"], fixed, "{result}");
    assert!(
        server.unused_turns().is_empty(),
        "{:?}",
        server.unused_turns()
    );
}

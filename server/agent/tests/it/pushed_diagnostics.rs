//! `Agent::push_diagnostics` on a real agent: only files inside the workspace are accepted.

use std::path::PathBuf;

use lode_agent::{Agent, AgentOptions};
use lode_tools::diagnostics::{Diagnostic, FileDiagnostics, Severity};

fn pushed(path: PathBuf) -> FileDiagnostics {
    FileDiagnostics {
        path,
        diagnostics: vec![Diagnostic {
            severity: Severity::Error,
            line: 1,
            column: 1,
            message: "pushed".into(),
            code: None,
            source: Some("editor-ls".into()),
        }],
        checked_by: Some("editor".into()),
        error: None,
    }
}

#[test]
fn pushes_outside_the_workspace_are_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("src/lib.rs"), "pub fn f() {}\n").unwrap();
    std::fs::create_dir_all(root.join(".lode")).unwrap();
    std::fs::write(
        root.join(".lode/config.toml"),
        "[[llm.providers]]\nname = \"unused\"\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\n",
    )
    .unwrap();
    let options = AgentOptions {
        config_file: Some(root.join(".lode/config.toml")),
        ..AgentOptions::default()
    };
    let agent = Agent::open(&root, options).unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("x.rs"), "").unwrap();

    let accepted = agent.push_diagnostics(vec![
        pushed(root.join("src/lib.rs")),
        // Not yet on disk (a file the editor has open but not saved) still counts.
        pushed(root.join("src/new.rs")),
        pushed(outside.path().join("x.rs")),
        pushed(root.join("src/../../escape.rs")),
        pushed(PathBuf::from("src/lib.rs")),
    ]);
    assert_eq!(accepted, 2);
}

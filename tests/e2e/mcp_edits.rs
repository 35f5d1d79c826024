//! `lode mcp --allow-edits` driven by rmcp's client over the real binary: the edits by symbol
//! are offered only with the flag, change exactly the named definition, answer with the diff
//! and the new lines, list candidates for an ambiguous name, and never touch a file outside
//! the workspace or under `.git/` or `.lode/`.

use crate::support;

use std::path::Path;

use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult};
use rmcp::service::{RunningService, ServiceError};
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

const SHAPES_PY: &str = "import math\n\n\nclass Circle:\n    def area(self):\n        return math.pi * self.r ** 2\n\n\nclass Square:\n    def area(self):\n        return self.side ** 2\n";

const LIB_RS: &str = "pub struct Registry;\n\nimpl Registry {\n    pub fn greet_all(&self) -> String {\n        String::from(\"a\")\n    }\n}\n\npub trait Greeter {\n    fn greet_all(&self) -> String;\n}\n\nimpl Greeter for Registry {\n    fn greet_all(&self) -> String {\n        String::from(\"b\")\n    }\n}\n";

/// A workspace with a Python and a Rust file, a `.git/` and a `.lode/`, beside an `outside/`.
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    for (path, text) in [
        ("src/shapes.py", SHAPES_PY),
        ("src/lib.rs", LIB_RS),
        (".git/config", "[core]\n"),
        (".git/hooks/hook.py", "def run():\n    pass\n"),
        (".lode/config.toml", "# lode\n"),
        ("vendor/x/.git/hooks/pre.py", "def run():\n    pass\n"),
    ] {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    std::fs::create_dir_all(dir.path().join("outside")).unwrap();
    std::fs::write(dir.path().join("outside/evil.py"), "def run():\n    pass\n").unwrap();
    std::os::unix::fs::symlink(dir.path().join("outside/evil.py"), root.join("src/link.py"))
        .unwrap();
    dir
}

async fn connect(root: &Path, allow_edits: bool) -> RunningService<RoleClient, ()> {
    let mut command = tokio::process::Command::new(support::lode_bin());
    command.arg("--root").arg(root).arg("mcp");
    if allow_edits {
        command.arg("--allow-edits");
    }
    command.current_dir(root).env_remove("LODE_INDEX_DIR");
    let transport = TokioChildProcess::new(command).expect("start lode mcp");
    ().serve(transport)
        .await
        .expect("MCP handshake with lode mcp")
}

async fn call(
    client: &RunningService<RoleClient, ()>,
    tool: &str,
    arguments: Value,
) -> Result<CallToolResult, ServiceError> {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object");
    };
    let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
    match client.peer().call_tool_once(params).await? {
        CallToolResponse::Complete(result) => Ok(result),
        _ => panic!("lode answers every call at once"),
    }
}

fn text_of(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|text| text.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn without_the_flag_no_edit_tool_is_offered_or_runs() {
    let dir = workspace();
    let root = std::fs::canonicalize(dir.path().join("repo")).unwrap();
    let client = connect(&root, false).await;
    let tools = client.peer().list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "search",
            "map",
            "symbols",
            "references",
            "read_file",
            "hover",
            "definition",
            "call_hierarchy"
        ]
    );
    let refused = call(
        &client,
        "replace_symbol_body",
        json!({"symbol": "src/shapes.py:Square/area", "text": "def area(self):\n    return 0"}),
    )
    .await
    .unwrap_err();
    assert!(refused.to_string().contains("--allow-edits"), "{refused}");
    assert_eq!(
        std::fs::read_to_string(root.join("src/shapes.py")).unwrap(),
        SHAPES_PY
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn with_the_flag_a_client_edits_by_symbol() {
    let dir = workspace();
    let root = std::fs::canonicalize(dir.path().join("repo")).unwrap();
    let client = connect(&root, true).await;
    let tools = client.peer().list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "search",
            "map",
            "symbols",
            "references",
            "read_file",
            "hover",
            "definition",
            "call_hierarchy",
            "replace_symbol_body",
            "insert_before_symbol",
            "insert_after_symbol",
            "rename"
        ]
    );
    let replace = &tools[8];
    assert_eq!(
        replace.annotations.as_ref().and_then(|a| a.read_only_hint),
        Some(false)
    );
    assert_eq!(replace.input_schema["required"], json!(["symbol", "text"]));
    assert!(
        replace
            .description
            .as_deref()
            .is_some_and(|d| d.contains("signature included")),
        "{:?}",
        replace.description
    );

    let result = call(
        &client,
        "replace_symbol_body",
        json!({"symbol": "src/shapes.py:Square/area", "text": "def area(self):\n    return self.side * self.side\n"}),
    )
    .await
    .unwrap();
    assert_eq!(result.is_error, Some(false), "{}", text_of(&result));
    assert_eq!(
        std::fs::read_to_string(root.join("src/shapes.py")).unwrap(),
        SHAPES_PY.replace("self.side ** 2", "self.side * self.side")
    );
    let text = text_of(&result);
    assert!(
        text.starts_with("Replaced src/shapes.py:Square/area (lines 10-11)"),
        "{text}"
    );
    assert!(
        text.contains("+        return self.side * self.side"),
        "{text}"
    );
    assert_eq!(result.structured_content.unwrap()["lines"], json!([10, 11]));

    // Two impl blocks: the candidates come back as an error result, and nothing changes.
    let result = call(
        &client,
        "replace_symbol_body",
        json!({"symbol": "src/lib.rs:Registry/greet_all", "text": "fn greet_all(&self) -> String { todo!() }"}),
    )
    .await
    .unwrap();
    assert_eq!(result.is_error, Some(true));
    let text = text_of(&result);
    assert!(
        text.contains("names 2 definitions") && text.contains("src/lib.rs:14:5"),
        "{text}"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("src/lib.rs")).unwrap(),
        LIB_RS
    );

    let result = call(
        &client,
        "insert_after_symbol",
        json!({"symbol": "src/lib.rs:impl Greeter for Registry/greet_all", "text": "fn count(&self) -> usize {\n    2\n}"}),
    )
    .await
    .unwrap();
    assert_eq!(result.is_error, Some(false), "{}", text_of(&result));
    assert_eq!(
        std::fs::read_to_string(root.join("src/lib.rs")).unwrap(),
        LIB_RS.replace(
            "        String::from(\"b\")\n    }\n",
            "        String::from(\"b\")\n    }\n\n    fn count(&self) -> usize {\n        2\n    }\n"
        )
    );
    // The index sees the new method at once.
    let result = call(&client, "symbols", json!({"name": "count"}))
        .await
        .unwrap();
    assert!(
        text_of(&result).contains("src/lib.rs:18"),
        "{}",
        text_of(&result)
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn edits_never_leave_the_workspace_or_enter_git_and_lode() {
    let dir = workspace();
    let root = std::fs::canonicalize(dir.path().join("repo")).unwrap();
    let outside = dir.path().join("outside/evil.py");
    let client = connect(&root, true).await;
    let watched = [
        outside.clone(),
        root.join(".git/config"),
        root.join(".git/hooks/hook.py"),
        root.join(".lode/config.toml"),
        root.join("vendor/x/.git/hooks/pre.py"),
    ];
    let before: Vec<Vec<u8>> = watched.iter().map(|p| std::fs::read(p).unwrap()).collect();
    let attacks = [
        "../outside/evil.py:run".to_owned(),
        format!("{}:run", outside.display()),
        "src/link.py:run".to_owned(),
        ".git/config:core".to_owned(),
        ".git/hooks/hook.py:run".to_owned(),
        ".lode/config.toml:1:1".to_owned(),
        "vendor/x/.git/hooks/pre.py:run".to_owned(),
        "src/../.git/hooks/hook.py:run".to_owned(),
    ];
    for (tool, symbol) in ["replace_symbol_body", "insert_after_symbol"]
        .iter()
        .flat_map(|tool| attacks.iter().map(move |symbol| (*tool, symbol)))
    {
        let outcome = call(
            &client,
            tool,
            json!({"symbol": symbol, "text": "import os\nos.system('touch /tmp/x')\n"}),
        )
        .await;
        match outcome {
            Err(error) => {
                let said = error.to_string();
                assert!(
                    said.contains("outside the workspace") || said.contains("never edits"),
                    "{tool} {symbol}: {said}"
                );
            }
            Ok(result) => panic!("{tool} {symbol} ran: {}", text_of(&result)),
        }
    }
    let after: Vec<Vec<u8>> = watched.iter().map(|p| std::fs::read(p).unwrap()).collect();
    assert_eq!(before, after);
    client.cancel().await.unwrap();
}

//! `lode mcp`'s type-resolved navigation, driven by rmcp's client over the real binary on
//! `fixtures/agent/shapes` (two classes with an `area` method): `references` by `symbol`,
//! `hover`, `definition` and `call_hierarchy` answered by the real pyright language server
//! (from target/test-tools, started on the first question and confined by the sandbox);
//! `rename` offered only with `--allow-edits`; malformed arguments answered with errors; and
//! without a Python server, the index answering by name and `rename` saying it needs one.

use crate::support;

use std::path::{Path, PathBuf};

use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult};
use rmcp::service::{RunningService, ServiceError};
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use support::{copy_tree, fixtures, pyright_test_tools};

/// The shapes fixture in a plain (not hidden) directory with `python` as the Python server
/// command line (empty: none) and `sandbox` appended to its config.
fn workspace(python: &str, sandbox: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    std::fs::create_dir(&root).unwrap();
    copy_tree(&fixtures().join("agent/shapes"), &root);
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::write(root.join(".git/config"), "[core]\n").unwrap();
    std::fs::create_dir_all(root.join(".lode")).unwrap();
    std::fs::write(
        root.join(".lode/config.toml"),
        format!(
            "[lsp.diagnostics]\ndefault_servers = false\ncommands = false\n\
             servers = {{ python = [{python}] }}\n{sandbox}"
        ),
    )
    .unwrap();
    let root = std::fs::canonicalize(&root).unwrap();
    (dir, root)
}

/// The workspace with pyright, or `None` when it is not installed.
fn pyright_workspace() -> Option<(tempfile::TempDir, PathBuf)> {
    let tools = pyright_test_tools()?;
    let pyright = tools.join("node_modules/.bin/pyright-langserver");
    Some(workspace(
        &format!("{:?}, \"--stdio\"", pyright.display().to_string()),
        // The server runs in the sandbox, which reads nothing outside the workspace and the
        // usual toolchains unless told: the test's tools live here.
        &format!("\n[sandbox]\nread = [{:?}]\n", tools.display().to_string()),
    ))
}

async fn connect(root: &Path, allow_edits: bool) -> RunningService<RoleClient, ()> {
    let home = root.parent().unwrap().join("home");
    let mut command = tokio::process::Command::new(support::lode_bin());
    command.arg("--root").arg(root).arg("mcp");
    if allow_edits {
        command.arg("--allow-edits");
    }
    command
        .current_dir(root)
        .env_remove("LODE_INDEX_DIR")
        .env("LODE_CONFIG", support::workspace_config_env(root))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("HOME", &home);
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

fn read(root: &Path, file: &str) -> String {
    std::fs::read_to_string(root.join(file)).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_navigates_by_type_through_pyright_and_renames_only_with_the_flag() {
    let Some((_dir, root)) = pyright_workspace() else {
        return;
    };
    let client = connect(&root, false).await;
    let names: Vec<String> = client
        .peer()
        .list_all_tools()
        .await
        .unwrap()
        .iter()
        .map(|tool| tool.name.to_string())
        .collect();
    assert!(
        ["hover", "definition", "call_hierarchy"]
            .iter()
            .all(|name| names.contains(&name.to_string())),
        "{names:?}"
    );
    assert!(!names.contains(&"rename".to_owned()), "{names:?}");

    let started = std::time::Instant::now();
    let result = call(
        &client,
        "references",
        json!({"symbol": "shapes.py:Circle/area"}),
    )
    .await
    .unwrap();
    let first = started.elapsed();
    let text = text_of(&result);
    eprintln!("{text}");
    assert!(text.contains("resolved_by: pyright"), "{text}");
    assert!(
        text.contains("7:14  total  return c.area() + s.area()"),
        "{text}"
    );
    assert!(!text.contains("7:25"), "Square's call is not one: {text}");
    assert_eq!(
        result.structured_content.as_ref().unwrap()["resolved_by"],
        "pyright"
    );
    // `name` still matches by name, from the index.
    let by_name = call(&client, "references", json!({"name": "area"}))
        .await
        .unwrap();
    assert_eq!(
        by_name.structured_content.unwrap()["references"]
            .as_array()
            .unwrap()
            .len(),
        3
    );

    let started = std::time::Instant::now();
    let hover = text_of(
        &call(&client, "hover", json!({"symbol": "shapes.py:Circle/area"}))
            .await
            .unwrap(),
    );
    let warm = started.elapsed();
    assert!(hover.contains("resolved_by: pyright"), "{hover}");
    assert!(hover.contains("-> float"), "{hover}");
    let definition = text_of(
        &call(&client, "definition", json!({"symbol": "main.py:7:25"}))
            .await
            .unwrap(),
    );
    assert!(definition.contains("16:9  Square/area"), "{definition}");
    let callers = text_of(
        &call(
            &client,
            "call_hierarchy",
            json!({"symbol": "shapes.py:Circle/area", "direction": "incoming"}),
        )
        .await
        .unwrap(),
    );
    assert!(callers.contains("resolved_by: pyright"), "{callers}");
    assert!(callers.contains("total  4:5  calls at 7:14"), "{callers}");
    eprintln!("lode mcp through pyright: first references {first:?}, a warm hover {warm:?}");

    // Without --allow-edits, rename is refused and nothing changes.
    let refused = call(
        &client,
        "rename",
        json!({"symbol": "shapes.py:Circle/area", "new_name": "surface"}),
    )
    .await
    .unwrap_err();
    assert!(refused.to_string().contains("--allow-edits"), "{refused}");
    assert!(read(&root, "main.py").contains("c.area()"));
    client.cancel().await.unwrap();

    let client = connect(&root, true).await;
    let names: Vec<String> = client
        .peer()
        .list_all_tools()
        .await
        .unwrap()
        .iter()
        .map(|tool| tool.name.to_string())
        .collect();
    assert!(names.contains(&"rename".to_owned()), "{names:?}");
    let renamed = call(
        &client,
        "rename",
        json!({"symbol": "shapes.py:Circle/area", "new_name": "surface"}),
    )
    .await
    .unwrap();
    let text = text_of(&renamed);
    eprintln!("{text}");
    assert!(text.contains("3 edits in 2 files"), "{text}");
    assert_eq!(
        read(&root, "main.py"),
        std::fs::read_to_string(fixtures().join("agent/shapes/main.py"))
            .unwrap()
            .replace("c.area()", "c.surface()")
            .replace("Circle(3.0).area()", "Circle(3.0).surface()")
    );
    let shapes = read(&root, "shapes.py");
    assert!(shapes.contains("def surface(self) -> float:"), "{shapes}");
    assert!(
        shapes.contains("def area(self) -> float:\n        return self.side"),
        "Square keeps its area: {shapes}"
    );
    // A symbol under .git/ is refused before any server is asked.
    let refused = call(
        &client,
        "rename",
        json!({"symbol": ".git/config:1:2", "new_name": "x"}),
    )
    .await;
    let refused = match refused {
        Ok(result) => {
            assert_eq!(result.is_error, Some(true), "{}", text_of(&result));
            text_of(&result)
        }
        Err(error) => error.to_string(),
    };
    assert_eq!(read(&root, ".git/config"), "[core]\n", "{refused}");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_navigation_arguments_are_errors_not_answers() {
    let (_dir, root) = workspace("", "");
    let client = connect(&root, true).await;
    let cases = [
        ("hover", json!({})),
        ("hover", json!({"symbol": 3})),
        ("hover", json!({"symbol": "  "})),
        ("definition", json!({"symbol": "main.py:total", "extra": 1})),
        (
            "call_hierarchy",
            json!({"symbol": "main.py:total", "direction": "up"}),
        ),
        (
            "call_hierarchy",
            json!({"symbol": "main.py:total", "limit": 0}),
        ),
        (
            "references",
            json!({"name": "area", "symbol": "shapes.py:Circle/area"}),
        ),
        ("references", json!({})),
        ("rename", json!({"symbol": "shapes.py:Circle/area"})),
        (
            "rename",
            json!({"symbol": "shapes.py:Circle/area", "new_name": "a b"}),
        ),
        (
            "rename",
            json!({"symbol": "../outside.py:f", "new_name": "g"}),
        ),
        ("hover", json!({"symbol": "x".repeat(100_000)})),
    ];
    for (tool, arguments) in cases {
        let shown = arguments.to_string().chars().take(120).collect::<String>();
        match call(&client, tool, arguments).await {
            Err(error) => eprintln!("{tool} {shown}: {error}"),
            Ok(result) => assert_eq!(
                result.is_error,
                Some(true),
                "{tool} {shown} answered: {}",
                text_of(&result)
            ),
        }
    }
    // The server is still there and answers.
    let fine = call(&client, "hover", json!({"symbol": "shapes.py:Circle/area"}))
        .await
        .unwrap();
    assert!(text_of(&fine).contains("resolved_by: index"));
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_python_server_the_index_answers_and_rename_needs_one() {
    let (_dir, root) = workspace("", "");
    let client = connect(&root, true).await;
    let result = call(
        &client,
        "references",
        json!({"symbol": "shapes.py:Circle/area"}),
    )
    .await
    .unwrap();
    let text = text_of(&result);
    assert!(text.contains("resolved_by: index"), "{text}");
    assert!(
        text.contains("7:25"),
        "by name, Square's call is one: {text}"
    );
    // A file changed after that answer: the index answers again only once it has seen it.
    std::fs::write(
        root.join("later.py"),
        "from shapes import Circle\n\n\ndef later() -> float:\n    return Circle(4.0).area()\n",
    )
    .unwrap();
    let again = text_of(
        &call(
            &client,
            "references",
            json!({"symbol": "shapes.py:Circle/area"}),
        )
        .await
        .unwrap(),
    );
    assert!(again.contains("resolved_by: index"), "{again}");
    assert!(again.contains("later.py"), "the new file's call: {again}");
    let callers = text_of(
        &call(
            &client,
            "call_hierarchy",
            json!({"symbol": "shapes.py:Circle/area"}),
        )
        .await
        .unwrap(),
    );
    assert!(callers.contains("resolved_by: index"), "{callers}");
    let rename = call(
        &client,
        "rename",
        json!({"symbol": "shapes.py:Circle/area", "new_name": "surface"}),
    )
    .await
    .unwrap();
    assert_eq!(rename.is_error, Some(true));
    assert!(
        text_of(&rename).contains("rename needs a language server"),
        "{}",
        text_of(&rename)
    );
    assert!(read(&root, "main.py").contains("c.area()"));
    client.cancel().await.unwrap();
}

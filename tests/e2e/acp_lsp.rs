//! The ACP LSP extension end to end: the real `lode acp` on stdio, an editor written with the
//! official TypeScript SDK (`tests/e2e/acp_lsp.mjs`, run on acpx's Node 22 with the SDK that
//! `scripts/install-test-tools.sh` installs into target/test-tools/acp-sdk) that offers
//! `"lsp": true` and implements the `_lsp/*` methods, and a scripted model
//! (`fixtures/llm/acp_lsp.json`) that calls `references`, `hover` and `diagnostics` on the
//! shapes fixture. The editor's language server is played by the script (no IDE can run
//! here): it answers with fixed, 1-based locations, or fails, or never answers. The workspace has
//! no Python server of its own, so after the editor the index is the next provider.
//!
//! The raw-wire tests check the out-of-order, unknown, malformed and oversized inputs.
//! Without Node or the SDK the TypeScript tests say so and pass, except under CI, where they fail.

use crate::acp_support as support;

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use serde_json::{Value, json};
use support::{PATIENCE, Wire, explain, lode, repo_root};

/// Node 22 and the SDK's npm prefix, or `None` (skipping) when they are not installed.
fn tools() -> Option<(PathBuf, PathBuf)> {
    let tools = repo_root().join("target/test-tools");
    let node = std::env::var_os("LODE_NODE")
        .map(PathBuf::from)
        .unwrap_or_else(|| tools.join("acpx/node_modules/.bin/node"));
    let sdk = std::env::var_os("LODE_ACP_SDK")
        .map(PathBuf::from)
        .unwrap_or_else(|| tools.join("acp-sdk"));
    let installed = sdk.join("node_modules/@agentclientprotocol/sdk/package.json");
    if node.exists() && installed.exists() {
        return Some((node, sdk));
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "Node 22 ({}) or @agentclientprotocol/sdk ({}) is missing; run scripts/install-test-tools.sh",
        node.display(),
        installed.display()
    );
    eprintln!(
        "skipping: Node 22 or @agentclientprotocol/sdk not installed (run scripts/install-test-tools.sh)"
    );
    None
}

/// The shapes fixture with a `.git` marker and a config whose model is the scripted server,
/// without lode's own Python server, and `acp_lsp` as its `[acp.lsp]` section.
struct Shapes {
    _dir: tempfile::TempDir,
    root: PathBuf,
    _llm: support::LlmServer,
}

fn shapes(acp_lsp: &str) -> Shapes {
    let llm = support::llm_server("acp_lsp.json");
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap().join("ws");
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::create_dir_all(root.join(".lode")).unwrap();
    for file in ["main.py", "shapes.py"] {
        std::fs::copy(
            repo_root().join("fixtures/agent/shapes").join(file),
            root.join(file),
        )
        .unwrap();
    }
    std::fs::write(
        root.join(".lode/config.toml"),
        format!(
            "[[llm.providers]]\nname = \"scripted\"\nkind = \"openai\"\nbase_url = \"{}\"\n\
             model = \"scripted-1\"\ncontext_window = 32000\n\n\
             [lsp.diagnostics]\ndefault_servers = false\ncommands = false\n\n[acp.lsp]\n{acp_lsp}\n",
            llm.base_url
        ),
    )
    .unwrap();
    Shapes {
        _dir: dir,
        root,
        _llm: llm,
    }
}

/// Runs the editor script in `mode`; returns its output and the JSON lines it printed.
async fn run_editor(
    (node, sdk): &(PathBuf, PathBuf),
    root: &Path,
    mode: &str,
) -> (Output, Vec<Value>) {
    let started = std::time::Instant::now();
    let mut command = tokio::process::Command::new(node);
    command
        .arg(repo_root().join("tests/e2e/acp_lsp.mjs"))
        .arg(sdk)
        .arg(lode())
        .arg(root)
        .arg(mode)
        .env("LODE_CONFIG", support::workspace_config_env(root))
        .env("XDG_CONFIG_HOME", root.join(".no-user-config"))
        .kill_on_drop(true);
    let output = tokio::time::timeout(PATIENCE * 2, command.output())
        .await
        .expect("the editor script finished in time")
        .expect("node runs");
    eprintln!("editor script ({mode}) took {:?}", started.elapsed());
    let lines = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| {
            serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("the editor printed non-JSON {line:?}: {e}"))
        })
        .collect();
    (output, lines)
}

fn step<'a>(lines: &'a [Value], name: &str, output: &Output) -> &'a Value {
    lines
        .iter()
        .find(|line| line["step"] == name)
        .unwrap_or_else(|| panic!("no {name} step; {}", explain(output)))
}

/// The model's reply to each prompt, in order.
fn replies(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .filter(|line| line["step"] == "prompt")
        .map(|line| line["text"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The `_lsp/*` requests lode sent, as `(method, params)`.
fn requests(lines: &[Value], output: &Output) -> Vec<(String, Value)> {
    step(lines, "requests", output)["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["method"].as_str().unwrap().to_owned(),
                r["params"].clone(),
            )
        })
        .collect()
}

fn uri(root: &Path, file: &str) -> String {
    format!("file://{}", root.join(file).display())
}

#[tokio::test]
async fn the_editors_language_server_answers_navigation_first() {
    let Some(tools) = tools() else { return };
    let workspace = shapes("timeout_ms = 20000");
    let (output, lines) = run_editor(&tools, &workspace.root, "answer").await;
    assert!(output.status.success(), "{}", explain(&output));

    // Negotiation: lode names the methods it calls and the notifications it takes.
    let init = step(&lines, "initialize", &output);
    let offered = &init["agentCapabilities"]["_meta"]["lsp"];
    for method in [
        "lsp/hover",
        "lsp/definition",
        "lsp/references",
        "lsp/diagnostics",
    ] {
        assert!(
            offered["methods"]
                .as_array()
                .unwrap()
                .contains(&json!(method)),
            "{offered}"
        );
    }
    assert_eq!(
        offered["notifications"],
        json!(["lsp/publishDiagnostics", "lsp/didSave"])
    );

    // The tools' answers came from the editor, and the pushed diagnostics reached the tool.
    let replies = replies(&lines);
    assert_eq!(replies.len(), 3, "{}", explain(&output));
    assert!(replies[0].ends_with("REFERENCES-FROM-IDE"), "{replies:?}");
    assert!(replies[1].ends_with("HOVER-FROM-IDE"), "{replies:?}");
    assert!(replies[2].ends_with("DIAGNOSTICS-FROM-IDE"), "{replies:?}");

    // The editor was asked at 1-based positions: the name of `Circle.area`'s definition
    // (shapes.py 7:9) and the call site the model named (main.py 7:14).
    let asked = requests(&lines, &output);
    let root = &workspace.root;
    let references = asked
        .iter()
        .find(|(method, _)| method == "_lsp/references")
        .unwrap_or_else(|| panic!("no _lsp/references in {asked:?}"));
    assert_eq!(references.1["uri"], uri(root, "shapes.py"));
    assert_eq!(
        (
            references.1["line"].clone(),
            references.1["character"].clone()
        ),
        (json!(7), json!(9))
    );
    assert_eq!(references.1["include_declaration"], true);
    assert!(references.1["sessionId"].is_string(), "{}", references.1);
    let hover = asked
        .iter()
        .find(|(method, _)| method == "_lsp/hover")
        .unwrap_or_else(|| panic!("no _lsp/hover in {asked:?}"));
    assert_eq!(hover.1["uri"], uri(root, "main.py"));
    assert_eq!(
        (hover.1["line"].clone(), hover.1["character"].clone()),
        (json!(7), json!(14))
    );

    // A location outside the workspace is listed, but the file is never read into the result.
    let shown = step(&lines, "toolCalls", &output)["updates"].to_string();
    assert!(shown.contains("/etc/passwd"), "{shown}");
    assert!(
        shown.contains("references to shapes.py:Circle/area: 4 in 3 files (resolved_by: ide)"),
        "the result's text is in the updates: {shown}"
    );
    assert!(
        !shown.contains("root:"),
        "the tool read a file outside the workspace: {shown}"
    );

    // `_lsp/didSave` made lode ask the editor for the saved file's diagnostics.
    let pulled = asked
        .iter()
        .find(|(method, _)| method == "_lsp/diagnostics")
        .unwrap_or_else(|| panic!("no _lsp/diagnostics after didSave in {asked:?}"));
    assert_eq!(pulled.1["uri"], uri(root, "main.py"));
}

#[tokio::test]
async fn an_editor_that_fails_leaves_the_answer_to_the_index() {
    let Some(tools) = tools() else { return };
    let workspace = shapes("timeout_ms = 20000");
    let (output, lines) = run_editor(&tools, &workspace.root, "error").await;
    assert!(output.status.success(), "{}", explain(&output));
    let replies = replies(&lines);
    assert_eq!(replies.len(), 3, "{}", explain(&output));
    assert!(replies[0].ends_with("REFERENCES-FROM-INDEX"), "{replies:?}");
    assert!(replies[1].ends_with("HOVER-FROM-INDEX"), "{replies:?}");
    // The editor was asked before the index answered.
    let asked: Vec<String> = requests(&lines, &output)
        .into_iter()
        .map(|(m, _)| m)
        .collect();
    assert!(asked.contains(&"_lsp/references".to_owned()), "{asked:?}");
    assert!(asked.contains(&"_lsp/hover".to_owned()), "{asked:?}");
}

#[tokio::test]
async fn an_editor_that_never_answers_times_out_to_the_index() {
    let Some(tools) = tools() else { return };
    let workspace = shapes("timeout_ms = 300");
    let (output, lines) = run_editor(&tools, &workspace.root, "hang").await;
    assert!(output.status.success(), "{}", explain(&output));
    let replies = replies(&lines);
    assert!(replies[0].ends_with("REFERENCES-FROM-INDEX"), "{replies:?}");
    assert!(replies[1].ends_with("HOVER-FROM-INDEX"), "{replies:?}");
}

/// `lode acp` on the raw wire with its stderr collected.
struct RawAcp {
    wire: Wire,
    stderr: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl RawAcp {
    fn start(root: &Path) -> RawAcp {
        use tokio::io::AsyncBufReadExt;
        let mut child = support::acp_command(root, support::workspace_config_env(root))
            .stderr(Stdio::piped())
            .spawn()
            .expect("lode acp starts");
        let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
        let stderr = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let collected = stderr.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                eprintln!("[lode acp] {line}");
                collected.lock().unwrap().push(line);
            }
        });
        RawAcp {
            wire: Wire::new(child),
            stderr,
        }
    }

    /// Waits (bounded) for a stderr line containing every one of `parts`.
    async fn logged(&self, parts: &[&str]) -> String {
        let found = tokio::time::timeout(PATIENCE, async {
            loop {
                if let Some(line) = self
                    .stderr
                    .lock()
                    .unwrap()
                    .iter()
                    .find(|line| parts.iter().all(|part| line.contains(part)))
                {
                    return line.clone();
                }
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        })
        .await;
        found.unwrap_or_else(|_| {
            panic!(
                "lode acp never logged {parts:?}; stderr:\n{}",
                self.stderr.lock().unwrap().join("\n")
            )
        })
    }

    async fn notify(&mut self, method: &str, params: Value) {
        let message = json!({"jsonrpc": "2.0", "method": method, "params": params});
        self.wire.send_raw(&message.to_string()).await;
    }
}

#[tokio::test]
async fn out_of_order_unknown_malformed_and_oversized_lsp_messages_get_clear_answers() {
    let workspace = shapes("");
    let root = workspace.root.clone();
    let mut acp = RawAcp::start(&root);
    let shapes_uri = uri(&root, "shapes.py");
    let one = json!({"range": {"start": {"line": 1, "character": 1}, "end": {"line": 1, "character": 2}}, "message": "m"});

    // Before initialize: a push is ignored, and the log says why.
    acp.notify(
        "_lsp/publishDiagnostics",
        json!({"uri": shapes_uri, "diagnostics": [one]}),
    )
    .await;
    acp.logged(&["ignored _lsp/publishDiagnostics", "not negotiated"])
        .await;

    // A client that does not offer the extension gets no `_meta.lsp` and its pushes are ignored.
    let init = acp.wire.initialize(1).await;
    assert!(
        init["result"]["agentCapabilities"]["_meta"]["lsp"].is_null(),
        "{init}"
    );

    // With the offer, the answer names the methods.
    let init = acp
        .wire
        .request(
            2,
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {"_meta": {"lsp": true}}}),
        )
        .await;
    assert_eq!(
        init["result"]["agentCapabilities"]["_meta"]["lsp"]["methods"][0], "lsp/hover",
        "{init}"
    );

    // Requests lode does not serve are refused with what to do instead.
    for (id, method, says) in [
        (3, "_lsp/hover", "lode sends to the editor"),
        (4, "_lsp/didSave", "is a notification"),
        (5, "_lsp/frobnicate", "no method _lsp/frobnicate"),
    ] {
        let answer = acp
            .wire
            .request(id, method, json!({"uri": shapes_uri}))
            .await;
        assert_eq!(answer["error"]["code"], -32601, "{answer}");
        let message = answer["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
            + answer["error"]["data"].to_string().as_str();
        assert!(message.contains(says), "{method}: {answer}");
    }

    // Malformed and unknown notifications are logged with the reason and dropped.
    acp.notify(
        "_lsp/publishDiagnostics",
        json!({"uri": shapes_uri, "diagnostics": [{"message": "no range"}]}),
    )
    .await;
    acp.logged(&["malformed _lsp/publishDiagnostics", "range"])
        .await;
    acp.notify("_lsp/publishDiagnostics", json!({"uri": shapes_uri, "diagnostics": [{"range": {"start": {"line": 0, "character": 1}, "end": {"line": 0, "character": 1}}, "message": "zero"}]}))
        .await;
    acp.logged(&["malformed _lsp/publishDiagnostics", "1-based"])
        .await;
    acp.notify("_lsp/didSave", json!(["not", "an", "object"]))
        .await;
    acp.logged(&["malformed _lsp/didSave"]).await;
    acp.notify("_lsp/whatever", json!({})).await;
    acp.logged(&["unknown notification _lsp/whatever"]).await;
    acp.notify(
        "_lsp/publishDiagnostics",
        json!({"uri": "file:///etc/passwd", "diagnostics": [one]}),
    )
    .await;
    acp.logged(&[
        "_lsp/publishDiagnostics for /etc/passwd",
        "not a file in an open workspace",
    ])
    .await;

    // A save outside the workspace, or of a file under `.git/`, indexes nothing.
    std::fs::write(root.join(".git/config"), "[core]\n").unwrap();
    for file in ["file:///etc/passwd".to_owned(), uri(&root, ".git/config")] {
        acp.notify("_lsp/didSave", json!({ "uri": file })).await;
        let shown = file.trim_start_matches("file://").to_owned();
        acp.logged(&[
            "_lsp/didSave for",
            shown.as_str(),
            "not a file lode indexes in an open workspace",
        ])
        .await;
    }

    // A huge push (over the 1 MiB line cap) is refused by the transport; the connection lives on.
    let huge: Vec<Value> = (0..20_000)
        .map(|n| json!({"range": {"start": {"line": 1, "character": 1}, "end": {"line": 1, "character": 2}}, "message": format!("diagnostic number {n} of a huge push")}))
        .collect();
    acp.notify(
        "_lsp/publishDiagnostics",
        json!({"uri": shapes_uri, "diagnostics": huge}),
    )
    .await;
    let alive = acp
        .wire
        .request(6, "session/new", json!({"cwd": root, "mcpServers": []}))
        .await;
    assert!(alive["result"]["sessionId"].is_string(), "{alive}");
}

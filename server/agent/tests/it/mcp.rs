//! The MCP client against real MCP servers: the fixture server (`fixtures/mcp/server.rs`, built
//! as the `mcp_fixture_server` example) started as a child process over stdio, and the same
//! tools served over streamable HTTP on 127.0.0.1 by rmcp's server in this test process.

#[path = "../../../../fixtures/mcp/handler.rs"]
mod handler;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use lode_agent::mcp::{
    McpConfigError, McpManager, McpServerConfig, McpSettings, McpTransport, exposed_tool_name,
};
use lode_tools::event::ToolKind;
use lode_tools::host::{ToolEvent, ToolHost};
use lode_tools::{PermissionTarget, Tool, ToolContext, ToolErrorCategory};
use serde_json::json;
use tokio_util::sync::CancellationToken;

struct SilentHost;

impl ToolHost for SilentHost {
    fn emit(&self, _event: ToolEvent) {}
}

/// The fixture server binary. `cargo test` builds examples, but `cargo test --test mcp` does
/// not, so a missing or outdated binary is built here (once per test process).
fn fixture_server() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            // target/debug/deps/mcp-<hash> → target/debug/examples/mcp_fixture_server
            let exe = std::env::current_exe().expect("test binary path");
            let debug_dir = exe
                .parent()
                .and_then(|deps| deps.parent())
                .expect("target dir");
            let server = debug_dir.join("examples").join("mcp_fixture_server");
            let sources = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/mcp");
            let newest_source = std::fs::read_dir(&sources)
                .expect("fixtures/mcp")
                .filter_map(|entry| entry.ok()?.metadata().ok()?.modified().ok())
                .max();
            let built = std::fs::metadata(&server).and_then(|m| m.modified()).ok();
            if built.is_none() || built < newest_source {
                let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
                let status = std::process::Command::new(cargo)
                    .args([
                        "build",
                        "-p",
                        "lode-agent",
                        "--example",
                        "mcp_fixture_server",
                    ])
                    .status()
                    .expect("run cargo build");
                assert!(status.success(), "building the MCP fixture server failed");
            }
            server
        })
        .clone()
}

fn stdio_server(name: &str, args: &[&str]) -> McpServerConfig {
    McpServerConfig::stdio(
        name,
        fixture_server().to_string_lossy(),
        args.iter().map(|a| a.to_string()).collect(),
    )
}

/// This crate's tests have no launcher: the servers (named as the user's own) run as they are,
/// the exemption where the sandbox cannot confine. Confined starts are tested with the real
/// binary (tests/e2e/redteam.rs, `mcp_servers_go_through_the_sandbox`).
fn no_sandbox() -> lode_sandbox::Sandbox {
    lode_sandbox::Sandbox::unavailable("MCP tests run without a launcher")
}

fn context(root: &std::path::Path) -> ToolContext {
    let index =
        lode_index::Workspace::open(lode_index::WorkspaceOptions::new(root)).expect("open index");
    ToolContext {
        roots: vec![root.to_owned()],
        index: Arc::new(index),
        host: Arc::new(SilentHost),
        call_id: "call-1".to_owned(),
        cancel: CancellationToken::new(),
        // Tools are called directly here, without the policy or a launcher: commands run as
        // they are (the sandboxed path is tested with the real binary in tests/).
        sandbox: Arc::new(lode_sandbox::Sandbox::unavailable(
            "tool tests run without a launcher",
        )),
        network: false,
        sources: Default::default(),
    }
}

fn tool_named(tools: &[Arc<dyn Tool>], name: &str) -> Arc<dyn Tool> {
    tools
        .iter()
        .find(|tool| tool.spec().name == name)
        .cloned()
        .unwrap_or_else(|| {
            let names: Vec<String> = tools.iter().map(|t| t.spec().name).collect();
            panic!("no tool {name}; have {names:?}")
        })
}

fn process_alive(pid: u32) -> bool {
    // A zombie still has a /proc entry; read its state.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

#[tokio::test]
async fn stdio_server_tools_are_listed_called_and_shut_down() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = stdio_server("fixture", &[]);
    if let McpTransport::Stdio { env, .. } = &mut server.transport {
        env.push(("LODE_FIXTURE_VALUE".to_owned(), "from-config".to_owned()));
    }
    let (manager, failures) =
        McpManager::connect_all(&[server], Some(dir.path()), &no_sandbox()).await;
    assert!(failures.is_empty(), "{failures:?}");
    assert_eq!(manager.servers(), vec!["fixture"]);
    let tools = manager.tools();
    let names: Vec<String> = tools.iter().map(|t| t.spec().name).collect();
    for expected in [
        "mcp__fixture__echo",
        "mcp__fixture__add",
        "mcp__fixture__weird_name_with_dots",
    ] {
        assert!(names.contains(&expected.to_owned()), "{names:?}");
    }

    let context = context(dir.path());
    let add = tool_named(&tools, "mcp__fixture__add");
    assert_eq!(add.kind(), ToolKind::Other);
    assert!(!add.read_only());
    assert_eq!(add.permission_target(&json!({})), PermissionTarget::Other);
    assert_eq!(add.spec().parameters["required"], json!(["a", "b"]));
    let output = add.run(json!({"a": 2, "b": 40}), &context).await.unwrap();
    assert!(
        output
            .model_text
            .contains("<untrusted_content source=\"mcp\" server=\"fixture\" tool=\"add\">")
    );
    assert!(
        output.model_text.contains("\n42\n"),
        "{}",
        output.model_text
    );

    // The configured environment reaches the child.
    let env = tool_named(&tools, "mcp__fixture__env");
    let output = env
        .run(json!({"name": "LODE_FIXTURE_VALUE"}), &context)
        .await
        .unwrap();
    assert!(output.model_text.contains("from-config"));

    // A tool error comes back as a failed call with the server's words, still marked untrusted.
    let fail = tool_named(&tools, "mcp__fixture__fail");
    let error = fail.run(json!({}), &context).await.unwrap_err();
    assert_eq!(error.category, ToolErrorCategory::Failed);
    assert!(error.message.contains("it failed on purpose"));
    assert!(
        error
            .message
            .starts_with("<untrusted_content source=\"mcp\" server=\"fixture\" tool=\"fail\">")
    );

    // Malformed arguments are refused before reaching the server.
    let error = add.run(json!([1, 2]), &context).await.unwrap_err();
    assert_eq!(error.category, ToolErrorCategory::InvalidArguments);

    // Output is capped.
    let big = tool_named(&tools, "mcp__fixture__big");
    let output = big.run(json!({"chars": 100_000}), &context).await.unwrap();
    assert!(
        output.model_text.len() < 31_000,
        "{}",
        output.model_text.len()
    );
    assert!(
        output
            .model_text
            .contains("[output truncated: 100000 characters")
    );

    // Shutdown stops the child process.
    let pid_tool = tool_named(&tools, "mcp__fixture__pid");
    let output = pid_tool.run(json!({}), &context).await.unwrap();
    let pid: u32 = output
        .model_text
        .lines()
        .find_map(|line| line.trim().parse().ok())
        .expect("a pid line");
    assert!(process_alive(pid));
    manager.shutdown().await;
    let mut alive = true;
    for _ in 0..100 {
        alive = process_alive(pid);
        if !alive {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!alive, "the MCP server process {pid} survived shutdown");
    // Calls after shutdown fail cleanly.
    let error = add
        .run(json!({"a": 1, "b": 1}), &context)
        .await
        .unwrap_err();
    assert_eq!(error.category, ToolErrorCategory::Failed);
}

#[tokio::test]
async fn failing_servers_are_reported_and_the_rest_still_work() {
    let dir = tempfile::tempdir().unwrap();
    let servers = vec![
        stdio_server("crashes", &["--crash-at-start"]),
        McpServerConfig::stdio("missing", "/nonexistent/lode-no-such-mcp-server", vec![]),
        stdio_server("good", &[]),
        stdio_server("good", &[]),
    ];
    let (manager, failures) =
        McpManager::connect_all(&servers, Some(dir.path()), &no_sandbox()).await;
    assert_eq!(manager.servers(), vec!["good"]);
    assert_eq!(failures.len(), 3, "{failures:?}");
    let crash = failures.iter().find(|f| f.server == "crashes").unwrap();
    assert!(
        crash.message.contains("crashing at start on purpose"),
        "the child's stderr explains the crash: {}",
        crash.message
    );
    let missing = failures.iter().find(|f| f.server == "missing").unwrap();
    assert!(
        missing.message.contains("command not found"),
        "{}",
        missing.message
    );
    let duplicate = failures.iter().find(|f| f.server == "good").unwrap();
    assert!(duplicate.message.contains("already has this name"));
    assert!(
        crash
            .to_string()
            .starts_with("MCP server \"crashes\" is not available")
    );

    let tools = manager.tools();
    let echo = tool_named(&tools, "mcp__good__echo");
    let output = echo
        .run(json!({"text": "hi"}), &context(dir.path()))
        .await
        .unwrap();
    assert!(output.model_text.contains("echo: hi"));
    manager.shutdown().await;
}

#[tokio::test]
async fn streamable_http_server_tools_work() {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

    let service = StreamableHttpService::new(
        || Ok(handler::FixtureServer),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });

    let dir = tempfile::tempdir().unwrap();
    let settings: McpSettings = McpSettings::from_toml(&toml::Value::Table(
        toml::from_str(&format!(
            "[[servers]]\nname = \"remote\"\nurl = \"http://{address}/mcp\"\nheaders_from_env = {{ \"X-Test\" = \"LODE_TEST_HEADER\" }}\n"
        ))
        .unwrap(),
    ))
    .unwrap();
    let (servers, errors) =
        settings.resolve_with(|name| (name == "LODE_TEST_HEADER").then(|| "value".to_owned()));
    assert!(errors.is_empty(), "{errors:?}");
    let (manager, failures) = McpManager::connect_all(&servers, None, &no_sandbox()).await;
    assert!(failures.is_empty(), "{failures:?}");
    let tools = manager.tools();
    let echo = tool_named(&tools, "mcp__remote__echo");
    let output = echo
        .run(json!({"text": "over http"}), &context(dir.path()))
        .await
        .unwrap();
    assert!(output.model_text.contains("echo: over http"));
    manager.shutdown().await;
    server.abort();
}

#[tokio::test]
async fn unreachable_http_server_is_reported() {
    // A port that was just free: nothing listens there.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let mut server = McpServerConfig::http("down", format!("http://127.0.0.1:{port}/mcp"));
    server.startup_timeout = Some(Duration::from_secs(10));
    let (manager, failures) = McpManager::connect_all(&[server], None, &no_sandbox()).await;
    assert!(manager.servers().is_empty());
    assert_eq!(failures.len(), 1);
    assert_eq!(failures[0].server, "down");
}

#[test]
fn config_entries_resolve_or_explain() {
    let table: toml::Value = toml::from_str(
        r#"
        [[servers]]
        name = "files"
        command = "mcp-files"
        args = ["--root", "."]
        env = { DEBUG = "1" }

        [[servers]]
        name = "api"
        url = "https://example.invalid/mcp"
        bearer_token_env = "LODE_TEST_TOKEN_UNSET"

        [[servers]]
        name = "both"
        command = "x"
        url = "http://127.0.0.1/mcp"

        [[servers]]
        name = "off"
        command = "x"
        enabled = false

        [[servers]]
        name = "neither"
        "#,
    )
    .unwrap();
    let settings = McpSettings::from_toml(&table).unwrap();
    let (servers, errors) = settings.resolve_with(|_| None);
    assert_eq!(servers.len(), 1);
    assert_eq!(
        servers[0].transport,
        McpTransport::Stdio {
            command: "mcp-files".into(),
            args: vec!["--root".into(), ".".into()],
            env: vec![("DEBUG".into(), "1".into())],
            cwd: None,
        }
    );
    assert_eq!(
        errors,
        vec![
            McpConfigError::MissingEnv {
                server: "api".into(),
                variable: "LODE_TEST_TOKEN_UNSET".into()
            },
            McpConfigError::BothTransports("both".into()),
            McpConfigError::NoTransport("neither".into()),
        ]
    );
    let unknown: toml::Value =
        toml::from_str("[[servers]]\nname = \"x\"\ncomand = \"typo\"").unwrap();
    assert!(matches!(
        McpSettings::from_toml(&unknown),
        Err(McpConfigError::Invalid(message)) if message.contains("comand")
    ));
}

#[test]
fn exposed_names_are_sanitised_and_bounded() {
    assert_eq!(
        exposed_tool_name("git hub", "list.issues"),
        "mcp__git_hub__list_issues"
    );
    let long = exposed_tool_name("server", &"t".repeat(100));
    assert_eq!(long.len(), 64);
    let other = exposed_tool_name("server", &format!("{}u", "t".repeat(99)));
    assert_ne!(long, other, "cut names keep a hash of the full name");
}

#[tokio::test]
async fn servers_that_speak_garbage_or_never_answer_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let mut hang = stdio_server("hangs", &["--hang"]);
    // Short so the test stays quick; the default is 30 s.
    hang.startup_timeout = Some(Duration::from_secs(2));
    let servers = vec![stdio_server("garbage", &["--garbage"]), hang];
    let (manager, failures) =
        McpManager::connect_all(&servers, Some(dir.path()), &no_sandbox()).await;
    assert!(manager.servers().is_empty());
    assert_eq!(failures.len(), 2, "{failures:?}");
    let hang = failures.iter().find(|f| f.server == "hangs").unwrap();
    assert!(
        hang.message.contains("no answer within"),
        "{}",
        hang.message
    );
    let garbage = failures.iter().find(|f| f.server == "garbage").unwrap();
    assert!(
        garbage.message.contains("handshake failed"),
        "{}",
        garbage.message
    );
}

#[tokio::test]
async fn a_server_that_dies_mid_session_fails_calls_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let (manager, failures) = McpManager::connect_all(
        &[stdio_server("fragile", &[])],
        Some(dir.path()),
        &no_sandbox(),
    )
    .await;
    assert!(failures.is_empty(), "{failures:?}");
    let tools = manager.tools();
    let context = context(dir.path());
    let crash = tool_named(&tools, "mcp__fragile__crash");
    assert!(crash.run(json!({}), &context).await.is_err());
    let echo = tool_named(&tools, "mcp__fragile__echo");
    let error = echo
        .run(json!({"text": "still there?"}), &context)
        .await
        .unwrap_err();
    assert_eq!(error.category, ToolErrorCategory::Failed);
    assert!(
        error.message.contains("MCP server fragile"),
        "{}",
        error.message
    );
    manager.shutdown().await;
}

#[tokio::test]
async fn a_cancelled_call_returns_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let (manager, _) = McpManager::connect_all(
        &[stdio_server("slowpoke", &[])],
        Some(dir.path()),
        &no_sandbox(),
    )
    .await;
    let tools = manager.tools();
    let context = context(dir.path());
    context.cancel.cancel();
    let echo = tool_named(&tools, "mcp__slowpoke__echo");
    let error = echo.run(json!({"text": "x"}), &context).await.unwrap_err();
    assert_eq!(error.category, ToolErrorCategory::Cancelled);
    manager.shutdown().await;
}

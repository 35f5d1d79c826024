//! What the suites share: finding the installed test tools, the client settings for a real
//! server, and a Python workspace indexed and served by a language server.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use lode_lsp::agent_navigation::ServerNavigation;
use lode_lsp::downstream::{ClientSettings, DiagnosticsConfig, DiagnosticsProvider};
use lode_tools::ToolContext;
use lode_tools::host::{ToolEvent, ToolHost};
use lode_tools::navigation::NavigationSource;
use tokio_util::sync::CancellationToken;

/// `main.py` of the suites' workspaces (fixtures/agent/shapes): calls to `Circle.area` and
/// `Square.area` that only their types tell apart.
pub const MAIN_PY: &str = include_str!("../../../../fixtures/agent/shapes/main.py");

/// target/test-tools/node_modules/.bin/NAME (or under $LODE_TEST_TOOLS), or `None` to skip.
pub fn tool(name: &str) -> Option<PathBuf> {
    let tools = std::env::var_os("LODE_TEST_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-tools"));
    let path = tools.join("node_modules/.bin").join(name);
    if path.is_file() {
        return Some(path);
    }
    // In CI the install script has run: a missing tool is a failure, not a skip.
    assert!(
        std::env::var_os("CI").is_none(),
        "{name} is missing: run scripts/install-test-tools.sh"
    );
    eprintln!("skipping: {name} is not installed (run scripts/install-test-tools.sh)");
    None
}

/// Client settings patient enough for a real server starting cold.
pub fn settings() -> ClientSettings {
    ClientSettings {
        settle: Duration::from_millis(300),
        timeout: Duration::from_secs(60),
        initialize_timeout: Duration::from_secs(60),
    }
}

/// The command line of pyright's language server at `server`.
pub fn pyright_command(server: &Path) -> Vec<String> {
    vec![server.to_string_lossy().into_owned(), "--stdio".into()]
}

/// A host that drops every event.
pub struct Host;

impl ToolHost for Host {
    fn emit(&self, _event: ToolEvent) {}
}

/// A Python workspace, indexed, with a language server for the agent's navigation.
pub struct Fixture {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
    pub index: Arc<lode_index::Workspace>,
    pub source: Arc<dyn NavigationSource>,
}

impl Fixture {
    /// A workspace of `files` (name, text), with `command` as the Python language server
    /// (empty: none).
    pub fn new(files: &[(&str, &str)], command: Vec<String>) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        // pyright leaves out hidden directories (`.tmpXYZ`) inside its root, so the root is
        // a plain directory.
        let root = dir.path().join("work");
        std::fs::create_dir(&root).unwrap();
        let root = std::fs::canonicalize(&root).unwrap();
        for (name, text) in files {
            std::fs::write(root.join(name), text).unwrap();
        }
        let index = lode_index::Workspace::open(lode_index::WorkspaceOptions::new(&root)).unwrap();
        index.refresh(&|_| {}).unwrap();
        let config = DiagnosticsConfig {
            servers: HashMap::from([("python".to_string(), command)]),
            default_servers: false,
            commands: false,
            client: settings(),
            ..DiagnosticsConfig::default()
        };
        let provider = Arc::new(DiagnosticsProvider::new(&root, config));
        Fixture {
            _dir: dir,
            root,
            index: Arc::new(index),
            source: Arc::new(ServerNavigation::new(provider)),
        }
    }

    /// A tool call's context in the workspace: no commands, no network.
    pub fn context(&self) -> ToolContext {
        ToolContext {
            roots: vec![self.root.clone()],
            index: Arc::clone(&self.index),
            host: Arc::new(Host),
            call_id: "call-1".into(),
            cancel: CancellationToken::new(),
            sandbox: Arc::new(lode_sandbox::Sandbox::unavailable("no commands here")),
            network: false,
            sources: Default::default(),
        }
    }
}

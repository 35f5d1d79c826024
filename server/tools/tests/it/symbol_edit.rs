//! The edits by symbol (`replace_symbol_body`, `insert_before_symbol`, `insert_after_symbol`)
//! on real parts: real files in a temporary workspace with a real index, real tree-sitter
//! parses, the policy judging them as edits of their file, and an editor file system (the path
//! ACP clients and the LSP code actions take) that the tools read and write instead of the disk.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use lode_policy::{Decision, Mode, PermissionConfig, PermissionPolicy};
use lode_tools::event::ToolContent;
use lode_tools::host::{ClientFs, HostError, ToolEvent, ToolHost};
use lode_tools::{
    FILE_EDIT_TOOLS, PermissionTarget, ToolContext, ToolError, ToolErrorCategory, ToolOutput,
    default_tools, edited_file,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const SHAPES_PY: &str = r#"import math


class Circle:
    def __init__(self, r):
        self.r = r

    def area(self):
        return math.pi * self.r ** 2


class Square:
    def __init__(self, side):
        self.side = side

    def area(self):
        return self.side ** 2
"#;

const LIB_RS: &str = r#"pub struct Registry {
    names: Vec<String>,
}

impl Registry {
    /// Greets everyone.
    pub fn greet_all(&self) -> String {
        self.names.join(", ")
    }
}

pub trait Greeter {
    fn greet_all(&self) -> String;
}

impl Greeter for Registry {
    fn greet_all(&self) -> String {
        String::new()
    }
}

pub fn add(a: u32, b: u32) -> u32 {
    a + b
}
"#;

#[derive(Default)]
struct Host {
    events: Mutex<Vec<ToolEvent>>,
    fs: Option<Arc<EditorFs>>,
}

impl ToolHost for Host {
    fn emit(&self, event: ToolEvent) {
        self.events.lock().unwrap().push(event);
    }

    fn client_fs(&self) -> Option<Arc<dyn ClientFs>> {
        self.fs.clone().map(|fs| fs as Arc<dyn ClientFs>)
    }
}

/// An editor with unsaved buffers: reads see buffers first, writes go to buffers.
#[derive(Default)]
struct EditorFs {
    buffers: Mutex<HashMap<PathBuf, String>>,
}

#[async_trait::async_trait]
impl ClientFs for EditorFs {
    async fn read_text_file(
        &self,
        path: &Path,
        _line: Option<u32>,
        _limit: Option<u32>,
    ) -> Result<String, HostError> {
        if let Some(text) = self.buffers.lock().unwrap().get(path) {
            return Ok(text.clone());
        }
        std::fs::read_to_string(path).map_err(|e| HostError(e.to_string()))
    }

    async fn write_text_file(&self, path: &Path, content: &str) -> Result<(), HostError> {
        self.buffers
            .lock()
            .unwrap()
            .insert(path.to_path_buf(), content.to_owned());
        Ok(())
    }
}

struct Workspace {
    dir: tempfile::TempDir,
    root: PathBuf,
    index: Arc<lode_index::Workspace>,
}

impl Workspace {
    fn new() -> Workspace {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/shapes.py"), SHAPES_PY).unwrap();
        std::fs::write(root.join("src/lib.rs"), LIB_RS).unwrap();
        std::fs::write(root.join("README.md"), "# shapes\n").unwrap();
        let root = std::fs::canonicalize(&root).unwrap();
        let index = lode_index::Workspace::open(lode_index::WorkspaceOptions::new(&root)).unwrap();
        index.refresh(&|_| {}).unwrap();
        Workspace {
            dir,
            root,
            index: Arc::new(index),
        }
    }

    fn read(&self, path: &str) -> String {
        std::fs::read_to_string(self.root.join(path)).unwrap()
    }

    async fn run_with(
        &self,
        tool: &str,
        symbol: &str,
        text: &str,
        host: Arc<Host>,
    ) -> Result<ToolOutput, ToolError> {
        let context = ToolContext {
            roots: vec![self.root.clone()],
            index: Arc::clone(&self.index),
            host,
            call_id: "call-1".into(),
            cancel: CancellationToken::new(),
            sandbox: Arc::new(lode_sandbox::Sandbox::unavailable("no commands here")),
            network: false,
            sources: Default::default(),
        };
        let registry = default_tools();
        let tool = registry.get(tool).expect("the tool is registered");
        tool.run(json!({"symbol": symbol, "text": text}), &context)
            .await
    }

    async fn find_symbol(&self, name: &str) -> String {
        let context = ToolContext {
            roots: vec![self.root.clone()],
            index: Arc::clone(&self.index),
            host: Arc::new(Host::default()),
            call_id: "call-0".into(),
            cancel: CancellationToken::new(),
            sandbox: Arc::new(lode_sandbox::Sandbox::unavailable("no commands here")),
            network: false,
            sources: Default::default(),
        };
        let registry = default_tools();
        let tool = registry.get("find_symbol").unwrap();
        tool.run(json!({"name": name}), &context)
            .await
            .unwrap()
            .model_text
    }

    async fn run(&self, tool: &str, symbol: &str, text: &str) -> Result<ToolOutput, ToolError> {
        self.run_with(tool, symbol, text, Arc::new(Host::default()))
            .await
    }
}

fn error(result: Result<ToolOutput, ToolError>) -> ToolError {
    match result {
        Ok(output) => panic!("expected an error, got {}", output.model_text),
        Err(error) => error,
    }
}

#[tokio::test]
async fn replace_symbol_body_changes_exactly_the_named_method() {
    let ws = Workspace::new();
    let out = ws
        .run(
            "replace_symbol_body",
            "src/shapes.py:Square/area",
            "def area(self):\n    return self.side * self.side\n",
        )
        .await
        .unwrap();
    let expected = SHAPES_PY.replace("self.side ** 2", "self.side * self.side");
    assert_eq!(ws.read("src/shapes.py"), expected);
    assert!(
        out.model_text
            .starts_with("Replaced src/shapes.py:Square/area (lines 16-17); the new definition is at lines 16-17."),
        "{}",
        out.model_text
    );
    assert!(out.model_text.contains("--- a/src/shapes.py"));
    assert!(
        out.model_text
            .contains("+        return self.side * self.side")
    );
    // Short: the diff, not the file.
    assert!(
        !out.model_text.contains("import math"),
        "{}",
        out.model_text
    );
    assert_eq!(out.raw_output.as_ref().unwrap()["lines"], json!([16, 17]));
    match &out.display[..] {
        [ToolContent::Diff { path, new_text, .. }] => {
            assert_eq!(path, &ws.root.join("src/shapes.py"));
            assert_eq!(new_text, &expected);
        }
        other => panic!("unexpected display {other:?}"),
    }
    // The index saw the edit at once.
    let hits = ws.index.symbols("area", 10).unwrap();
    assert!(!hits.is_empty());

    // A Python signature change: the whole definition is replaced, signature included.
    ws.run(
        "replace_symbol_body",
        "src/shapes.py:Circle/area",
        "    def area(self, scale=1):\n        return scale * math.pi * self.r ** 2",
    )
    .await
    .unwrap();
    let now = ws.read("src/shapes.py");
    assert_eq!(
        now,
        expected.replace(
            "    def area(self):\n        return math.pi",
            "    def area(self, scale=1):\n        return scale * math.pi"
        )
    );
}

/// `find_symbol` prints each definition's name path, which the edits take as it is.
#[tokio::test]
async fn find_symbol_gives_the_names_the_edits_take() {
    let ws = Workspace::new();
    let found = ws.find_symbol("area").await;
    let line = found
        .lines()
        .find(|line| line.contains("Square/area"))
        .unwrap_or_else(|| panic!("{found}"));
    // `src/shapes.py:16-17  method Square/area  [exact]`
    let path = line.split(':').next().unwrap();
    let name_path = line.split_whitespace().nth(2).unwrap();
    let symbol = format!("{path}:{name_path}");
    assert_eq!(symbol, "src/shapes.py:Square/area");
    ws.run(
        "replace_symbol_body",
        &symbol,
        "def area(self):\n    return 4",
    )
    .await
    .unwrap();
    assert!(ws.read("src/shapes.py").contains("        return 4\n"));
    let impls = ws.find_symbol("greet_all").await;
    assert!(
        impls.contains("impl Greeter for Registry/greet_all"),
        "{impls}"
    );
}

#[tokio::test]
async fn inserts_land_next_to_the_named_symbol_with_its_indentation() {
    let ws = Workspace::new();
    let out = ws
        .run(
            "insert_after_symbol",
            "src/shapes.py:Circle/area",
            "def perimeter(self):\n    return 2 * math.pi * self.r",
        )
        .await
        .unwrap();
    assert!(
        out.model_text
            .starts_with("Inserted lines 11-12 of src/shapes.py after Circle/area."),
        "{}",
        out.model_text
    );
    let expected = SHAPES_PY.replace(
        "        return math.pi * self.r ** 2\n",
        "        return math.pi * self.r ** 2\n\n    def perimeter(self):\n        return 2 * math.pi * self.r\n",
    );
    assert_eq!(ws.read("src/shapes.py"), expected);

    ws.run(
        "insert_before_symbol",
        "src/lib.rs:add",
        "pub fn sub(a: u32, b: u32) -> u32 {\n    a - b\n}",
    )
    .await
    .unwrap();
    assert_eq!(
        ws.read("src/lib.rs"),
        LIB_RS.replace(
            "pub fn add(",
            "pub fn sub(a: u32, b: u32) -> u32 {\n    a - b\n}\n\npub fn add("
        )
    );
}

#[tokio::test]
async fn two_impl_blocks_make_a_name_ambiguous_and_nothing_changes() {
    let ws = Workspace::new();
    let failure = error(
        ws.run(
            "replace_symbol_body",
            "src/lib.rs:Registry/greet_all",
            "fn greet_all(&self) -> String { String::new() }",
        )
        .await,
    );
    assert_eq!(failure.category, ToolErrorCategory::NoUniqueMatch);
    assert!(failure.retryable);
    assert!(
        failure
            .message
            .contains("src/lib.rs:impl Registry/greet_all (method, lines 7-9")
            && failure.message.contains("lines 17-19")
            && failure.message.contains("src/lib.rs:17:5"),
        "{}",
        failure.message
    );
    assert_eq!(ws.read("src/lib.rs"), LIB_RS);

    // The position the error offers names one; only that method changes.
    ws.run(
        "replace_symbol_body",
        "src/lib.rs:17:5",
        "fn greet_all(&self) -> String {\n    \"hello\".to_owned()\n}",
    )
    .await
    .unwrap();
    assert_eq!(
        ws.read("src/lib.rs"),
        LIB_RS.replace(
            "    fn greet_all(&self) -> String {\n        String::new()\n    }",
            "    fn greet_all(&self) -> String {\n        \"hello\".to_owned()\n    }"
        )
    );
}

#[tokio::test]
async fn unknown_and_malformed_names_get_clear_errors() {
    let ws = Workspace::new();
    let failure = error(
        ws.run("replace_symbol_body", "src/shapes.py:Circle/volume", "x")
            .await,
    );
    assert_eq!(failure.category, ToolErrorCategory::NotFound);
    assert!(
        failure
            .message
            .contains("no definition src/shapes.py:Circle/volume"),
        "{}",
        failure.message
    );
    assert!(
        failure.message.contains("src/shapes.py:Circle/area ("),
        "{}",
        failure.message
    );
    let huge = format!("src/lib.rs:{}", "x".repeat(65 * 1024));
    for (symbol, needle) in [
        ("src/lib.rs:", "names no symbol"),
        (":foo", "names no file"),
        ("a:b:c:d", "only one more"),
        (huge.as_str(), "at most 4096"),
        ("README.md:shapes", "not source code"),
        ("src/missing.rs:x", "does not exist"),
        ("src/lib.rs:99:1", "past the end"),
    ] {
        let failure = error(ws.run("insert_after_symbol", symbol, "fn x() {}").await);
        assert!(
            failure.message.contains(needle),
            "{symbol:.40}: {}",
            failure.message
        );
        assert!(failure.message.len() < 2000, "{}", failure.message.len());
    }
    let failure = error(
        ws.run("replace_symbol_body", "src/lib.rs:add", "  \n")
            .await,
    );
    assert_eq!(failure.category, ToolErrorCategory::InvalidArguments);
    assert_eq!(ws.read("src/lib.rs"), LIB_RS);
    assert_eq!(ws.read("src/shapes.py"), SHAPES_PY);
}

#[tokio::test]
async fn files_outside_the_workspace_are_refused() {
    let ws = Workspace::new();
    let outside = ws.dir.path().join("outside.rs");
    std::fs::write(&outside, "pub fn add() {}\n").unwrap();
    std::os::unix::fs::symlink(&outside, ws.root.join("src/link.rs")).unwrap();
    for symbol in [
        "../outside.rs:add".to_owned(),
        format!("{}:add", outside.display()),
        "src/link.rs:add".to_owned(),
        "src/../../outside.rs:1:1".to_owned(),
    ] {
        let failure = error(ws.run("replace_symbol_body", &symbol, "fn x() {}").await);
        assert_eq!(
            failure.category,
            ToolErrorCategory::OutsideWorkspace,
            "{symbol}: {}",
            failure.message
        );
    }
    assert_eq!(
        std::fs::read_to_string(&outside).unwrap(),
        "pub fn add() {}\n"
    );
}

#[tokio::test]
async fn an_edit_that_breaks_the_syntax_is_made_and_flagged() {
    let ws = Workspace::new();
    let out = ws
        .run(
            "replace_symbol_body",
            "src/lib.rs:add",
            "pub fn add(a: u32, b: u32) -> u32 {\n    a +\n",
        )
        .await
        .unwrap();
    assert!(
        out.model_text.contains(
            "Note: src/lib.rs no longer parses cleanly (tree-sitter finds a syntax error at line"
        ),
        "{}",
        out.model_text
    );
    assert!(out.raw_output.unwrap()["syntax_error_line"].is_u64());
}

#[tokio::test]
async fn an_editor_file_system_is_read_and_written_instead_of_the_disk() {
    let ws = Workspace::new();
    let fs = Arc::new(EditorFs::default());
    // An unsaved buffer in which `add` has moved and changed: the symbol is found in it.
    let buffer = format!("// unsaved\n{LIB_RS}").replace("a + b", "b + a");
    fs.buffers
        .lock()
        .unwrap()
        .insert(ws.root.join("src/lib.rs"), buffer.clone());
    let host = Arc::new(Host {
        fs: Some(fs.clone()),
        ..Host::default()
    });
    ws.run_with(
        "replace_symbol_body",
        "src/lib.rs:add",
        "pub fn add(a: u32, b: u32) -> u32 {\n    a.wrapping_add(b)\n}",
        host,
    )
    .await
    .unwrap();
    assert_eq!(ws.read("src/lib.rs"), LIB_RS, "the disk is untouched");
    let written = fs.buffers.lock().unwrap()[&ws.root.join("src/lib.rs")].clone();
    assert_eq!(written, buffer.replace("b + a", "a.wrapping_add(b)"));
}

#[test]
fn the_policy_judges_a_symbol_edit_as_an_edit_of_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::create_dir_all(root.join(".lode")).unwrap();
    let policy = PermissionPolicy::without_store(PermissionConfig::default())
        .unwrap()
        .with_roots(vec![root.clone()])
        .with_sandbox(true);
    let registry = default_tools();
    for name in [
        "replace_symbol_body",
        "insert_before_symbol",
        "insert_after_symbol",
    ] {
        assert!(FILE_EDIT_TOOLS.contains(&name));
        let tool = registry.get(name).unwrap();
        assert!(!tool.read_only());
        let target = |symbol: &str| tool.permission_target(&json!({"symbol": symbol, "text": "x"}));
        assert_eq!(
            target("./src/lib.rs:Registry/greet_all"),
            PermissionTarget::Edit {
                paths: vec!["src/lib.rs".to_owned()]
            }
        );
        assert_eq!(
            edited_file(name, &json!({"symbol": "src/lib.rs:add"})),
            Some("src/lib.rs")
        );
        for protected in [
            ".git/config:core",
            ".lode/config.toml:1:1",
            "sub/.git/hooks/x.py:f",
        ] {
            let decision = policy.decide(name, &target(protected), Mode::Code);
            assert!(
                matches!(decision, Decision::Ask { must_ask: true, .. }),
                "{protected}: {decision:?}"
            );
        }
        for outside in ["../outside.rs:add", "/etc/passwd:root"] {
            let decision = policy.decide(name, &target(outside), Mode::Code);
            assert!(
                matches!(decision, Decision::Deny { .. }),
                "{outside}: {decision:?}"
            );
        }
        // An ordinary edit asks by default, like edit_file; read-only modes refuse it.
        assert!(matches!(
            policy.decide(name, &target("src/lib.rs:add"), Mode::Code),
            Decision::Ask {
                must_ask: false,
                ..
            }
        ));
        assert!(matches!(
            policy.decide(name, &target("src/lib.rs:add"), Mode::Ask),
            Decision::Deny { .. }
        ));
        // Malformed arguments still make an edit question (the run reports the error).
        assert!(matches!(
            policy.decide(name, &tool.permission_target(&Value::Null), Mode::Code),
            Decision::Ask { .. }
        ));
    }
}

//! `hover`, `definition`, `references` without a language server: the index answers
//! (`resolved_by: index`), and malformed symbols or files outside the workspace are refused the
//! way the other read tools refuse them. The type-resolved answers (pyright) are tested in
//! server/lsp/tests/navigation.rs.

use std::path::PathBuf;
use std::sync::Arc;

use lode_policy::{Decision, Mode, PermissionConfig, PermissionPolicy};
use lode_tools::host::{ToolEvent, ToolHost};
use lode_tools::{ToolContext, ToolError, ToolErrorCategory, ToolOutput, default_tools};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const SHAPES_PY: &str = r#"class Circle:
    def __init__(self, r):
        self.r = r

    # The area of the circle.
    def area(self):
        return 3.14 * self.r ** 2


class Square:
    def area(self):
        return 4
"#;

const MAIN_PY: &str = r#"from shapes import Circle, Square


def total():
    return Circle(1).area() + Square().area()
"#;

struct Host;

impl ToolHost for Host {
    fn emit(&self, _event: ToolEvent) {}
}

struct Workspace {
    _dir: tempfile::TempDir,
    root: PathBuf,
    index: Arc<lode_index::Workspace>,
}

impl Workspace {
    fn new() -> Workspace {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("shapes.py"), SHAPES_PY).unwrap();
        std::fs::write(root.join("main.py"), MAIN_PY).unwrap();
        std::fs::write(dir.path().join("secret.py"), "def hidden():\n    pass\n").unwrap();
        let root = std::fs::canonicalize(&root).unwrap();
        let index = lode_index::Workspace::open(lode_index::WorkspaceOptions::new(&root)).unwrap();
        index.refresh(&|_| {}).unwrap();
        Workspace {
            _dir: dir,
            root,
            index: Arc::new(index),
        }
    }

    async fn run(&self, tool: &str, arguments: Value) -> Result<ToolOutput, ToolError> {
        let context = ToolContext {
            roots: vec![self.root.clone()],
            index: Arc::clone(&self.index),
            host: Arc::new(Host),
            call_id: "call-1".into(),
            cancel: CancellationToken::new(),
            sandbox: Arc::new(lode_sandbox::Sandbox::unavailable("no commands here")),
            network: false,
            sources: Default::default(),
        };
        let tool = default_tools().get(tool).expect("the tool is registered");
        tool.run(arguments, &context).await
    }
}

#[tokio::test]
async fn without_a_server_the_index_answers_by_name() {
    let ws = Workspace::new();
    let references = ws
        .run("references", json!({"symbol": "shapes.py:Circle/area"}))
        .await
        .unwrap();
    let text = &references.model_text;
    assert!(text.contains("resolved_by: index"), "{text}");
    // By name: both classes' calls are uses of `area`.
    assert!(text.contains("main.py\n  5:"), "{text}");
    assert!(text.contains("total  return Circle(1).area()"), "{text}");
    assert_eq!(
        references.raw_output.as_ref().unwrap()["resolved_by"],
        "index"
    );

    let hover = ws
        .run("hover", json!({"symbol": "shapes.py:Circle/area"}))
        .await
        .unwrap();
    assert!(
        hover.model_text.contains("resolved_by: index"),
        "{}",
        hover.model_text
    );
    assert!(
        hover.model_text.contains("# The area of the circle."),
        "{}",
        hover.model_text
    );
    assert!(
        hover.model_text.contains("def area(self):"),
        "{}",
        hover.model_text
    );

    // From a call site, every definition with the name.
    let definition = ws
        .run("definition", json!({"symbol": "main.py:5:25"}))
        .await
        .unwrap();
    let text = &definition.model_text;
    assert!(text.contains("resolved_by: index"), "{text}");
    assert!(
        text.contains("Circle/area") && text.contains("Square/area"),
        "{text}"
    );
}

#[tokio::test]
async fn references_are_capped_and_say_how_many_more() {
    let ws = Workspace::new();
    let output = ws
        .run(
            "references",
            json!({"symbol": "shapes.py:Circle/area", "limit": 1}),
        )
        .await
        .unwrap();
    assert!(
        output.model_text.contains("more not shown"),
        "{}",
        output.model_text
    );
    assert_eq!(output.locations.len(), 1);
}

#[tokio::test]
async fn an_ambiguous_name_returns_the_candidates() {
    let ws = Workspace::new();
    let error = ws
        .run("references", json!({"symbol": "shapes.py:area"}))
        .await
        .unwrap_err();
    assert_eq!(error.category, ToolErrorCategory::NoUniqueMatch);
    assert!(
        error.message.contains("shapes.py:Circle/area"),
        "{}",
        error.message
    );
    assert!(
        error.message.contains("shapes.py:Square/area"),
        "{}",
        error.message
    );
}

#[tokio::test]
async fn malformed_symbols_and_outside_files_are_refused() {
    let ws = Workspace::new();
    for tool in ["hover", "definition", "references"] {
        for (symbol, category) in [
            ("shapes.py:", ToolErrorCategory::InvalidArguments),
            (":area", ToolErrorCategory::InvalidArguments),
            ("Circle.area", ToolErrorCategory::InvalidArguments),
            ("a:b:c:d", ToolErrorCategory::InvalidArguments),
            ("shapes.py:Triangle/area", ToolErrorCategory::NotFound),
            ("shapes.py:99:1", ToolErrorCategory::NotFound),
            ("shapes.py:1:6", ToolErrorCategory::NotFound),
            ("missing.py:f", ToolErrorCategory::NotFound),
            ("../secret.py:hidden", ToolErrorCategory::OutsideWorkspace),
            ("/etc/passwd:1:1", ToolErrorCategory::OutsideWorkspace),
        ] {
            let error = ws.run(tool, json!({"symbol": symbol})).await.unwrap_err();
            assert_eq!(
                error.category, category,
                "{tool} {symbol}: {}",
                error.message
            );
        }
        let error = ws.run(tool, json!({"name": "area"})).await.unwrap_err();
        assert_eq!(error.category, ToolErrorCategory::InvalidArguments);
        let long = format!("shapes.py:{}", "a/".repeat(4000));
        let error = ws.run(tool, json!({"symbol": long})).await.unwrap_err();
        assert_eq!(error.category, ToolErrorCategory::InvalidArguments);
    }
    // read_file refuses the outside file with the same category.
    let error = ws
        .run("read_file", json!({"path": "../secret.py"}))
        .await
        .unwrap_err();
    assert_eq!(error.category, ToolErrorCategory::OutsideWorkspace);
}

#[test]
fn the_policy_judges_them_as_reads() {
    let policy = PermissionPolicy::without_store(PermissionConfig::default()).unwrap();
    let tools = default_tools();
    for name in ["hover", "definition", "references"] {
        let tool = tools.get(name).unwrap();
        assert!(tool.read_only(), "{name}");
        let target = tool.permission_target(&json!({"symbol": "../x.py:f"}));
        for mode in [Mode::Ask, Mode::Code, Mode::Architect] {
            let decision = policy.decide(name, &target, mode);
            assert!(
                matches!(decision, Decision::Allow),
                "{name} in {mode:?}: {decision:?}"
            );
        }
    }
}

//! The agent's `hover`, `definition` and `references` answered by the real pyright language
//! server (installed by scripts/install-test-tools.sh into target/test-tools) through the
//! diagnostics provider's warm server: two classes share a method name, and only the type
//! tells their calls apart.

use std::path::Path;
use std::time::Instant;

use lode_tools::navigate::{NavigateTool, Question};
use lode_tools::{Tool, ToolError, ToolErrorCategory, ToolOutput};
use serde_json::json;

use crate::support::{Fixture, MAIN_PY, pyright_command, tool};

const SHAPES_PY: &str = include_str!("../../../../fixtures/agent/shapes/shapes.py");

/// The workspace, with `server` as the Python language server (`None`: no server).
fn shapes(server: Option<&Path>) -> Fixture {
    let command = server.map(pyright_command).unwrap_or_default();
    Fixture::new(&[("shapes.py", SHAPES_PY), ("main.py", MAIN_PY)], command)
}

impl Fixture {
    async fn run(&self, question: Question, symbol: &str) -> Result<ToolOutput, ToolError> {
        NavigateTool::new(question, Some(self.source.clone()))
            .run(json!({"symbol": symbol}), &self.context())
            .await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pyright_resolves_references_hover_and_definition_by_type() {
    let Some(server) = tool("pyright-langserver") else {
        return;
    };
    let fixture = shapes(Some(&server));

    let references = fixture
        .run(Question::References, "shapes.py:Circle/area")
        .await
        .unwrap();
    let text = &references.model_text;
    eprintln!("{text}");
    assert!(text.contains("resolved_by: pyright"), "{text}");
    // `c.area()` (line 7) and `Circle(3.0).area()` (line 11), grouped under main.py with the
    // enclosing function and the line's text.
    assert!(
        text.contains("main.py\n  7:14  total  return c.area() + s.area()"),
        "{text}"
    );
    assert!(
        text.contains("  11:24  circles  return Circle(3.0).area()"),
        "{text}"
    );
    // Not `s.area()` (7:25), not Square's own definition (line 16).
    assert!(!text.contains("7:25"), "{text}");
    assert!(!text.contains("16:9"), "{text}");
    assert!(text.contains("shapes.py\n  7:9  Circle/area"), "{text}");

    let started = Instant::now();
    let hover = fixture
        .run(Question::Hover, "shapes.py:Circle/area")
        .await
        .unwrap();
    let hover_time = started.elapsed();
    let text = &hover.model_text;
    eprintln!("{text}");
    assert!(text.contains("resolved_by: pyright"), "{text}");
    assert!(
        text.contains("def area(self: Self@Circle) -> float"),
        "{text}"
    );
    assert!(text.contains("The area of the circle."), "{text}");

    // From the call sites on line 7, each call lands on its own class's method.
    let started = Instant::now();
    let circle = fixture
        .run(Question::Definition, "main.py:7:14")
        .await
        .unwrap();
    let definition_time = started.elapsed();
    eprintln!("{}", circle.model_text);
    assert!(
        circle.model_text.contains("resolved_by: pyright"),
        "{}",
        circle.model_text
    );
    assert!(
        circle
            .model_text
            .contains("shapes.py\n  7:9  Circle/area  def area(self) -> float:"),
        "{}",
        circle.model_text
    );
    let square = fixture
        .run(Question::Definition, "main.py:7:25")
        .await
        .unwrap();
    assert!(
        square.model_text.contains("shapes.py\n  16:9  Square/area"),
        "{}",
        square.model_text
    );
    assert!(
        !square.model_text.contains("Circle/area"),
        "{}",
        square.model_text
    );

    // The same questions of the index, for the record (no assertion on time).
    let index = shapes(None);
    let started = Instant::now();
    index
        .run(Question::Hover, "shapes.py:Circle/area")
        .await
        .unwrap();
    let index_hover = started.elapsed();
    let started = Instant::now();
    index
        .run(Question::Definition, "main.py:7:14")
        .await
        .unwrap();
    let index_definition = started.elapsed();
    eprintln!(
        "warm pyright: hover {hover_time:?}, definition {definition_time:?}; \
         index: hover {index_hover:?}, definition {index_definition:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_server_the_index_answers() {
    let fixture = shapes(None);
    let references = fixture
        .run(Question::References, "shapes.py:Circle/area")
        .await
        .unwrap();
    let text = &references.model_text;
    assert!(text.contains("resolved_by: index"), "{text}");
    assert!(
        text.contains("no language server configured for python"),
        "{text}"
    );
    // By name only: Square's call is among them.
    assert!(text.contains("7:25"), "{text}");
    let hover = fixture
        .run(Question::Hover, "shapes.py:Circle/area")
        .await
        .unwrap();
    assert!(
        hover.model_text.contains("resolved_by: index"),
        "{}",
        hover.model_text
    );
    assert!(
        hover.model_text.contains("def area(self) -> float:"),
        "{}",
        hover.model_text
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ambiguous_name_gets_the_candidates_not_a_server_answer() {
    let fixture = shapes(tool("pyright-langserver").as_deref());
    let error = fixture
        .run(Question::References, "shapes.py:area")
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

//! The agent's `call_hierarchy` and `rename` answered by the real pyright language server
//! (installed by scripts/install-test-tools.sh into target/test-tools) through the diagnostics
//! provider's warm server, on a fixture where two classes share method names; the index's
//! answers without a server; and `rename` against a hostile server
//! (fixtures/lsp/hostile_rename_server.py, a real process speaking LSP) whose edits reach
//! outside the workspace or into .git/: refused, nothing written.

use std::path::{Path, PathBuf};
use std::time::Instant;

use lode_tools::call_hierarchy::CallHierarchyTool;
use lode_tools::rename::RenameTool;
use lode_tools::{Tool, ToolError, ToolErrorCategory, ToolOutput};
use serde_json::{Value, json};

use crate::support::{Fixture, MAIN_PY, pyright_command, tool};

const SHAPES_PY: &str = r#"class Circle:
    """A round shape."""

    def __init__(self, r: float) -> None:
        self.r = r

    def area(self) -> float:
        """The area of the circle."""
        return 3.14159 * self.r * self.r

    def describe(self) -> str:
        return f"circle of area {self.area()}"


class Square:
    def __init__(self, side: float) -> None:
        self.side = side

    def area(self) -> float:
        return self.side * self.side

    def describe(self) -> str:
        return f"square of area {self.area()}"
"#;

const REPORT_PY: &str = r#"from shapes import Circle, Square


def report(c: Circle, s: Square) -> str:
    return f"{c.area()} {s.area()} {c.describe()}"
"#;

/// The workspace, with `command` as the Python language server (empty: none).
fn shapes(command: Vec<String>) -> Fixture {
    Fixture::new(
        &[
            ("shapes.py", SHAPES_PY),
            ("main.py", MAIN_PY),
            ("report.py", REPORT_PY),
        ],
        command,
    )
}

impl Fixture {
    async fn calls(&self, arguments: Value) -> Result<ToolOutput, ToolError> {
        CallHierarchyTool::new(Some(self.source.clone()))
            .run(arguments, &self.context())
            .await
    }

    async fn rename(&self, symbol: &str, new_name: &str) -> Result<ToolOutput, ToolError> {
        RenameTool::new(Some(self.source.clone()))
            .run(
                json!({"symbol": symbol, "new_name": new_name}),
                &self.context(),
            )
            .await
    }

    fn read(&self, file: &str) -> String {
        std::fs::read_to_string(self.root.join(file)).unwrap()
    }

    /// Every file under the root, with its text (lode's index excluded).
    fn snapshot(&self) -> Vec<(PathBuf, String)> {
        let mut files = Vec::new();
        let mut pending = vec![self.root.clone()];
        while let Some(dir) = pending.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.ends_with(".lode") {
                    continue;
                }
                if path.is_dir() {
                    pending.push(path);
                } else {
                    let text = std::fs::read_to_string(&path).unwrap_or_default();
                    files.push((path, text));
                }
            }
        }
        files.sort();
        files
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pyright_answers_the_call_hierarchy_by_type() {
    let Some(server) = tool("pyright-langserver") else {
        return;
    };
    let fixture = shapes(pyright_command(&server));

    let started = Instant::now();
    let incoming = fixture
        .calls(json!({"symbol": "shapes.py:Circle/area"}))
        .await
        .unwrap();
    let cold = started.elapsed();
    let text = &incoming.model_text;
    eprintln!("{text}");
    assert!(text.contains("resolved_by: pyright"), "{text}");
    assert!(text.contains("callers of shapes.py:Circle/area"), "{text}");
    // Grouped by file: total and circles in main.py, report in report.py, Circle.describe
    // in shapes.py; each with its call sites.
    assert!(text.contains("main.py\n"), "{text}");
    assert!(text.contains("total  4:5  calls at 7:14"), "{text}");
    assert!(text.contains("circles  10:5  calls at 11:24"), "{text}");
    assert!(text.contains("report  4:5  calls at 5:17"), "{text}");
    assert!(text.contains("Circle/describe"), "{text}");
    // Not Square's callers: Square/describe calls Square's area only.
    assert!(!text.contains("Square/describe"), "{text}");
    assert!(!text.contains("7:25"), "{text}");

    let started = Instant::now();
    let outgoing = fixture
        .calls(json!({"symbol": "main.py:total", "direction": "outgoing"}))
        .await
        .unwrap();
    let warm = started.elapsed();
    let text = &outgoing.model_text;
    eprintln!("{text}");
    assert!(text.contains("resolved_by: pyright"), "{text}");
    assert!(text.contains("calls made by main.py:total"), "{text}");
    assert!(
        text.contains("Circle/area  7:9  calls at main.py 7:14"),
        "{text}"
    );
    assert!(
        text.contains("Square/area  19:9  calls at main.py 7:25"),
        "{text}"
    );
    eprintln!("call hierarchy through pyright: first {cold:?} (starts the server), warm {warm:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_server_the_index_answers_the_call_hierarchy_by_name() {
    let fixture = shapes(Vec::new());
    let incoming = fixture
        .calls(json!({"symbol": "shapes.py:Circle/area"}))
        .await
        .unwrap();
    let text = &incoming.model_text;
    eprintln!("{text}");
    assert!(text.contains("resolved_by: index"), "{text}");
    assert!(
        text.contains("no language server configured for python"),
        "{text}"
    );
    // By name: both classes' describe are callers, and total's two calls are listed.
    assert!(text.contains("Square/describe"), "{text}");
    assert!(text.contains("total  calls at 7:14, 7:25"), "{text}");

    let outgoing = fixture
        .calls(json!({"symbol": "main.py:total", "direction": "outgoing"}))
        .await
        .unwrap();
    let text = &outgoing.model_text;
    eprintln!("{text}");
    assert!(text.contains("resolved_by: index"), "{text}");
    // `area` has two definitions: both are named, neither is guessed.
    assert!(
        text.contains("(several definitions share the name)"),
        "{text}"
    );
    assert!(text.contains("shapes.py:Circle/area  7"), "{text}");
    assert!(text.contains("shapes.py:Square/area  19"), "{text}");
    assert!(text.contains("calls at main.py 7:14, 7:25"), "{text}");

    let bad = fixture
        .calls(json!({"symbol": "main.py:total", "direction": "up"}))
        .await
        .unwrap_err();
    assert_eq!(bad.category, ToolErrorCategory::InvalidArguments);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pyright_renames_only_the_right_call_sites_in_every_file() {
    let Some(server) = tool("pyright-langserver") else {
        return;
    };
    let fixture = shapes(pyright_command(&server));
    let started = Instant::now();
    let renamed = fixture
        .rename("shapes.py:Circle/area", "surface")
        .await
        .unwrap();
    eprintln!(
        "rename through pyright (starts the server): {:?}",
        started.elapsed()
    );
    let text = &renamed.model_text;
    eprintln!("{text}");
    assert!(text.contains("resolved_by: pyright"), "{text}");
    assert!(text.contains("5 edits in 3 files"), "{text}");
    // One diff for the model, one per file for the front end.
    assert!(
        text.contains("--- a/main.py") && text.contains("--- a/report.py"),
        "{text}"
    );
    assert_eq!(renamed.display.len(), 3);

    assert_eq!(
        fixture.read("main.py"),
        MAIN_PY
            .replace("c.area()", "c.surface()")
            .replace("Circle(3.0).area()", "Circle(3.0).surface()")
    );
    assert_eq!(
        fixture.read("report.py"),
        REPORT_PY.replace("{c.area()}", "{c.surface()}")
    );
    let shapes = fixture.read("shapes.py");
    assert!(
        shapes.contains("    def surface(self) -> float:\n        \"\"\"The area of the circle")
    );
    assert!(
        shapes.contains("circle of area {self.surface()}"),
        "{shapes}"
    );
    // Square keeps its own area, its definition and its call.
    assert!(shapes.contains("    def area(self) -> float:\n        return self.side"));
    assert!(shapes.contains("square of area {self.area()}"), "{shapes}");
    // No temporary file is left beside the originals.
    let names: Vec<String> = fixture
        .snapshot()
        .into_iter()
        .map(|(path, _)| path.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().all(|name| !name.contains(".lode-rename-")),
        "{names:?}"
    );
    // The index saw the edits at once.
    let hits = fixture.index.references("surface", 10).unwrap();
    assert_eq!(hits.len(), 4, "{hits:?}");

    // Not a renameable name: refused before anything is asked.
    let bad = fixture
        .rename("shapes.py:Square/area", "a.b")
        .await
        .unwrap_err();
    assert_eq!(bad.category, ToolErrorCategory::InvalidArguments);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_server_rename_says_it_needs_one_and_changes_nothing() {
    let fixture = shapes(Vec::new());
    let before = fixture.snapshot();
    let error = fixture
        .rename("shapes.py:Circle/area", "surface")
        .await
        .unwrap_err();
    assert_eq!(error.category, ToolErrorCategory::Failed);
    assert!(
        error.message.contains("rename needs a language server"),
        "{}",
        error.message
    );
    assert!(
        error.message.contains("does not guess"),
        "{}",
        error.message
    );
    let error = RenameTool::new(None)
        .run(
            json!({"symbol": "shapes.py:Circle/area", "new_name": "surface"}),
            &fixture.context(),
        )
        .await
        .unwrap_err();
    assert!(error.message.contains("rename needs a language server"));
    assert_eq!(fixture.snapshot(), before);
}

/// The hostile server's command line, answering every rename with `edit`. This crate's tests
/// have no sandbox launcher, and where the sandbox cannot confine only the parse-only checkers
/// start (`lode_sandbox::exempt`): the server is started through a wrapper carrying one of
/// their names.
fn hostile(edit: &Value) -> Vec<String> {
    use std::os::unix::fs::PermissionsExt as _;
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/lsp/hostile_rename_server.py")
        .canonicalize()
        .unwrap();
    let dir = std::env::temp_dir().join(format!("lode-hostile-rename-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let wrapper = dir.join("pyright-langserver");
    if !wrapper.exists() {
        let staged = dir.join(format!("staged-{:?}", std::thread::current().id()));
        std::fs::write(
            &staged,
            format!("#!/bin/sh\nexec python3 '{}' \"$@\"\n", script.display()),
        )
        .unwrap();
        std::fs::set_permissions(&staged, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::rename(&staged, &wrapper).unwrap();
    }
    vec![wrapper.to_string_lossy().into_owned(), edit.to_string()]
}

fn replace(line: u32, from: u32, to: u32, text: &str) -> Value {
    json!({"range": {"start": {"line": line, "character": from},
                     "end": {"line": line, "character": to}},
           "newText": text})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn red_team_a_hostile_servers_rename_cannot_leave_the_workspace_or_touch_git() {
    if std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_err()
    {
        assert!(std::env::var_os("CI").is_none(), "python3 is missing");
        eprintln!("skipping: no python3 to run the hostile server");
        return;
    }
    // The genuine edit of main.py comes with each hostile one: nothing may be written at all.
    let genuine = json!([replace(6, 13, 17, "surface")]);
    let outside_dir = tempfile::tempdir().unwrap();
    let outside = std::fs::canonicalize(outside_dir.path())
        .unwrap()
        .join("victim.py");
    std::fs::write(&outside, "area = 1\n").unwrap();
    let outside_uri = format!("file://{}", outside.display());
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "an absolute path outside the workspace",
            json!({"changes": {"{root}/main.py": genuine, outside_uri.clone(): [replace(0, 0, 4, "pwned")]}}),
            "outside the workspace",
        ),
        (
            "a path that climbs out with ..",
            json!({"changes": {"{root}/main.py": genuine, "{root}/../../victim.py": [replace(0, 0, 4, "pwned")]}}),
            "outside the workspace",
        ),
        (
            "a git hook",
            json!({"changes": {"{root}/main.py": genuine, "{root}/.git/hooks/pre-commit": [replace(0, 0, 4, "pwned")]}}),
            "under .git/ or .lode/",
        ),
        (
            "lode's own configuration, as documentChanges",
            json!({"documentChanges": [
                {"textDocument": {"uri": "{root}/main.py", "version": null}, "edits": genuine},
                {"textDocument": {"uri": "{root}/.lode/config.toml", "version": null}, "edits": [replace(0, 0, 4, "pwned")]}
            ]}),
            "under .git/ or .lode/",
        ),
        (
            "a file operation",
            json!({"documentChanges": [
                {"textDocument": {"uri": "{root}/main.py", "version": null}, "edits": genuine},
                {"kind": "create", "uri": "{root}/evil.py"}
            ]}),
            "rename failed, nothing was changed: the rename would create a file; lode applies text edits only",
        ),
        (
            "a range that does not hold the old name",
            json!({"changes": {"{root}/main.py": [replace(6, 4, 10, "import os; os.system('x')")]}}),
            "the file changed since",
        ),
        (
            "a file that is not there",
            json!({"changes": {"{root}/main.py": genuine, "{root}/new_module.py": [replace(0, 0, 0, "x")]}}),
            "does not exist",
        ),
    ];
    let mut failures = Vec::new();
    for (name, edit, expected) in cases {
        let fixture = shapes(hostile(&edit));
        std::fs::create_dir_all(fixture.root.join(".git/hooks")).unwrap();
        std::fs::write(fixture.root.join(".git/hooks/pre-commit"), "area\n").unwrap();
        std::fs::create_dir_all(fixture.root.join(".lode")).unwrap();
        std::fs::write(fixture.root.join(".lode/config.toml"), "area = 1\n").unwrap();
        let before = fixture.snapshot();
        let outcome = fixture.rename("main.py:7:14", "surface").await;
        let after = fixture.snapshot();
        let victim = std::fs::read_to_string(&outside).unwrap();
        match outcome {
            Ok(output) => failures.push(format!("{name}: applied: {}", output.model_text)),
            Err(error) if !error.message.contains(expected) => failures.push(format!(
                "{name}: refused for another reason: {}",
                error.message
            )),
            Err(error) => eprintln!("refused {name}: {}", error.message),
        }
        if after != before || victim != "area = 1\n" {
            failures.push(format!("{name}: a file changed"));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");

    // The control: the same server's genuine edit alone is applied.
    let fixture = shapes(hostile(&json!({"changes": {"{root}/main.py": genuine}})));
    let output = fixture.rename("main.py:7:14", "surface").await.unwrap();
    // The wrapper's name, shortened as every server's is.
    assert!(
        output.model_text.contains("resolved_by: pyright"),
        "{}",
        output.model_text
    );
    assert!(fixture.read("main.py").contains("c.surface() + s.area()"));
}

//! The agent's tools on real parts: a real index over a copy of `fixtures/repos/tools-sample`,
//! real files in tempdirs, real processes, a real `cargo check`, and a test host implementing the
//! real `ToolHost` / `ClientFs` / `ClientTerminals` traits that records what it is asked.

use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lode_policy::Mode;
use lode_tools::command::{CommandLimits, RunCommandTool};
use lode_tools::event::{PlanStatus, ToolContent};
use lode_tools::host::{
    ClientFs, ClientTerminals, HostError, TerminalCommand, TerminalExit, TerminalOutput, ToolEvent,
    ToolHost,
};
use lode_tools::{
    Tool, ToolContext, ToolError, ToolErrorCategory, ToolOutput, default_tools, resolve_path,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../fixtures/repos/tools-sample"
);

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// A host that records events and, optionally, offers an editor file system and terminals.
#[derive(Default)]
struct TestHost {
    events: Mutex<Vec<ToolEvent>>,
    fs: Option<Arc<EditorFs>>,
    terminals: Option<Arc<LocalTerminals>>,
}

impl ToolHost for TestHost {
    fn emit(&self, event: ToolEvent) {
        self.events.lock().unwrap().push(event);
    }

    fn client_fs(&self) -> Option<Arc<dyn ClientFs>> {
        self.fs.clone().map(|fs| fs as Arc<dyn ClientFs>)
    }

    fn client_terminals(&self) -> Option<Arc<dyn ClientTerminals>> {
        self.terminals
            .clone()
            .map(|t| t as Arc<dyn ClientTerminals>)
    }
}

/// An editor with unsaved buffers: reads see buffers first, writes go to buffers.
#[derive(Default)]
struct EditorFs {
    buffers: Mutex<HashMap<PathBuf, String>>,
    calls: Mutex<Vec<String>>,
}

#[async_trait::async_trait]
impl ClientFs for EditorFs {
    async fn read_text_file(
        &self,
        path: &Path,
        _line: Option<u32>,
        _limit: Option<u32>,
    ) -> Result<String, HostError> {
        self.calls
            .lock()
            .unwrap()
            .push(format!("read {}", path.display()));
        if let Some(text) = self.buffers.lock().unwrap().get(path) {
            return Ok(text.clone());
        }
        std::fs::read_to_string(path).map_err(|e| HostError(e.to_string()))
    }

    async fn write_text_file(&self, path: &Path, content: &str) -> Result<(), HostError> {
        self.calls
            .lock()
            .unwrap()
            .push(format!("write {}", path.display()));
        self.buffers
            .lock()
            .unwrap()
            .insert(path.to_path_buf(), content.to_owned());
        Ok(())
    }
}

/// Terminals that run real local processes, as an editor would.
#[derive(Default)]
struct LocalTerminals {
    created: Mutex<Vec<TerminalCommand>>,
    outputs: Mutex<HashMap<String, std::process::Output>>,
    released: Mutex<Vec<String>>,
}

#[async_trait::async_trait]
impl ClientTerminals for LocalTerminals {
    async fn create(&self, command: &TerminalCommand) -> Result<String, HostError> {
        self.created.lock().unwrap().push(command.clone());
        let output = tokio::process::Command::new(&command.command)
            .args(&command.args)
            .current_dir(&command.cwd)
            .output()
            .await
            .map_err(|e| HostError(e.to_string()))?;
        let id = format!("term-{}", self.created.lock().unwrap().len());
        self.outputs.lock().unwrap().insert(id.clone(), output);
        Ok(id)
    }

    async fn output(&self, terminal_id: &str) -> Result<TerminalOutput, HostError> {
        let outputs = self.outputs.lock().unwrap();
        let output = outputs
            .get(terminal_id)
            .ok_or_else(|| HostError("no such terminal".into()))?;
        Ok(TerminalOutput {
            output: String::from_utf8_lossy(&output.stdout).into_owned(),
            truncated: false,
            exit: Some(TerminalExit {
                exit_code: output.status.code(),
                signal: None,
            }),
        })
    }

    async fn wait_for_exit(&self, terminal_id: &str) -> Result<TerminalExit, HostError> {
        Ok(self.output(terminal_id).await?.exit.unwrap())
    }

    async fn kill(&self, _terminal_id: &str) -> Result<(), HostError> {
        Ok(())
    }

    async fn release(&self, terminal_id: &str) -> Result<(), HostError> {
        self.released.lock().unwrap().push(terminal_id.to_owned());
        Ok(())
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    index: Arc<lode_index::Workspace>,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        copy_dir(Path::new(FIXTURE), &root);
        let root = std::fs::canonicalize(&root).unwrap();
        let index = lode_index::Workspace::open(lode_index::WorkspaceOptions::new(&root)).unwrap();
        index.refresh(&|_| {}).unwrap();
        Fixture {
            _dir: dir,
            root,
            index: Arc::new(index),
        }
    }

    /// A directory next to the workspace (outside it).
    fn outside(&self) -> PathBuf {
        let outside = self.root.parent().unwrap().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        outside
    }

    fn context(&self, host: Arc<TestHost>) -> ToolContext {
        ToolContext {
            roots: vec![self.root.clone()],
            index: Arc::clone(&self.index),
            host,
            call_id: "call-1".into(),
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

    async fn run(&self, tool: &str, arguments: Value) -> Result<ToolOutput, ToolError> {
        self.run_with(tool, arguments, Arc::new(TestHost::default()))
            .await
    }

    async fn run_with(
        &self,
        tool: &str,
        arguments: Value,
        host: Arc<TestHost>,
    ) -> Result<ToolOutput, ToolError> {
        let registry = default_tools();
        let tool = registry.get(tool).expect("tool exists");
        tool.run(arguments, &self.context(host)).await
    }
}

fn category(result: Result<ToolOutput, ToolError>) -> (ToolErrorCategory, String) {
    match result {
        Ok(output) => panic!("expected an error, got {}", output.model_text),
        Err(error) => (error.category, error.message),
    }
}

#[tokio::test]
async fn search_symbol_references_and_map_use_the_real_index() {
    let fx = Fixture::new();
    let search = fx
        .run("search_code", json!({"query": "session store open"}))
        .await
        .unwrap();
    assert!(
        search.model_text.contains("src/store.rs"),
        "{}",
        search.model_text
    );
    assert!(!search.locations.is_empty());

    let python = fx
        .run(
            "search_code",
            json!({"query": "summarize", "language": "python"}),
        )
        .await
        .unwrap();
    assert!(
        python.model_text.contains("scripts/report.py"),
        "{}",
        python.model_text
    );
    assert!(!python.model_text.contains("src/lib.rs"));

    let symbol = fx
        .run("find_symbol", json!({"name": "SessionStore"}))
        .await
        .unwrap();
    let first = symbol.model_text.lines().next().unwrap();
    assert!(
        first.starts_with("src/store.rs:4-"),
        "{}",
        symbol.model_text
    );
    assert!(first.contains("SessionStore"));
    assert_eq!(symbol.locations[0].path, fx.root.join("src/store.rs"));

    let refs = fx
        .run("find_references", json!({"name": "SessionStore"}))
        .await
        .unwrap();
    assert!(
        refs.model_text.contains("src/lib.rs:"),
        "{}",
        refs.model_text
    );

    let map = fx
        .run(
            "repo_map",
            json!({"mentions": ["summarize"], "max_tokens": 512}),
        )
        .await
        .unwrap();
    assert!(
        map.model_text.contains("scripts/report.py"),
        "{}",
        map.model_text
    );
    assert!(map.model_text.contains("summarize"));

    let unknown = fx
        .run("search_code", json!({"query": "x", "language": "cobol"}))
        .await;
    assert_eq!(category(unknown).0, ToolErrorCategory::InvalidArguments);
}

#[tokio::test]
async fn read_file_numbers_lines_and_pages() {
    let fx = Fixture::new();
    let out = fx
        .run(
            "read_file",
            json!({"path": "src/store.rs", "offset": 4, "limit": 2}),
        )
        .await
        .unwrap();
    assert_eq!(
        out.model_text.lines().take(2).collect::<Vec<_>>(),
        vec![
            "     4\tpub struct SessionStore {",
            "     5\t    sessions: Vec<String>,"
        ]
    );
    assert!(out.model_text.contains("read on with offset=6"));
    assert_eq!(out.locations[0].line, Some(4));

    let missing = fx.run("read_file", json!({"path": "src/nope.rs"})).await;
    assert_eq!(category(missing).0, ToolErrorCategory::NotFound);
    let dir = fx.run("read_file", json!({"path": "src"})).await;
    assert!(category(dir).1.contains("directory"));
    let malformed = fx.run("read_file", json!({"offset": 3})).await;
    let (kind, message) = category(malformed);
    assert_eq!(kind, ToolErrorCategory::InvalidArguments);
    assert!(message.contains("path"), "{message}");
    let not_json = fx.run("read_file", Value::String("{not json".into())).await;
    assert_eq!(category(not_json).0, ToolErrorCategory::InvalidArguments);
}

#[tokio::test]
async fn read_file_sees_unsaved_editor_buffers() {
    let fx = Fixture::new();
    let editor = Arc::new(EditorFs::default());
    let path = fx.root.join("src/lib.rs");
    editor
        .buffers
        .lock()
        .unwrap()
        .insert(path.clone(), "// unsaved change\n".into());
    let host = Arc::new(TestHost {
        fs: Some(Arc::clone(&editor)),
        ..TestHost::default()
    });
    let out = fx
        .run_with("read_file", json!({"path": "src/lib.rs"}), host)
        .await
        .unwrap();
    assert_eq!(out.model_text, "     1\t// unsaved change\n");
    assert_eq!(
        editor.calls.lock().unwrap().as_slice(),
        [format!("read {}", path.display())]
    );
}

#[tokio::test]
async fn list_files_honours_gitignore_and_globs() {
    let fx = Fixture::new();
    std::fs::create_dir_all(fx.root.join("build")).unwrap();
    std::fs::write(fx.root.join("build/generated.rs"), "fn x() {}").unwrap();
    std::fs::write(fx.root.join("debug.log"), "noise").unwrap();
    let all = fx.run("list_files", json!({})).await.unwrap();
    let paths: Vec<&str> = all.model_text.lines().collect();
    assert_eq!(
        paths,
        vec![
            ".gitignore",
            "README.md",
            "scripts/report.py",
            "src/lib.rs",
            "src/store.rs"
        ]
    );
    let rust = fx
        .run("list_files", json!({"pattern": "*.rs"}))
        .await
        .unwrap();
    assert_eq!(rust.model_text, "src/lib.rs\nsrc/store.rs");
    let scoped = fx
        .run("list_files", json!({"pattern": "*.py", "path": "scripts"}))
        .await
        .unwrap();
    assert_eq!(scoped.model_text, "scripts/report.py");
    let limited = fx.run("list_files", json!({"limit": 2})).await.unwrap();
    assert!(limited.model_text.contains("[2 of 5 files shown"));
}

#[tokio::test]
async fn grep_finds_lines_by_regex_and_skips_ignored_files() {
    let fx = Fixture::new();
    std::fs::create_dir_all(fx.root.join("build")).unwrap();
    std::fs::write(fx.root.join("build/gen.rs"), "pub fn generated() {}\n").unwrap();
    let out = fx
        .run("grep", json!({"pattern": r"pub fn \w+\(", "glob": "*.rs"}))
        .await
        .unwrap();
    let lines: Vec<&str> = out.model_text.lines().collect();
    assert_eq!(
        lines,
        vec![
            "src/lib.rs:8: pub fn count_sessions(dir: &str) -> usize {",
            "src/lib.rs:14: pub fn greet(name: &str) -> String {",
            "src/store.rs:10:     pub fn open(_dir: &str) -> SessionStore {",
            "src/store.rs:15:     pub fn len(&self) -> usize {",
            "src/store.rs:20:     pub fn insert(&mut self, name: &str) {",
        ]
    );
    assert_eq!(out.locations[0].path, fx.root.join("src/lib.rs"));
    assert_eq!(out.locations[0].line, Some(8));

    let folded = fx
        .run(
            "grep",
            json!({"pattern": "SESSION COUNTS", "case_insensitive": true, "path": "scripts"}),
        )
        .await
        .unwrap();
    assert_eq!(
        folded.model_text,
        "scripts/report.py:1: \"\"\"Builds a short report of session counts.\"\"\"\n"
    );

    let limited = fx
        .run("grep", json!({"pattern": "s", "limit": 3}))
        .await
        .unwrap();
    assert!(limited.model_text.contains("stopped at 3"));
    assert_eq!(limited.raw_output.unwrap()["more"], true);

    let none = fx
        .run("grep", json!({"pattern": "no_such_text_anywhere"}))
        .await
        .unwrap();
    assert!(none.model_text.starts_with("No line matches"));
    let bad = fx.run("grep", json!({"pattern": "fn ("})).await;
    assert_eq!(category(bad).0, ToolErrorCategory::InvalidArguments);
}

#[tokio::test]
async fn edit_file_replaces_a_unique_match_and_updates_the_index() {
    let fx = Fixture::new();
    let out = fx
        .run(
            "edit_file",
            json!({
                "path": "src/lib.rs",
                "old_string": "pub fn greet(name: &str) -> String {",
                "new_string": "pub fn welcome_visitor(name: &str) -> String {",
            }),
        )
        .await
        .unwrap();
    let on_disk = std::fs::read_to_string(fx.root.join("src/lib.rs")).unwrap();
    assert!(on_disk.contains("pub fn welcome_visitor("));
    assert!(!on_disk.contains("pub fn greet("));
    assert!(
        out.model_text.contains("--- a/src/lib.rs"),
        "{}",
        out.model_text
    );
    assert!(
        out.model_text
            .contains("-pub fn greet(name: &str) -> String {")
    );
    assert!(
        out.model_text
            .contains("+pub fn welcome_visitor(name: &str) -> String {")
    );
    match &out.display[..] {
        [
            ToolContent::Diff {
                path,
                old_text,
                new_text,
            },
        ] => {
            assert_eq!(path, &fx.root.join("src/lib.rs"));
            assert!(old_text.as_deref().unwrap().contains("pub fn greet("));
            assert_eq!(new_text, &on_disk);
        }
        other => panic!("unexpected display {other:?}"),
    }
    assert_eq!(out.locations[0].line, Some(14));
    assert_eq!(out.raw_output.as_ref().unwrap()["replacements"], 1);

    let found = fx
        .run("find_symbol", json!({"name": "welcome_visitor"}))
        .await
        .unwrap();
    assert!(
        found.model_text.starts_with("src/lib.rs:14"),
        "{}",
        found.model_text
    );
    let search = fx
        .run("search_code", json!({"query": "welcome_visitor"}))
        .await
        .unwrap();
    assert!(
        search.model_text.contains("src/lib.rs"),
        "{}",
        search.model_text
    );
}

#[tokio::test]
async fn edit_file_refuses_zero_or_several_matches_and_can_replace_all() {
    let fx = Fixture::new();
    let before = std::fs::read_to_string(fx.root.join("src/store.rs")).unwrap();

    let zero = fx
        .run(
            "edit_file",
            json!({"path": "src/store.rs", "old_string": "fn does_not_exist", "new_string": "x"}),
        )
        .await;
    let (kind, message) = category(zero);
    assert_eq!(kind, ToolErrorCategory::NoUniqueMatch);
    assert!(message.contains("0 matches"), "{message}");

    let indented = fx
        .run(
            "edit_file",
            json!({"path": "src/store.rs", "old_string": "pub fn len(&self) -> usize {", "new_string": "pub fn size(&self) -> usize {"}),
        )
        .await
        .unwrap();
    assert!(indented.model_text.contains("1 replacement"));
    std::fs::write(fx.root.join("src/store.rs"), &before).unwrap();

    let whitespace = fx
        .run(
            "edit_file",
            json!({"path": "src/store.rs", "old_string": "pub fn len(&self) -> usize {\n   self.sessions.len()", "new_string": "x"}),
        )
        .await;
    assert_eq!(category(whitespace).0, ToolErrorCategory::NoUniqueMatch);

    let several = fx
        .run(
            "edit_file",
            json!({"path": "src/store.rs", "old_string": "sessions", "new_string": "entries"}),
        )
        .await;
    let (kind, message) = category(several);
    assert_eq!(kind, ToolErrorCategory::NoUniqueMatch);
    let count = before.matches("sessions").count();
    assert!(
        message.contains(&format!("occurs {count} times")),
        "{message}"
    );
    assert!(message.contains("replace_all"));
    assert_eq!(
        std::fs::read_to_string(fx.root.join("src/store.rs")).unwrap(),
        before,
        "a refused edit leaves the file alone"
    );

    let all = fx
        .run(
            "edit_file",
            json!({"path": "src/store.rs", "old_string": "sessions", "new_string": "entries", "replace_all": true}),
        )
        .await
        .unwrap();
    assert_eq!(all.raw_output.unwrap()["replacements"], count);
    let after = std::fs::read_to_string(fx.root.join("src/store.rs")).unwrap();
    assert!(!after.contains("sessions"));
    assert_eq!(after.matches("entries").count(), count);

    let same = fx
        .run(
            "edit_file",
            json!({"path": "src/store.rs", "old_string": "a", "new_string": "a"}),
        )
        .await;
    assert_eq!(category(same).0, ToolErrorCategory::InvalidArguments);
}

#[tokio::test]
async fn edit_file_keeps_crlf_files_and_permissions() {
    let fx = Fixture::new();
    let path = fx.root.join("run.sh");
    std::fs::write(&path, "#!/bin/sh\r\necho one\r\necho two\r\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    fx.run(
        "edit_file",
        json!({"path": "run.sh", "old_string": "echo one\necho two", "new_string": "echo 1\necho 2"}),
    )
    .await
    .unwrap();
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "#!/bin/sh\r\necho 1\r\necho 2\r\n"
    );
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o755);
}

#[tokio::test]
async fn edits_go_through_the_editor_when_it_offers_a_file_system() {
    let fx = Fixture::new();
    let editor = Arc::new(EditorFs::default());
    let host = Arc::new(TestHost {
        fs: Some(Arc::clone(&editor)),
        ..TestHost::default()
    });
    let path = fx.root.join("src/lib.rs");
    let before = std::fs::read_to_string(&path).unwrap();
    fx.run_with(
        "edit_file",
        json!({"path": "src/lib.rs", "old_string": "hello, {name}", "new_string": "hi, {name}"}),
        host,
    )
    .await
    .unwrap();
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        before,
        "disk untouched"
    );
    let buffer = editor.buffers.lock().unwrap().get(&path).cloned().unwrap();
    assert!(buffer.contains("hi, {name}"));
    let calls = editor.calls.lock().unwrap().clone();
    assert_eq!(
        calls,
        vec![
            format!("read {}", path.display()),
            format!("write {}", path.display())
        ]
    );
}

#[tokio::test]
async fn write_file_creates_files_and_directories() {
    let fx = Fixture::new();
    let out = fx
        .run(
            "write_file",
            json!({"path": "src/nested/deeper/new_module.rs", "content": "pub fn fresh() {}\n"}),
        )
        .await
        .unwrap();
    let path = fx.root.join("src/nested/deeper/new_module.rs");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "pub fn fresh() {}\n"
    );
    match &out.display[..] {
        [
            ToolContent::Diff {
                old_text: None,
                new_text,
                ..
            },
        ] => {
            assert_eq!(new_text, "pub fn fresh() {}\n")
        }
        other => panic!("unexpected display {other:?}"),
    }
    assert_eq!(out.raw_output.as_ref().unwrap()["created"], true);
    let found = fx
        .run("find_symbol", json!({"name": "fresh"}))
        .await
        .unwrap();
    assert!(found.model_text.contains("src/nested/deeper/new_module.rs"));

    let overwrite = fx
        .run(
            "write_file",
            json!({"path": "README.md", "content": "new readme\n"}),
        )
        .await
        .unwrap();
    match &overwrite.display[..] {
        [
            ToolContent::Diff {
                old_text: Some(old),
                ..
            },
        ] => assert!(old.contains("Fixture")),
        other => panic!("unexpected display {other:?}"),
    }
    // No temporary files are left behind.
    let leftovers: Vec<_> = std::fs::read_dir(&fx.root)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".lode-"))
        .collect();
    assert!(leftovers.is_empty());
}

#[tokio::test]
async fn paths_are_confined_to_the_workspace() {
    let fx = Fixture::new();
    let outside = fx.outside();
    std::fs::write(outside.join("secret.txt"), "top secret").unwrap();

    let escape = fx
        .run("read_file", json!({"path": "../outside/secret.txt"}))
        .await;
    let (kind, message) = category(escape);
    assert_eq!(kind, ToolErrorCategory::OutsideWorkspace);
    assert!(message.contains("outside the workspace"), "{message}");

    let absolute = fx
        .run(
            "read_file",
            json!({"path": outside.join("secret.txt").to_str().unwrap()}),
        )
        .await;
    assert_eq!(category(absolute).0, ToolErrorCategory::OutsideWorkspace);

    let sneaky = fx
        .run("read_file", json!({"path": "src/../../outside/secret.txt"}))
        .await;
    assert_eq!(category(sneaky).0, ToolErrorCategory::OutsideWorkspace);

    std::os::unix::fs::symlink(&outside, fx.root.join("link-out")).unwrap();
    let through_link = fx
        .run("read_file", json!({"path": "link-out/secret.txt"}))
        .await;
    assert_eq!(
        category(through_link).0,
        ToolErrorCategory::OutsideWorkspace
    );
    let write_through_link = fx
        .run(
            "write_file",
            json!({"path": "link-out/planted.txt", "content": "x"}),
        )
        .await;
    assert_eq!(
        category(write_through_link).0,
        ToolErrorCategory::OutsideWorkspace
    );
    assert!(!outside.join("planted.txt").exists());

    std::os::unix::fs::symlink(outside.join("not-yet"), fx.root.join("dangling")).unwrap();
    let dangling = fx
        .run("write_file", json!({"path": "dangling", "content": "x"}))
        .await;
    assert_eq!(category(dangling).0, ToolErrorCategory::OutsideWorkspace);
    assert!(!outside.join("not-yet").exists());

    let new_escape = fx
        .run(
            "write_file",
            json!({"path": "newdir/../../outside/x.txt", "content": "x"}),
        )
        .await;
    assert!(category(new_escape).0 != ToolErrorCategory::Failed);
    assert!(!outside.join("x.txt").exists());

    std::os::unix::fs::symlink(fx.root.join("src"), fx.root.join("code")).unwrap();
    let inside = fx
        .run("read_file", json!({"path": "code/store.rs"}))
        .await
        .unwrap();
    assert!(inside.model_text.contains("SessionStore"));
    assert_eq!(inside.locations[0].path, fx.root.join("src/store.rs"));

    let roots = vec![fx.root.clone()];
    let resolved = resolve_path(&roots, "src/./../src/lib.rs").unwrap();
    assert_eq!(resolved.absolute, fx.root.join("src/lib.rs"));
    assert_eq!(resolved.display(&roots), "src/lib.rs");
    let missing = resolve_path(&roots, "src/new/file.rs").unwrap();
    assert!(!missing.exists);
    assert_eq!(missing.absolute, fx.root.join("src/new/file.rs"));

    let cwd_outside = fx
        .run(
            "run_command",
            json!({"command": "pwd", "cwd": "../outside"}),
        )
        .await;
    assert_eq!(category(cwd_outside).0, ToolErrorCategory::OutsideWorkspace);
}

#[tokio::test]
async fn run_command_reports_exit_code_and_output() {
    let fx = Fixture::new();
    let out = fx
        .run(
            "run_command",
            json!({"command": "echo out; echo err >&2; exit 3"}),
        )
        .await
        .unwrap();
    assert!(
        out.model_text.starts_with("exit code 3\n"),
        "{}",
        out.model_text
    );
    assert!(out.model_text.contains("out") && out.model_text.contains("err"));
    assert_eq!(out.raw_output.as_ref().unwrap()["exit_code"], 3);
    assert_eq!(out.raw_output.as_ref().unwrap()["truncated"], false);

    let cwd = fx
        .run("run_command", json!({"command": "pwd", "cwd": "src"}))
        .await
        .unwrap();
    assert_eq!(
        cwd.model_text,
        format!("exit code 0\n{}\n", fx.root.join("src").display())
    );
}

#[tokio::test]
async fn run_command_caps_output_keeping_head_and_tail() {
    let fx = Fixture::new();
    let tool = RunCommandTool::new(CommandLimits {
        output_cap: 2_000,
        ..CommandLimits::default()
    });
    let context = fx.context(Arc::new(TestHost::default()));
    let out = tool
        .run(json!({"command": "seq 1 100000"}), &context)
        .await
        .unwrap();
    assert!(
        out.model_text.starts_with("exit code 0\n1\n2\n3\n"),
        "{}",
        &out.model_text[..50]
    );
    assert!(out.model_text.ends_with("99999\n100000\n"));
    assert!(out.model_text.contains("omitted"));
    assert!(out.model_text.len() < 2_500);
    assert_eq!(out.raw_output.unwrap()["truncated"], true);
}

#[tokio::test]
async fn run_command_times_out_and_kills() {
    let fx = Fixture::new();
    let result = fx
        .run(
            "run_command",
            json!({"command": "echo started; sleep 30", "timeout_secs": 1}),
        )
        .await;
    let (kind, message) = category(result);
    assert_eq!(kind, ToolErrorCategory::Timeout);
    assert!(message.contains("started"), "{message}");
}

#[tokio::test]
async fn cancelling_run_command_kills_the_process_group() {
    let fx = Fixture::new();
    let marker = fx.root.join("survived.txt");
    let context = fx.context(Arc::new(TestHost::default()));
    let cancel = context.cancel.clone();
    let registry = default_tools();
    let tool = registry.get("run_command").unwrap();
    // A child in the background and one in the foreground: both must die.
    let command = format!("(sleep 2; touch {}) & sleep 30", marker.display());
    let running =
        tokio::spawn(async move { tool.run(json!({"command": command}), &context).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    cancel.cancel();
    let result = running.await.unwrap();
    assert_eq!(category(result).0, ToolErrorCategory::Cancelled);
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(
        !marker.exists(),
        "the background child was killed with its group"
    );
}

#[tokio::test]
async fn run_command_uses_client_terminals_when_offered() {
    let fx = Fixture::new();
    let terminals = Arc::new(LocalTerminals::default());
    let host = Arc::new(TestHost {
        terminals: Some(Arc::clone(&terminals)),
        ..TestHost::default()
    });
    let out = fx
        .run_with(
            "run_command",
            json!({"command": "echo via-terminal; exit 4"}),
            Arc::clone(&host),
        )
        .await
        .unwrap();
    assert!(
        out.model_text.starts_with("exit code 4\nvia-terminal"),
        "{}",
        out.model_text
    );
    assert_eq!(
        out.display,
        vec![ToolContent::Terminal {
            terminal_id: "term-1".into()
        }]
    );
    let created = terminals.created.lock().unwrap().clone();
    assert_eq!(created[0].command, "sh");
    assert_eq!(created[0].args, vec!["-c", "echo via-terminal; exit 4"]);
    assert_eq!(created[0].cwd, fx.root);
    // The terminal outlives the tool: the agent loop releases it after the final update shows it.
    assert!(terminals.released.lock().unwrap().is_empty());
    let events = host.events.lock().unwrap();
    assert!(events.iter().any(|event| matches!(
        event,
        ToolEvent::Updated(update)
            if update.content == vec![ToolContent::Terminal { terminal_id: "term-1".into() }]
    )));
}

#[tokio::test]
async fn diagnostics_reports_cargo_errors_first() {
    let fx = Fixture::new();
    let krate = fx.root.join("broken");
    std::fs::create_dir_all(krate.join("src")).unwrap();
    std::fs::write(
        krate.join("Cargo.toml"),
        "[package]\nname = \"broken\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .unwrap();
    std::fs::write(
        krate.join("src/lib.rs"),
        "pub fn answer() -> u32 {\n    let unused = 1;\n    \"forty-two\"\n}\n",
    )
    .unwrap();
    let out = fx
        .run("diagnostics", json!({"path": "broken/src/lib.rs"}))
        .await
        .unwrap();
    let lines: Vec<&str> = out.model_text.lines().collect();
    assert!(lines[0].contains("1 error(s)"), "{}", out.model_text);
    assert!(
        lines[1].starts_with("broken/src/lib.rs:3:5 error[E0308]: mismatched types"),
        "{}",
        out.model_text
    );
    assert_eq!(out.raw_output.as_ref().unwrap()["errors"], 1);
    assert_eq!(out.locations[0].path, krate.join("src/lib.rs"));

    // Fixed, the lints run and the warning shows.
    fx.run(
        "edit_file",
        json!({"path": "broken/src/lib.rs", "old_string": "\"forty-two\"", "new_string": "42"}),
    )
    .await
    .unwrap();
    let fixed = fx.run("diagnostics", json!({})).await;
    // The workspace root has no Cargo.toml: nothing to check there.
    assert!(fixed.unwrap().model_text.contains("No diagnostics source"));
    let fixed = fx
        .run("diagnostics", json!({"path": "broken"}))
        .await
        .unwrap();
    let lines: Vec<&str> = fixed.model_text.lines().collect();
    assert!(
        lines[0].contains("0 error(s), 1 warning(s)"),
        "{}",
        fixed.model_text
    );
    assert!(
        lines[1].starts_with(
            "broken/src/lib.rs:2:9 warning[unused_variables]: unused variable: `unused`"
        ),
        "{}",
        fixed.model_text
    );

    let python_only = fx
        .run("diagnostics", json!({"path": "scripts"}))
        .await
        .unwrap();
    assert!(
        python_only.model_text.contains("No diagnostics source"),
        "{}",
        python_only.model_text
    );
}

#[tokio::test]
async fn update_plan_emits_the_plan() {
    let fx = Fixture::new();
    let host = Arc::new(TestHost::default());
    let out = fx
        .run_with(
            "update_plan",
            json!({"entries": [
                {"content": "Find the store", "status": "completed"},
                {"content": "Add a method", "status": "in_progress", "priority": "high"},
                {"content": "Run the tests"}
            ]}),
            Arc::clone(&host),
        )
        .await
        .unwrap();
    assert!(out.model_text.contains("1 of 3"));
    let events = host.events.lock().unwrap().clone();
    match &events[..] {
        [ToolEvent::Plan(entries)] => {
            assert_eq!(entries.len(), 3);
            assert_eq!(entries[0].status, PlanStatus::Completed);
            assert_eq!(entries[2].status, PlanStatus::Pending);
        }
        other => panic!("unexpected events {other:?}"),
    }
    let bad = fx
        .run(
            "update_plan",
            json!({"entries": [{"content": "x", "status": "done"}]}),
        )
        .await;
    assert_eq!(category(bad).0, ToolErrorCategory::InvalidArguments);
}

#[test]
fn registry_offers_only_read_only_tools_outside_code_mode() {
    let registry = default_tools();
    let code: Vec<String> = registry
        .specs(Mode::Code)
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(code.len(), registry.len());
    for mode in [Mode::Ask, Mode::Architect] {
        let names: Vec<String> = registry.specs(mode).into_iter().map(|s| s.name).collect();
        assert!(names.contains(&"read_file".to_owned()));
        assert!(names.contains(&"update_plan".to_owned()));
        assert!(!names.contains(&"edit_file".to_owned()));
        assert!(!names.contains(&"run_command".to_owned()));
        assert!(registry.get_for_mode("write_file", mode).is_none());
    }
    for spec in registry.specs(Mode::Code) {
        assert_eq!(spec.parameters["type"], "object", "{}", spec.name);
        assert!(spec.description.len() > 40, "{}", spec.name);
    }
}

/// While the index is being built (here a real cold build, held at its first parsed file by its
/// progress callback), the tools that read the index answer at once that it is still being
/// built, with the build's counts; once it is built they answer from it. Tools that do not need
/// the index (`grep`, `read_file`) answer meanwhile.
#[tokio::test(flavor = "multi_thread")]
async fn index_tools_say_the_index_is_still_being_built() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    copy_dir(Path::new(FIXTURE), &root);
    let root = std::fs::canonicalize(&root).unwrap();
    let index =
        Arc::new(lode_index::Workspace::open(lode_index::WorkspaceOptions::new(&root)).unwrap());
    let fx = Fixture {
        _dir: dir,
        root,
        index: index.clone(),
    };
    let (parsing_tx, parsing_rx) = std::sync::mpsc::channel::<(usize, usize)>();
    let (go_on_tx, go_on_rx) = std::sync::mpsc::channel::<()>();
    let go_on_rx = Mutex::new(go_on_rx);
    let parsing_tx = Mutex::new(Some(parsing_tx));
    let building = std::thread::spawn(move || {
        index
            .refresh(&|progress| {
                if progress.phase != lode_index::RefreshPhase::Parse || progress.done == 0 {
                    return;
                }
                if let Some(tx) = parsing_tx.lock().unwrap().take() {
                    tx.send((progress.done, progress.total)).unwrap();
                    go_on_rx.lock().unwrap().recv().unwrap();
                }
            })
            .unwrap()
    });
    let (done, total) = parsing_rx.recv().unwrap();
    assert!(done < total, "the fixture has more than one file");
    let expected = format!("still being built ({done} of {total} files indexed)");
    for (tool, arguments) in [
        ("search_code", json!({"query": "session store open"})),
        ("find_symbol", json!({"name": "SessionStore"})),
        ("find_references", json!({"name": "SessionStore"})),
        ("repo_map", json!({})),
    ] {
        let error = fx.run(tool, arguments).await.unwrap_err();
        assert_eq!(error.category, ToolErrorCategory::Failed, "{tool}");
        assert!(error.retryable, "{tool}");
        assert!(
            error.message.contains(&expected),
            "{tool}: {}",
            error.message
        );
        assert!(error.message.contains("grep"), "{tool}: {}", error.message);
    }
    // What does not need the index works meanwhile.
    let grep = fx
        .run("grep", json!({"pattern": "SessionStore"}))
        .await
        .unwrap();
    assert!(
        grep.model_text.contains("src/store.rs"),
        "{}",
        grep.model_text
    );

    go_on_tx.send(()).unwrap();
    let stats = building.join().unwrap();
    assert_eq!(stats.parsed, total);
    assert!(fx.index.build_progress().is_none());
    let symbol = fx
        .run("find_symbol", json!({"name": "SessionStore"}))
        .await
        .unwrap();
    assert!(
        symbol.model_text.starts_with("src/store.rs:"),
        "{}",
        symbol.model_text
    );
}

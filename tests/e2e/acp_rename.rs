//! `lode acp` on stdio, end to end, drives the agent through a `rename` and a
//! `replace_symbol_body`: the real binary, the SDK's ACP client answering permission
//! questions, the scripted model (`fixtures/llm/acp_rename.json`) and the real pyright
//! language server (from target/test-tools, confined by the sandbox) on `fixtures/agent/shapes`,
//! where `Circle` and `Square` both have an `area` method. Denied, the rename changes nothing;
//! allowed, it changes only Circle's method and its calls, in both files, shown as one tool
//! call with a diff per file; then Square's `area` is rewritten by naming it.

use crate::acp_support as support;

use std::path::{Path, PathBuf};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    ContentBlock, InitializeRequest, NewSessionRequest, PromptRequest, SessionUpdate, StopReason,
    ToolCallContent,
};
use support::{Seen, acp_command, agent_text, llm_server, stdio_transport, with_client};

/// The shapes fixture in a plain directory (pyright skips hidden ones inside its root), its
/// config naming the scripted model and pyright.
fn workspace(llm: &str, tools: &Path) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    std::fs::create_dir(&root).unwrap();
    for file in ["shapes.py", "main.py"] {
        std::fs::copy(shapes_fixture().join(file), root.join(file)).unwrap();
    }
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::create_dir_all(root.join(".lode")).unwrap();
    let pyright = tools.join("node_modules/.bin/pyright-langserver");
    std::fs::write(
        root.join(".lode/config.toml"),
        format!(
            "[[llm.providers]]\nname = \"scripted\"\nkind = \"openai\"\nbase_url = \"{llm}\"\n\
             model = \"scripted-1\"\ncontext_window = 32000\n\n\
             [lsp.diagnostics]\ndefault_servers = false\ncommands = false\n\
             servers = {{ python = [{:?}, \"--stdio\"] }}\n\n\
             [sandbox]\nread = [{:?}]\n",
            pyright.display().to_string(),
            tools.display().to_string()
        ),
    )
    .unwrap();
    let root = std::fs::canonicalize(&root).unwrap();
    (dir, root)
}

fn shapes_fixture() -> PathBuf {
    support::repo_root().join("fixtures/agent/shapes")
}

/// target/test-tools, where scripts/install-test-tools.sh puts pyright; `None` to skip (a
/// failure in CI).
fn pyright_tools() -> Option<PathBuf> {
    let tools = support::repo_root().join("target/test-tools");
    if tools.join("node_modules/.bin/pyright-langserver").is_file() {
        return std::fs::canonicalize(tools).ok();
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "pyright-langserver is missing: run scripts/install-test-tools.sh"
    );
    eprintln!("skipping: pyright-langserver is not installed (run scripts/install-test-tools.sh)");
    None
}

/// One turn through a fresh `lode acp`, answering every permission question with `answer`.
async fn turn(root: &Path, answer: &'static str) -> Seen {
    let mut acp = acp_command(root, support::workspace_config_env(root))
        .spawn()
        .expect("lode acp starts");
    let seen = Seen::default();
    let cwd = root.to_path_buf();
    let stop = with_client(
        stdio_transport(&mut acp),
        answer,
        seen.clone(),
        async |cx| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            let session = cx
                .send_request(NewSessionRequest::new(cwd))
                .block_task()
                .await?;
            let prompt: Vec<ContentBlock> =
                vec!["Please rename Circle.area to surface, then tidy Square.area.".into()];
            let response = cx
                .send_request(PromptRequest::new(session.session_id, prompt))
                .block_task()
                .await?;
            Ok(response.stop_reason)
        },
    )
    .await;
    assert_eq!(stop, StopReason::EndTurn);
    seen
}

/// The diffs one tool call's updates carry: (path, old text, new text).
fn diffs_of(updates: &[SessionUpdate], call: &str) -> Vec<(PathBuf, String, String)> {
    updates
        .iter()
        .filter_map(|update| match update {
            SessionUpdate::ToolCallUpdate(update) if &*update.tool_call_id.0 == call => {
                update.fields.content.clone()
            }
            _ => None,
        })
        .flatten()
        .filter_map(|content| match content {
            ToolCallContent::Diff(diff) => Some((
                diff.path.clone(),
                diff.old_text.clone().unwrap_or_default(),
                diff.new_text.clone(),
            )),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_renames_by_type_and_replaces_a_symbol_over_acp() {
    let Some(tools) = pyright_tools() else {
        return;
    };
    let llm = llm_server("acp_rename.json");
    let (_dir, root) = workspace(&llm.base_url, &tools);
    let main_before = std::fs::read_to_string(root.join("main.py")).unwrap();
    let shapes_before = std::fs::read_to_string(root.join("shapes.py")).unwrap();

    // Denied: one question, nothing written, the model told.
    let denied = turn(&root, "reject_once").await;
    let questions = denied.questions();
    assert_eq!(questions.len(), 1, "{questions:?}");
    assert_eq!(&*questions[0].tool_call.tool_call_id.0, "call_rename_1");
    assert_eq!(
        std::fs::read_to_string(root.join("main.py")).unwrap(),
        main_before
    );
    assert_eq!(
        std::fs::read_to_string(root.join("shapes.py")).unwrap(),
        shapes_before
    );
    assert!(
        agent_text(&denied.updates()).ends_with("I was not allowed to rename."),
        "{}",
        agent_text(&denied.updates())
    );

    // Allowed: the rename, then the edit by symbol, each asked once.
    let allowed = turn(&root, "allow_once").await;
    let asked: Vec<String> = allowed
        .questions()
        .iter()
        .map(|question| question.tool_call.tool_call_id.0.to_string())
        .collect();
    assert_eq!(asked, ["call_rename_1", "call_replace_1"]);
    let updates = allowed.updates();
    assert!(
        agent_text(&updates).ends_with("Renamed Circle.area to surface and rewrote Square.area."),
        "{}",
        agent_text(&updates)
    );
    // One tool call, one diff per file it changed.
    let renamed = diffs_of(&updates, "call_rename_1");
    let mut files: Vec<String> = renamed
        .iter()
        .map(|(path, _, _)| path.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(files, ["main.py", "shapes.py"], "{renamed:?}");
    let main = std::fs::read_to_string(root.join("main.py")).unwrap();
    assert_eq!(
        main,
        main_before
            .replace("c.area()", "c.surface()")
            .replace("Circle(3.0).area()", "Circle(3.0).surface()")
    );
    let shapes = std::fs::read_to_string(root.join("shapes.py")).unwrap();
    assert!(
        shapes.contains("    def surface(self) -> float:\n        \"\"\"The area"),
        "{shapes}"
    );
    assert!(
        shapes.contains("    def area(self) -> float:\n        return self.side ** 2\n"),
        "Square's area, rewritten by name: {shapes}"
    );
    let replaced = diffs_of(&updates, "call_replace_1");
    assert_eq!(replaced.len(), 1, "{replaced:?}");
    assert!(replaced[0].2.contains("self.side ** 2"));
}

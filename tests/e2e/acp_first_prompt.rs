//! The first prompt in a workspace that has no index yet (issue 45): the real `lode acp` on stdio
//! in a generated workspace of 5,000 files, its model the scripted LLM server (in-process, so
//! the requests it received can be read). The prompt is answered while the index is still being
//! built; the editor sees the build as a tool card whose counts grow and which completes when
//! the index is ready; the first request tells the model the index is still being built, and a
//! prompt after the build gets retrieval from the index. Ordering only: nothing is timed.

use std::path::Path;

use lode_llm_script::{Script, ScriptedServer};
use serde_json::{Value, json};

use crate::acp_support::{Wire, acp_command, workspace_config_env};

/// Files in the generated workspace.
const FILES: usize = 5_000;

const SCRIPT: &str = r#"{
  "turns": [
    {"name": "any", "repeat": true, "match": {},
     "respond": {"text": "Splines are reticulated by the function that says so."}}
  ]
}"#;

/// A workspace of `FILES` small Rust files in 50 folders, one of which defines the function the
/// prompts ask about, with a config whose one provider is `base_url`.
fn generate(root: &Path, base_url: &str) {
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::create_dir_all(root.join(".lode")).unwrap();
    std::fs::write(
        root.join(".lode/config.toml"),
        format!(
            "[[llm.providers]]\nname = \"scripted\"\nkind = \"openai\"\nbase_url = \"{base_url}\"\nmodel = \"scripted-1\"\ncontext_window = 32000\n"
        ),
    )
    .unwrap();
    for file in 0..FILES {
        let dir = root.join(format!("src/part{:02}", file % 50));
        std::fs::create_dir_all(&dir).unwrap();
        let body = if file == 4_321 {
            "/// Reticulates the splines of a curve before it is drawn.\n\
             pub fn reticulate_splines_marker(curve: &mut Vec<f64>) {\n    \
             for point in curve.iter_mut() {\n        *point = point.sqrt();\n    }\n}\n"
                .to_owned()
        } else {
            format!(
                "/// Item {file} of the generated workspace.\npub struct Item{file} {{\n    \
                 pub value: u64,\n}}\n\nimpl Item{file} {{\n    pub fn weight(&self) -> u64 {{\n        \
                 self.value * {file}\n    }}\n\n    pub fn label(&self) -> String {{\n        \
                 format!(\"item {file}: {{}}\", self.weight())\n    }}\n}}\n"
            )
        };
        std::fs::write(dir.join(format!("item{file}.rs")), body).unwrap();
    }
}

/// One prompt's updates and its response, in the order lode wrote them.
#[derive(Default)]
struct Seen {
    /// Every `session/update`'s `update`, and whether it came before the prompt's response.
    updates: Vec<Value>,
    /// How many updates had arrived when the prompt's response did.
    before_response: Option<usize>,
}

/// Reads lode's output until the response to request `id` and, when `until_card_completes`,
/// until the index card has completed too.
async fn read_until(wire: &mut Wire, id: u64, seen: &mut Seen, until_card_completes: bool) {
    loop {
        let card_done = seen
            .updates
            .iter()
            .any(|update| is_card(update) && status(update) == "completed");
        if seen.before_response.is_some() && (!until_card_completes || card_done) {
            return;
        }
        let message = wire.next().await;
        if message["method"] == "session/update" {
            let update = &message["params"]["update"];
            // The session's commands are announced after `session/new`, whenever; not the
            // prompt's.
            if update["sessionUpdate"] != "available_commands_update" {
                seen.updates.push(update.clone());
            }
        } else if message["id"] == json!(id) {
            assert!(message.get("error").is_none(), "{message}");
            assert_eq!(message["result"]["stopReason"], "end_turn", "{message}");
            seen.before_response = Some(seen.updates.len());
        }
    }
}

fn is_card(update: &Value) -> bool {
    update["toolCallId"]
        .as_str()
        .is_some_and(|id| id.starts_with("lode-indexing-"))
}

fn status(update: &Value) -> &str {
    update["status"].as_str().unwrap_or("")
}

#[tokio::test(flavor = "multi_thread")]
async fn the_first_prompt_runs_while_the_index_is_built_and_shows_its_progress() {
    let llm = ScriptedServer::start(Script::from_json(SCRIPT).unwrap())
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    generate(dir.path(), &llm.openai_base_url());
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let mut wire = Wire::new(
        acp_command(&root, workspace_config_env(&root))
            .spawn()
            .expect("lode acp starts"),
    );
    wire.initialize(1).await;
    let session = wire
        .request(2, "session/new", json!({"cwd": root, "mcpServers": []}))
        .await;
    let session_id = session["result"]["sessionId"].as_str().unwrap().to_owned();
    let prompt = |id: u64, text: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
               "params": {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}})
        .to_string()
    };

    wire.send_raw(&prompt(3, "how are splines reticulated?"))
        .await;
    let mut first = Seen::default();
    read_until(&mut wire, 3, &mut first, true).await;

    // The prompt's first update is the index card, in progress: the index was not built yet.
    let opening = &first.updates[0];
    assert_eq!(opening["sessionUpdate"], "tool_call", "{opening}");
    assert!(is_card(opening), "{opening}");
    assert_eq!(status(opening), "in_progress", "{opening}");
    assert!(
        opening["title"]
            .as_str()
            .unwrap()
            .starts_with("Indexing the workspace"),
        "{opening}"
    );
    // The answer came before the card completed: the turn did not wait for the build.
    let answered_at = first.before_response.unwrap();
    let completed_at = first
        .updates
        .iter()
        .position(|update| is_card(update) && status(update) == "completed")
        .unwrap();
    assert!(
        answered_at <= completed_at,
        "the prompt was answered only after the index was built: {:#?}",
        first.updates
    );
    let text: String = first.updates[..answered_at]
        .iter()
        .filter(|update| update["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|update| update["content"]["text"].as_str())
        .collect();
    assert_eq!(
        text,
        "Splines are reticulated by the function that says so."
    );

    // Progress: the card's counts grow while it is in progress, then it completes with them all.
    let counts: Vec<(u64, u64)> = first
        .updates
        .iter()
        .filter(|update| is_card(update) && status(update) == "in_progress")
        .map(|update| {
            (
                update["rawOutput"]["indexed"].as_u64().unwrap(),
                update["rawOutput"]["total"].as_u64().unwrap(),
            )
        })
        .collect();
    assert!(
        counts.len() >= 2,
        "one progress update at least: {counts:?}"
    );
    assert!(
        counts.windows(2).all(|pair| pair[0].0 <= pair[1].0),
        "counts never go back: {counts:?}"
    );
    assert!(
        counts.last().unwrap().0 > counts[0].0,
        "the count grew: {counts:?}"
    );
    assert!(
        counts.iter().all(|(done, total)| done <= total),
        "never more than found: {counts:?}"
    );
    assert!(
        counts.iter().any(|(done, total)| done < total),
        "seen part-way: {counts:?}"
    );
    let completed = &first.updates[completed_at];
    assert!(
        completed["rawOutput"]["total"].as_u64().unwrap() >= FILES as u64,
        "{completed}"
    );
    // Every card update is one of this card's: one card per build and session.
    let card_ids: std::collections::BTreeSet<&str> = first
        .updates
        .iter()
        .filter(|update| is_card(update))
        .map(|update| update["toolCallId"].as_str().unwrap())
        .collect();
    assert_eq!(card_ids.len(), 1, "{card_ids:?}");

    // The model was told the index is still being built, and got no map or retrieved code.
    let requests = llm.requests();
    assert_eq!(requests.len(), 1);
    let first_request = serde_json::to_string(&requests[0].body).unwrap();
    assert!(
        first_request.contains("still being built"),
        "{first_request}"
    );
    assert!(!first_request.contains("reticulate_splines_marker"));

    // Once the index is ready, the next prompt's request carries what the index retrieved.
    wire.send_raw(&prompt(4, "how are splines reticulated, in short?"))
        .await;
    let mut second = Seen::default();
    read_until(&mut wire, 4, &mut second, false).await;
    assert!(
        !second.updates.iter().any(is_card),
        "no build, no card: {:#?}",
        second.updates
    );
    let requests = llm.requests();
    let second_request = serde_json::to_string(&requests.last().unwrap().body).unwrap();
    assert!(
        second_request.contains("reticulate_splines_marker"),
        "{second_request}"
    );
}

/// `lode run --json` in the same kind of workspace: the turn runs while the index is built, the
/// build's progress is on stderr, and stdout stays one JSON event per line (no progress there).
#[tokio::test(flavor = "multi_thread")]
async fn lode_run_shows_the_build_on_stderr_and_keeps_stdout_json() {
    let llm = ScriptedServer::start(Script::from_json(SCRIPT).unwrap())
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    generate(dir.path(), &llm.openai_base_url());
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let home = tempfile::tempdir().unwrap();
    let output = crate::support::lode(&root)
        .args(["run", "--json", "how are splines reticulated?"])
        .env("LODE_CONFIG", workspace_config_env(&root))
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .env("HOME", home.path())
        .output()
        .expect("lode runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    let events: Vec<Value> = stdout
        .lines()
        .map(|line| {
            serde_json::from_str(line)
                .unwrap_or_else(|error| panic!("not a JSON line ({error}): {line}"))
        })
        .collect();
    assert!(
        events
            .iter()
            .all(|event| event["event"] != "index_progress"),
        "{stdout}"
    );
    assert!(
        events.iter().any(|event| event["event"] == "text_delta"
            && event["text"].as_str().unwrap().contains("Splines")),
        "{stdout}"
    );
    assert!(stderr.contains("lode: indexing"), "{stderr}");
    // The model was told why it has no map: the turn did not wait for the 5,000 files.
    let first = serde_json::to_string(&llm.requests()[0].body).unwrap();
    assert!(first.contains("still being built"), "{first}");
}

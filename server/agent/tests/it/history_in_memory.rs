//! A session's history is kept in memory from turn to turn (the store's view of it, see
//! `lode_agent::store`), and the repo map and retrieved code are kept while the index's
//! generation stays the same. None of it may change what the model is sent: a session run in
//! one agent, which keeps everything in memory, sends exactly the requests that the same
//! session sends when every turn opens a new agent and loads it from the file — through
//! redaction, `/compact`, `/clear`, compaction when the window fills up, and a compaction after
//! the provider refused a request as too long.

use crate::common;

use common::{copy_dir, repo_root};

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use lode_agent::event::{AgentEvent, StopReason};
use lode_agent::host::{PermissionAnswer, PermissionRequest, SessionHost};
use lode_agent::store::{NewSession, SessionStore, Visibility};
use lode_agent::{Agent, UserInput};
use lode_llm::Message;
use lode_llm_script::{Script, ScriptedServer, ScriptedServerHandle};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// Records notices, allows every tool call once.
#[derive(Default)]
struct NoticeHost {
    notices: Mutex<Vec<String>>,
}

#[async_trait::async_trait]
impl SessionHost for NoticeHost {
    fn emit(&self, event: AgentEvent) {
        if let AgentEvent::Notice { message } = event {
            self.notices.lock().unwrap().push(message);
        }
    }

    async fn request_permission(&self, _request: PermissionRequest) -> PermissionAnswer {
        PermissionAnswer::AllowOnce
    }
}

/// The calculator fixture with two providers of the same model, `warm` (the default) and
/// `cold`, each talking to its own scripted server, and memory in the workspace's folder.
fn workspace(
    dir: &Path,
    warm: &ScriptedServerHandle,
    cold: &ScriptedServerHandle,
    window: u32,
) -> PathBuf {
    let root = dir.join("workspace");
    copy_dir(&repo_root().join("fixtures/agent/calculator"), &root);
    std::fs::create_dir_all(root.join(".lode")).unwrap();
    let provider = |name: &str, server: &ScriptedServerHandle| {
        format!(
            "[[llm.providers]]\nname = \"{name}\"\nkind = \"openai\"\nbase_url = \"{}\"\nmodel = \"scripted-model\"\ncontext_window = {window}\nmax_tokens = 1000\n",
            server.openai_base_url()
        )
    };
    std::fs::write(
        root.join(".lode/config.toml"),
        format!(
            "{}{}[memory]\npath = \"{}\"\n",
            provider("warm", warm),
            provider("cold", cold),
            dir.join("memory.sqlite").display()
        ),
    )
    .unwrap();
    root
}

async fn prompt(agent: &Agent, session: &str, input: &str, host: Arc<NoticeHost>) {
    let stop = agent
        .prompt(
            session,
            vec![UserInput::Text(input.to_owned())],
            host,
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(stop, StopReason::EndTurn, "{input}");
}

/// Runs `inputs` as the turns of one session in one agent (everything kept in memory between
/// turns), then as the turns of another session with a new agent for every turn (everything
/// loaded from the file), each against its own server running `script`. Asserts that both
/// servers received the same requests, and returns them with the first run's notices.
async fn warm_and_cold(script: &str, window: u32, inputs: &[&str]) -> (Vec<Value>, Vec<String>) {
    let script = Script::load(&repo_root().join("fixtures/llm").join(script)).unwrap();
    let warm_server = ScriptedServer::start(script.clone()).await.unwrap();
    let cold_server = ScriptedServer::start(script).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = workspace(dir.path(), &warm_server, &cold_server, window);

    let host = Arc::new(NoticeHost::default());
    {
        let agent = Agent::open(&root, common::test_options(&root)).unwrap();
        let session = agent.new_session(root.clone(), Vec::new()).unwrap();
        assert_eq!(session.model, "warm");
        for input in inputs {
            prompt(&agent, &session.id, input, host.clone()).await;
        }
    }
    let session = {
        let agent = Agent::open(&root, common::test_options(&root)).unwrap();
        let session = agent.new_session(root.clone(), Vec::new()).unwrap();
        agent.set_model(&session.id, "cold").unwrap();
        session
    };
    for input in inputs {
        let agent = Agent::open(&root, common::test_options(&root)).unwrap();
        prompt(&agent, &session.id, input, Arc::new(NoticeHost::default())).await;
    }

    let bodies = |server: &ScriptedServerHandle| -> Vec<Value> {
        server
            .requests()
            .into_iter()
            .map(|request| request.body)
            .collect()
    };
    let (warm, cold) = (bodies(&warm_server), bodies(&cold_server));
    assert_eq!(warm.len(), cold.len(), "as many requests");
    for (index, (warm, cold)) in warm.iter().zip(&cold).enumerate() {
        assert!(
            warm == cold,
            "request {index} differs:\nkept in memory: {warm:#}\nloaded: {cold:#}"
        );
    }
    let notices = host.notices.lock().unwrap().clone();
    (warm, notices)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_with_tools_redaction_compact_and_clear_send_what_a_cold_load_sends() {
    let inputs = [
        "Question 0: where is addition implemented?",
        // Stored redacted: from the next turn on, the model sees `[REDACTED]`.
        "Question 1: my key is sk-proj-abcdefghijklmnopqrstuvwxyz0123; where is multiply?",
        "Question 2: and subtraction?",
        "/compact",
        "Question 4: where are the tests?",
        "/clear",
        "Question 6: start again: where is addition implemented?",
        "Question 7: anything else?",
    ];
    let (requests, _) = warm_and_cold("agent_bench.json", 32_000, &inputs).await;
    let text = |index: usize| requests[index]["messages"].to_string();
    // The secret went out in clear only within its own turn (3 requests per turn, the summary
    // request of `/compact` after turn 2).
    assert!(text(3).contains("sk-proj-abcdefghij"));
    assert!(!text(6).contains("sk-proj-abcdefghij"));
    assert!(text(6).contains("[REDACTED]"));
    let last = text(requests.len() - 1);
    assert!(
        last.contains("The user cleared the conversation here"),
        "{last}"
    );
    assert!(!last.contains("Question 4"), "{last}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_compacted_as_its_window_fills_sends_what_a_cold_load_sends() {
    let inputs: Vec<String> = (1..=8)
        .map(|n| format!("Question number {n} about the calculator?"))
        .collect();
    let inputs: Vec<&str> = inputs.iter().map(String::as_str).collect();
    let (_, notices) = warm_and_cold("agent_long_session.json", 6_000, &inputs).await;
    assert!(
        notices.iter().any(|notice| notice.starts_with("compacted")),
        "{notices:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compaction_after_a_refused_request_sends_what_a_cold_load_sends() {
    let inputs = ["first question", "second question", "third question"];
    let (_, notices) = warm_and_cold("agent_context_length.json", 32_000, &inputs).await;
    assert!(
        notices
            .iter()
            .any(|notice| notice.contains("context is full")),
        "{notices:?}"
    );
}

/// What another connection writes (another lode process on the same workspace) reaches the
/// view kept in memory: appended messages, a compaction, a deletion.
#[test]
fn the_view_in_memory_follows_writes_from_another_connection() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.sqlite");
    let ours = SessionStore::open(&path).unwrap();
    let theirs = SessionStore::open(&path).unwrap();
    let session = ours
        .create_session(&NewSession {
            cwd: dir.path().to_path_buf(),
            mode: "code".into(),
            model: None,
        })
        .unwrap();
    let none = Default::default();
    let view = |store: &SessionStore| store.model_messages_with(&session.id, &none).unwrap();
    let cold = |store: &SessionStore| store.load_history(&session.id).unwrap().model_messages();

    ours.append_message(&session.id, &Message::user_text("one"), Visibility::Both)
        .unwrap();
    assert_eq!(view(&ours).len(), 1);
    theirs
        .append_message(&session.id, &Message::user_text("two"), Visibility::Both)
        .unwrap();
    ours.append_message(
        &session.id,
        &Message::user_text("three, token=hunter2hunter2"),
        Visibility::Both,
    )
    .unwrap();
    assert_eq!(view(&ours), cold(&ours));
    assert_eq!(view(&ours).len(), 3);
    assert!(view(&ours)[2].text().contains("[REDACTED]"));

    theirs
        .mark_compacted(
            &session.id,
            2,
            &Message::user_text("summary of one and two"),
        )
        .unwrap();
    assert_eq!(view(&ours), cold(&ours));
    assert_eq!(view(&ours)[0].text(), "summary of one and two");
    assert_eq!(view(&ours).len(), 2);

    // Our own compaction and appends keep the view current too.
    ours.append_message(&session.id, &Message::user_text("four"), Visibility::Both)
        .unwrap();
    ours.mark_compacted(&session.id, 3, &Message::user_text("summary up to three"))
        .unwrap();
    ours.append_message(
        &session.id,
        &Message::user_text("five"),
        Visibility::UserOnly,
    )
    .unwrap();
    ours.append_message(
        &session.id,
        &Message::user_text("six"),
        Visibility::ModelOnly,
    )
    .unwrap();
    assert_eq!(view(&ours), cold(&ours));
    assert_eq!(view(&theirs), cold(&theirs));
    let texts: Vec<String> = view(&ours).iter().map(Message::text).collect();
    assert_eq!(texts, ["summary up to three", "four", "six"]);

    assert!(theirs.delete_session(&session.id).unwrap());
    assert!(ours.model_messages_with(&session.id, &none).is_err());
}

/// A change to the index between turns (an editor's save applied by a watcher, another
/// process's refresh) reaches the next turn's repo map; without one, the map is the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_to_the_index_between_turns_reaches_the_next_map() {
    let script = Script::load(&repo_root().join("fixtures/llm/agent_long_session.json")).unwrap();
    let server = ScriptedServer::start(script.clone()).await.unwrap();
    let unused = ScriptedServer::start(script).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = workspace(dir.path(), &server, &unused, 32_000);
    let agent = Agent::open(&root, common::test_options(&root)).unwrap();
    let session = agent.new_session(root.clone(), Vec::new()).unwrap();
    // The context lode attached to the newest user message of the latest request.
    let turn_context = |server: &ScriptedServerHandle| {
        let body = server.requests().last().unwrap().body.clone();
        let user = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .rev()
            .find(|message| message["role"] == "user")
            .unwrap()["content"]
            .as_str()
            .unwrap()
            .to_owned();
        user.split_once("</turn_context>")
            .map(|(context, _)| context.to_owned())
            .unwrap_or_default()
    };
    let host = Arc::new(NoticeHost::default());
    // From the second turn on, the conversation mentions the same file and name every turn
    // (the map leaves that file out: the model has it).
    prompt(&agent, &session.id, "What does `add` do?", host.clone()).await;
    prompt(&agent, &session.id, "What does `add` do?", host.clone()).await;
    let second = turn_context(&server);
    prompt(&agent, &session.id, "What does `add` do?", host.clone()).await;
    let third = turn_context(&server);
    // Nothing changed, and what the first turn's context said (the environment, the code found
    // for the question) is still in the conversation: nothing new to attach (the map is empty,
    // it leaves out the file the conversation is about).
    assert_eq!(second, "");
    assert_eq!(third, "");

    let path = root.join("src/helper.rs");
    let source =
        "/// Returns its argument.\npub fn brand_new_helper(value: i64) -> i64 {\n    value\n}\n";
    std::fs::write(&path, source).unwrap();
    agent.index().update_file(&path, source).unwrap();
    prompt(&agent, &session.id, "What does `add` do?", host).await;
    let after = turn_context(&server);
    assert!(
        after.contains("# Repository map\nThe most relevant"),
        "{after}"
    );
    assert!(after.contains("brand_new_helper"), "{after}");
}

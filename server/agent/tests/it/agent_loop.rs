//! The agent loop end to end, for what can go wrong: cancellation mid-stream and mid-tool, every
//! provider fault, compaction, the tool-iteration cap, doom loops, read-only modes and path
//! escapes. Each test runs a real `Agent` on a copy of the calculator fixture (real index, real
//! tools, real SQLite) against the scripted LLM server over HTTP (`fixtures/llm/agent_*.json`),
//! with both provider kinds where the wire format matters.

use crate::common;

use common::{copy_dir, repo_root};

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use lode_agent::compaction::SUMMARY_HEADER;
use lode_agent::event::{AgentEvent, StopReason, ToolStatus};
use lode_agent::host::{PermissionAnswer, PermissionRequest, SessionHost};
use lode_agent::store::{SessionStore, Visibility};
use lode_agent::{Agent, AgentError, UserInput};
use lode_llm::{ContentPart, Message, Role};
use lode_llm_script::{RecordedRequest, Script, ScriptedServer, ScriptedServerHandle};
use lode_policy::Mode;
use tokio_util::sync::CancellationToken;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    OpenAi,
    Anthropic,
}

const KINDS: [Kind; 2] = [Kind::OpenAi, Kind::Anthropic];

fn script(name: &str) -> Script {
    Script::load(&repo_root().join("fixtures/llm").join(name)).unwrap()
}

/// A tempdir holding `workspace/` (a copy of the calculator fixture configured to talk to
/// `server`) and room beside it for files outside the workspace.
struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new(server: &ScriptedServerHandle, kind: Kind, extra_config: &str) -> Fixture {
        Fixture::with_window(server, kind, 32_000, extra_config)
    }

    fn with_window(
        server: &ScriptedServerHandle,
        kind: Kind,
        context_window: u32,
        extra_config: &str,
    ) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("workspace");
        copy_dir(&repo_root().join("fixtures/agent/calculator"), &root);
        std::fs::create_dir_all(root.join(".lode")).unwrap();
        let (kind_name, base_url) = match kind {
            Kind::OpenAi => ("openai", server.openai_base_url()),
            Kind::Anthropic => ("anthropic", server.base_url()),
        };
        std::fs::write(
            root.join(".lode/config.toml"),
            format!(
                r#"[[llm.providers]]
name = "scripted"
kind = "{kind_name}"
base_url = "{base_url}"
model = "scripted-model"
context_window = {context_window}
max_tokens = 1000
{extra_config}
"#
            ),
        )
        .unwrap();
        Fixture { dir }
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("workspace")
    }

    fn agent(&self) -> Agent {
        Agent::open(&self.root(), common::test_options(&self.root())).unwrap()
    }

    /// The session store, opened as a second connection to the agent's database.
    fn store(&self) -> SessionStore {
        SessionStore::open(&self.root().join(".lode/agent.sqlite")).unwrap()
    }
}

type Trigger = Box<dyn Fn(&AgentEvent) -> bool + Send + Sync>;

/// Records every event, answers permission questions with a fixed answer, and cancels `cancel`
/// the first time an event satisfies the trigger.
struct TestHost {
    events: Mutex<Vec<AgentEvent>>,
    permission_requests: Mutex<Vec<PermissionRequest>>,
    answer: PermissionAnswer,
    trigger: Option<(Trigger, CancellationToken)>,
}

impl TestHost {
    fn answering(answer: PermissionAnswer) -> Arc<TestHost> {
        Arc::new(TestHost {
            events: Mutex::new(Vec::new()),
            permission_requests: Mutex::new(Vec::new()),
            answer,
            trigger: None,
        })
    }

    fn cancelling_on(
        answer: PermissionAnswer,
        cancel: CancellationToken,
        trigger: impl Fn(&AgentEvent) -> bool + Send + Sync + 'static,
    ) -> Arc<TestHost> {
        Arc::new(TestHost {
            events: Mutex::new(Vec::new()),
            permission_requests: Mutex::new(Vec::new()),
            answer,
            trigger: Some((Box::new(trigger), cancel)),
        })
    }

    fn events(&self) -> Vec<AgentEvent> {
        self.events.lock().unwrap().clone()
    }

    fn text(&self) -> String {
        self.events()
            .iter()
            .filter_map(|event| match event {
                AgentEvent::TextDelta { text } => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .concat()
    }

    fn notices(&self) -> Vec<String> {
        self.events()
            .iter()
            .filter_map(|event| match event {
                AgentEvent::Notice { message } => Some(message.clone()),
                _ => None,
            })
            .collect()
    }

    /// (call id, final status) of every tool call that finished.
    fn finished_tools(&self) -> Vec<(String, ToolStatus)> {
        self.events()
            .iter()
            .filter_map(|event| match event {
                AgentEvent::ToolCallUpdated(update)
                    if matches!(update.status, ToolStatus::Completed | ToolStatus::Failed) =>
                {
                    Some((update.id.clone(), update.status))
                }
                _ => None,
            })
            .collect()
    }
}

#[async_trait::async_trait]
impl SessionHost for TestHost {
    fn emit(&self, event: AgentEvent) {
        if let Some((trigger, cancel)) = &self.trigger
            && trigger(&event)
        {
            cancel.cancel();
        }
        self.events.lock().unwrap().push(event);
    }

    async fn request_permission(&self, request: PermissionRequest) -> PermissionAnswer {
        self.permission_requests.lock().unwrap().push(request);
        self.answer
    }
}

fn text(prompt: &str) -> Vec<UserInput> {
    vec![UserInput::Text(prompt.to_owned())]
}

/// The names of the tools a recorded request offered, in either API's format.
fn offered_tools(request: &RecordedRequest) -> Vec<String> {
    request.body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|tool| {
                    tool["function"]["name"]
                        .as_str()
                        .or_else(|| tool["name"].as_str())
                        .map(str::to_owned)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Every tool result stored in the session, by call id.
fn stored_results(messages: &[Message]) -> Vec<(String, String, bool)> {
    messages
        .iter()
        .flat_map(|message| message.content.iter())
        .filter_map(|part| match part {
            ContentPart::ToolResult(result) => Some((
                result.call_id.clone(),
                result.content.clone(),
                result.is_error,
            )),
            _ => None,
        })
        .collect()
}

/// Asserts that every tool call in `messages` has a stored result.
fn assert_every_call_has_a_result(messages: &[Message]) {
    let results: Vec<String> = stored_results(messages)
        .into_iter()
        .map(|(id, _, _)| id)
        .collect();
    for call in messages.iter().flat_map(|message| message.tool_calls()) {
        assert!(
            results.contains(&call.id),
            "tool call {} ({}) has no result in {messages:#?}",
            call.id,
            call.name
        );
    }
}

fn user_texts(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .filter(|message| message.role == Role::User)
        .flat_map(|message| message.content.iter())
        .filter_map(|part| match part {
            ContentPart::Text { text } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_mid_stream_stops_the_turn_and_the_session_goes_on() {
    for kind in KINDS {
        let server = ScriptedServer::start(script("agent_cancel_stream.json"))
            .await
            .unwrap();
        let fixture = Fixture::new(&server, kind, "");
        let agent = fixture.agent();
        let session = agent.new_session(fixture.root(), Vec::new()).unwrap();
        let cancel = CancellationToken::new();
        let host = TestHost::cancelling_on(PermissionAnswer::RejectOnce, cancel.clone(), |e| {
            matches!(e, AgentEvent::TextDelta { .. })
        });

        let stop = agent
            .prompt(
                &session.id,
                text("Tell me a long story."),
                host.clone(),
                cancel,
            )
            .await
            .unwrap();
        assert_eq!(
            stop,
            StopReason::Cancelled,
            "{kind:?}: {:#?}",
            host.events()
        );
        let full_story = script("agent_cancel_stream.json").turns[0]
            .respond
            .text
            .as_ref()
            .unwrap()
            .full_text();
        let shown = host.text();
        assert!(
            !shown.is_empty() && shown.len() < full_story.len() / 2,
            "{kind:?}: the stream must stop soon after the first delta, got {shown:?}"
        );
        assert!(matches!(
            host.events().last(),
            Some(AgentEvent::TurnFinished {
                stop_reason: StopReason::Cancelled
            })
        ));

        // The session is not left busy, and the next prompt is answered normally.
        let host = TestHost::answering(PermissionAnswer::RejectOnce);
        let stop = agent
            .prompt(
                &session.id,
                text("hello again"),
                host.clone(),
                CancellationToken::new(),
            )
            .await
            .unwrap();
        assert_eq!(stop, StopReason::EndTurn, "{kind:?}");
        assert_eq!(host.text(), "Still here after the cancel.");
        let visible = agent.visible_messages(&session.id).unwrap();
        assert_eq!(
            user_texts(&visible),
            vec!["Tell me a long story.".to_owned(), "hello again".to_owned()]
        );
        // The cancelled partial answer is not stored as if the model had said it.
        assert!(
            !visible
                .iter()
                .any(|m| m.role == Role::Assistant && m.text().contains("Sentence 1 ")),
            "{kind:?}: {visible:#?}"
        );
    }
}

/// Whether a process whose command line contains `needle` is running (Linux `/proc`).
fn process_running(needle: &str) -> bool {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter(|entry| {
            entry
                .file_name()
                .to_str()
                .is_some_and(|name| name.chars().all(|c| c.is_ascii_digit()))
        })
        .any(|entry| {
            let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
                return false;
            };
            let is_zombie = std::fs::read_to_string(entry.path().join("stat"))
                .map(|stat| {
                    stat.rsplit(')')
                        .next()
                        .unwrap_or("")
                        .trim()
                        .starts_with('Z')
                })
                .unwrap_or(false);
            !is_zombie
                && String::from_utf8_lossy(&cmdline)
                    .replace('\0', " ")
                    .contains(needle)
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_mid_tool_kills_the_command_and_stores_a_cancelled_result() {
    let server = ScriptedServer::start(script("agent_cancel_tool.json"))
        .await
        .unwrap();
    let fixture = Fixture::new(&server, Kind::OpenAi, "");
    let agent = fixture.agent();
    let session = agent.new_session(fixture.root(), Vec::new()).unwrap();
    let cancel = CancellationToken::new();
    let host = TestHost::cancelling_on(
        PermissionAnswer::AllowOnce,
        cancel.clone(),
        |e| matches!(e, AgentEvent::ToolCallUpdated(update) if update.status == ToolStatus::InProgress),
    );

    let stop = agent
        .prompt(
            &session.id,
            text("Please wait for a while."),
            host.clone(),
            cancel,
        )
        .await
        .unwrap();
    assert_eq!(stop, StopReason::Cancelled, "{:#?}", host.events());
    assert_eq!(
        host.finished_tools(),
        vec![("call_sleep".to_owned(), ToolStatus::Failed)]
    );
    // The command's process group was killed. SIGKILL is delivered at once, but the orphaned
    // `sleep` is reaped by init asynchronously, so look for a while before concluding.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while process_running("sleep 30.4711") && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(
        !process_running("sleep 30.4711"),
        "the cancelled command still runs"
    );

    // Every tool call in the history has a result, and this one says it was cancelled.
    let history = fixture.store().load_history(&session.id).unwrap();
    let messages = history.model_messages();
    assert_every_call_has_a_result(&messages);
    let (_, content, is_error) = stored_results(&messages)
        .into_iter()
        .find(|(id, _, _)| id == "call_sleep")
        .unwrap();
    assert!(
        is_error && content.contains("category=\"cancelled\""),
        "{content}"
    );
    assert_eq!(
        history.tool_calls["call_sleep"].status,
        ToolStatus::Failed,
        "the stored tool call is final"
    );
    // The model was not asked again after the cancel.
    assert_eq!(server.requests().len(), 1);
    let unused = server.unused_turns();
    assert!(
        unused.len() == 1 && unused[0].contains("after"),
        "{unused:?}"
    );
}

/// Runs one prompt of a fault script and returns the host and the outcome.
async fn prompt_once(
    script_name: &str,
    kind: Kind,
) -> (
    ScriptedServerHandle,
    Fixture,
    Agent,
    String,
    Arc<TestHost>,
    Result<StopReason, AgentError>,
) {
    let server = ScriptedServer::start(script(script_name)).await.unwrap();
    let fixture = Fixture::new(&server, kind, "");
    let agent = fixture.agent();
    let session = agent.new_session(fixture.root(), Vec::new()).unwrap();
    let host = TestHost::answering(PermissionAnswer::RejectOnce);
    let outcome = agent
        .prompt(
            &session.id,
            text("Say something."),
            host.clone(),
            CancellationToken::new(),
        )
        .await;
    (server, fixture, agent, session.id, host, outcome)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limits_and_server_errors_are_retried_with_a_notice() {
    for kind in KINDS {
        let (server, _fixture, agent, id, host, outcome) =
            prompt_once("rate_limited.json", kind).await;
        assert_eq!(outcome.unwrap(), StopReason::EndTurn, "{kind:?}");
        assert_eq!(host.text(), "Served after the rate limit.");
        let notices = host.notices();
        assert!(
            notices
                .iter()
                .any(|n| n.contains("429") && n.contains("retrying in 1.0s")),
            "{kind:?}: the Retry-After hint is honoured and shown: {notices:?}"
        );
        assert_eq!(server.requests().len(), 2);
        let visible = agent.visible_messages(&id).unwrap();
        assert_eq!(
            visible.last().unwrap().text(),
            "Served after the rate limit."
        );

        let (server, _fixture, _agent, _id, host, outcome) =
            prompt_once("server_error.json", kind).await;
        assert_eq!(outcome.unwrap(), StopReason::EndTurn, "{kind:?}");
        assert_eq!(host.text(), "Recovered from server errors.");
        let retries: Vec<_> = host
            .notices()
            .into_iter()
            .filter(|n| n.contains("HTTP 500") && n.contains("retrying"))
            .collect();
        assert_eq!(retries.len(), 2, "{kind:?}: {retries:?}");
        assert_eq!(server.requests().len(), 3);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_truncated_stream_is_retried_and_only_the_whole_answer_is_stored() {
    for kind in KINDS {
        let (server, _fixture, agent, id, host, outcome) =
            prompt_once("truncated.json", kind).await;
        assert_eq!(outcome.unwrap(), StopReason::EndTurn, "{kind:?}");
        let whole = "This answer is cut short the first time it is sent.";
        let notices = host.notices();
        assert!(
            notices
                .iter()
                .any(|n| n.contains("ended before the model finished")),
            "{kind:?}: {notices:?}"
        );
        assert!(host.text().ends_with(whole), "{kind:?}: {}", host.text());
        assert_eq!(server.requests().len(), 2);
        let assistant: Vec<String> = agent
            .visible_messages(&id)
            .unwrap()
            .iter()
            .filter(|m| m.role == Role::Assistant)
            .map(Message::text)
            .collect();
        assert_eq!(assistant, vec![whole.to_owned()], "{kind:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_json_is_a_clear_error_and_the_session_stays_usable() {
    for kind in KINDS {
        let (server, _fixture, agent, id, host, outcome) =
            prompt_once("malformed.json", kind).await;
        // A provider that sends something other than its protocol is not retried blindly:
        // the turn fails with an error that says what happened.
        match outcome {
            Err(AgentError::Provider(message)) => {
                assert!(message.contains("malformed"), "{kind:?}: {message}")
            }
            other => panic!("{kind:?}: expected a provider error, got {other:?}"),
        }
        assert_eq!(server.requests().len(), 1);
        assert!(host.text().is_empty());
        // The user's message is kept and the next prompt works.
        let host = TestHost::answering(PermissionAnswer::RejectOnce);
        let stop = agent
            .prompt(
                &id,
                text("Try again."),
                host.clone(),
                CancellationToken::new(),
            )
            .await
            .unwrap();
        assert_eq!(stop, StopReason::EndTurn);
        assert_eq!(host.text(), "Well-formed the second time.");
        assert_eq!(
            user_texts(&agent.visible_messages(&id).unwrap()),
            vec!["Say something.".to_owned(), "Try again.".to_owned()]
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fault_that_outlasts_the_retries_fails_the_prompt_clearly() {
    for kind in KINDS {
        let (server, _fixture, agent, id, host, outcome) =
            prompt_once("agent_fault_persistent.json", kind).await;
        match outcome {
            Err(AgentError::Provider(message)) => assert!(
                message.contains("rate limited") && message.contains("429"),
                "{kind:?}: {message}"
            ),
            other => panic!("{kind:?}: expected a provider error, got {other:?}"),
        }
        let attempts = server.requests().len();
        assert!(attempts > 1, "{kind:?}: retried before giving up");
        assert_eq!(
            host.notices()
                .iter()
                .filter(|n| n.contains("retrying"))
                .count(),
            attempts - 1,
            "{kind:?}: one notice per retry"
        );
        // Nothing half-done is stored: only the user's message.
        let visible = agent.visible_messages(&id).unwrap();
        assert_eq!(visible.len(), 1, "{kind:?}: {visible:#?}");
        // The session is not left busy.
        assert!(agent.list_sessions().unwrap().iter().any(|s| s.id == id));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_context_length_error_compacts_and_retries_once() {
    for kind in KINDS {
        let server = ScriptedServer::start(script("agent_context_length.json"))
            .await
            .unwrap();
        let fixture = Fixture::new(&server, kind, "");
        let agent = fixture.agent();
        let session = agent.new_session(fixture.root(), Vec::new()).unwrap();
        for question in ["first question", "second question"] {
            let host = TestHost::answering(PermissionAnswer::RejectOnce);
            let stop = agent
                .prompt(&session.id, text(question), host, CancellationToken::new())
                .await
                .unwrap();
            assert_eq!(stop, StopReason::EndTurn);
        }
        let host = TestHost::answering(PermissionAnswer::RejectOnce);
        let stop = agent
            .prompt(
                &session.id,
                text("third question"),
                host.clone(),
                CancellationToken::new(),
            )
            .await
            .unwrap();
        assert_eq!(stop, StopReason::EndTurn, "{kind:?}: {:#?}", host.events());
        assert_eq!(host.text(), "Third answer, after compaction.");
        let notices = host.notices();
        assert!(
            notices.iter().any(|n| n.contains("context is full")),
            "{kind:?}: {notices:?}"
        );
        assert!(
            notices.iter().any(|n| n.starts_with("compacted")),
            "{kind:?}: {notices:?}"
        );
        assert!(
            server.unused_turns().is_empty(),
            "{:?}",
            server.unused_turns()
        );

        // The summary is stored for the model only; the user still sees every message.
        let history = fixture.store().load_history(&session.id).unwrap();
        let summaries: Vec<_> = history
            .messages
            .iter()
            .filter(|m| m.visibility == Visibility::ModelOnly)
            .collect();
        assert_eq!(summaries.len(), 1, "{kind:?}");
        assert!(summaries[0].to_message().text().starts_with(SUMMARY_HEADER));
        assert!(
            summaries[0]
                .to_message()
                .text()
                .contains("answer three questions")
        );
        assert_eq!(
            user_texts(&agent.visible_messages(&session.id).unwrap()),
            vec!["first question", "second question", "third question"]
        );
        // The retried request carries the summary instead of the first exchange.
        let retried = server.requests().last().unwrap().body["messages"].to_string();
        assert!(retried.contains("Summary of the earlier part"), "{retried}");
        assert!(!retried.contains("First answer."), "{retried}");
        assert!(retried.contains("third question"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_session_in_a_small_window_is_compacted_and_the_user_history_stays_whole() {
    let server = ScriptedServer::start(script("agent_long_session.json"))
        .await
        .unwrap();
    // The window must hold the tool definitions (about 20 KB of JSON since the navigation
    // and rename tools) beside a summary and a question; 6,000 tokens no longer did, and
    // every summary was squeezed out of the requests.
    let fixture = Fixture::with_window(&server, Kind::OpenAi, 8_000, "");
    let agent = fixture.agent();
    let session = agent.new_session(fixture.root(), Vec::new()).unwrap();
    let questions: Vec<String> = (1..=8)
        .map(|n| format!("Question number {n} about the calculator?"))
        .collect();
    let mut notices = Vec::new();
    for question in &questions {
        let host = TestHost::answering(PermissionAnswer::RejectOnce);
        let stop = agent
            .prompt(
                &session.id,
                text(question),
                host.clone(),
                CancellationToken::new(),
            )
            .await
            .unwrap();
        assert_eq!(stop, StopReason::EndTurn);
        notices.extend(host.notices());
    }
    assert!(
        notices.iter().any(|n| n.starts_with("compacted")),
        "{notices:?}"
    );

    let history = fixture.store().load_history(&session.id).unwrap();
    let summaries: Vec<String> = history
        .messages
        .iter()
        .filter(|m| m.visibility == Visibility::ModelOnly)
        .map(|m| m.to_message().text())
        .collect();
    assert!(!summaries.is_empty());
    assert!(summaries.iter().all(|s| s.starts_with(SUMMARY_HEADER)));
    // The user-visible history is whole, both as messages and as a replay.
    assert_eq!(
        user_texts(&agent.visible_messages(&session.id).unwrap()),
        questions
    );
    let (_, replay) = agent.load_session(&session.id).unwrap();
    let replayed: Vec<String> = replay
        .iter()
        .filter_map(|e| match e {
            AgentEvent::UserMessage { text } => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(replayed, questions);

    // The requests sent for the answers (not the summary calls): once compacted they carry
    // the summary, no longer carry the first question, and are smaller than the largest one
    // sent before.
    let answers: Vec<RecordedRequest> = server
        .requests()
        .into_iter()
        .filter(|r| !r.body.to_string().contains("You compact the history"))
        .collect();
    assert_eq!(answers.len(), questions.len());
    let size = |r: &RecordedRequest| r.body["messages"].to_string().len();
    let first_compacted = answers
        .iter()
        .position(|r| {
            r.body["messages"]
                .to_string()
                .contains("Summary of the earlier part")
        })
        .unwrap_or_else(|| {
            panic!(
                "a request after compaction carries the summary; notices {notices:?}; sizes {:?}",
                answers.iter().map(size).collect::<Vec<_>>()
            )
        });
    let largest_before = answers[..first_compacted].iter().map(size).max().unwrap();
    let compacted = &answers[first_compacted];
    assert!(
        size(compacted) < largest_before,
        "{} >= {largest_before}",
        size(compacted)
    );
    assert!(
        !compacted.body["messages"]
            .to_string()
            .contains("Question number 1 ")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tool_iteration_cap_ends_the_turn() {
    let server = ScriptedServer::start(script("agent_max_iterations.json"))
        .await
        .unwrap();
    let fixture = Fixture::new(&server, Kind::OpenAi, "[agent]\nmax_tool_iterations = 3\n");
    let agent = fixture.agent();
    let session = agent.new_session(fixture.root(), Vec::new()).unwrap();
    let host = TestHost::answering(PermissionAnswer::RejectOnce);
    let stop = agent
        .prompt(
            &session.id,
            text("Look around."),
            host.clone(),
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(stop, StopReason::MaxTurnRequests, "{:#?}", host.events());
    assert_eq!(server.requests().len(), 3);
    assert_eq!(host.finished_tools().len(), 3, "{:#?}", host.events());
    assert!(
        host.finished_tools()
            .iter()
            .all(|(_, status)| *status == ToolStatus::Completed)
    );
    assert!(
        host.notices()
            .iter()
            .any(|n| n.contains("max_tool_iterations")),
        "{:?}",
        host.notices()
    );
    let unused = server.unused_turns();
    assert!(
        unused.len() == 2 && unused[0].contains("four") && unused[1].contains("done"),
        "{unused:?}"
    );
    assert_every_call_has_a_result(&agent.visible_messages(&session.id).unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_doom_loop_is_pointed_out_to_the_model_and_then_stopped() {
    let server = ScriptedServer::start(script("agent_doom_loop.json"))
        .await
        .unwrap();
    let fixture = Fixture::new(&server, Kind::Anthropic, "");
    let agent = fixture.agent();
    let session = agent.new_session(fixture.root(), Vec::new()).unwrap();
    let host = TestHost::answering(PermissionAnswer::RejectOnce);
    let stop = agent
        .prompt(
            &session.id,
            text("Read the code."),
            host.clone(),
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(stop, StopReason::MaxTurnRequests);
    let warning = "the same tool call has now returned the same result three times";
    let requests = server.requests();
    let warned: Vec<bool> = requests
        .iter()
        .map(|r| r.body["messages"].to_string().contains(warning))
        .collect();
    // Three identical calls, then the model is told; it repeats once more and the turn ends,
    // far below the default cap of 25 requests.
    assert_eq!(warned, vec![false, false, false, true], "{warned:?}");
    assert!(
        host.notices()
            .iter()
            .any(|n| n.contains("kept repeating the same tool call")),
        "{:?}",
        host.notices()
    );
    assert_every_call_has_a_result(&agent.visible_messages(&session.id).unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_mode_offers_no_side_effects_and_refuses_a_scripted_edit() {
    for kind in KINDS {
        let server = ScriptedServer::start(script("agent_ask_mode.json"))
            .await
            .unwrap();
        let fixture = Fixture::new(&server, kind, "");
        let agent = fixture.agent();
        let session = agent.new_session(fixture.root(), Vec::new()).unwrap();
        agent.set_mode(&session.id, Mode::Ask).unwrap();
        let host = TestHost::answering(PermissionAnswer::AllowAlways);
        let stop = agent
            .prompt(
                &session.id,
                text("Please fix the add function."),
                host.clone(),
                CancellationToken::new(),
            )
            .await
            .unwrap();
        assert_eq!(stop, StopReason::EndTurn, "{kind:?}");
        assert_eq!(host.text(), "I cannot edit in ask mode.");

        for request in server.requests() {
            let tools = offered_tools(&request);
            assert!(
                tools.contains(&"read_file".to_owned()),
                "{kind:?}: {tools:?}"
            );
            for side_effect in ["edit_file", "write_file", "run_command"] {
                assert!(
                    !tools.contains(&side_effect.to_owned()),
                    "{kind:?}: ask mode offered {side_effect}: {tools:?}"
                );
            }
        }
        // Refused by the mode, without asking the user (who would have said yes).
        assert!(host.permission_requests.lock().unwrap().is_empty());
        assert_eq!(
            host.finished_tools(),
            vec![("call_edit".to_owned(), ToolStatus::Failed)]
        );
        let source = std::fs::read_to_string(fixture.root().join("src/lib.rs")).unwrap();
        assert!(
            source.contains("left - right"),
            "the file must be untouched"
        );
        let (_, refusal, _) = stored_results(&agent.visible_messages(&session.id).unwrap())
            .into_iter()
            .find(|(id, _, _)| id == "call_edit")
            .unwrap();
        assert!(
            refusal.contains("permission_denied") && refusal.contains("ask mode"),
            "{kind:?}: {refusal}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_outside_the_workspace_fail_and_leak_nothing() {
    let secret = "TOP-SECRET-OUTSIDE-THE-WORKSPACE";
    for kind in KINDS {
        let server = ScriptedServer::start(script("agent_escape.json"))
            .await
            .unwrap();
        let fixture = Fixture::new(&server, kind, "");
        std::fs::write(fixture.dir.path().join("outside.txt"), secret).unwrap();
        std::os::unix::fs::symlink(
            fixture.dir.path().join("outside.txt"),
            fixture.root().join("escape.txt"),
        )
        .unwrap();
        let agent = fixture.agent();
        let session = agent.new_session(fixture.root(), Vec::new()).unwrap();
        let host = TestHost::answering(PermissionAnswer::AllowAlways);
        let stop = agent
            .prompt(
                &session.id,
                text("Read the files outside."),
                host.clone(),
                CancellationToken::new(),
            )
            .await
            .unwrap();
        assert_eq!(stop, StopReason::EndTurn, "{kind:?}");
        assert_eq!(host.text(), "Both reads were refused.");
        assert_eq!(
            host.finished_tools(),
            vec![
                ("call_dotdot".to_owned(), ToolStatus::Failed),
                ("call_link".to_owned(), ToolStatus::Failed)
            ],
            "{kind:?}"
        );
        let results = stored_results(&agent.visible_messages(&session.id).unwrap());
        assert_eq!(results.len(), 2);
        for (id, content, is_error) in &results {
            assert!(
                *is_error && content.contains("category=\"outside_workspace\""),
                "{kind:?} {id}: {content}"
            );
        }
        for request in server.requests() {
            assert!(
                !request.body.to_string().contains(secret),
                "{kind:?}: the outside file leaked into a request"
            );
        }
        assert!(
            !host
                .events()
                .iter()
                .any(|e| format!("{e:?}").contains(secret)),
            "{kind:?}: the outside file leaked into an event"
        );
    }
}

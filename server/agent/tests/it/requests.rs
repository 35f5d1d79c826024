//! What the agent sends, request by request (issue 44): a prefix that stays put over a long
//! session (what a provider's prompt cache reuses), the cache fields of both wire formats, a
//! small window that every request fits, a window too small for anything, and tool calls the
//! model wrote as text. A real `Agent` (real index, tools, SQLite) on a copy of the calculator
//! fixture talks to the scripted LLM server over HTTP, which records every request.

use crate::common;

use common::{copy_dir, repo_root};

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use lode_agent::compaction::SUMMARY_HEADER;
use lode_agent::context::{count_tokens, tools_tokens};
use lode_agent::event::{AgentEvent, StopReason, ToolStatus};
use lode_agent::host::{PermissionAnswer, PermissionRequest, SessionHost};
use lode_agent::{Agent, AgentError, UserInput};
use lode_llm::ToolSpec;
use lode_llm_script::{RecordedRequest, Script, ScriptedServer, ScriptedServerHandle};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// A tempdir holding `workspace/`, a copy of the calculator fixture whose config names the
/// scripted server.
struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new(provider: &str, extra_config: &str) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("workspace");
        copy_dir(&repo_root().join("fixtures/agent/calculator"), &root);
        std::fs::create_dir_all(root.join(".lode")).unwrap();
        std::fs::write(
            root.join(".lode/config.toml"),
            format!("[[llm.providers]]\nname = \"scripted\"\n{provider}\n{extra_config}\n"),
        )
        .unwrap();
        Fixture { dir }
    }

    /// An OpenAI-compatible provider at `server` with this window and output cap.
    fn openai(server: &ScriptedServerHandle, window: u32, max_tokens: u32, extra: &str) -> Fixture {
        Fixture::new(
            &format!(
                "kind = \"openai\"\nbase_url = \"{}\"\nmodel = \"scripted-model\"\n\
                 context_window = {window}\nmax_tokens = {max_tokens}",
                server.openai_base_url()
            ),
            extra,
        )
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("workspace")
    }

    fn agent(&self) -> Agent {
        Agent::open(&self.root(), common::test_options(&self.root())).unwrap()
    }

    /// The audit log's lines.
    fn audit(&self) -> Vec<Value> {
        std::fs::read_to_string(self.root().join(".lode/audit.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }
}

/// Records every event and answers permission questions with a fixed answer.
struct TestHost {
    events: Mutex<Vec<AgentEvent>>,
    asked: Mutex<Vec<PermissionRequest>>,
    answer: PermissionAnswer,
}

impl TestHost {
    fn answering(answer: PermissionAnswer) -> Arc<TestHost> {
        Arc::new(TestHost {
            events: Mutex::new(Vec::new()),
            asked: Mutex::new(Vec::new()),
            answer,
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
            .collect()
    }

    fn compactions(&self) -> usize {
        self.events()
            .iter()
            .filter(|event| {
                matches!(event, AgentEvent::Notice { message } if message.starts_with("compacted "))
            })
            .count()
    }

    /// (tool, final status) of every call that finished.
    fn finished_tools(&self) -> Vec<(String, ToolStatus)> {
        let events = self.events();
        let names: std::collections::HashMap<String, String> = events
            .iter()
            .filter_map(|event| match event {
                AgentEvent::ToolCallStarted(start) => Some((start.id.clone(), start.tool.clone())),
                _ => None,
            })
            .collect();
        events
            .iter()
            .filter_map(|event| match event {
                AgentEvent::ToolCallUpdated(update)
                    if matches!(update.status, ToolStatus::Completed | ToolStatus::Failed) =>
                {
                    Some((names[&update.id].clone(), update.status))
                }
                _ => None,
            })
            .collect()
    }
}

#[async_trait::async_trait]
impl SessionHost for TestHost {
    fn emit(&self, event: AgentEvent) {
        self.events.lock().unwrap().push(event);
    }

    async fn request_permission(&self, request: PermissionRequest) -> PermissionAnswer {
        self.asked.lock().unwrap().push(request);
        self.answer
    }
}

fn text(prompt: &str) -> Vec<UserInput> {
    vec![UserInput::Text(prompt.to_owned())]
}

fn script(name: &str) -> Script {
    Script::load(&repo_root().join("fixtures/llm").join(name)).unwrap()
}

/// A request's input as a provider's cache sees it: the tools, then the messages (the system
/// prompt first), each as JSON.
fn serialized_input(body: &Value) -> String {
    let mut out = body["tools"].to_string();
    for message in body["messages"].as_array().into_iter().flatten() {
        out.push('\n');
        out.push_str(&message.to_string());
    }
    out
}

fn common_prefix(a: &str, b: &str) -> usize {
    a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count()
}

/// The input tokens of an OpenAI-style request body, counted as the agent budgets a request:
/// its tools with `tools_tokens`, and every message's texts, calls and results with cl100k and
/// the same framing cost per message.
fn request_tokens(body: &Value) -> usize {
    let specs: Vec<ToolSpec> = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|tool| ToolSpec {
            name: tool["function"]["name"].as_str().unwrap().to_owned(),
            description: tool["function"]["description"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            parameters: tool["function"]["parameters"].clone(),
        })
        .collect();
    let messages: usize = body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|message| {
            let content = match &message["content"] {
                Value::String(text) => count_tokens(text),
                Value::Null => 0,
                Value::Array(parts) => parts
                    .iter()
                    .map(|part| part["text"].as_str().map_or(0, count_tokens))
                    .sum(),
                other => count_tokens(&other.to_string()),
            };
            let calls: usize = message["tool_calls"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|call| {
                    count_tokens(call["function"]["name"].as_str().unwrap_or_default())
                        + count_tokens(call["function"]["arguments"].as_str().unwrap_or_default())
                        + 3
                })
                .sum();
            lode_agent::context::MESSAGE_OVERHEAD_TOKENS + content + calls
        })
        .sum();
    tools_tokens(&specs) + messages
}

/// A generated Rust file of about 12k characters, read whole every turn.
fn large_file() -> String {
    let mut text = String::from("//! Generated operations.\n\n");
    for index in 0..120 {
        text.push_str(&format!(
            "/// Applies operation {index} to both operands.\npub fn operation_{index}(left: i64, right: i64) -> i64 {{\n    left * {index} + right\n}}\n\n"
        ));
    }
    text
}

/// The session's own requests, without the summary requests of compactions.
fn session_requests(server: &ScriptedServerHandle) -> Vec<RecordedRequest> {
    server
        .requests()
        .into_iter()
        .filter(|request| !request.body.to_string().contains("You compact the history"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_turns_with_pruning_and_a_compaction_keep_each_request_a_prefix_of_the_next() {
    // The benchmark's session (every turn reads a 12k-character file, searches, answers), and
    // in turn 15 the provider refuses the first request as too long for its context, which
    // compacts the session once.
    let mut session_script = script("agent_tokens.json");
    let overflow: lode_llm_script::Turn = serde_json::from_value(json!({
        "name": "overflow",
        "match": {"last_user_text_contains": "Question 15:"},
        "respond": {"text": "Reading.", "tool_calls": [{"name": "read_file", "arguments": {"path": "src/operations.rs"}}]},
        "fault": {"status": 400, "code": "context_length_exceeded",
                  "message": "This model's maximum context length is 64000 tokens."}
    }))
    .unwrap();
    let read_turn = session_script.turns.len() - 1;
    session_script.turns.insert(read_turn, overflow);
    let server = ScriptedServer::start(session_script).await.unwrap();
    // The full profile; 30 such turns prune old output in blocks.
    // (128k, the full profile's usual window. At 64k the same session keeps 91%: the three
    // newest 12k-character results that are never pruned make blocks come every few turns.)
    let fixture = Fixture::openai(&server, 128_000, 2_000, "[agent]\nprofile = \"full\"\n");
    std::fs::write(fixture.root().join("src/operations.rs"), large_file()).unwrap();
    let agent = fixture.agent();
    let session = agent.new_session(fixture.root(), Vec::new()).unwrap();
    let host = TestHost::answering(PermissionAnswer::RejectOnce);
    for turn in 0..30 {
        let stop = agent
            .prompt(
                &session.id,
                text(&format!(
                    "Question {turn}: which operation adds the operands, and how is add tested?"
                )),
                host.clone(),
                CancellationToken::new(),
            )
            .await
            .unwrap();
        assert_eq!(stop, StopReason::EndTurn, "turn {turn}");
    }
    let requests = session_requests(&server);
    // Three model requests a turn, and the one refused as too long.
    assert_eq!(requests.len(), 91);
    let inputs: Vec<String> = requests
        .iter()
        .map(|request| serialized_input(&request.body))
        .collect();
    let pruned = |input: &str| {
        input.matches("[output pruned:").count()
            + input
                .matches("[lode's context for this message was left out")
                .count()
    };
    let compactions = host.compactions();

    let (mut shared, mut compared, mut misses) = (0usize, 0usize, Vec::new());
    for (index, pair) in inputs.windows(2).enumerate() {
        let prefix = common_prefix(&pair[0], &pair[1]);
        shared += prefix;
        compared += pair[0].len();
        let ratio = prefix as f64 / pair[0].len() as f64;
        if ratio < 0.95 {
            // A request that keeps less than 95% of the one before is at a block boundary:
            // the prune mark moved (more stubs than before), or the history was compacted.
            let summaries = |input: &str| input.matches(SUMMARY_HEADER).count();
            let moved =
                pruned(&pair[1]) != pruned(&pair[0]) || summaries(&pair[1]) != summaries(&pair[0]);
            let around = |text: &str| {
                let from = prefix.saturating_sub(200);
                text.get(from..(prefix + 300).min(text.len()))
                    .unwrap_or_default()
                    .to_owned()
            };
            assert!(
                moved,
                "request {} keeps {:.1}% of request {index} without a prune or a compaction:\n\
                 before: {}\n\nafter: {}",
                index + 1,
                100.0 * ratio,
                around(&pair[0]),
                around(&pair[1])
            );
            misses.push(index + 1);
        }
    }
    let kept = shared as f64 / compared as f64;
    println!(
        "prefix kept from one request to the next over {} requests: {:.1}% of the bytes; \
         {} requests keep less than 95% (at block boundaries: {misses:?}); {compactions} \
         compaction(s)",
        requests.len(),
        100.0 * kept,
        misses.len()
    );
    assert!(compactions >= 1, "the session compacted");
    assert!(
        inputs.iter().any(|input| pruned(input) > 0),
        "old tool output was pruned"
    );
    assert!(kept >= 0.95, "{:.1}% of the bytes kept", 100.0 * kept);
    // Block boundaries are rare: a few in 89 pairs.
    assert!(misses.len() <= 8, "{misses:?}");
}

/// A scripted turn: a read of `src/lib.rs`, then an answer.
fn read_then_answer() -> Script {
    Script::from_json(
        &json!({"turns": [
            {"name": "answer", "repeat": true, "match": {"last_tool_result_of": "read_file"},
             "respond": {"text": "Read it.", "usage": {"input_tokens": 900, "output_tokens": 5, "cache_read_tokens": 700}}},
            {"name": "read", "repeat": true,
             "respond": {"text": "Reading.", "tool_calls": [{"name": "read_file", "arguments": {"path": "src/lib.rs"}}]}}
        ]})
        .to_string(),
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_requests_carry_cache_breakpoints_on_tools_system_and_the_newest_message() {
    let server = ScriptedServer::start(read_then_answer()).await.unwrap();
    let fixture = Fixture::new(
        &format!(
            "kind = \"anthropic\"\nbase_url = \"{}\"\nmodel = \"scripted-model\"\n\
             context_window = 64000\nmax_tokens = 1000",
            server.base_url()
        ),
        "",
    );
    let agent = fixture.agent();
    let session = agent.new_session(fixture.root(), Vec::new()).unwrap();
    for question in ["What does add do?", "And multiply?"] {
        let host = TestHost::answering(PermissionAnswer::RejectOnce);
        let stop = agent
            .prompt(&session.id, text(question), host, CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(stop, StopReason::EndTurn);
    }
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    for request in &requests {
        let body = &request.body;
        let breakpoints = body.to_string().matches("\"cache_control\"").count();
        assert_eq!(breakpoints, 3, "tools, system, newest message: {body}");
        let tools = body["tools"].as_array().unwrap();
        assert_eq!(
            tools.last().unwrap()["cache_control"],
            json!({"type": "ephemeral"})
        );
        assert_eq!(body["system"][0]["cache_control"]["type"], "ephemeral");
        let newest = body["messages"].as_array().unwrap().last().unwrap();
        assert_eq!(
            newest["content"].as_array().unwrap().last().unwrap()["cache_control"]["type"],
            "ephemeral",
            "{newest}"
        );
    }
    // What carried a breakpoint in one request is byte for byte the start of the next one's
    // messages: the cached prefix is reused.
    for pair in requests.windows(2) {
        let before = pair[0].body["messages"].as_array().unwrap();
        let after = pair[1].body["messages"].as_array().unwrap();
        let strip = |message: &Value| {
            message
                .to_string()
                .replace("\"cache_control\":{\"type\":\"ephemeral\"},", "")
                .replace(",\"cache_control\":{\"type\":\"ephemeral\"}", "")
        };
        for (index, message) in before.iter().enumerate() {
            assert_eq!(strip(message), strip(&after[index]));
        }
        assert_eq!(pair[0].body["system"], pair[1].body["system"]);
        assert_eq!(pair[0].body["tools"], pair[1].body["tools"]);
    }
    // The cached tokens the usage reported are in the audit log, request by request.
    let usage: Vec<Value> = fixture
        .audit()
        .into_iter()
        .filter(|line| line["event"] == "model_request")
        .collect();
    let answered: Vec<&Value> = usage
        .iter()
        .filter(|line| line["cached_input_tokens"] == 700)
        .collect();
    assert_eq!(answered.len(), 2, "{usage:?}");
    assert_eq!(answered[0]["input_tokens"], 900);
    assert_eq!(answered[0]["uncached_input_tokens"], 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_requests_carry_the_session_as_prompt_cache_key_when_configured() {
    for configured in [true, false] {
        let server = ScriptedServer::start(read_then_answer()).await.unwrap();
        let fixture = Fixture::new(
            &format!(
                "kind = \"openai\"\nbase_url = \"{}\"\nmodel = \"scripted-model\"\n\
                 context_window = 64000\nmax_tokens = 1000{}",
                server.openai_base_url(),
                if configured {
                    "\nprompt_cache_key = true"
                } else {
                    ""
                }
            ),
            "",
        );
        let agent = fixture.agent();
        let mut sessions = Vec::new();
        for _ in 0..2 {
            let session = agent.new_session(fixture.root(), Vec::new()).unwrap();
            let host = TestHost::answering(PermissionAnswer::RejectOnce);
            agent
                .prompt(
                    &session.id,
                    text("What does add do?"),
                    host,
                    CancellationToken::new(),
                )
                .await
                .unwrap();
            sessions.push(session.id);
        }
        let keys: Vec<Value> = server
            .requests()
            .iter()
            .map(|request| request.body["prompt_cache_key"].clone())
            .collect();
        if configured {
            // One key per session, the same for each of its requests.
            assert_eq!(
                keys,
                vec![
                    json!(sessions[0]),
                    json!(sessions[0]),
                    json!(sessions[1]),
                    json!(sessions[1])
                ]
            );
        } else {
            // A compatible server that was not said to take it is not sent it.
            assert!(keys.iter().all(Value::is_null), "{keys:?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_4096_token_window_every_request_fits_and_the_edit_task_completes() {
    let server = ScriptedServer::start(script("agent_fix_test.json"))
        .await
        .unwrap();
    let (window, max_tokens) = (4_096, 512);
    let fixture = Fixture::openai(&server, window, max_tokens, "");
    let agent = fixture.agent();
    let session = agent.new_session(fixture.root(), Vec::new()).unwrap();
    let host = TestHost::answering(PermissionAnswer::AllowOnce);
    let stop = agent
        .prompt(
            &session.id,
            text("Please fix the failing test."),
            host.clone(),
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(stop, StopReason::EndTurn, "{:#?}", host.events());
    let source = std::fs::read_to_string(fixture.root().join("src/lib.rs")).unwrap();
    assert!(source.contains("left + right"), "{source}");
    assert!(
        host.text()
            .ends_with("Fixed: `add` now adds, and the tests pass."),
        "{}",
        host.text()
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 5);
    let tokens: Vec<usize> = requests.iter().map(|r| request_tokens(&r.body)).collect();
    println!("requests in a {window}-token window: {tokens:?} tokens");
    let room = (window - max_tokens) as usize;
    assert!(tokens.iter().all(|t| *t <= room), "{tokens:?} > {room}");
    // The lean profile was chosen (a small window): the first request is small.
    assert!(tokens[0] <= 2_500, "{tokens:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_window_too_small_for_anything_is_a_clear_error_before_any_request() {
    let server = ScriptedServer::start(script("agent_fix_test.json"))
        .await
        .unwrap();
    let fixture = Fixture::openai(&server, 1_200, 400, "");
    let agent = fixture.agent();
    let session = agent.new_session(fixture.root(), Vec::new()).unwrap();
    let host = TestHost::answering(PermissionAnswer::AllowOnce);
    let error = agent
        .prompt(
            &session.id,
            text("Please fix the failing test."),
            host,
            CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert!(matches!(error, AgentError::ContextTooSmall(_)), "{error:?}");
    let message = error.to_string();
    for needed in [
        "context window (1200 tokens",
        "400 of them kept for its answer",
        "cannot hold lode's smallest request",
        "provider \"scripted\"",
        "context_window",
        "max_tokens",
    ] {
        assert!(message.contains(needed), "{needed:?} in {message}");
    }
    // Nothing was sent that the server would have cut from the front.
    assert!(server.requests().is_empty());
}

/// A script whose model first answers with `first` (text only), then, after any tool result,
/// says "Done.", and says "No call." to anything else.
fn text_call_script(first: &str) -> Script {
    Script::from_json(
        &json!({"turns": [
            {"name": "first", "match": {"nth_request": 1}, "respond": {"text": first}},
            {"name": "done", "repeat": true, "match": {"last_tool_result_contains": ""}, "respond": {"text": "Done."}},
            {"name": "other", "repeat": true, "respond": {"text": "No call."}}
        ]})
        .to_string(),
    )
    .unwrap()
}

/// Runs one turn against `first`; returns the fixture, server and host.
async fn one_text_turn(first: &str) -> (Fixture, ScriptedServerHandle, Arc<TestHost>) {
    let server = ScriptedServer::start(text_call_script(first))
        .await
        .unwrap();
    let fixture = Fixture::openai(&server, 32_000, 1_000, "");
    let agent = fixture.agent();
    let session = agent.new_session(fixture.root(), Vec::new()).unwrap();
    let host = TestHost::answering(PermissionAnswer::RejectOnce);
    let stop = agent
        .prompt(
            &session.id,
            text("Where is add?"),
            host.clone(),
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(stop, StopReason::EndTurn, "{:#?}", host.events());
    (fixture, server, host)
}

/// The tool messages of the newest request, as (content) strings.
fn tool_results_sent(server: &ScriptedServerHandle) -> Vec<String> {
    let requests = server.requests();
    requests.last().unwrap().body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "tool")
        .map(|message| message["content"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fenced_json_tool_call_in_the_answer_is_run_and_audited_as_text() {
    let (fixture, server, host) = one_text_turn(
        "I will read the file.\n```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"src/lib.rs\"}}\n```",
    )
    .await;
    assert_eq!(
        host.finished_tools(),
        vec![("read_file".to_owned(), ToolStatus::Completed)]
    );
    assert_eq!(server.requests().len(), 2);
    let results = tool_results_sent(&server);
    assert_eq!(results.len(), 1);
    assert!(results[0].contains("left - right"), "{results:?}");
    // The second request shows the call as a call, with the prose kept beside it.
    let messages = server.requests()[1].body["messages"].clone();
    let assistant = messages
        .as_array()
        .unwrap()
        .iter()
        .find(|message| message["role"] == "assistant")
        .unwrap()
        .clone();
    assert_eq!(assistant["tool_calls"][0]["function"]["name"], "read_file");
    assert_eq!(assistant["content"], "I will read the file.");
    let audited: Vec<Value> = fixture
        .audit()
        .into_iter()
        .filter(|line| line["tool"] == "read_file")
        .collect();
    assert_eq!(audited.len(), 1);
    assert_eq!(audited[0]["via"], "text");
    assert_eq!(audited[0]["outcome"], "ok");
    assert!(host.text().ends_with("Done."), "{}", host.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_call_tags_in_the_answer_are_run() {
    let (_fixture, server, host) = one_text_turn(
        "<tool_call>\n{\"name\": \"grep\", \"arguments\": {\"pattern\": \"left - right\"}}\n</tool_call>",
    )
    .await;
    assert_eq!(
        host.finished_tools(),
        vec![("grep".to_owned(), ToolStatus::Completed)]
    );
    let results = tool_results_sent(&server);
    assert!(results[0].contains("src/lib.rs"), "{results:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_text_call_to_a_tool_not_offered_stays_text_and_ends_the_turn() {
    let answer =
        "```json\n{\"name\": \"delete_everything\", \"arguments\": {\"path\": \"/\"}}\n```";
    let (fixture, server, host) = one_text_turn(answer).await;
    assert!(
        host.finished_tools().is_empty(),
        "{:?}",
        host.finished_tools()
    );
    assert_eq!(server.requests().len(), 1);
    assert_eq!(host.text(), answer);
    assert!(
        fixture
            .audit()
            .iter()
            .all(|line| line["tool"].is_null() || line["tool"] != "delete_everything")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_text_call_with_bad_arguments_gives_the_model_an_error_and_runs_nothing() {
    let (fixture, server, host) =
        one_text_turn("```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": 42}}\n```")
            .await;
    assert_eq!(
        host.finished_tools(),
        vec![("read_file".to_owned(), ToolStatus::Failed)]
    );
    let results = tool_results_sent(&server);
    assert_eq!(results.len(), 1);
    assert!(
        results[0].contains("do not match its schema") && results[0].contains("path"),
        "{results:?}"
    );
    assert!(
        !results[0].contains("left - right"),
        "the file was not read"
    );
    let audited: Vec<Value> = fixture
        .audit()
        .into_iter()
        .filter(|line| line["tool"] == "read_file")
        .collect();
    assert_eq!(audited[0]["via"], "text");
    assert_eq!(audited[0]["decision"], "invalid_arguments");
    // The model saw the error and the turn went on to its answer.
    assert!(host.text().ends_with("Done."), "{}", host.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ollama_provider_is_told_the_window_lode_budgets_with_every_request() {
    // The scripted server stands in for Ollama's native API (`/api/chat`, one JSON object a
    // line, calls without ids, results named by their tool).
    let server = ScriptedServer::start(script("agent_fix_test.json"))
        .await
        .unwrap();
    let fixture = Fixture::new(
        &format!(
            // A base URL copied from an OpenAI-compatible setup names the same server.
            "kind = \"ollama\"\nbase_url = \"{}/v1\"\nmodel = \"qwen2.5-coder:1.5b\"\n\
             context_window = 8192\nmax_tokens = 1024",
            server.base_url()
        ),
        "",
    );
    let agent = fixture.agent();
    let session = agent.new_session(fixture.root(), Vec::new()).unwrap();
    let host = TestHost::answering(PermissionAnswer::AllowOnce);
    let stop = agent
        .prompt(
            &session.id,
            text("Please fix the failing test."),
            host.clone(),
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(stop, StopReason::EndTurn, "{:#?}", host.events());
    let source = std::fs::read_to_string(fixture.root().join("src/lib.rs")).unwrap();
    assert!(source.contains("left + right"), "{source}");
    let requests = server.requests();
    assert_eq!(requests.len(), 5);
    for request in &requests {
        assert_eq!(request.path, "/api/chat");
        assert_eq!(request.body["options"]["num_ctx"], 8192);
        assert_eq!(request.body["options"]["num_predict"], 1024);
        assert_eq!(request.body["stream"], true);
    }
    // Results go back named by their tool, after the call they answer.
    let last = &requests[4].body["messages"];
    let results: Vec<&str> = last
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "tool")
        .map(|message| message["tool_name"].as_str().unwrap())
        .collect();
    assert_eq!(
        results,
        ["search_code", "read_file", "edit_file", "run_command"]
    );
    // The counts Ollama reports are the turn's usage.
    assert!(
        host.events().iter().any(
            |event| matches!(event, AgentEvent::Usage { input_tokens, .. } if *input_tokens > 0)
        )
    );
}

//! What a turn keeps between its model requests instead of redoing it: the history (loaded from
//! the store once per turn, then appended to in memory), token counts (remembered by content),
//! the system prompt and the turn's context (environment, repo map, retrieved code: made once,
//! when the turn starts, and attached to its user message). None of it may change what the
//! model is sent, and each request is the previous one plus what happened since.
//!
//! In builds with debug assertions (these tests) the turn also checks, before every request,
//! that its in-memory history equals a fresh load from the store; every agent test that runs a
//! turn (compaction and context-length retries included) exercises that check.

use crate::common;

use common::{copy_dir, repo_root};

use std::sync::Arc;

use lode_agent::context::{
    count_tokens, count_tokens_joined, count_tokens_uncached, message_tokens, messages_tokens,
    truncate_to_tokens,
};
use lode_agent::event::{AgentEvent, StopReason};
use lode_agent::host::{PermissionAnswer, PermissionRequest, SessionHost};
use lode_agent::{Agent, UserInput};
use lode_llm::{ContentPart, Message, Role, ToolCall, ToolResult};
use lode_llm_script::{Script, ScriptedServer, ScriptedServerHandle};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// A copy of the calculator fixture with a config pointing at `server`.
fn workspace(server: &ScriptedServerHandle) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&repo_root().join("fixtures/agent/calculator"), dir.path());
    std::fs::create_dir_all(dir.path().join(".lode")).unwrap();
    std::fs::write(
        dir.path().join(".lode/config.toml"),
        format!(
            "[[llm.providers]]\nname = \"scripted\"\nkind = \"openai\"\nbase_url = \"{}\"\nmodel = \"scripted-model\"\ncontext_window = 32000\nmax_tokens = 2000\n",
            server.openai_base_url(),
        ),
    )
    .unwrap();
    dir
}

/// Allows every tool call once.
struct AllowingHost;

#[async_trait::async_trait]
impl SessionHost for AllowingHost {
    fn emit(&self, _event: AgentEvent) {}

    async fn request_permission(&self, _request: PermissionRequest) -> PermissionAnswer {
        PermissionAnswer::AllowOnce
    }
}

async fn prompt(agent: &Agent, session: &str, text: &str) -> StopReason {
    agent
        .prompt(
            session,
            vec![UserInput::Text(text.to_owned())],
            Arc::new(AllowingHost),
            CancellationToken::new(),
        )
        .await
        .unwrap()
}

/// The system prompt and the conversation (without the system message) of a recorded request.
fn system_and_messages(body: &Value) -> (String, Vec<Value>) {
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages[0]["role"], "system");
    (
        messages[0]["content"].as_str().unwrap().to_owned(),
        messages[1..].to_vec(),
    )
}

#[test]
fn remembered_token_counts_are_the_tokenizers() {
    let texts = [
        String::new(),
        "short".to_owned(),
        "fn main() { println!(\"hello\"); }\n".repeat(40),
        "ünïcödé text — with ‘quotes’ and emoji 🦀 ".repeat(30),
        (0..500).map(|n| format!("line {n}\n")).collect::<String>(),
    ];
    for _ in 0..3 {
        for text in &texts {
            assert_eq!(count_tokens(text), count_tokens_uncached(text), "{text:?}");
        }
    }
    // Texts that differ only slightly are not confused with each other.
    let base = "pub fn add(left: i64, right: i64) -> i64 { left + right }\n".repeat(10);
    let changed = base.replacen('+', "-", 1);
    assert_eq!(count_tokens(&base), count_tokens_uncached(&base));
    assert_eq!(count_tokens(&changed), count_tokens_uncached(&changed));
    // A truncated text is the same whether or not its whole was counted before.
    let long = "word ".repeat(2_000);
    let first = truncate_to_tokens(&long, 100);
    assert_eq!(truncate_to_tokens(&long, 100), first);
    assert!(count_tokens_uncached(&first) <= 100);
}

/// A text counted as the sum of its pieces, where every seam is a line break before a
/// character that is not white space, has exactly the tokenizer's count of the whole; other
/// seams fall back to counting the whole.
#[test]
fn joined_counts_are_the_tokenizers() {
    let sources = [
        include_str!("../../src/turn.rs"),
        include_str!("../../src/context/mod.rs"),
        include_str!("../../../tools/src/untrusted.rs"),
        include_str!("../../../../bench/README.md"),
        "ünïcödé — ‘quotes’ 🦀\n  indented\n\n\n# heading\n>>> \n\t\ttabs\n123456789\nx\n",
    ];
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move |bound: usize| {
        // xorshift: the same pieces on every run.
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % bound as u64) as usize
    };
    for source in sources {
        let lines: Vec<&str> = source.split_inclusive('\n').collect();
        let lines = &lines[..lines.len().min(400)];
        for round in 0..20 {
            // Cut before random lines; in even rounds only before lines that start with
            // something other than white space, so every seam is summed.
            let mut pieces: Vec<String> = vec![String::new()];
            for (index, line) in lines.iter().enumerate() {
                let summable = !line.starts_with(char::is_whitespace);
                if index > 0 && (summable || round % 2 == 1) && next(4) == 0 {
                    pieces.push(String::new());
                }
                pieces.last_mut().unwrap().push_str(line);
            }
            let joined: String = pieces.concat();
            assert_eq!(
                count_tokens_joined(&pieces),
                count_tokens_uncached(&joined),
                "{pieces:?}"
            );
        }
    }
    // Seams inside a word or a run of white space are counted whole.
    let pieces = ["fn ma", "in() {}\n", "\n\nnext"];
    assert_eq!(
        count_tokens_joined(&pieces),
        count_tokens_uncached(&pieces.concat())
    );
}

#[test]
fn message_counts_are_the_same_on_every_request() {
    let history: Vec<Message> = (0..40)
        .flat_map(|turn| {
            let id = format!("call_{turn}");
            [
                Message::user_text(format!("Question {turn}: where is `add` implemented?")),
                Message {
                    role: Role::Assistant,
                    content: vec![
                        ContentPart::Text {
                            text: "Reading.".to_owned(),
                        },
                        ContentPart::ToolCall(ToolCall {
                            id: id.clone(),
                            name: "read_file".to_owned(),
                            arguments: serde_json::json!({"path": "src/lib.rs"}),
                        }),
                    ],
                },
                Message {
                    role: Role::User,
                    content: vec![ContentPart::ToolResult(ToolResult {
                        call_id: id,
                        content: format!("{turn}: pub fn add(left: i64, right: i64) -> i64\n")
                            .repeat(20),
                        is_error: false,
                    })],
                },
            ]
        })
        .collect();
    let uncached = |message: &Message| {
        4 + message
            .content
            .iter()
            .map(|part| match part {
                ContentPart::Text { text } => count_tokens_uncached(text),
                ContentPart::ToolCall(call) => {
                    count_tokens_uncached(&call.name)
                        + count_tokens_uncached(&call.arguments.to_string())
                        + 3
                }
                ContentPart::ToolResult(result) => count_tokens_uncached(&result.content) + 3,
                _ => unreachable!(),
            })
            .sum::<usize>()
    };
    let expected: usize = history.iter().map(uncached).sum();
    for _ in 0..3 {
        assert_eq!(messages_tokens(&history), expected);
    }
    for message in &history {
        assert_eq!(message_tokens(message), uncached(message));
    }
}

/// Several turns of three requests each (read, search, answer): every request carries the whole
/// conversation so far, in order, and nothing else; the in-memory history is checked against
/// the store before each request (see the module's note).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_of_a_session_carries_the_conversation_so_far() {
    let script = Script::load(&repo_root().join("fixtures/llm/agent_bench.json")).unwrap();
    let server = ScriptedServer::start(script).await.unwrap();
    let dir = workspace(&server);
    let agent = Agent::open(dir.path(), common::test_options(dir.path())).unwrap();
    let session = agent
        .new_session(dir.path().to_path_buf(), Vec::new())
        .unwrap();
    for turn in 0..4 {
        let stop = prompt(
            &agent,
            &session.id,
            &format!("Question {turn}: where is addition implemented?"),
        )
        .await;
        assert_eq!(stop, StopReason::EndTurn);
    }
    let requests = server.requests();
    assert_eq!(requests.len(), 12);
    let mut previous: Vec<Value> = Vec::new();
    let first_system = system_and_messages(&requests[0].body).0;
    for (index, request) in requests.iter().enumerate() {
        let (system, messages) = system_and_messages(&request.body);
        // One system prompt for the whole session; the environment is the turn's.
        assert_eq!(system, first_system, "request {index}");
        assert!(!system.contains("<environment>"), "request {index}");
        assert!(
            messages[0]["content"]
                .as_str()
                .unwrap()
                .starts_with("<turn_context>\n<environment>"),
            "request {index}"
        );
        // Each request is the previous one's conversation plus what happened since.
        assert!(
            messages.len() > previous.len() && messages[..previous.len()] == previous[..],
            "request {index} does not extend the previous one"
        );
        let last = messages.last().unwrap();
        match index % 3 {
            0 => assert_eq!(last["role"], "user", "request {index}"),
            1 => assert_eq!(last["role"], "tool", "request {index}"),
            _ => {
                assert_eq!(last["role"], "tool", "request {index}");
                assert!(last["content"].as_str().unwrap().contains("search_code"));
            }
        }
        previous = messages;
    }
    // The last request carried the whole stored history but the answer it produced: per turn
    // the question, two calls with their results, and the answer.
    let stored = agent.visible_messages(&session.id).unwrap();
    assert_eq!(stored.len(), 4 * 6);
    assert_eq!(previous.len(), stored.len() - 1);
}

/// An edit made by a tool within a turn leaves that turn's requests as they were (their
/// context was made when the turn started, and each request extends the previous one); the
/// next turn's context (repo map, retrieved code) shows it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_reaches_the_next_turns_code_context_and_leaves_this_turns_requests_alone() {
    let script: Script = serde_json::from_value(serde_json::json!({
        "turns": [
            {
                "name": "after",
                "match": {"last_user_text_contains": "Where is brand_new_helper"},
                "respond": {"text": "In src/lib.rs."}
            },
            {
                "name": "done",
                "match": {"last_tool_result_of": "edit_file"},
                "respond": {"text": "Added `brand_new_helper`."}
            },
            {
                "name": "read",
                "match": {"last_tool_result_of": "read_file"},
                "respond": {
                    "text": "Adding it.",
                    "tool_calls": [{"id": "call_edit", "name": "edit_file", "arguments": {
                        "path": "src/lib.rs",
                        "old_string": "/// Multiplies two numbers.",
                        "new_string": "/// Returns its argument.\npub fn brand_new_helper(value: i64) -> i64 {\n    value\n}\n\n/// Multiplies two numbers."
                    }}]
                }
            },
            {
                "name": "start",
                "respond": {
                    "text": "Reading.",
                    "tool_calls": [{"id": "call_read", "name": "read_file", "arguments": {"path": "README.md"}}]
                }
            }
        ]
    }))
    .unwrap();
    let server = ScriptedServer::start(script).await.unwrap();
    let dir = workspace(&server);
    let agent = Agent::open(dir.path(), common::test_options(dir.path())).unwrap();
    let session = agent
        .new_session(dir.path().to_path_buf(), Vec::new())
        .unwrap();
    let stop = prompt(
        &agent,
        &session.id,
        "Add a function `brand_new_helper` to src/lib.rs next to `multiply`.",
    )
    .await;
    assert_eq!(stop, StopReason::EndTurn);
    let stop = prompt(&agent, &session.id, "Where is brand_new_helper defined?").await;
    assert_eq!(stop, StopReason::EndTurn);
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    // The turn context of a request's newest user message (what lode attached to it).
    let newest_context = |request: &lode_llm_script::RecordedRequest| -> String {
        let (_, messages) = system_and_messages(&request.body);
        let user = messages
            .iter()
            .rev()
            .find(|message| message["role"] == "user")
            .unwrap();
        let content = user["content"].as_str().unwrap();
        content
            .split_once("</turn_context>")
            .map(|(context, _)| context.to_owned())
            .unwrap_or_default()
    };
    // Within the edit's turn, the context is the one made before the edit, and each request
    // extends the one before.
    for request in &requests[..3] {
        assert!(!newest_context(request).contains("fn brand_new_helper"));
    }
    let serialized = |request: &lode_llm_script::RecordedRequest| {
        system_and_messages(&request.body)
            .1
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
    };
    for pair in requests.windows(2) {
        let (before, after) = (serialized(&pair[0]), serialized(&pair[1]));
        assert_eq!(after[..before.len()], before[..]);
    }
    // The next turn's context shows the new function.
    let next = newest_context(&requests[3]);
    assert!(next.contains("fn brand_new_helper"), "{next}");
}

//! `lode acp` on stdio, end to end: the real binary as a child process, a real ACP client (the
//! `agent-client-protocol` SDK's client side), the real agent, and the scripted LLM server.
//! Covers a streamed turn with a tool call, permission answers (reject leaves the file alone,
//! allow applies the edit and shows a diff), cancellation mid-stream, modes and config options,
//! and sessions that survive a restart of lode. `acp_wire.rs` covers malformed input.

use crate::acp_support as support;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    CancelNotification, ContentBlock, InitializeRequest, ListSessionsRequest, LoadSessionRequest,
    NewSessionRequest, PromptRequest, ResumeSessionRequest, SessionConfigOptionValue,
    SessionUpdate, SetSessionConfigOptionRequest, SetSessionModeRequest, StopReason,
    ToolCallContent, ToolCallStatus, ToolKind,
};
use support::{Seen, Workspace, agent_text, kinds, stdio_transport, with_client};

fn text(prompt: &str) -> Vec<ContentBlock> {
    vec![prompt.into()]
}

#[tokio::test]
async fn a_prompt_streams_thoughts_text_and_a_tool_call_then_ends_the_turn() {
    let workspace = Workspace::new("tool_call.json");
    let mut acp = workspace.spawn_acp(&[]);
    let seen = Seen::default();
    let root = workspace.root();
    let (initialize, new_session, stop) = with_client(
        stdio_transport(&mut acp),
        "reject_once",
        seen.clone(),
        async |cx| {
            let initialize = cx
                .send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            let session = cx
                .send_request(NewSessionRequest::new(root))
                .block_task()
                .await?;
            let response = cx
                .send_request(PromptRequest::new(
                    session.session_id.clone(),
                    text("What does src/main.rs do?"),
                ))
                .block_task()
                .await?;
            Ok((initialize, session, response.stop_reason))
        },
    )
    .await;

    assert_eq!(initialize.protocol_version, ProtocolVersion::V1);
    assert_eq!(initialize.agent_info.unwrap().name, "lode");
    assert!(initialize.agent_capabilities.load_session);
    assert!(
        initialize
            .agent_capabilities
            .prompt_capabilities
            .embedded_context
    );
    let modes = new_session.modes.expect("modes");
    assert_eq!(&*modes.current_mode_id.0, "code");
    let options =
        serde_json::to_value(new_session.config_options.expect("config options")).unwrap();
    assert_eq!(options[1]["category"], "model");
    assert_eq!(options[1]["currentValue"], "scripted");
    assert_eq!(stop, StopReason::EndTurn);

    let updates = seen.updates();
    let names = kinds(&updates);
    for expected in [
        "available_commands_update",
        "agent_thought_chunk",
        "agent_message_chunk",
        "tool_call",
        "tool_call_update",
        "usage_update",
        "session_info_update",
    ] {
        assert!(
            names.iter().any(|name| name == expected),
            "no {expected} in {names:?}"
        );
    }
    let first_tool = names.iter().position(|name| name == "tool_call").unwrap();
    let first_text = names
        .iter()
        .position(|name| name == "agent_message_chunk")
        .unwrap();
    assert!(
        first_text < first_tool,
        "text streams before the tool runs: {names:?}"
    );
    let call = updates
        .iter()
        .find_map(|update| match update {
            SessionUpdate::ToolCall(call) => Some(call.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(&*call.tool_call_id.0, "call_read_1");
    assert_eq!(call.kind, ToolKind::Read);
    assert!(
        call.title.contains("main.rs"),
        "a human title: {}",
        call.title
    );
    assert_eq!(call.raw_input.as_ref().unwrap()["path"], "src/main.rs");
    let completed = updates.iter().any(|update| {
        matches!(update, SessionUpdate::ToolCallUpdate(update)
            if &*update.tool_call_id.0 == "call_read_1" && update.fields.status == Some(ToolCallStatus::Completed))
    });
    assert!(completed, "the read completed: {updates:?}");
    let answer = agent_text(&updates);
    assert!(answer.starts_with("Let me read it."), "{answer}");
    assert!(
        answer.ends_with("main.rs defines `main`, which prints a greeting."),
        "{answer}"
    );
}

#[tokio::test]
async fn a_rejected_edit_leaves_the_file_alone() {
    let workspace = Workspace::new("acp_edit.json");
    let seen = edit_turn(&workspace, "reject_once", "Please say goodbye instead").await;
    let questions = seen.questions();
    assert_eq!(questions.len(), 1, "one permission question");
    let offered: Vec<String> = questions[0]
        .options
        .iter()
        .map(|option| option.option_id.0.to_string())
        .collect();
    assert_eq!(
        offered,
        ["allow_once", "allow_always", "reject_once", "reject_always"]
    );
    assert_eq!(&*questions[0].tool_call.tool_call_id.0, "call_edit_1");
    let source = std::fs::read_to_string(workspace.root().join("src/main.rs")).unwrap();
    assert!(
        source.contains("hello") && !source.contains("goodbye"),
        "{source}"
    );
    let updates = seen.updates();
    let failed = updates.iter().any(|update| {
        matches!(update, SessionUpdate::ToolCallUpdate(update)
            if &*update.tool_call_id.0 == "call_edit_1" && update.fields.status == Some(ToolCallStatus::Failed))
    });
    assert!(failed, "the edit is reported as not done: {updates:?}");
    assert!(
        agent_text(&updates).contains("not allowed"),
        "{}",
        agent_text(&updates)
    );
}

#[tokio::test]
async fn an_allowed_edit_changes_the_file_and_shows_a_diff() {
    let workspace = Workspace::new("acp_edit.json");
    let seen = edit_turn(&workspace, "allow_once", "Please say goodbye instead").await;
    let source = std::fs::read_to_string(workspace.root().join("src/main.rs")).unwrap();
    assert!(source.contains("goodbye"), "{source}");
    let diff = seen.updates().into_iter().find_map(|update| match update {
        SessionUpdate::ToolCallUpdate(update) => update.fields.content.and_then(|content| {
            content.into_iter().find_map(|item| match item {
                ToolCallContent::Diff(diff) => Some(diff),
                _ => None,
            })
        }),
        _ => None,
    });
    let diff = diff.expect("a diff for the edit");
    assert!(
        diff.path.ends_with("src/main.rs"),
        "{}",
        diff.path.display()
    );
    assert!(diff.old_text.unwrap().contains("hello"));
    assert!(diff.new_text.contains("goodbye"));
}

#[tokio::test]
async fn an_edit_by_symbol_asks_like_an_edit_and_shows_its_diff() {
    let workspace = Workspace::new("acp_symbol_edit.json");
    let seen = edit_turn(&workspace, "allow_once", "Please rewrite main").await;
    let questions = seen.questions();
    assert_eq!(questions.len(), 1, "one permission question");
    assert_eq!(&*questions[0].tool_call.tool_call_id.0, "call_symbol_1");
    let source = std::fs::read_to_string(workspace.root().join("src/main.rs")).unwrap();
    assert_eq!(source, "fn main() {\n    println!(\"goodbye\");\n}\n");
    let updates = seen.updates();
    let edit_kind = updates.iter().any(|update| {
        matches!(update, SessionUpdate::ToolCall(call)
            if &*call.tool_call_id.0 == "call_symbol_1" && call.kind == ToolKind::Edit)
    });
    assert!(edit_kind, "the card is an edit: {updates:?}");
    let diff = updates.into_iter().find_map(|update| match update {
        SessionUpdate::ToolCallUpdate(update) => update.fields.content.and_then(|content| {
            content.into_iter().find_map(|item| match item {
                ToolCallContent::Diff(diff) => Some(diff),
                _ => None,
            })
        }),
        _ => None,
    });
    let diff = diff.expect("a diff for the edit");
    assert!(
        diff.path.ends_with("src/main.rs"),
        "{}",
        diff.path.display()
    );
    assert!(diff.old_text.unwrap().contains("hello"));
    assert!(diff.new_text.contains("goodbye"));
    assert!(
        agent_text(&seen.updates()).ends_with("`main` now says goodbye."),
        "{}",
        agent_text(&seen.updates())
    );
}

/// One edit turn through a fresh `lode acp`, answering any permission question with `answer`.
async fn edit_turn(workspace: &Workspace, answer: &'static str, prompt: &str) -> Seen {
    let mut acp = workspace.spawn_acp(&[]);
    let seen = Seen::default();
    let root = workspace.root();
    let stop = with_client(
        stdio_transport(&mut acp),
        answer,
        seen.clone(),
        async |cx| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            let session = cx
                .send_request(NewSessionRequest::new(root))
                .block_task()
                .await?;
            let response = cx
                .send_request(PromptRequest::new(session.session_id, text(prompt)))
                .block_task()
                .await?;
            Ok(response.stop_reason)
        },
    )
    .await;
    assert_eq!(stop, StopReason::EndTurn);
    seen
}

#[tokio::test]
async fn allow_always_persists_across_a_restart_of_lode() {
    let workspace = Workspace::new("acp_always.json");
    let first = edit_turn(&workspace, "allow_always", "Please say goodbye instead").await;
    assert_eq!(first.questions().len(), 1, "the first edit asks");
    let source = std::fs::read_to_string(workspace.root().join("src/main.rs")).unwrap();
    assert!(source.contains("goodbye"), "{source}");

    // A new process and a new session: the remembered answer covers the same edit, so nothing
    // is asked (a question would be answered reject_once and leave the file alone).
    let second = edit_turn(&workspace, "reject_once", "Now say farewell").await;
    assert!(
        second.questions().is_empty(),
        "asked again: {:?}",
        second.questions()
    );
    let source = std::fs::read_to_string(workspace.root().join("src/main.rs")).unwrap();
    assert!(source.contains("farewell"), "{source}");
}

#[tokio::test]
async fn cancel_mid_stream_returns_cancelled() {
    let workspace = Workspace::new("acp_slow.json");
    let mut acp = workspace.spawn_acp(&[]);
    let seen = Seen::default();
    let root = workspace.root();
    let watcher = seen.clone();
    let stop = with_client(
        stdio_transport(&mut acp),
        "reject_once",
        seen.clone(),
        async |cx| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            let session = cx
                .send_request(NewSessionRequest::new(root))
                .block_task()
                .await?;
            let id = session.session_id.clone();
            let turn = cx
                .send_request(PromptRequest::new(id.clone(), text("count to ten slowly")))
                .block_task();
            let cancel_when_streaming = async {
                watcher
                    .wait_for("the first text chunk", |update| {
                        matches!(update, SessionUpdate::AgentMessageChunk(_))
                    })
                    .await;
                cx.send_notification(CancelNotification::new(id))
            };
            let (response, sent) = tokio::join!(turn, cancel_when_streaming);
            sent?;
            Ok(response?.stop_reason)
        },
    )
    .await;
    assert_eq!(stop, StopReason::Cancelled);
}

#[tokio::test]
async fn modes_and_models_change_through_set_mode_and_config_options() {
    let workspace = Workspace::new("hello.json");
    let mut acp = workspace.spawn_acp(&[]);
    let seen = Seen::default();
    let root = workspace.root();
    let (session_id, model_options) = with_client(
        stdio_transport(&mut acp),
        "reject_once",
        seen.clone(),
        async |cx| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            let session = cx
                .send_request(NewSessionRequest::new(root))
                .block_task()
                .await?;
            cx.send_request(SetSessionModeRequest::new(
                session.session_id.clone(),
                "ask",
            ))
            .block_task()
            .await?;
            let changed = cx
                .send_request(SetSessionConfigOptionRequest::new(
                    session.session_id.clone(),
                    "model",
                    SessionConfigOptionValue::value_id("backup"),
                ))
                .block_task()
                .await?;
            let refused = cx
                .send_request(SetSessionModeRequest::new(
                    session.session_id.clone(),
                    "yolo",
                ))
                .block_task()
                .await;
            assert!(refused.is_err(), "an unknown mode is refused");
            Ok((session.session_id, changed.config_options))
        },
    )
    .await;
    let options = serde_json::to_value(model_options).unwrap();
    assert_eq!(options[0]["currentValue"], "ask");
    assert_eq!(options[1]["currentValue"], "backup");
    let updates = seen.updates();
    assert!(
        updates.iter().any(
            |u| matches!(u, SessionUpdate::CurrentModeUpdate(m) if &*m.current_mode_id.0 == "ask")
        ),
        "{updates:?}"
    );
    assert!(
        kinds(&updates)
            .iter()
            .filter(|k| *k == "config_option_update")
            .count()
            >= 2
    );
    drop(acp);

    // The choices are stored with the session: a new lode sees them.
    let mut acp = workspace.spawn_acp(&[]);
    let root = workspace.root();
    let resumed = with_client(
        stdio_transport(&mut acp),
        "reject_once",
        Seen::default(),
        async |cx| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            cx.send_request(ResumeSessionRequest::new(session_id, root))
                .block_task()
                .await
        },
    )
    .await;
    assert_eq!(&*resumed.modes.unwrap().current_mode_id.0, "ask");
    assert_eq!(
        serde_json::to_value(resumed.config_options).unwrap()[1]["currentValue"],
        "backup"
    );
}

#[tokio::test]
async fn sessions_survive_a_restart_and_load_replays_their_history() {
    let workspace = Workspace::new("hello.json");
    let mut acp = workspace.spawn_acp(&[]);
    let root = workspace.root();
    let session_id = with_client(
        stdio_transport(&mut acp),
        "reject_once",
        Seen::default(),
        async |cx| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            let session = cx
                .send_request(NewSessionRequest::new(root))
                .block_task()
                .await?;
            let response = cx
                .send_request(PromptRequest::new(
                    session.session_id.clone(),
                    text("Say hello please"),
                ))
                .block_task()
                .await?;
            assert_eq!(response.stop_reason, StopReason::EndTurn);
            Ok(session.session_id)
        },
    )
    .await;
    // The client hung up: lode exits on its own.
    let exit = tokio::time::timeout(support::PATIENCE, acp.wait())
        .await
        .expect("lode acp exits after EOF")
        .unwrap();
    assert!(exit.success(), "{exit:?}");

    let mut acp = workspace.spawn_acp(&[]);
    let seen = Seen::default();
    let root = workspace.root();
    let listed = with_client(
        stdio_transport(&mut acp),
        "reject_once",
        seen.clone(),
        async |cx| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            let listed = cx
                .send_request(ListSessionsRequest::new())
                .block_task()
                .await?;
            cx.send_request(LoadSessionRequest::new(session_id.clone(), root))
                .block_task()
                .await?;
            Ok(listed)
        },
    )
    .await;
    let entry = listed
        .sessions
        .iter()
        .find(|s| s.session_id == session_id)
        .expect("the session is listed");
    assert_eq!(entry.title.as_deref(), Some("Say hello please"));
    assert!(entry.updated_at.is_some());
    let replay = seen.updates();
    let user = replay.iter().find_map(|u| match u {
        SessionUpdate::UserMessageChunk(chunk) => {
            serde_json::to_value(&chunk.content).unwrap()["text"]
                .as_str()
                .map(str::to_string)
        }
        _ => None,
    });
    assert_eq!(user.as_deref(), Some("Say hello please"));
    assert_eq!(
        agent_text(&replay),
        "Hello from the scripted server. I stream in small pieces."
    );
}

#[tokio::test]
async fn usage_updates_carry_the_cached_and_uncached_input_tokens_in_meta() {
    // Each scripted answer's usage says how much of the input the prompt cache served.
    let workspace = Workspace::new("cached_usage.json");
    let mut acp = workspace.spawn_acp(&[]);
    let seen = Seen::default();
    let root = workspace.root();
    let stop = with_client(
        stdio_transport(&mut acp),
        "reject_once",
        seen.clone(),
        async |cx| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            let session = cx
                .send_request(NewSessionRequest::new(root))
                .block_task()
                .await?;
            let response = cx
                .send_request(PromptRequest::new(
                    session.session_id.clone(),
                    text("Which files are there?"),
                ))
                .block_task()
                .await?;
            Ok(response.stop_reason)
        },
    )
    .await;
    assert_eq!(stop, StopReason::EndTurn);
    let usage: Vec<serde_json::Value> = seen
        .updates()
        .iter()
        .filter_map(|update| match update {
            SessionUpdate::UsageUpdate(usage) => Some(serde_json::to_value(usage).unwrap()),
            _ => None,
        })
        .collect();
    let lode: Vec<&serde_json::Value> = usage.iter().map(|u| &u["_meta"]["lode"]).collect();
    assert_eq!(
        lode,
        vec![
            &serde_json::json!({"inputTokens": 1200, "cachedInputTokens": 1024,
                "uncachedInputTokens": 176, "cacheWriteTokens": 0, "outputTokens": 12}),
            &serde_json::json!({"inputTokens": 1300, "cachedInputTokens": 1152,
                "uncachedInputTokens": 148, "cacheWriteTokens": 0, "outputTokens": 4}),
        ],
        "{usage:?}"
    );
    // `used` is the request's input and output; `size` the configured window.
    assert_eq!(usage[1]["used"], 1304);
    assert_eq!(usage[1]["size"], 32000);
}

//! Mapping tests: each agent shape checked on ACP's wire JSON, and client input mapped back.

use std::path::PathBuf;

use agent_client_protocol::v1::schema::{
    AudioContent, BlobResourceContents, ContentBlock, EmbeddedResource, EmbeddedResourceResource,
    EnvVariable, HttpHeader, ImageContent, McpServer, McpServerHttp, McpServerSse, McpServerStdio,
    RequestPermissionOutcome, ResourceLink, SelectedPermissionOutcome, TextResourceContents,
};
use lode_agent::event::{
    AgentEvent, Location, PlanEntry, PlanPriority, PlanStatus, StopReason, ToolCallStart,
    ToolCallUpdate, ToolContent, ToolKind, ToolStatus,
};
use lode_agent::host::{PermissionAnswer, PermissionRequest};
use lode_llm::ModelInfo;
use lode_policy::SubjectKind;
use serde_json::{Value, json};

use super::*;
use crate::backend::{McpServerSpec, PromptInput, SessionSummary, SlashCommandInfo};

fn wire(event: &AgentEvent) -> Value {
    serde_json::to_value(session_update(event, false).expect("an update")).unwrap()
}

#[test]
fn text_and_thoughts_become_chunks() {
    assert_eq!(
        wire(&AgentEvent::TextDelta { text: "Hi".into() }),
        json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Hi"}})
    );
    assert_eq!(
        wire(&AgentEvent::ThoughtDelta { text: "hm".into() })["sessionUpdate"],
        "agent_thought_chunk"
    );
    assert_eq!(
        wire(&AgentEvent::UserMessage { text: "q".into() })["sessionUpdate"],
        "user_message_chunk"
    );
    assert!(
        session_update(
            &AgentEvent::TurnFinished {
                stop_reason: StopReason::EndTurn
            },
            false
        )
        .is_none()
    );
}

#[test]
fn a_tool_call_carries_kind_title_locations_and_raw_input() {
    let start = AgentEvent::ToolCallStarted(ToolCallStart {
        id: "call_1".into(),
        tool: "read_file".into(),
        title: "Read src/lib.rs".into(),
        kind: ToolKind::Read,
        locations: vec![Location {
            path: PathBuf::from("/w/src/lib.rs"),
            line: Some(3),
        }],
        raw_input: json!({"path": "src/lib.rs"}),
    });
    let value = wire(&start);
    assert_eq!(value["sessionUpdate"], "tool_call");
    assert_eq!(value["toolCallId"], "call_1");
    assert_eq!(value["title"], "Read src/lib.rs");
    assert_eq!(value["kind"], "read");
    // `pending` is the protocol's default and may be left out.
    assert!(value.get("status").is_none_or(|status| status == "pending"));
    assert_eq!(
        value["locations"],
        json!([{"path": "/w/src/lib.rs", "line": 3}])
    );
    assert_eq!(value["rawInput"], json!({"path": "src/lib.rs"}));
}

#[test]
fn a_tool_update_carries_status_diff_terminal_text_and_raw_output() {
    let update = AgentEvent::ToolCallUpdated(ToolCallUpdate {
        id: "call_2".into(),
        status: ToolStatus::Completed,
        title: None,
        content: vec![
            ToolContent::Diff {
                path: PathBuf::from("/w/a.rs"),
                old_text: Some("old".into()),
                new_text: "new".into(),
            },
            ToolContent::Diff {
                path: PathBuf::from("/w/b.rs"),
                old_text: None,
                new_text: "fresh".into(),
            },
            ToolContent::Terminal {
                terminal_id: "term-1".into(),
            },
            ToolContent::Text {
                text: "done".into(),
            },
        ],
        locations: vec![],
        raw_output: Some(json!({"ok": true})),
    });
    let value = wire(&update);
    assert_eq!(value["sessionUpdate"], "tool_call_update");
    assert_eq!(value["status"], "completed");
    assert_eq!(
        value["content"],
        json!([
            {"type": "diff", "path": "/w/a.rs", "oldText": "old", "newText": "new"},
            {"type": "diff", "path": "/w/b.rs", "newText": "fresh"},
            {"type": "terminal", "terminalId": "term-1"},
            {"type": "content", "content": {"type": "text", "text": "done"}},
        ])
    );
    assert_eq!(value["rawOutput"], json!({"ok": true}));
    assert!(value.get("title").is_none() && value.get("locations").is_none());
}

#[test]
fn every_tool_kind_and_stop_reason_has_its_acp_name() {
    let kinds = [
        (ToolKind::Read, "read"),
        (ToolKind::Edit, "edit"),
        (ToolKind::Delete, "delete"),
        (ToolKind::Move, "move"),
        (ToolKind::Search, "search"),
        (ToolKind::Execute, "execute"),
        (ToolKind::Fetch, "fetch"),
        (ToolKind::Think, "think"),
        (ToolKind::Other, "other"),
    ];
    for (kind, name) in kinds {
        assert_eq!(serde_json::to_value(tool_kind(kind)).unwrap(), name);
    }
    let reasons = [
        (StopReason::EndTurn, "end_turn"),
        (StopReason::MaxTokens, "max_tokens"),
        (StopReason::MaxTurnRequests, "max_turn_requests"),
        (StopReason::Refusal, "refusal"),
        (StopReason::Cancelled, "cancelled"),
    ];
    for (reason, name) in reasons {
        assert_eq!(serde_json::to_value(stop_reason(reason)).unwrap(), name);
    }
}

#[test]
fn plan_usage_and_title_updates() {
    let plan = wire(&AgentEvent::Plan {
        entries: vec![PlanEntry {
            content: "Write tests".into(),
            priority: PlanPriority::High,
            status: PlanStatus::InProgress,
        }],
    });
    assert_eq!(
        plan,
        json!({"sessionUpdate": "plan", "entries": [{"content": "Write tests", "priority": "high", "status": "in_progress"}]})
    );
    let usage = wire(&AgentEvent::Usage {
        used: 1200,
        size: 128000,
        input_tokens: 1000,
        output_tokens: 200,
        cached_input_tokens: 900,
        uncached_input_tokens: 100,
        cache_write_tokens: 40,
    });
    assert_eq!(
        usage,
        json!({"sessionUpdate": "usage_update", "used": 1200, "size": 128000, "_meta": {"lode": {
            "inputTokens": 1000, "cachedInputTokens": 900, "uncachedInputTokens": 100,
            "cacheWriteTokens": 40, "outputTokens": 200}}})
    );
    let title = wire(&AgentEvent::TitleChanged {
        title: "Fix the parser".into(),
    });
    assert_eq!(title["sessionUpdate"], "session_info_update");
    assert_eq!(title["title"], "Fix the parser");
    assert!(title["updatedAt"].is_string());
}

#[test]
fn notices_go_to_clients_that_take_them_and_become_thoughts_otherwise() {
    let notice = AgentEvent::Notice {
        message: "retrying".into(),
    };
    let taken = serde_json::to_value(session_update(&notice, true).unwrap()).unwrap();
    assert_eq!(taken["sessionUpdate"], "notice");
    assert_eq!(wire(&notice)["sessionUpdate"], "agent_thought_chunk");
}

#[test]
fn an_index_build_is_one_tool_card_that_completes() {
    use lode_agent::event::IndexStage;
    let event = |stage, done, total| AgentEvent::IndexProgress {
        id: "lode-indexing-1".into(),
        stage,
        done,
        total,
    };
    let started = wire(&event(IndexStage::Started, 0, 0));
    assert_eq!(started["sessionUpdate"], "tool_call");
    assert_eq!(started["toolCallId"], "lode-indexing-1");
    assert_eq!(started["status"], "in_progress");
    // `other`, the default kind, is left out on the wire.
    assert!(
        started["kind"].is_null() || started["kind"] == "other",
        "{started}"
    );
    assert_eq!(
        started["title"],
        "Indexing the workspace: indexing: looking for files"
    );
    let progress = wire(&event(IndexStage::Progress, 1200, 5000));
    assert_eq!(progress["sessionUpdate"], "tool_call_update");
    assert_eq!(progress["toolCallId"], "lode-indexing-1");
    assert_eq!(progress["status"], "in_progress");
    assert_eq!(
        progress["title"],
        "Indexing the workspace: indexing 1200/5000 files"
    );
    assert_eq!(
        progress["content"][0]["content"]["text"],
        "indexing 1200/5000 files"
    );
    assert_eq!(
        progress["rawOutput"],
        serde_json::json!({"indexed": 1200, "total": 5000})
    );
    let writing = wire(&event(IndexStage::Progress, 5000, 5000));
    assert_eq!(
        writing["title"],
        "Indexing the workspace: indexing 5000 files: writing the index"
    );
    let finished = wire(&event(IndexStage::Finished, 5000, 5000));
    assert_eq!(finished["sessionUpdate"], "tool_call_update");
    assert_eq!(finished["status"], "completed");
    assert_eq!(
        finished["title"],
        "Indexing the workspace: index ready (5000 files)"
    );
}

#[test]
fn prompt_blocks_become_agent_input() {
    let blocks = vec![
        ContentBlock::from("fix it"),
        ContentBlock::ResourceLink(ResourceLink::new("main.rs", "file:///w/main.rs")),
        ContentBlock::Resource(EmbeddedResource::new(
            EmbeddedResourceResource::TextResourceContents(
                TextResourceContents::new("fn main() {}", "file:///w/main.rs")
                    .mime_type("text/x-rust".to_string()),
            ),
        )),
        ContentBlock::Resource(EmbeddedResource::new(
            EmbeddedResourceResource::BlobResourceContents(BlobResourceContents::new(
                "AAAA",
                "file:///w/logo.png",
            )),
        )),
    ];
    assert_eq!(
        prompt_inputs(blocks, false).unwrap(),
        vec![
            PromptInput::Text("fix it".into()),
            PromptInput::ResourceLink {
                uri: "file:///w/main.rs".into(),
                name: "main.rs".into()
            },
            PromptInput::Resource {
                uri: "file:///w/main.rs".into(),
                text: Some("fn main() {}".into()),
                mime_type: Some("text/x-rust".into())
            },
            PromptInput::Resource {
                uri: "file:///w/logo.png".into(),
                text: None,
                mime_type: None
            },
        ]
    );
}

#[test]
fn images_only_when_the_model_sees_them_and_never_audio_or_nothing() {
    let image = || vec![ContentBlock::Image(ImageContent::new("AAAA", "image/png"))];
    assert_eq!(
        prompt_inputs(image(), true).unwrap(),
        vec![PromptInput::Image {
            mime_type: "image/png".into(),
            data: "AAAA".into()
        }]
    );
    assert!(
        prompt_inputs(image(), false)
            .unwrap_err()
            .contains("images")
    );
    let audio = vec![ContentBlock::Audio(AudioContent::new("AAAA", "audio/wav"))];
    assert!(prompt_inputs(audio, true).unwrap_err().contains("audio"));
    assert!(prompt_inputs(vec![], true).unwrap_err().contains("empty"));
}

#[test]
fn mcp_servers_keep_their_transport_details() {
    let stdio = McpServer::Stdio(
        McpServerStdio::new("files", "/usr/bin/mcp-files")
            .args(vec!["--root".into(), "/w".into()])
            .env(vec![EnvVariable::new("TOKEN", "t")]),
    );
    let http = McpServer::Http(
        McpServerHttp::new("web", "http://127.0.0.1:9/mcp")
            .headers(vec![HttpHeader::new("Authorization", "Bearer x")]),
    );
    assert_eq!(
        mcp_server_specs(vec![stdio, http]).unwrap(),
        vec![
            McpServerSpec::Stdio {
                name: "files".into(),
                command: "/usr/bin/mcp-files".into(),
                args: vec!["--root".into(), "/w".into()],
                env: vec![("TOKEN".into(), "t".into())]
            },
            McpServerSpec::Http {
                name: "web".into(),
                url: "http://127.0.0.1:9/mcp".into(),
                headers: vec![("Authorization".into(), "Bearer x".into())]
            },
        ]
    );
    let sse = McpServer::Sse(McpServerSse::new("old", "http://127.0.0.1:9/sse"));
    assert!(mcp_server_spec(sse).unwrap_err().contains("SSE"));
}

#[test]
fn a_session_takes_at_most_the_capped_number_of_mcp_servers() {
    let servers = |count: usize| -> Vec<McpServer> {
        (0..count)
            .map(|n| McpServer::Http(McpServerHttp::new(format!("s{n}"), "http://127.0.0.1:9/")))
            .collect()
    };
    assert_eq!(
        mcp_server_specs(servers(MAX_MCP_SERVERS)).unwrap().len(),
        MAX_MCP_SERVERS
    );
    let refused = mcp_server_specs(servers(MAX_MCP_SERVERS + 1)).unwrap_err();
    assert_eq!(
        refused,
        "65 MCP servers were passed; a session takes at most 64"
    );
}

fn question() -> PermissionRequest {
    PermissionRequest {
        tool_call_id: "call_3".into(),
        tool: "run".into(),
        title: "Run `cargo test`".into(),
        kind: ToolKind::Execute,
        raw_input: json!({"command": "cargo test"}),
        always_pattern: "cargo test*".into(),
        offer_network: false,
        must_ask: false,
        reason: "commands ask by default".into(),
        subjects: vec!["cargo test".into()],
        subject_kind: SubjectKind::Command,
    }
}

#[test]
fn a_must_ask_offers_no_always_answers_and_says_what_was_judged() {
    let request = PermissionRequest {
        title: "Run `cargo test $(id)`".into(),
        raw_input: json!({"command": "cargo test $(id)"}),
        must_ask: true,
        reason: "command substitution `$(…)`".into(),
        subjects: vec!["cargo test $(id)".into()],
        ..question()
    };
    let options = serde_json::to_value(permission_options(&request)).unwrap();
    let ids: Vec<&str> = options
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["optionId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [ALLOW_ONCE, REJECT_ONCE]);
    let with_network = PermissionRequest {
        offer_network: true,
        ..request.clone()
    };
    let ids: Vec<String> = permission_options(&with_network)
        .into_iter()
        .map(|o| o.option_id.0.to_string())
        .collect();
    assert_eq!(ids, [ALLOW_ONCE, ALLOW_ONCE_WITH_NETWORK, REJECT_ONCE]);
    let meta = serde_json::Value::Object(permission_meta(&request));
    assert_eq!(
        meta,
        json!({"lode": {
            "mustAsk": true,
            "reason": "command substitution `$(…)`",
            "subjects": ["cargo test $(id)"],
            "subjectKind": "command",
        }})
    );
    // A plain ask still offers all four.
    assert_eq!(permission_options(&question()).len(), 4);
}

#[test]
fn a_command_that_needs_the_network_also_offers_allow_once_with_network() {
    let request = PermissionRequest {
        title: "Run `cargo add serde`".into(),
        raw_input: json!({"command": "cargo add serde"}),
        always_pattern: "cargo add*".into(),
        offer_network: true,
        ..question()
    };
    let options = serde_json::to_value(permission_options(&request)).unwrap();
    let ids: Vec<&str> = options
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["optionId"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            ALLOW_ONCE,
            ALLOW_ONCE_WITH_NETWORK,
            ALLOW_ALWAYS,
            REJECT_ONCE,
            REJECT_ALWAYS
        ]
    );
    assert_eq!(options[1]["kind"], "allow_once");
    assert_eq!(options[1]["name"], "Allow once with network");
    let picked = permission_answer(&RequestPermissionOutcome::Selected(
        SelectedPermissionOutcome::new(ALLOW_ONCE_WITH_NETWORK.to_string()),
    ));
    assert_eq!(picked, PermissionAnswer::AllowOnceWithNetwork);
}

#[test]
fn permission_questions_offer_four_answers_and_map_them_back() {
    let options = serde_json::to_value(permission_options(&question())).unwrap();
    let kinds: Vec<&str> = options
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["allow_once", "allow_always", "reject_once", "reject_always"]
    );
    assert!(options[1]["name"].as_str().unwrap().contains("cargo test*"));
    let call = serde_json::to_value(permission_tool_call(&question())).unwrap();
    assert_eq!(call["toolCallId"], "call_3");
    assert_eq!(call["kind"], "execute");

    let picked = |id: &str| {
        permission_answer(&RequestPermissionOutcome::Selected(
            SelectedPermissionOutcome::new(id.to_string()),
        ))
    };
    assert_eq!(picked(ALLOW_ONCE), PermissionAnswer::AllowOnce);
    assert_eq!(picked(ALLOW_ALWAYS), PermissionAnswer::AllowAlways);
    assert_eq!(picked(REJECT_ONCE), PermissionAnswer::RejectOnce);
    assert_eq!(picked(REJECT_ALWAYS), PermissionAnswer::RejectAlways);
    assert_eq!(picked("something_else"), PermissionAnswer::RejectOnce);
    assert_eq!(
        permission_answer(&RequestPermissionOutcome::Cancelled),
        PermissionAnswer::Cancelled
    );
}

fn summary() -> SessionSummary {
    SessionSummary {
        id: "s1".into(),
        title: Some("Refactor".into()),
        cwd: PathBuf::from("/w"),
        mode: "code".into(),
        model: "local".into(),
        updated_at: "2026-11-22T03:00:00+00:00".into(),
    }
}

fn model(provider: &str) -> ModelInfo {
    ModelInfo {
        provider: provider.into(),
        model: format!("{provider}-model"),
        context_window: 128000,
        max_output_tokens: 4096,
        supports_images: false,
    }
}

#[test]
fn modes_and_config_options_describe_the_session() {
    let modes = serde_json::to_value(mode_state("architect")).unwrap();
    assert_eq!(modes["currentModeId"], "architect");
    let ids: Vec<&str> = modes["availableModes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["ask", "code", "architect"]);
    assert!(is_known_mode("ask") && !is_known_mode("yolo"));

    let options = serde_json::to_value(config_options(
        &summary(),
        &[model("local"), model("cloud")],
    ))
    .unwrap();
    assert_eq!(options[0]["id"], "mode");
    assert_eq!(options[0]["category"], "mode");
    assert_eq!(options[0]["currentValue"], "code");
    assert_eq!(options[1]["id"], "model");
    assert_eq!(options[1]["category"], "model");
    assert_eq!(options[1]["type"], "select");
    assert_eq!(options[1]["currentValue"], "local");
    let values: Vec<&str> = options[1]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["value"].as_str().unwrap())
        .collect();
    assert_eq!(values, ["local", "cloud"]);
    assert_eq!(
        config_options(&summary(), &[]).len(),
        1,
        "no model option without providers"
    );
}

#[test]
fn listings_and_commands() {
    let info = serde_json::to_value(session_info(&summary())).unwrap();
    assert_eq!(
        info,
        json!({"sessionId": "s1", "cwd": "/w", "title": "Refactor", "updatedAt": "2026-11-22T03:00:00+00:00"})
    );
    let commands = serde_json::to_value(available_commands(&[
        SlashCommandInfo {
            name: "search".into(),
            description: "Search the code".into(),
            input_hint: Some("query".into()),
        },
        SlashCommandInfo {
            name: "help".into(),
            description: "Show help".into(),
            input_hint: None,
        },
    ]))
    .unwrap();
    assert_eq!(commands["sessionUpdate"], "available_commands_update");
    assert_eq!(
        commands["availableCommands"][0],
        json!({"name": "search", "description": "Search the code", "input": {"hint": "query"}})
    );
    assert!(commands["availableCommands"][1].get("input").is_none());
    assert_eq!(
        serde_json::to_value(current_mode_update("ask")).unwrap(),
        json!({"sessionUpdate": "current_mode_update", "currentModeId": "ask"})
    );
}

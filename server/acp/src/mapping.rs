//! Pure translations between the agent's shapes and ACP v1's: agent events to `session/update`s,
//! prompt content blocks to agent input, MCP server configs, permission options and answers,
//! modes, config options and session listings. No I/O and no state.

use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, ConfigOptionUpdate,
    ContentBlock, ContentChunk, CurrentModeUpdate, Diff, EmbeddedResourceResource, McpServer, Meta,
    Notice, NoticeSeverity, PermissionOption, PermissionOptionKind, Plan, PlanEntry,
    PlanEntryPriority, PlanEntryStatus, RequestPermissionOutcome, SessionConfigOption,
    SessionConfigOptionCategory, SessionConfigSelectOption, SessionInfo, SessionInfoUpdate,
    SessionMode, SessionModeState, SessionUpdate, StopReason as AcpStopReason, Terminal, ToolCall,
    ToolCallContent, ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
    ToolKind as AcpToolKind, UnstructuredCommandInput, UsageUpdate,
};
use lode_agent::event::{
    AgentEvent, IndexStage, Location, PlanPriority, PlanStatus, StopReason, ToolCallStart,
    ToolCallUpdate as AgentToolCallUpdate, ToolContent, ToolKind, ToolStatus, index_progress_text,
};
use lode_agent::host::{PermissionAnswer, PermissionRequest};
use lode_llm::ModelInfo;

use crate::backend::{MODES, McpServerSpec, PromptInput, SessionSummary, SlashCommandInfo};

/// The id of the config option that selects the mode.
pub const MODE_OPTION_ID: &str = "mode";
/// The id of the config option that selects the model.
pub const MODEL_OPTION_ID: &str = "model";

/// Permission option ids, one per answer kind.
pub const ALLOW_ONCE: &str = "allow_once";
/// Offered when the command needs the network, which the sandbox otherwise refuses.
pub const ALLOW_ONCE_WITH_NETWORK: &str = "allow_once_network";
pub const ALLOW_ALWAYS: &str = "allow_always";
pub const REJECT_ONCE: &str = "reject_once";
pub const REJECT_ALWAYS: &str = "reject_always";

/// The `session/update` for one agent event, or `None` for events with no update of their own
/// (the end of a turn is the `session/prompt` response). `notices` says whether the client
/// advertised `session.notices`; without it a notice becomes a thought chunk.
pub fn session_update(event: &AgentEvent, notices: bool) -> Option<SessionUpdate> {
    let update = match event {
        AgentEvent::UserMessage { text } => {
            SessionUpdate::UserMessageChunk(ContentChunk::new(text.clone().into()))
        }
        AgentEvent::TextDelta { text } => {
            SessionUpdate::AgentMessageChunk(ContentChunk::new(text.clone().into()))
        }
        AgentEvent::ThoughtDelta { text } => {
            SessionUpdate::AgentThoughtChunk(ContentChunk::new(text.clone().into()))
        }
        AgentEvent::ToolCallStarted(start) => SessionUpdate::ToolCall(tool_call(start)),
        AgentEvent::ToolCallUpdated(update) => {
            SessionUpdate::ToolCallUpdate(tool_call_update(update))
        }
        AgentEvent::Plan { entries } => SessionUpdate::Plan(Plan::new(
            entries
                .iter()
                .map(|entry| {
                    PlanEntry::new(
                        entry.content.clone(),
                        plan_priority(entry.priority),
                        plan_status(entry.status),
                    )
                })
                .collect(),
        )),
        AgentEvent::Usage {
            used,
            size,
            input_tokens,
            output_tokens,
            cached_input_tokens,
            uncached_input_tokens,
            cache_write_tokens,
        } => {
            let mut meta = Meta::new();
            meta.insert(
                USAGE_META_KEY.to_owned(),
                serde_json::json!({
                    "inputTokens": input_tokens,
                    "cachedInputTokens": cached_input_tokens,
                    "uncachedInputTokens": uncached_input_tokens,
                    "cacheWriteTokens": cache_write_tokens,
                    "outputTokens": output_tokens,
                }),
            );
            SessionUpdate::UsageUpdate(UsageUpdate::new(*used, *size).meta(meta))
        }
        AgentEvent::TitleChanged { title } => SessionUpdate::SessionInfoUpdate(
            SessionInfoUpdate::new()
                .title(title.clone())
                .updated_at(chrono::Utc::now().to_rfc3339()),
        ),
        AgentEvent::Notice { message } if notices => {
            SessionUpdate::Notice(Notice::new(NoticeSeverity::Info, message.clone()))
        }
        AgentEvent::Notice { message } => {
            SessionUpdate::AgentThoughtChunk(ContentChunk::new(format!("{message}\n").into()))
        }
        AgentEvent::TurnFinished { .. } => return None,
        AgentEvent::IndexProgress {
            id,
            stage,
            done,
            total,
        } => index_progress(id, *stage, *done, *total),
    };
    Some(update)
}

/// An index build's progress as a tool card (docs/acp.md): `Started` is a `tool_call` of kind
/// `other`, in progress, titled and with the counts as its content; `Progress` updates the
/// title and content; `Finished` completes it. Zed and VS Code show a card's title and status
/// as they change, so the counts are in the title.
fn index_progress(id: &str, stage: IndexStage, done: usize, total: usize) -> SessionUpdate {
    let text = index_progress_text(stage, done, total);
    let title = format!("Indexing the workspace: {text}");
    let content: Vec<ToolCallContent> = vec![ContentBlock::from(text).into()];
    let raw_output = serde_json::json!({"indexed": done, "total": total});
    match stage {
        IndexStage::Started => SessionUpdate::ToolCall(
            ToolCall::new(id.to_owned(), title)
                .kind(AcpToolKind::Other)
                .status(ToolCallStatus::InProgress)
                .content(content)
                .raw_output(raw_output),
        ),
        IndexStage::Progress | IndexStage::Finished => {
            let status = if stage == IndexStage::Finished {
                ToolCallStatus::Completed
            } else {
                ToolCallStatus::InProgress
            };
            SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                id.to_owned(),
                ToolCallUpdateFields::new()
                    .status(status)
                    .title(title)
                    .content(content)
                    .raw_output(raw_output),
            ))
        }
    }
}

pub fn tool_call(start: &ToolCallStart) -> ToolCall {
    ToolCall::new(start.id.clone(), start.title.clone())
        .kind(tool_kind(start.kind))
        .status(ToolCallStatus::Pending)
        .locations(start.locations.iter().map(location).collect())
        .raw_input(start.raw_input.clone())
}

pub fn tool_call_update(update: &AgentToolCallUpdate) -> ToolCallUpdate {
    let mut fields = ToolCallUpdateFields::new().status(tool_status(update.status));
    if let Some(title) = &update.title {
        fields = fields.title(title.clone());
    }
    if !update.content.is_empty() {
        fields = fields.content(update.content.iter().map(tool_content).collect::<Vec<_>>());
    }
    if !update.locations.is_empty() {
        fields = fields.locations(update.locations.iter().map(location).collect::<Vec<_>>());
    }
    if let Some(output) = &update.raw_output {
        fields = fields.raw_output(output.clone());
    }
    ToolCallUpdate::new(update.id.clone(), fields)
}

pub fn tool_kind(kind: ToolKind) -> AcpToolKind {
    match kind {
        ToolKind::Read => AcpToolKind::Read,
        ToolKind::Edit => AcpToolKind::Edit,
        ToolKind::Delete => AcpToolKind::Delete,
        ToolKind::Move => AcpToolKind::Move,
        ToolKind::Search => AcpToolKind::Search,
        ToolKind::Execute => AcpToolKind::Execute,
        ToolKind::Fetch => AcpToolKind::Fetch,
        ToolKind::Think => AcpToolKind::Think,
        ToolKind::Other => AcpToolKind::Other,
    }
}

pub fn tool_status(status: ToolStatus) -> ToolCallStatus {
    match status {
        ToolStatus::Pending => ToolCallStatus::Pending,
        ToolStatus::InProgress => ToolCallStatus::InProgress,
        ToolStatus::Completed => ToolCallStatus::Completed,
        ToolStatus::Failed => ToolCallStatus::Failed,
    }
}

pub fn tool_content(content: &ToolContent) -> ToolCallContent {
    match content {
        ToolContent::Text { text } => ContentBlock::from(text.clone()).into(),
        ToolContent::Diff {
            path,
            old_text,
            new_text,
        } => Diff::new(path.clone(), new_text.clone())
            .old_text(old_text.clone())
            .into(),
        ToolContent::Terminal { terminal_id } => {
            ToolCallContent::Terminal(Terminal::new(terminal_id.clone()))
        }
    }
}

fn location(location: &Location) -> ToolCallLocation {
    ToolCallLocation::new(location.path.clone()).line(location.line)
}

fn plan_priority(priority: PlanPriority) -> PlanEntryPriority {
    match priority {
        PlanPriority::High => PlanEntryPriority::High,
        PlanPriority::Medium => PlanEntryPriority::Medium,
        PlanPriority::Low => PlanEntryPriority::Low,
    }
}

fn plan_status(status: PlanStatus) -> PlanEntryStatus {
    match status {
        PlanStatus::Pending => PlanEntryStatus::Pending,
        PlanStatus::InProgress => PlanEntryStatus::InProgress,
        PlanStatus::Completed => PlanEntryStatus::Completed,
    }
}

pub fn stop_reason(reason: StopReason) -> AcpStopReason {
    match reason {
        StopReason::EndTurn => AcpStopReason::EndTurn,
        StopReason::MaxTokens => AcpStopReason::MaxTokens,
        StopReason::MaxTurnRequests => AcpStopReason::MaxTurnRequests,
        StopReason::Refusal => AcpStopReason::Refusal,
        StopReason::Cancelled => AcpStopReason::Cancelled,
    }
}

/// A prompt's content blocks as agent input. Audio is refused (no provider lode drives takes
/// it), and so are images when `images` is false (the configured model cannot see them).
pub fn prompt_inputs(blocks: Vec<ContentBlock>, images: bool) -> Result<Vec<PromptInput>, String> {
    let mut inputs = Vec::with_capacity(blocks.len());
    for block in blocks {
        let input = match block {
            ContentBlock::Text(text) => PromptInput::Text(text.text),
            ContentBlock::Image(image) if images => PromptInput::Image {
                mime_type: image.mime_type,
                data: image.data,
            },
            ContentBlock::Image(_) => {
                return Err("the configured model does not accept images".to_string());
            }
            ContentBlock::Audio(_) => return Err("audio prompts are not supported".to_string()),
            ContentBlock::ResourceLink(link) => PromptInput::ResourceLink {
                uri: link.uri,
                name: link.name,
            },
            ContentBlock::Resource(embedded) => match embedded.resource {
                EmbeddedResourceResource::TextResourceContents(text) => PromptInput::Resource {
                    uri: text.uri,
                    text: Some(text.text),
                    mime_type: text.mime_type,
                },
                EmbeddedResourceResource::BlobResourceContents(blob) => PromptInput::Resource {
                    uri: blob.uri,
                    text: None,
                    mime_type: blob.mime_type,
                },
                _ => return Err("unsupported embedded resource".to_string()),
            },
            _ => return Err("unsupported content block".to_string()),
        };
        inputs.push(input);
    }
    if inputs.is_empty() {
        return Err("the prompt is empty".to_string());
    }
    Ok(inputs)
}

/// An MCP server from `session/new` / `session/load`. SSE servers are refused: lode advertises
/// stdio and streamable HTTP only.
pub fn mcp_server_spec(server: McpServer) -> Result<McpServerSpec, String> {
    match server {
        McpServer::Stdio(stdio) => Ok(McpServerSpec::Stdio {
            name: stdio.name,
            command: stdio.command,
            args: stdio.args,
            env: stdio
                .env
                .into_iter()
                .map(|var| (var.name, var.value))
                .collect(),
        }),
        McpServer::Http(http) => Ok(McpServerSpec::Http {
            name: http.name,
            url: http.url,
            headers: http
                .headers
                .into_iter()
                .map(|header| (header.name, header.value))
                .collect(),
        }),
        McpServer::Sse(sse) => Err(format!(
            "MCP server {:?}: the SSE transport is not supported; use HTTP or stdio",
            sse.name
        )),
        _ => Err("unsupported MCP server transport".to_string()),
    }
}

/// The most MCP servers one session may be given (`session/new`, `session/load`,
/// `session/resume`): each may be a process lode starts or a connection it keeps open.
pub const MAX_MCP_SERVERS: usize = 64;

/// The client's MCP servers, at most [`MAX_MCP_SERVERS`] of them.
pub fn mcp_server_specs(servers: Vec<McpServer>) -> Result<Vec<McpServerSpec>, String> {
    if servers.len() > MAX_MCP_SERVERS {
        return Err(format!(
            "{} MCP servers were passed; a session takes at most {MAX_MCP_SERVERS}",
            servers.len()
        ));
    }
    servers.into_iter().map(mcp_server_spec).collect()
}

/// The answers offered for a permission question: allow once, always allow, reject, always
/// reject, plus "allow once with network" when the command needs the network. A must-ask offers
/// no "always" answers (see [`PermissionRequest::offers_always`]): only a person decides it, each
/// time. The "always" names carry the pattern the answer is remembered under.
pub fn permission_options(request: &PermissionRequest) -> Vec<PermissionOption> {
    let pattern = &request.always_pattern;
    let mut options = vec![PermissionOption::new(
        ALLOW_ONCE,
        "Allow once",
        PermissionOptionKind::AllowOnce,
    )];
    if request.offer_network {
        options.push(PermissionOption::new(
            ALLOW_ONCE_WITH_NETWORK,
            "Allow once with network",
            PermissionOptionKind::AllowOnce,
        ));
    }
    let always = request.offers_always();
    if always {
        options.push(PermissionOption::new(
            ALLOW_ALWAYS,
            format!("Always allow {pattern}"),
            PermissionOptionKind::AllowAlways,
        ));
    }
    options.push(PermissionOption::new(
        REJECT_ONCE,
        "Reject",
        PermissionOptionKind::RejectOnce,
    ));
    if always {
        options.push(PermissionOption::new(
            REJECT_ALWAYS,
            format!("Always reject {pattern}"),
            PermissionOptionKind::RejectAlways,
        ));
    }
    options
}

/// The key under which lode's own facts about a permission question travel in its `_meta`.
pub const PERMISSION_META_KEY: &str = "lode";

/// What the policy judged, for clients that answer by rule (`lode ask --yes-to`): under
/// `_meta.lode`, `mustAsk` (only a person may answer), `reason`, `subjects` (resolved
/// workspace-relative paths, parsed simple commands, or the tool's name) and `subjectKind`
/// (`path`, `command`, `tool`).
/// The `_meta` key of a `usage_update`'s token figures: the request's input (all of it, from
/// the provider's prompt cache, processed afresh, written to the cache) and output.
pub const USAGE_META_KEY: &str = "lode";

pub fn permission_meta(request: &PermissionRequest) -> Meta {
    let mut meta = Meta::new();
    meta.insert(
        PERMISSION_META_KEY.to_owned(),
        serde_json::json!({
            "mustAsk": request.must_ask,
            "reason": request.reason,
            "subjects": request.subjects,
            "subjectKind": request.subject_kind,
        }),
    );
    meta
}

/// The tool call a permission question is about, as ACP shows it.
pub fn permission_tool_call(request: &PermissionRequest) -> ToolCallUpdate {
    ToolCallUpdate::new(
        request.tool_call_id.clone(),
        ToolCallUpdateFields::new()
            .title(request.title.clone())
            .kind(tool_kind(request.kind))
            .status(ToolCallStatus::Pending)
            .raw_input(request.raw_input.clone()),
    )
}

/// The client's answer. An option id lode did not offer counts as a rejection.
pub fn permission_answer(outcome: &RequestPermissionOutcome) -> PermissionAnswer {
    match outcome {
        RequestPermissionOutcome::Selected(selected) => match &*selected.option_id.0 {
            ALLOW_ONCE => PermissionAnswer::AllowOnce,
            ALLOW_ONCE_WITH_NETWORK => PermissionAnswer::AllowOnceWithNetwork,
            ALLOW_ALWAYS => PermissionAnswer::AllowAlways,
            REJECT_ALWAYS => PermissionAnswer::RejectAlways,
            _ => PermissionAnswer::RejectOnce,
        },
        RequestPermissionOutcome::Cancelled => PermissionAnswer::Cancelled,
        _ => PermissionAnswer::RejectOnce,
    }
}

pub fn is_known_mode(mode: &str) -> bool {
    MODES.iter().any(|info| info.id == mode)
}

pub fn mode_state(current: &str) -> SessionModeState {
    SessionModeState::new(
        current.to_string(),
        MODES
            .iter()
            .map(|mode| SessionMode::new(mode.id, mode.name).description(mode.description))
            .collect(),
    )
}

pub fn current_mode_update(current: &str) -> SessionUpdate {
    SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(current.to_string()))
}

/// The session's config options: its mode, and its model from the configured providers.
pub fn config_options(session: &SessionSummary, models: &[ModelInfo]) -> Vec<SessionConfigOption> {
    let mode = SessionConfigOption::select(
        MODE_OPTION_ID,
        "Mode",
        session.mode.clone(),
        MODES
            .iter()
            .map(|mode| {
                SessionConfigSelectOption::new(mode.id, mode.name).description(mode.description)
            })
            .collect::<Vec<_>>(),
    )
    .category(SessionConfigOptionCategory::Mode)
    .description("What the agent may do");
    let mut options = vec![mode];
    if !models.is_empty() {
        let model = SessionConfigOption::select(
            MODEL_OPTION_ID,
            "Model",
            session.model.clone(),
            models
                .iter()
                .map(|info| {
                    SessionConfigSelectOption::new(info.provider.clone(), info.provider.clone())
                        .description(format!(
                            "{} ({}k context)",
                            info.model,
                            info.context_window / 1000
                        ))
                })
                .collect::<Vec<_>>(),
        )
        .category(SessionConfigOptionCategory::Model)
        .description("The configured provider the session talks to");
        options.push(model);
    }
    options
}

pub fn config_option_update(options: Vec<SessionConfigOption>) -> SessionUpdate {
    SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate::new(options))
}

pub fn session_info(session: &SessionSummary) -> SessionInfo {
    SessionInfo::new(session.id.clone(), session.cwd.clone())
        .title(session.title.clone())
        .updated_at(session.updated_at.clone())
}

pub fn available_commands(commands: &[SlashCommandInfo]) -> SessionUpdate {
    SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(
        commands
            .iter()
            .map(|command| {
                AvailableCommand::new(command.name.clone(), command.description.clone()).input(
                    command.input_hint.as_ref().map(|hint| {
                        AvailableCommandInput::Unstructured(UnstructuredCommandInput::new(
                            hint.clone(),
                        ))
                    }),
                )
            })
            .collect(),
    ))
}

#[cfg(test)]
mod tests;

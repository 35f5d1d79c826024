//! One turn of a session: the user's message, then model steps and tool calls until the model
//! finishes, a limit is reached, or the turn is cancelled.
//!
//! Per step: assemble the context (compacting first when history nears its budget), stream the
//! model's answer (retrying what a retry can fix), store it, then run each tool call through the
//! permission policy, emitting every step as an event and storing every result.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::code_cache::{CodeCache, MapKey, RetrievalKey};
use crate::compaction::{self, PruneMark};
use crate::context::{
    self, CodeContext, ContextBudget, ContextInput, ContextShares, Environment, PrecomputedCode,
    Profile, WorkspaceCode,
};
use crate::doom_loop::DoomLoopDetector;
use crate::event::{
    AgentEvent, StopReason, ToolCallStart, ToolCallUpdate, ToolContent, ToolStatus,
};
use crate::host::{PermissionAnswer, PermissionRequest, SessionHost};
use crate::mcp::McpServerConfig;
use crate::session::{AgentError, SessionInfo, Shared, UserInput};
use crate::step::{StepResponse, collect_step};
use crate::store::{SessionStore, ToolCallFinish, Visibility};
use lode_llm::{
    ChatRequest, ContentPart, FinishReason, LlmError, Message, Provider, Role, ToolCall, ToolResult,
};
use lode_policy::{Decision, Mode};
use lode_tools::{ToolContext, ToolError, ToolErrorCategory, ToolOutput};

/// Attempts per model step for errors a retry can fix (429, 5xx, timeouts, dropped streams).
const STEP_ATTEMPTS: u32 = 4;
/// First backoff; doubles per attempt, with jitter, capped by [`MAX_BACKOFF`].
const BASE_BACKOFF: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(20);
/// A file attached by link is cut to this many characters.
const MAX_ATTACHED_CHARS: usize = 30_000;
/// A session title is the first user message, cut to this many characters.
const TITLE_CHARS: usize = 60;

/// A host that shows nothing and answers no; used where no front end is involved.
pub(crate) struct SilentHost;

impl SessionHost for SilentHost {
    fn emit(&self, _event: AgentEvent) {}
}

pub(crate) fn tool_context(
    shared: &Shared,
    host: Arc<dyn SessionHost>,
    call_id: String,
    cancel: CancellationToken,
) -> ToolContext {
    ToolContext {
        roots: vec![shared.root.clone()],
        index: shared.index.clone(),
        host: crate::host::tool_host(host),
        call_id,
        cancel,
        sandbox: shared.sandbox.clone(),
        network: false,
        sources: Arc::default(),
    }
}

/// Says once per session, loudly, that commands run unconfined (sandbox off or unavailable).
fn tell_if_unconfined(shared: &Shared, session_id: &str, host: &dyn SessionHost) {
    if shared.sandbox.is_confined() {
        return;
    }
    let first = shared.told_unconfined.lock().insert(session_id.to_owned());
    if first {
        host.emit(AgentEvent::Notice {
            message: shared.sandbox.status().describe(),
        });
    }
}

pub(crate) fn remember_mcp_servers(
    shared: &Shared,
    session_id: &str,
    servers: Vec<McpServerConfig>,
) {
    let mut sessions = shared.mcp_servers.lock();
    sessions.insert(session_id.to_owned(), servers);
}

/// Runs one turn of the session `info` with `provider` (the agent has settled the workspace's
/// trust, picked the provider and readied the index). Errors are failures of lode itself (store,
/// provider after retries); tool failures go back to the model.
pub(crate) async fn run_turn(
    shared: &Shared,
    info: &SessionInfo,
    provider: Arc<dyn Provider>,
    input: Vec<UserInput>,
    host: Arc<dyn SessionHost>,
    cancel: CancellationToken,
) -> Result<StopReason, AgentError> {
    let mut turn = Turn::begin(shared, info, provider, input, host, cancel).await?;
    let max_steps = shared.config.agent.max_tool_iterations.max(1);
    for _ in 0..max_steps {
        if let Some(stop) = turn.step().await? {
            return Ok(stop);
        }
    }
    turn.host.emit(AgentEvent::Notice {
        message: format!(
            "stopped after {max_steps} model requests in one turn ([agent] max_tool_iterations)"
        ),
    });
    Ok(StopReason::MaxTurnRequests)
}

/// One running turn: what it keeps from one model request to the next.
struct Turn<'a> {
    shared: &'a Shared,
    info: &'a SessionInfo,
    provider: Arc<dyn Provider>,
    host: Arc<dyn SessionHost>,
    cancel: CancellationToken,
    /// The session's messages, loaded once when the turn starts (see [`TurnHistory`]).
    history: TurnHistory,
    context: TurnContext,
    /// The tools offered in the session's mode and profile.
    specs: Vec<lode_llm::ToolSpec>,
    budget: ContextBudget,
    profile: Profile,
    /// The calls of the model's latest answer that it wrote as text (`crate::text_calls`), by
    /// id, with what is wrong with their arguments, if anything.
    text_calls: HashMap<String, Option<String>>,
    doom: DoomLoopDetector,
    /// The diagnostics of the files this turn edits, when a source is configured.
    edit_diagnostics: Option<lode_tools::diagnostics::TurnDiagnostics>,
    loop_warnings: u32,
    compacted_for_overflow: bool,
}

/// What one model request came to.
enum Asked {
    Answer(StepResponse),
    /// The turn ends here.
    Stop(StopReason),
    /// The context overflowed and was compacted: ask again.
    Again,
}

impl<'a> Turn<'a> {
    /// Stores the user's message, names an untitled session, and assembles what the turn's
    /// requests share: context, extensions, tools.
    async fn begin(
        shared: &'a Shared,
        info: &'a SessionInfo,
        provider: Arc<dyn Provider>,
        input: Vec<UserInput>,
        host: Arc<dyn SessionHost>,
        cancel: CancellationToken,
    ) -> Result<Turn<'a>, AgentError> {
        let sources = Arc::new(lode_tools::untrusted::TurnSources::new());
        let mut user_message =
            user_message(shared, input, provider.info().supports_images, &sources);
        let first_text = user_message.text();
        // Loaded from the store once; what this turn appends is added in memory (and kept in
        // clear: the store redacts secrets before writing).
        let mark = shared.prune_mark(&info.id);
        let mut history = TurnHistory::load(&shared.store, &info.id, mark)?;
        if info.title.is_none() && !first_text.trim().is_empty() {
            // Redacted before it is cut to length: a secret cut in half no longer matches.
            let title = title_from(&crate::redact::redact_text(&first_text));
            shared.store.set_title(&info.id, &title)?;
            host.emit(AgentEvent::TitleChanged { title });
        }

        tell_if_unconfined(shared, &info.id, host.as_ref());
        let budget = ContextBudget::for_model(provider.info());
        let profile = shared.config.agent.profile.resolve(budget.context_window);
        let mut with_question = history.messages().to_vec();
        with_question.push(user_message.clone());
        let mut context = prepare_turn_context(shared, &with_question, budget).await?;
        attach_extensions(
            shared,
            &info.id,
            &first_text,
            budget,
            profile,
            &mut context,
            host.as_ref(),
        )
        .await;
        context.sources = sources;
        context.record_context_sources();
        let specs = offered_specs(&context.tools, info.mode, profile);
        // The turn's own context goes with the user's message, where it stays: what came
        // before it is never changed by it.
        let already_sent: Vec<&str> = history
            .messages()
            .iter()
            .flat_map(|message| &message.content)
            .filter_map(|part| match part {
                ContentPart::Context { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        let input = context.input(shared, info.mode, profile, &with_question, &specs, budget);
        let turn_context = context::build_turn_context(&input, &already_sent);
        let (_, stable, _) = context::system_prompt(&input);
        check_room(provider.info(), profile, &stable, &user_message)?;
        context.tool_output_chars = tool_output_chars(&stable);
        drop(already_sent);
        context::attach_turn_context(&mut user_message, &turn_context.text);
        history.append(&shared.store, &info.id, user_message)?;
        let edit_diagnostics = shared.diagnostics.clone().map(|source| {
            lode_tools::diagnostics::TurnDiagnostics::new(source, shared.root.clone())
        });
        Ok(Turn {
            shared,
            info,
            provider,
            host,
            cancel,
            history,
            context,
            specs,
            budget,
            profile,
            text_calls: HashMap::new(),
            doom: DoomLoopDetector::default(),
            edit_diagnostics,
            loop_warnings: 0,
            compacted_for_overflow: false,
        })
    }

    /// One model request and the tool calls it asks for; `Some` when the turn ends.
    async fn step(&mut self) -> Result<Option<StopReason>, AgentError> {
        if self.cancel.is_cancelled() {
            return Ok(Some(StopReason::Cancelled));
        }
        let response = match self.ask_model().await? {
            Asked::Answer(response) => response,
            Asked::Stop(stop) => return Ok(Some(stop)),
            Asked::Again => return Ok(None),
        };
        self.report_usage(&response);
        let response = self.read_text_calls(response);
        let calls: Vec<ToolCall> = response.message.tool_calls().cloned().collect();
        if response.message.content.is_empty() {
            // Nothing to store: an empty answer ends the turn as the model asked.
            return Ok(Some(stop_reason_for(response.finish)));
        }
        let seq = self.append(response.message.clone())?;
        if calls.is_empty() {
            return self.end_unless_edits_broke(response.finish).await;
        }
        let looping = self.run_calls(seq, &calls).await?;
        if self.cancel.is_cancelled() {
            return Ok(Some(StopReason::Cancelled));
        }
        if looping {
            self.loop_warnings += 1;
        }
        if self.loop_warnings >= 2 {
            self.host.emit(AgentEvent::Notice {
                message: "stopped: the model kept repeating the same tool call".to_owned(),
            });
            return Ok(Some(StopReason::MaxTurnRequests));
        }
        Ok(match response.finish {
            FinishReason::Refusal => Some(StopReason::Refusal),
            FinishReason::MaxTokens | FinishReason::ToolUse | FinishReason::EndTurn => None,
        })
    }

    /// Assembles the request, streams the model's answer (retrying what a retry can fix), and
    /// compacts once when the model says its context is full.
    async fn ask_model(&mut self) -> Result<Asked, AgentError> {
        let (shared, info) = (self.shared, self.info);
        let mut request = build_request(
            shared,
            &info.id,
            &mut self.history,
            info.mode,
            self.profile,
            &self.specs,
            &self.context,
            self.budget,
            self.provider.as_ref(),
            self.host.as_ref(),
            &self.cancel,
        )
        .await?;
        let outcome = step_with_retries(
            self.provider.as_ref(),
            &request,
            self.host.as_ref(),
            &self.cancel,
        )
        .await;
        // The request may carry the history itself (lent, not copied): take it back.
        self.history.restore(&mut request);
        drop(request);
        match outcome {
            Ok(response) => Ok(Asked::Answer(response)),
            Err(LlmError::Cancelled) => Ok(Asked::Stop(StopReason::Cancelled)),
            Err(LlmError::ContextLength { message }) if !self.compacted_for_overflow => {
                self.compacted_for_overflow = true;
                self.host.emit(AgentEvent::Notice {
                    message: format!(
                        "the model's context is full ({message}); compacting and retrying"
                    ),
                });
                compact(
                    shared,
                    &info.id,
                    self.provider.as_ref(),
                    self.host.as_ref(),
                    &self.cancel,
                )
                .await?;
                restart_after_compaction(shared, &info.id, &mut self.history)?;
                Ok(Asked::Again)
            }
            Err(error) => Err(AgentError::Provider(error.to_string())),
        }
    }

    /// Shows what the request cost (cached and uncached input) and records it in the audit log.
    fn report_usage(&self, response: &StepResponse) {
        let Some(usage) = response.usage else {
            return;
        };
        self.host.emit(AgentEvent::Usage {
            used: usage.input_tokens + usage.output_tokens,
            size: u64::from(self.provider.info().context_window),
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            cached_input_tokens: usage.cache_read_tokens,
            uncached_input_tokens: usage.uncached_input_tokens(),
            cache_write_tokens: usage.cache_write_tokens,
        });
        let info = self.provider.info();
        if let Err(error) =
            self.shared
                .audit
                .record_usage(&self.info.id, &info.provider, &info.model, &usage)
        {
            tracing::error!(%error, "could not write the audit log");
        }
    }

    /// When the model wrote its tool calls as text instead of calling them (many local models
    /// do), reads them as calls (`crate::text_calls`): the message then holds the calls, and
    /// their ids are noted for the audit log and for the error a call with bad arguments gets.
    fn read_text_calls(&mut self, mut response: StepResponse) -> StepResponse {
        self.text_calls.clear();
        if !self.shared.config.agent.text_tool_calls
            || response.message.tool_calls().next().is_some()
        {
            return response;
        }
        let text = response.message.text();
        let Some(found) = crate::text_calls::read(&text, &self.specs) else {
            return response;
        };
        response
            .message
            .content
            .retain(|part| !matches!(part, ContentPart::Text { .. }));
        if !found.prose.trim().is_empty() {
            response.message.content.push(ContentPart::Text {
                text: found.prose.clone(),
            });
        }
        for call in found.calls {
            let id = format!("text_call_{}", uuid::Uuid::now_v7().simple());
            self.text_calls.insert(id.clone(), call.problem);
            response
                .message
                .content
                .push(ContentPart::ToolCall(ToolCall {
                    id,
                    name: call.name,
                    arguments: call.arguments,
                }));
        }
        response.finish = FinishReason::ToolUse;
        response
    }

    /// Stores a message of this turn and keeps it in the turn's history.
    fn append(&mut self, message: Message) -> Result<u64, AgentError> {
        self.history
            .append(&self.shared.store, &self.info.id, message)
    }

    /// The model answered without tool calls: the turn ends, unless files it edited now have
    /// new errors, which go back to the model first.
    async fn end_unless_edits_broke(
        &mut self,
        finish: FinishReason,
    ) -> Result<Option<StopReason>, AgentError> {
        if let Some(tracker) = self.edit_diagnostics.as_mut()
            && !self.cancel.is_cancelled()
            && let Some(note) = tracker.before_turn_ends().await
        {
            self.host.emit(AgentEvent::Notice {
                message: note.clone(),
            });
            self.append(Message {
                role: Role::User,
                content: vec![ContentPart::Text { text: note }],
            })?;
            return Ok(None);
        }
        Ok(Some(stop_reason_for(finish)))
    }

    /// Runs the calls of the stored assistant message `seq` in order and stores their results;
    /// `true` when the model is repeating itself.
    async fn run_calls(&mut self, seq: u64, calls: &[ToolCall]) -> Result<bool, AgentError> {
        let mut results = Vec::with_capacity(calls.len());
        let mut looping = false;
        for model_call in calls {
            // A lean tool runs as the built-in tool it stands for, under the model's call id.
            let call = &match self.profile {
                Profile::Lean => {
                    match lode_tools::lean::resolve(&model_call.name, &model_call.arguments) {
                        Some((name, arguments)) => ToolCall {
                            id: model_call.id.clone(),
                            name,
                            arguments,
                        },
                        None => model_call.clone(),
                    }
                }
                Profile::Full => model_call.clone(),
            };
            let origin = match self.text_calls.get(&call.id) {
                None => CallOrigin::Native,
                Some(None) => CallOrigin::Text,
                Some(Some(problem)) => CallOrigin::InvalidText(problem.clone()),
            };
            let pending_edit = match self.edit_diagnostics.as_mut() {
                Some(tracker)
                    if !self.cancel.is_cancelled()
                        && !matches!(origin, CallOrigin::InvalidText(_)) =>
                {
                    tracker.before_call(call).await
                }
                _ => None,
            };
            let mut result = if self.cancel.is_cancelled() {
                cancelled_result(call)
            } else {
                let scope = CallScope {
                    shared: self.shared,
                    turn: &self.context,
                    session_id: &self.info.id,
                    message_seq: seq,
                    mode: self.info.mode,
                    host: &self.host,
                    cancel: &self.cancel,
                };
                run_tool_call(&scope, call, &origin).await
            };
            if let (Some(tracker), Some(pending)) = (self.edit_diagnostics.as_mut(), pending_edit) {
                tracker.after_call(pending, &mut result).await;
            }
            if !self.cancel.is_cancelled()
                && self
                    .doom
                    .record(&call.name, &call.arguments, &result.content)
            {
                looping = true;
            }
            results.push(ContentPart::ToolResult(result));
        }
        if looping {
            results.push(ContentPart::Text {
                text: "lode: the same tool call has now returned the same result three times. \
                       Stop repeating it: change approach, or finish and explain what blocks you."
                    .to_owned(),
            });
        }
        self.append(Message {
            role: Role::User,
            content: results,
        })?;
        Ok(looping)
    }
}

/// How a tool call reached lode.
enum CallOrigin {
    /// The provider's own tool calling.
    Native,
    /// Written as text by the model and read as a call (`crate::text_calls`).
    Text,
    /// Written as text, naming an offered tool, with arguments its schema refuses: what is wrong.
    InvalidText(String),
}

fn stop_reason_for(finish: FinishReason) -> StopReason {
    match finish {
        FinishReason::EndTurn | FinishReason::ToolUse => StopReason::EndTurn,
        FinishReason::MaxTokens => StopReason::MaxTokens,
        FinishReason::Refusal => StopReason::Refusal,
    }
}

fn title_from(text: &str) -> String {
    let line = text
        .lines()
        .find(|line| !line.trim().is_empty())
        .unwrap_or("")
        .trim();
    if line.chars().count() <= TITLE_CHARS {
        return line.to_owned();
    }
    let cut: String = line.chars().take(TITLE_CHARS - 1).collect();
    format!("{}…", cut.trim_end())
}

/// The user's input as one message. Links to files inside the workspace are read and attached;
/// anything else is named, never fetched. What is attached (a file's or an embedded resource's
/// content) is wrapped as untrusted content and recorded in `sources`.
fn user_message(
    shared: &Shared,
    input: Vec<UserInput>,
    supports_images: bool,
    sources: &lode_tools::untrusted::TurnSources,
) -> Message {
    let mut content = Vec::new();
    for piece in input {
        match piece {
            UserInput::Text(text) => content.push(ContentPart::Text { text }),
            UserInput::Image { mime_type, data } if supports_images => {
                content.push(ContentPart::Image { mime_type, data })
            }
            UserInput::Image { mime_type, .. } => content.push(ContentPart::Text {
                text: format!(
                    "[an image ({mime_type}) was attached, but this model does not take images]"
                ),
            }),
            UserInput::ResourceLink { uri, name } => content.push(ContentPart::Text {
                text: attach_link(shared, &uri, &name, sources),
            }),
            UserInput::Resource {
                uri,
                text: Some(text),
                ..
            } => {
                sources.record(format!("file:{uri}"));
                content.push(ContentPart::Text {
                    text: lode_tools::untrusted::wrap(
                        "attachment",
                        &[("uri", uri.as_str())],
                        &cap_chars(&text),
                    ),
                })
            }
            UserInput::Resource {
                uri,
                text: None,
                mime_type,
            } => content.push(ContentPart::Text {
                text: format!(
                    "[attached {uri} ({}) — binary content not shown]",
                    mime_type.as_deref().unwrap_or("unknown type")
                ),
            }),
        }
    }
    Message {
        role: Role::User,
        content,
    }
}

fn cap_chars(text: &str) -> String {
    if text.chars().count() <= MAX_ATTACHED_CHARS {
        return text.to_owned();
    }
    let head: String = text.chars().take(MAX_ATTACHED_CHARS).collect();
    format!("{head}\n[… cut at {MAX_ATTACHED_CHARS} characters]")
}

fn attach_link(
    shared: &Shared,
    uri: &str,
    name: &str,
    sources: &lode_tools::untrusted::TurnSources,
) -> String {
    if !uri.starts_with("file://") {
        return format!("[linked resource {name}: {uri} (not fetched)]");
    }
    let path = match lode_tools::paths::file_uri_to_path(uri) {
        Ok(path) => path,
        Err(error) => return format!("[linked file {name} not attached: {error}]"),
    };
    let roots = [shared.root.clone()];
    match lode_tools::paths::resolve_path(&roots, &path.to_string_lossy()) {
        Ok(resolved) => match std::fs::read(&resolved.absolute) {
            Ok(bytes) => {
                let path = resolved.display(&roots);
                sources.record(format!("file:{path}"));
                lode_tools::untrusted::wrap(
                    "file",
                    &[("path", path.as_str())],
                    &cap_chars(&String::from_utf8_lossy(&bytes)),
                )
            }
            Err(error) => format!("[linked file {name} could not be read: {error}]"),
        },
        Err(error) => format!("[linked file {name} not attached: {}]", error.message),
    }
}

/// What one turn computes once: environment, instruction files, repo map and retrieved code,
/// the session's tools and the turn's skills and memories.
struct TurnContext {
    environment: Environment,
    instructions: Vec<context::InstructionFile>,
    code: PrecomputedCode,
    /// The session's tools: built-in, skills, memory, MCP.
    tools: lode_tools::ToolRegistry,
    /// The bodies of the skills selected for the turn.
    skills: Vec<String>,
    /// Every skill by name and one line, for the system prompt.
    skill_catalogue: Option<String>,
    memory: Vec<String>,
    granted_tools: Vec<String>,
    /// Whether earlier turns' tool results are part of the conversation.
    earlier_tool_output: bool,
    /// What untrusted content entered the model's context in this turn (for `memory_save`).
    sources: Arc<lode_tools::untrusted::TurnSources>,
    /// The most of one tool result the model is shown, in characters.
    tool_output_chars: usize,
}

impl TurnContext {
    /// Records the untrusted pieces of the system prompt and history in `sources`.
    fn record_context_sources(&self) {
        let sources = &self.sources;
        for file in &self.instructions {
            sources.record(format!("file:{}", file.path));
        }
        let pieces = [
            ("context:instructions", !self.instructions.is_empty()),
            ("context:repo_map", !self.code.repo_map.trim().is_empty()),
            ("context:retrieved_code", !self.code.chunks.is_empty()),
            ("context:memories", !self.memory.is_empty()),
            ("context:skills", !self.skills.is_empty()),
            ("history:tool_output", self.earlier_tool_output),
        ];
        for (piece, present) in pieces {
            if present {
                sources.record(piece);
            }
        }
    }

    /// What context assembly needs, for `history`.
    fn input<'a>(
        &'a self,
        shared: &'a Shared,
        mode: Mode,
        profile: Profile,
        history: &'a [Message],
        specs: &'a [lode_llm::ToolSpec],
        budget: ContextBudget,
    ) -> ContextInput<'a> {
        ContextInput {
            mode,
            profile,
            root: &shared.root,
            history,
            tools: specs,
            environment: &self.environment,
            instructions: &self.instructions,
            memory: &self.memory,
            skills: &self.skills,
            skill_catalogue: self.skill_catalogue.as_deref(),
            code: &self.code as &dyn CodeContext,
            budget,
            shares: &shared.config.agent.context,
        }
    }
}

/// The tools offered in `mode`: every tool of the session, or in the lean profile the lean
/// set (`lode_tools::lean`) with the session's skills and MCP tools, without the memory tools.
fn offered_specs(
    tools: &lode_tools::ToolRegistry,
    mode: Mode,
    profile: Profile,
) -> Vec<lode_llm::ToolSpec> {
    match profile {
        Profile::Full => tools.specs(mode),
        Profile::Lean => {
            let mut specs = lode_tools::lean::lean_specs(tools, mode);
            specs.extend(tools.specs(mode).into_iter().filter(|spec| {
                !lode_tools::lean::is_built_in(&spec.name) && !spec.name.starts_with("memory_")
            }));
            specs
        }
    }
}

/// Refuses a turn whose smallest request (tools, system prompt and the user's message, without
/// the turn's context or any history) does not fit the model's window less its output: nothing
/// would make it fit, and a server would cut it from the front.
fn check_room(
    info: &lode_llm::ModelInfo,
    profile: Profile,
    stable: &context::TokenBreakdown,
    user_message: &Message,
) -> Result<(), AgentError> {
    let message = context::message_tokens(user_message);
    let needed = stable.tools + stable.system + message;
    let budget = ContextBudget::for_model(info);
    if needed <= budget.input_tokens() {
        return Ok(());
    }
    let profile_hint = match profile {
        Profile::Full => {
            " `[agent] profile = \"lean\"` sends the smallest requests lode can make;".to_owned()
        }
        Profile::Lean => String::new(),
    };
    Err(AgentError::ContextTooSmall(format!(
        "the model's context window ({} tokens, {} of them kept for its answer) cannot hold \
         lode's smallest request here: {needed} tokens (tools {}, instructions {}, your message \
         {message}).{profile_hint} give provider \"{}\" a larger `context_window` if the model \
         has one (Ollama is sent it as num_ctx; a local server needs it when it starts, e.g. \
         `llama-server -c 8192`), lower its `max_tokens`, or use a model with a larger window",
        info.context_window, info.max_output_tokens, stable.tools, stable.system, info.provider
    )))
}

/// The most of one tool result the model is shown: a third of what the history may use
/// (about 3.5 characters a token), within the tools' own cap.
fn tool_output_chars(stable: &context::TokenBreakdown) -> usize {
    let history_budget = stable.budget.saturating_sub(stable.system);
    (history_budget * 35 / 30).clamp(1_000, lode_tools::DEFAULT_OUTPUT_CAP)
}

/// Adds the session's extension tools and this turn's skills and memories.
async fn attach_extensions(
    shared: &Shared,
    session_id: &str,
    user_text: &str,
    budget: ContextBudget,
    profile: Profile,
    turn: &mut TurnContext,
    host: &dyn SessionHost,
) {
    let client_servers = shared
        .mcp_servers
        .lock()
        .get(session_id)
        .cloned()
        .unwrap_or_default();
    let mut notices = Vec::new();
    turn.tools = shared
        .extensions
        .session_tools(&shared.tools, session_id, client_servers, &mut notices)
        .await;
    let shares = &shared.config.agent.context;
    let memory_tokens = ContextShares::cap(
        shares.memory_share,
        shares.memory_max_tokens,
        budget.input_tokens(),
    );
    let extras = shared
        .extensions
        .turn_extras(user_text, memory_tokens, profile)
        .await;
    turn.skills = extras.skills;
    turn.skill_catalogue = extras.skill_catalogue;
    turn.memory = extras.memory;
    turn.granted_tools = extras.granted_tools;
    for message in notices.into_iter().chain(extras.notices) {
        host.emit(AgentEvent::Notice { message });
    }
}

/// What a turn's repo map and retrieved code are made from: the conversation's mentions and the
/// user's latest message as they were when the turn started, and their token budgets.
#[derive(Clone)]
struct CodeInputs {
    focus_files: Vec<String>,
    identifiers: Vec<String>,
    query: Option<String>,
    map_tokens: usize,
    retrieval_tokens: usize,
}

impl CodeInputs {
    fn from_history(
        root: &std::path::Path,
        history: &[Message],
        shares: &ContextShares,
        budget: ContextBudget,
    ) -> CodeInputs {
        let mentions = context::extract_mentions(root, history);
        let share =
            |fraction: f64, cap: usize| ContextShares::cap(fraction, cap, budget.input_tokens());
        CodeInputs {
            focus_files: mentions.files,
            identifiers: mentions.identifiers,
            query: context::latest_user_text(history),
            map_tokens: share(shares.repo_map_share, shares.repo_map_max_tokens),
            retrieval_tokens: share(shares.retrieval_share, shares.retrieval_max_tokens),
        }
    }

    /// The repo map and retrieved code of the index as it is now: the ones already made from
    /// the same inputs at the index's current generation, else made now. Blocking.
    fn make(&self, code: &WorkspaceCode, cache: &CodeCache) -> PrecomputedCode {
        let generation = cache.generation();
        let map_key = MapKey {
            focus_files: self.focus_files.clone(),
            identifiers: self.identifiers.clone(),
            max_tokens: self.map_tokens,
        };
        let repo_map = cache
            .repo_map(generation, &map_key, || {
                code.repo_map(&self.focus_files, &self.identifiers, self.map_tokens)
            })
            .unwrap_or_default();
        let chunks = self
            .query
            .as_ref()
            .map(|query| {
                let key = RetrievalKey {
                    query: query.clone(),
                    max_tokens: self.retrieval_tokens,
                };
                cache
                    .retrieve(generation, &key, || {
                        code.retrieve(query, &HashSet::new(), self.retrieval_tokens)
                    })
                    .unwrap_or_default()
            })
            .unwrap_or_default();
        PrecomputedCode {
            repo_map,
            chunks,
            missing: None,
        }
    }
}

/// Environment, instruction files, repo map and retrieved code for the turn whose user message
/// ends `history` (made off the async workers).
async fn prepare_turn_context(
    shared: &Shared,
    history: &[Message],
    budget: ContextBudget,
) -> Result<TurnContext, AgentError> {
    let history = history.to_vec();
    let root = shared.root.clone();
    let index = shared.index.clone();
    let cache = shared.code_cache.clone();
    let shares = shared.config.agent.context.clone();
    let max_instruction_bytes = shared.config.agent.instruction_file_max_bytes;
    let sandbox = shared.sandbox.clone();
    let prepared = tokio::task::spawn_blocking(move || {
        let earlier_tool_output = history.iter().any(|message| {
            message
                .content
                .iter()
                .any(|part| matches!(part, ContentPart::ToolResult(_)))
        });
        let environment = Environment::detect(&root, &sandbox);
        let code_inputs = CodeInputs::from_history(&root, &history, &shares, budget);
        let instructions =
            context::find_instruction_files(&root, &code_inputs.focus_files, max_instruction_bytes);
        // Reading the index while it is being built would wait for the whole build: the turn
        // goes on without the map and retrieval, and the model is told why (they join in the
        // next turn once the index is ready; its search tools say when they are).
        let code = match index.build_progress() {
            Some(progress) => PrecomputedCode {
                missing: Some(index_building_note(progress)),
                ..PrecomputedCode::default()
            },
            None => code_inputs.make(&WorkspaceCode::new(index), &cache),
        };
        TurnContext {
            environment,
            instructions,
            code,
            tools: lode_tools::ToolRegistry::default(),
            skills: Vec::new(),
            skill_catalogue: None,
            memory: Vec::new(),
            granted_tools: Vec::new(),
            earlier_tool_output,
            sources: Arc::default(),
            tool_output_chars: lode_tools::DEFAULT_OUTPUT_CAP,
        }
    })
    .await
    .map_err(|error| AgentError::Other(format!("preparing the context failed: {error}")))?;
    Ok(prepared)
}

/// What the model is told when the turn starts while the index is being built.
fn index_building_note(progress: lode_index::BuildProgress) -> String {
    format!(
        "The code index of this workspace is still being built ({progress} indexed), so this \
         turn has no repository map and no retrieved code. search_code, find_symbol, \
         find_references and repo_map answer once it is ready; grep, list_files, read_file \
         and commands work now."
    )
}

/// The model's view of the session during a turn. Taken from the store's view in memory when
/// the turn starts (the store loads a session from the file once, then keeps it current; see
/// `crate::store`); each message the turn appends is stored and added here, so a model request
/// costs no store read. Only a compaction, which changes what the model sees of older messages,
/// takes it again. The turn's own messages are kept as written (in clear): the store redacts
/// secrets, and later turns see them redacted. The session's prune mark
/// (`compaction::PruneMark`) is applied to it: old tool output and old turn contexts are stubs.
pub(crate) struct TurnHistory {
    /// This turn's messages by seq, in clear.
    in_clear: BTreeMap<u64, Message>,
    /// `History::model_messages_with(in_clear)` with `mark` applied, kept current.
    messages: Vec<Message>,
    /// The tokens of each of `messages`.
    counts: Vec<usize>,
    /// Whether `messages` is lent to the request being sent (see [`TurnHistory::lend`]).
    lent: bool,
    mark: PruneMark,
}

impl TurnHistory {
    /// Loads the session's history, with `mark` applied.
    pub(crate) fn load(
        store: &SessionStore,
        session_id: &str,
        mark: PruneMark,
    ) -> Result<TurnHistory, AgentError> {
        let mut history = TurnHistory {
            in_clear: BTreeMap::new(),
            messages: Vec::new(),
            counts: Vec::new(),
            lent: false,
            mark,
        };
        history.reload(store, session_id)?;
        Ok(history)
    }

    /// Takes the model's view from the store again (after a compaction) and applies the mark
    /// (a mark past its end, from a view that changed under it, starts again).
    pub(crate) fn reload(
        &mut self,
        store: &SessionStore,
        session_id: &str,
    ) -> Result<(), AgentError> {
        self.messages = store.model_messages_with(session_id, &self.in_clear)?;
        if self.mark.results_before.max(self.mark.contexts_before) > self.messages.len() {
            self.mark = PruneMark::default();
        }
        compaction::apply_prune_mark(&mut self.messages, self.mark);
        self.counts = self.messages.iter().map(context::message_tokens).collect();
        self.lent = false;
        Ok(())
    }

    pub(crate) fn mark(&self) -> PruneMark {
        self.mark
    }

    /// Moves the prune mark: the messages it reaches are stubbed and counted again.
    pub(crate) fn set_mark(&mut self, mark: PruneMark) {
        debug_assert!(!self.lent, "pruned a history lent to a request");
        self.mark = mark;
        for index in compaction::apply_prune_mark(&mut self.messages, mark) {
            self.counts[index] = context::message_tokens(&self.messages[index]);
        }
    }

    /// Stores `message` (seen by user and model) and appends it. A new message has the highest
    /// seq, and a compaction summary stands before it, so it is the last the model sees.
    pub(crate) fn append(
        &mut self,
        store: &SessionStore,
        session_id: &str,
        message: Message,
    ) -> Result<u64, AgentError> {
        let seq = store.append_message(session_id, &message, Visibility::Both)?;
        debug_assert!(!self.lent, "appended to a history lent to a request");
        self.counts.push(context::message_tokens(&message));
        self.messages.push(message.clone());
        self.in_clear.insert(seq, message);
        Ok(seq)
    }

    pub(crate) fn messages(&self) -> &[Message] {
        debug_assert!(!self.lent, "read a history lent to a request");
        &self.messages
    }

    pub(crate) fn counts(&self) -> &[usize] {
        &self.counts
    }

    /// The messages, moved out for a request that sends them all: a request needs its own
    /// `Vec`, and copying the whole conversation for each one would cost in proportion to the
    /// session's length. [`TurnHistory::restore`] takes them back once the request is done.
    fn lend(&mut self) -> Vec<Message> {
        self.lent = true;
        std::mem::take(&mut self.messages)
    }

    /// Takes back what [`TurnHistory::lend`] moved into `request`.
    fn restore(&mut self, request: &mut ChatRequest) {
        if self.lent {
            self.messages = std::mem::take(&mut request.messages);
            self.lent = false;
        }
    }

    /// In builds with debug assertions (the tests), checks that the kept history is what a fresh
    /// load from the file gives, pruned the same way: what the model is sent must depend on
    /// neither the turn's copy nor the store's view in memory.
    fn check_against_store(&self, store: &SessionStore, session_id: &str) {
        if cfg!(debug_assertions)
            && let Ok(stored) = store.load_history(session_id)
        {
            let mut expected = stored.model_messages_with(&self.in_clear);
            compaction::apply_prune_mark(&mut expected, self.mark);
            debug_assert!(
                expected == self.messages,
                "the turn's history differs from the store's"
            );
        }
    }
}

/// How far a block prune brings the history down, as a fraction of the compaction threshold.
/// 0: every old tool result and turn context it may prune is pruned at once (the
/// `keep_recent_tool_outputs` newest results and the newest turn's context stay), which puts the
/// next block furthest away and keeps requests smallest. On `bench/agent/tokens.sh` (30 turns,
/// 128k window) 0.5 gave requests of 63.5k tokens on average, 95.5% of each one's bytes a prefix
/// of the next; 0 gives 52.6k and 96.5%.
const PRUNE_LOW_WATER: f64 = 0.0;

/// The request for the next model step: the stable system prompt, the tools, and the history,
/// pruned and compacted at block boundaries when it nears its budget, and squeezed (for this
/// request only) when the newest turn alone does not fit.
#[allow(clippy::too_many_arguments)]
async fn build_request(
    shared: &Shared,
    session_id: &str,
    history: &mut TurnHistory,
    mode: Mode,
    profile: Profile,
    specs: &[lode_llm::ToolSpec],
    turn: &TurnContext,
    budget: ContextBudget,
    provider: &dyn Provider,
    host: &dyn SessionHost,
    cancel: &CancellationToken,
) -> Result<ChatRequest, AgentError> {
    let assemble = |history: &TurnHistory| {
        context::assemble_counted(
            &turn.input(shared, mode, profile, history.messages(), specs, budget),
            history.counts(),
        )
    };
    let threshold = shared.config.agent.compaction_threshold;
    history.check_against_store(&shared.store, session_id);
    let (mut assembled, mut keep_from) = assemble(history);
    if assembled.history_pressure() >= threshold
        && move_prune_mark(shared, session_id, history, &assembled)
    {
        (assembled, keep_from) = assemble(history);
    }
    if assembled.history_overflow() {
        compact(shared, session_id, provider, host, cancel).await?;
        restart_after_compaction(shared, session_id, history)?;
        (assembled, keep_from) = assemble(history);
        if assembled.history_pressure() >= threshold
            && move_prune_mark(shared, session_id, history, &assembled)
        {
            (assembled, keep_from) = assemble(history);
        }
    }
    let limit = budget.input_tokens();
    let messages = if assembled.breakdown.total() > limit {
        let mut own = history.messages()[keep_from..].to_vec();
        let fixed = assembled.breakdown.system + assembled.breakdown.tools;
        squeeze(&mut own, limit.saturating_sub(fixed)).map_err(|needed| {
            AgentError::ContextTooSmall(format!(
                "the model's context window ({} tokens, {} kept for its answer) cannot hold \
                 this request even with older output left out: it needs {} tokens. Give the \
                 provider a larger `context_window` if the model has one, or start a new \
                 session",
                budget.context_window,
                budget.reserved_output,
                needed + fixed
            ))
        })?;
        own
    } else if keep_from == 0 {
        history.lend()
    } else {
        history.messages()[keep_from..].to_vec()
    };
    let mut request =
        assembled.into_request(specs.to_vec(), Some(provider.info().max_output_tokens));
    request.messages = messages;
    request.cache_key = Some(session_id.to_owned());
    Ok(request)
}

/// Moves the session's prune mark when the history has reached its threshold (a block of old
/// output becomes stubs at once); `true` when it moved.
fn move_prune_mark(
    shared: &Shared,
    session_id: &str,
    history: &mut TurnHistory,
    assembled: &context::AssembledContext,
) -> bool {
    let agent = &shared.config.agent;
    let target =
        (assembled.history_budget as f64 * agent.compaction_threshold * PRUNE_LOW_WATER) as usize;
    let mark = compaction::choose_prune_mark(
        history.messages(),
        history.counts(),
        history.mark(),
        target,
        agent.keep_recent_tool_outputs,
    );
    if mark == history.mark() {
        return false;
    }
    history.set_mark(mark);
    shared.set_prune_mark(session_id, mark);
    true
}

/// After a compaction the history starts again from its summary, unpruned.
fn restart_after_compaction(
    shared: &Shared,
    session_id: &str,
    history: &mut TurnHistory,
) -> Result<(), AgentError> {
    history.mark = PruneMark::default();
    shared.set_prune_mark(session_id, PruneMark::default());
    history.reload(&shared.store, session_id)
}

/// Fits `messages` (this request's copy) into `room` tokens when the newest turn alone is too
/// large: every older tool result and turn context becomes a stub, then the newest tool results
/// are cut. `Err(tokens needed)` when even that does not fit.
fn squeeze(messages: &mut [Message], room: usize) -> Result<(), usize> {
    let total =
        |messages: &[Message]| -> usize { messages.iter().map(context::message_tokens).sum() };
    if total(messages) <= room {
        return Ok(());
    }
    let last = messages.len().saturating_sub(1);
    compaction::apply_prune_mark(
        messages,
        PruneMark {
            results_before: last,
            contexts_before: last,
        },
    );
    let mut over = total(messages).saturating_sub(room);
    if over == 0 {
        return Ok(());
    }
    if let Some(message) = messages.last_mut() {
        for part in message.content.iter_mut().rev() {
            if over == 0 {
                break;
            }
            if let ContentPart::ToolResult(result) = part {
                let tokens = context::count_tokens(&result.content);
                let keep = tokens.saturating_sub(over + 32);
                let cut = context::truncate_to_tokens(&result.content, keep);
                over = over.saturating_sub(tokens.saturating_sub(context::count_tokens(&cut)));
                result.content = cut;
            }
        }
    }
    match total(messages) {
        used if used <= room => Ok(()),
        used => Err(used),
    }
}

async fn compact(
    shared: &Shared,
    session_id: &str,
    provider: &dyn Provider,
    host: &dyn SessionHost,
    cancel: &CancellationToken,
) -> Result<(), AgentError> {
    let outcome =
        compaction::compact_session(&shared.store, session_id, provider, 1, cancel.child_token())
            .await?;
    let message = match outcome {
        Some(outcome) => format!(
            "compacted {} older messages ({} → {} tokens){}",
            outcome.replaced_messages,
            outcome.tokens_before,
            outcome.tokens_after,
            match &outcome.summary.source {
                compaction::SummarySource::Model => String::new(),
                compaction::SummarySource::Metadata { error } =>
                    format!("; the summary call failed ({error}), kept a metadata summary"),
            }
        ),
        None => "nothing old enough to compact".to_owned(),
    };
    host.emit(AgentEvent::Notice { message });
    Ok(())
}

fn backoff(attempt: u32, hint: Option<Duration>) -> Duration {
    if let Some(wait) = hint {
        return wait.min(MAX_BACKOFF * 3);
    }
    let exponential = BASE_BACKOFF
        .saturating_mul(1 << attempt.min(6))
        .min(MAX_BACKOFF);
    // Full jitter between half and all of the exponential delay.
    let jitter = 0.5 + fastrand::f64() * 0.5;
    exponential.mul_f64(jitter)
}

/// Streams one model response, retrying errors a retry can fix.
async fn step_with_retries(
    provider: &dyn Provider,
    request: &ChatRequest,
    host: &dyn SessionHost,
    cancel: &CancellationToken,
) -> Result<StepResponse, LlmError> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let outcome = match provider.stream(request, cancel.clone()).await {
            Ok(stream) => collect_step(stream, host, cancel)
                .await
                .map_err(|failure| (failure.error, failure.emitted_output)),
            Err(error) => Err((error, false)),
        };
        let (error, emitted) = match outcome {
            Ok(response) => return Ok(response),
            Err(failure) => failure,
        };
        if cancel.is_cancelled() {
            return Err(LlmError::Cancelled);
        }
        if !error.is_retryable() || attempt >= STEP_ATTEMPTS {
            return Err(error);
        }
        let hint = match &error {
            LlmError::RateLimited { retry_after } => *retry_after,
            _ => None,
        };
        let wait = backoff(attempt, hint);
        host.emit(AgentEvent::Notice {
            message: format!(
                "{error}; retrying in {:.1}s (attempt {} of {STEP_ATTEMPTS}){}",
                wait.as_secs_f64(),
                attempt + 1,
                if emitted {
                    " — the partial answer above is discarded"
                } else {
                    ""
                }
            ),
        });
        tokio::select! {
            _ = cancel.cancelled() => return Err(LlmError::Cancelled),
            _ = tokio::time::sleep(wait) => {}
        }
    }
}

fn cancelled_result(call: &ToolCall) -> ToolResult {
    ToolResult {
        call_id: call.id.clone(),
        content: ToolError::new(
            ToolErrorCategory::Cancelled,
            "the user cancelled the turn",
            false,
        )
        .to_model_text(),
        is_error: true,
    }
}

/// What the tool calls of one model step share.
struct CallScope<'a> {
    shared: &'a Shared,
    turn: &'a TurnContext,
    session_id: &'a str,
    /// The stored assistant message that asked for the calls.
    message_seq: u64,
    mode: Mode,
    host: &'a Arc<dyn SessionHost>,
    cancel: &'a CancellationToken,
}

/// How the permission policy, and perhaps the user, judged a call.
struct Verdict {
    /// `Err(reason)` when the call may not run.
    allowed: Result<(), String>,
    /// What the audit log records: `allow`, `allow:skill`, `deny` or `ask:<answer>`.
    audit: String,
    /// The user granted this call network access ("allow once with network").
    network: bool,
}

/// Runs one tool call: presentation, policy, permission, the tool, events, storage, audit.
async fn run_tool_call(scope: &CallScope<'_>, call: &ToolCall, origin: &CallOrigin) -> ToolResult {
    let via = match origin {
        CallOrigin::Native => None,
        CallOrigin::Text | CallOrigin::InvalidText(_) => Some("text"),
    };
    let Some(tool) = scope.turn.tools.get(&call.name) else {
        return unknown_tool(scope, call, via);
    };
    if let CallOrigin::InvalidText(problem) = origin {
        return invalid_text_call(scope, call, tool.kind(), problem);
    }
    let mut context = tool_context(
        scope.shared,
        scope.host.clone(),
        call.id.clone(),
        scope.cancel.child_token(),
    );
    context.sources = scope.turn.sources.clone();
    let presentation = tool.present(&call.arguments, &context);
    announce_call(
        scope,
        ToolCallStart {
            id: call.id.clone(),
            tool: call.name.clone(),
            title: presentation.title.clone(),
            kind: tool.kind(),
            locations: presentation.locations.clone(),
            raw_input: call.arguments.clone(),
        },
    );
    let verdict = judge_call(scope, call, tool.as_ref(), &presentation.title).await;
    context.network = verdict.network;
    let ran = verdict.allowed.is_ok();
    let outcome = match verdict.allowed {
        Err(reason) => Err(refusal(scope.cancel, reason)),
        Ok(()) => execute(scope, call, tool.as_ref(), &context).await,
    };
    // What the tool itself produced (output or error) reaches the model as untrusted content;
    // lode's own refusals do not.
    let wrap = ran && !tool.marks_own_output();
    let (result, update, finish) = settle(call, outcome, wrap, scope.turn.tool_output_chars);
    finish_call(scope, call, &verdict.audit, via, update, &finish).await;
    result
}

/// A call of a tool the session does not have: shown, stored and audited like any failed call,
/// so the user sees what the model tried.
fn unknown_tool(scope: &CallScope<'_>, call: &ToolCall, via: Option<&str>) -> ToolResult {
    let error = ToolError::new(
        ToolErrorCategory::InvalidArguments,
        format!(
            "there is no tool named {:?}; available tools: {}",
            call.name,
            scope
                .turn
                .tools
                .specs(scope.mode)
                .iter()
                .map(|spec| spec.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        true,
    );
    let start = ToolCallStart {
        id: call.id.clone(),
        tool: call.name.clone(),
        title: format!("Unknown tool `{}`", call.name),
        kind: crate::event::ToolKind::Other,
        locations: Vec::new(),
        raw_input: call.arguments.clone(),
    };
    refuse_unrun(scope, call, start, error, "unknown_tool", via)
}

/// A call the model wrote as text, naming an offered tool, whose arguments its schema refuses:
/// it is not run; the model is told what is wrong, as for any call with bad arguments.
fn invalid_text_call(
    scope: &CallScope<'_>,
    call: &ToolCall,
    kind: crate::event::ToolKind,
    problem: &str,
) -> ToolResult {
    let error = ToolError::new(
        ToolErrorCategory::InvalidArguments,
        format!(
            "the arguments of this `{}` call do not match its schema: {problem}",
            call.name
        ),
        true,
    );
    let start = ToolCallStart {
        id: call.id.clone(),
        tool: call.name.clone(),
        title: format!("`{}` with invalid arguments", call.name),
        kind,
        locations: Vec::new(),
        raw_input: call.arguments.clone(),
    };
    refuse_unrun(scope, call, start, error, "invalid_arguments", Some("text"))
}

/// A call that is refused before anything runs (no such tool, arguments that cannot be right):
/// shown, stored and audited as a failed call, and the error given to the model.
fn refuse_unrun(
    scope: &CallScope<'_>,
    call: &ToolCall,
    start: ToolCallStart,
    error: ToolError,
    decision: &str,
    via: Option<&str>,
) -> ToolResult {
    scope.host.emit(AgentEvent::ToolCallStarted(start.clone()));
    let text = error.to_model_text();
    let update = ToolCallUpdate {
        id: call.id.clone(),
        status: ToolStatus::Failed,
        title: None,
        content: vec![ToolContent::Text {
            text: error.message.clone(),
        }],
        locations: Vec::new(),
        raw_output: serde_json::to_value(&error).ok(),
    };
    scope.host.emit(AgentEvent::ToolCallUpdated(update.clone()));
    let finish = ToolCallFinish {
        status: ToolStatus::Failed,
        output: text.clone(),
        display: update.content.clone(),
        locations: Vec::new(),
    };
    let store = &scope.shared.store;
    if let Err(error) = store
        .record_tool_call_start(scope.session_id, scope.message_seq, &start)
        .and_then(|()| store.record_tool_call_finish(scope.session_id, &call.id, &finish))
    {
        tracing::warn!(%error, "could not record tool call {}", call.id);
    }
    audit(scope, call, decision, via, &update);
    ToolResult {
        call_id: call.id.clone(),
        content: text,
        is_error: true,
    }
}

/// Shows the call starting and stores it.
fn announce_call(scope: &CallScope<'_>, start: ToolCallStart) {
    scope.host.emit(AgentEvent::ToolCallStarted(start.clone()));
    if let Err(error) =
        scope
            .shared
            .store
            .record_tool_call_start(scope.session_id, scope.message_seq, &start)
    {
        tracing::warn!(%error, "could not record tool call {}", start.id);
    }
}

/// The policy's decision on a call; a question goes to the user through the host.
async fn judge_call(
    scope: &CallScope<'_>,
    call: &ToolCall,
    tool: &dyn lode_tools::Tool,
    title: &str,
) -> Verdict {
    let shared = scope.shared;
    let target = tool.permission_target(&call.arguments);
    let decided = |allowed: Result<(), String>, audit: &str| Verdict {
        allowed,
        audit: audit.to_owned(),
        network: false,
    };
    match shared.policy.decide(&call.name, &target, scope.mode) {
        Decision::Allow => decided(Ok(()), "allow"),
        // A trusted skill selected for this turn pre-approved the tool (`allowed-tools`): that
        // only turns a plain ask into allow, never a must-ask. Never for a command when commands
        // run unconfined: then every command is the user's to approve.
        ref decision @ Decision::Ask { .. }
            if decision.is_plain_ask()
                && scope
                    .turn
                    .granted_tools
                    .iter()
                    .any(|name| name == &call.name)
                && (shared.sandbox.is_confined()
                    || !matches!(target, lode_tools::PermissionTarget::Command { .. })) =>
        {
            decided(Ok(()), "allow:skill")
        }
        Decision::Deny { reason } => decided(Err(reason), "deny"),
        Decision::Ask {
            always_pattern,
            offer_network,
            must_ask,
            reason,
            subjects,
            subject_kind,
        } => {
            let request = PermissionRequest {
                tool_call_id: call.id.clone(),
                tool: call.name.clone(),
                title: title.to_owned(),
                kind: tool.kind(),
                raw_input: call.arguments.clone(),
                always_pattern,
                offer_network,
                must_ask,
                reason,
                subjects,
                subject_kind,
            };
            ask_user(scope, call, request).await
        }
    }
}

/// Asks the user about a call and remembers an "always" answer.
async fn ask_user(scope: &CallScope<'_>, call: &ToolCall, request: PermissionRequest) -> Verdict {
    let (always_pattern, offer_network, must_ask) = (
        request.always_pattern.clone(),
        request.offer_network,
        request.must_ask,
    );
    let answer = tokio::select! {
        _ = scope.cancel.cancelled() => PermissionAnswer::Cancelled,
        answer = scope.host.request_permission(request) => answer,
    };
    // "Allow always" was not offered for a must-ask; whatever a client sends, nothing is
    // remembered that would never be consulted.
    let remembered = if must_ask && answer == PermissionAnswer::AllowAlways {
        PermissionAnswer::AllowOnce
    } else {
        answer
    };
    if let Err(error) = scope
        .shared
        .policy
        .record_answer(&call.name, &always_pattern, remembered)
    {
        scope.host.emit(AgentEvent::Notice {
            message: format!("could not remember the permission decision: {error}"),
        });
    }
    let allowed = if answer.allows() {
        Ok(())
    } else if answer == PermissionAnswer::Cancelled {
        Err("the turn was cancelled before permission was given".to_owned())
    } else {
        Err("the user declined this tool call".to_owned())
    };
    Verdict {
        allowed,
        audit: format!(
            "ask:{}",
            serde_json::to_value(answer)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default()
        ),
        // Network is granted only where it was offered, and only for this call.
        network: offer_network && answer == PermissionAnswer::AllowOnceWithNetwork,
    }
}

/// The error a call the policy or the user refused gets.
fn refusal(cancel: &CancellationToken, reason: String) -> ToolError {
    let category = if cancel.is_cancelled() {
        ToolErrorCategory::Cancelled
    } else {
        ToolErrorCategory::PermissionDenied
    };
    ToolError::new(category, reason, false)
}

/// Runs an allowed call, showing it in progress, and records what its result lets in.
async fn execute(
    scope: &CallScope<'_>,
    call: &ToolCall,
    tool: &dyn lode_tools::Tool,
    context: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    scope.host.emit(AgentEvent::ToolCallUpdated(ToolCallUpdate {
        id: call.id.clone(),
        status: ToolStatus::InProgress,
        title: None,
        content: Vec::new(),
        locations: Vec::new(),
        raw_output: None,
    }));
    let outcome = tool.run(call.arguments.clone(), context).await;
    record_tool_sources(&scope.turn.sources, &call.name, &call.arguments);
    outcome
}

/// A call's outcome as the model gets it, as the front end shows it, and as the store keeps it.
/// `wrap`: the tool's own output or error goes inside an `<untrusted_content>` block.
fn settle(
    call: &ToolCall,
    outcome: Result<ToolOutput, ToolError>,
    wrap: bool,
    max_chars: usize,
) -> (ToolResult, ToolCallUpdate, ToolCallFinish) {
    match outcome {
        Ok(mut output) => {
            // Within what the window leaves a result (the tools cap theirs at 30,000 characters).
            output.model_text = lode_tools::cap_output(&output.model_text, max_chars).text;
            let display = if output.display.is_empty() {
                vec![ToolContent::Text {
                    text: output.model_text.clone(),
                }]
            } else {
                output.display.clone()
            };
            (
                ToolResult {
                    call_id: call.id.clone(),
                    content: if wrap {
                        lode_tools::untrusted::wrap_tool_output(&call.name, &output.model_text)
                    } else {
                        output.model_text.clone()
                    },
                    is_error: false,
                },
                ToolCallUpdate {
                    id: call.id.clone(),
                    status: ToolStatus::Completed,
                    title: None,
                    content: display.clone(),
                    locations: output.locations.clone(),
                    raw_output: output.raw_output.clone(),
                },
                ToolCallFinish {
                    status: ToolStatus::Completed,
                    output: output.model_text,
                    display,
                    locations: output.locations,
                },
            )
        }
        Err(error) => {
            let text = error.to_model_text();
            let display = vec![ToolContent::Text {
                text: error.message.clone(),
            }];
            (
                ToolResult {
                    call_id: call.id.clone(),
                    content: if wrap {
                        lode_tools::untrusted::wrap_tool_error(&call.name, &error)
                    } else {
                        text.clone()
                    },
                    is_error: true,
                },
                ToolCallUpdate {
                    id: call.id.clone(),
                    status: ToolStatus::Failed,
                    title: None,
                    content: display.clone(),
                    locations: Vec::new(),
                    raw_output: serde_json::to_value(&error).ok(),
                },
                ToolCallFinish {
                    status: ToolStatus::Failed,
                    output: text,
                    display,
                    locations: Vec::new(),
                },
            )
        }
    }
}

/// Shows the call's final state, releases the terminals it showed, stores and audits it.
async fn finish_call(
    scope: &CallScope<'_>,
    call: &ToolCall,
    decision: &str,
    via: Option<&str>,
    update: ToolCallUpdate,
    finish: &ToolCallFinish,
) {
    scope.host.emit(AgentEvent::ToolCallUpdated(update.clone()));
    release_terminals(scope.host.as_ref(), &update.content).await;
    if let Err(error) =
        scope
            .shared
            .store
            .record_tool_call_finish(scope.session_id, &call.id, finish)
    {
        tracing::warn!(%error, "could not record the result of tool call {}", call.id);
    }
    audit(scope, call, decision, via, &update);
}

fn audit(
    scope: &CallScope<'_>,
    call: &ToolCall,
    decision: &str,
    via: Option<&str>,
    update: &ToolCallUpdate,
) {
    if let Err(error) = scope.shared.audit.record(
        scope.session_id,
        &call.name,
        &call.arguments,
        decision,
        via,
        update,
    ) {
        tracing::error!(%error, "could not write the audit log");
    }
}

/// Records that a tool's result reached the model (and, for `read_file`, which file).
fn record_tool_sources(
    sources: &lode_tools::untrusted::TurnSources,
    tool: &str,
    arguments: &serde_json::Value,
) {
    sources.record(format!("tool:{tool}"));
    if tool == "read_file"
        && let Some(path) = arguments.get("path").and_then(|path| path.as_str())
    {
        sources.record(format!("file:{path}"));
    }
}

/// Releases the client terminals a finished tool call showed, after its final update was sent.
async fn release_terminals(host: &dyn SessionHost, content: &[ToolContent]) {
    let Some(terminals) = host.client_terminals() else {
        return;
    };
    for item in content {
        if let ToolContent::Terminal { terminal_id } = item
            && let Err(error) = terminals.release(terminal_id).await
        {
            tracing::warn!(%error, "could not release terminal {terminal_id}");
        }
    }
}

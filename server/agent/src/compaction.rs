//! Compaction: keeping a long session inside the model's context window without losing anything.
//!
//! Two steps, cheapest first:
//! 1. [`prune_tool_outputs`] replaces the output of all but the most recent `keep_recent` tool
//!    results with a one-line stub (`[output pruned: N lines, tool X]`). It works on the request's
//!    copy of the messages; the store keeps every output.
//! 2. When that is not enough, [`summarize`] asks the model for a summary with fixed sections
//!    (Intent, Files touched, Decisions, Open questions, Next steps) of the older turns; if that
//!    call fails, [`metadata_summary`] describes them from what is known for certain (files
//!    touched, tools used, message counts). [`compact_session`] stores the summary with
//!    `SessionStore::mark_compacted`: the summary becomes model-only and the turns it replaces
//!    become user-only, so the user's history stays whole.
//!
//! The loop decides when with [`needs_compaction`] (or `AssembledContext::history_overflow`), and
//! answers a provider's context-length error with [`compact_session`] and one retry.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use tokio_util::sync::CancellationToken;

use crate::context::{count_tokens, message_tokens, starts_turn, turn_starts};
use crate::store::{SessionStore, StoreError};
use lode_llm::{ChatRequest, ContentPart, LlmError, Message, Provider, Role, StreamEvent};

/// The default fraction of the history budget at which compaction starts
/// (`[agent] compaction_threshold`).
pub const DEFAULT_COMPACTION_THRESHOLD: f64 = 0.8;
/// The default number of most recent tool results left unpruned
/// (`[agent] keep_recent_tool_outputs`).
pub const DEFAULT_KEEP_RECENT_TOOL_OUTPUTS: usize = 3;
/// How many of the newest turns a summary never replaces.
pub const KEEP_RECENT_TURNS: usize = 2;
/// The fixed sections of a summary, in order.
pub const SUMMARY_SECTIONS: &[&str] = &[
    "Intent",
    "Files touched",
    "Decisions",
    "Open questions",
    "Next steps",
];
/// Outputs this short are never pruned: the stub would not be shorter.
const PRUNE_MIN_CHARS: usize = 200;
/// In the transcript sent for summarising, each tool output and each text is cut to this many
/// characters (head and tail kept).
const TRANSCRIPT_TOOL_OUTPUT_CHARS: usize = 1_500;
const TRANSCRIPT_TEXT_CHARS: usize = 6_000;
/// The summary's own output cap.
const SUMMARY_MAX_TOKENS: u32 = 2_048;
/// The first line of every stored summary, so a reader (human or model) knows what it is.
pub const SUMMARY_HEADER: &str = "[Summary of the earlier part of this conversation]";

/// Whether the history (`history_tokens`) has reached `threshold` (a fraction, e.g. 0.8) of the
/// tokens it may use (`history_budget`).
pub fn needs_compaction(history_tokens: usize, history_budget: usize, threshold: f64) -> bool {
    history_tokens as f64 >= history_budget as f64 * threshold
}

/// What [`prune_tool_outputs`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PruneReport {
    /// How many tool results were replaced by a stub.
    pub pruned: usize,
    /// Tokens saved.
    pub tokens_saved: usize,
}

/// Replaces the content of every tool result except the `keep_recent` newest ones with
/// `[output pruned: N lines, tool X]`. Short outputs (under 200 characters) are left as they are.
pub fn prune_tool_outputs(messages: &mut [Message], keep_recent: usize) -> PruneReport {
    let tool_names: HashMap<String, String> = messages
        .iter()
        .flat_map(|message| message.tool_calls())
        .map(|call| (call.id.clone(), call.name.clone()))
        .collect();
    let mut report = PruneReport::default();
    let mut seen = 0usize;
    for message in messages.iter_mut().rev() {
        for part in message.content.iter_mut().rev() {
            let ContentPart::ToolResult(result) = part else {
                continue;
            };
            seen += 1;
            if seen <= keep_recent
                || result.content.len() < PRUNE_MIN_CHARS
                || result.content.starts_with("[output pruned:")
            {
                continue;
            }
            let tool = tool_names
                .get(&result.call_id)
                .map(String::as_str)
                .unwrap_or("unknown");
            let stub = format!(
                "[output pruned: {} lines, tool {tool}]",
                result.content.lines().count()
            );
            let before = count_tokens(&result.content);
            let after = count_tokens(&stub);
            result.content = stub;
            report.pruned += 1;
            report.tokens_saved += before.saturating_sub(after);
        }
    }
    report
}

/// Where a session's old output is pruned: the tool results of messages before `results_before`
/// and the turn contexts of messages before `contexts_before` (indices into the model's view of
/// the history) become one-line stubs. The mark moves only at a block boundary, when the history
/// nears its budget ([`choose_prune_mark`]), by enough to leave room for many more requests;
/// between two moves the pruned history only grows at its end, so each request is a prefix of
/// the next and providers' prompt caches hit. A compaction starts it again from the start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PruneMark {
    pub results_before: usize,
    pub contexts_before: usize,
}

/// The stub a pruned turn context becomes.
pub const PRUNED_CONTEXT: &str = "[lode's context for this message was left out to save room]\n\n";

/// Stubs what `mark` prunes in `messages`, in place; returns the indices of the messages it
/// changed. Idempotent: a stub is never stubbed again.
pub fn apply_prune_mark(messages: &mut [Message], mark: PruneMark) -> Vec<usize> {
    let end = mark
        .results_before
        .max(mark.contexts_before)
        .min(messages.len());
    let tool_names: HashMap<String, String> = messages[..end]
        .iter()
        .flat_map(|message| message.tool_calls())
        .map(|call| (call.id.clone(), call.name.clone()))
        .collect();
    let mut changed = Vec::new();
    for (index, message) in messages[..end].iter_mut().enumerate() {
        let mut touched = false;
        for part in &mut message.content {
            match part {
                ContentPart::ToolResult(result) if index < mark.results_before => {
                    if let Some(stub) = result_stub(&tool_names, &result.call_id, &result.content) {
                        result.content = stub;
                        touched = true;
                    }
                }
                ContentPart::Context { text }
                    if index < mark.contexts_before && context_prunable(text) =>
                {
                    *text = PRUNED_CONTEXT.to_owned();
                    touched = true;
                }
                _ => {}
            }
        }
        if touched {
            changed.push(index);
        }
    }
    changed
}

/// The stub for a tool result, or `None` when it stays (short, or a stub already).
fn result_stub(names: &HashMap<String, String>, call_id: &str, content: &str) -> Option<String> {
    if content.len() < PRUNE_MIN_CHARS || content.starts_with("[output pruned:") {
        return None;
    }
    let tool = names.get(call_id).map(String::as_str).unwrap_or("unknown");
    Some(format!(
        "[output pruned: {} lines, tool {tool}]",
        content.lines().count()
    ))
}

fn context_prunable(text: &str) -> bool {
    text.len() >= PRUNE_MIN_CHARS && text != PRUNED_CONTEXT
}

/// Where to move `current` when the history (`counts[i]` tokens for `messages[i]`, with
/// `current` applied) has reached its threshold: the smallest move that brings it down to
/// `target_tokens`, or as far as it may go. It never prunes the `keep_recent` newest tool
/// results or the newest turn's context, and never moves back. Returns `current` when nothing
/// can be pruned.
pub fn choose_prune_mark(
    messages: &[Message],
    counts: &[usize],
    current: PruneMark,
    target_tokens: usize,
    keep_recent: usize,
) -> PruneMark {
    let total: usize = counts.iter().sum();
    // The message holding the `keep_recent`-th newest result: results from there on stay.
    let mut seen = 0usize;
    let mut results_limit = 0usize;
    'messages: for (index, message) in messages.iter().enumerate().rev() {
        for part in message.content.iter().rev() {
            if matches!(part, ContentPart::ToolResult(_)) {
                seen += 1;
                if seen >= keep_recent.max(1) {
                    results_limit = if seen > keep_recent { index + 1 } else { index };
                    break 'messages;
                }
            }
        }
    }
    if seen < keep_recent.max(1) {
        results_limit = 0;
    }
    let contexts_limit = turn_starts(messages).last().copied().unwrap_or(0);
    let tool_names: HashMap<String, String> = messages
        .iter()
        .flat_map(|message| message.tool_calls())
        .map(|call| (call.id.clone(), call.name.clone()))
        .collect();
    let saving = |index: usize| -> usize {
        let mut saved = 0usize;
        for part in &messages[index].content {
            match part {
                ContentPart::ToolResult(result)
                    if index >= current.results_before && index < results_limit =>
                {
                    if let Some(stub) = result_stub(&tool_names, &result.call_id, &result.content) {
                        saved += count_tokens(&result.content).saturating_sub(count_tokens(&stub));
                    }
                }
                ContentPart::Context { text }
                    if index >= current.contexts_before
                        && index < contexts_limit
                        && context_prunable(text) =>
                {
                    saved += count_tokens(text).saturating_sub(count_tokens(PRUNED_CONTEXT));
                }
                _ => {}
            }
        }
        saved
    };
    let start = current.results_before.min(current.contexts_before);
    let end = results_limit.max(contexts_limit).min(messages.len());
    let mut saved = 0usize;
    let mut mark = current;
    for index in start..end {
        saved += saving(index);
        mark = PruneMark {
            results_before: current.results_before.max((index + 1).min(results_limit)),
            contexts_before: current.contexts_before.max((index + 1).min(contexts_limit)),
        };
        if total.saturating_sub(saved) <= target_tokens {
            break;
        }
    }
    mark
}

/// How a summary was made.
#[derive(Debug, Clone, PartialEq)]
pub enum SummarySource {
    /// The model wrote it.
    Model,
    /// The model call failed with this error; the summary lists only facts known for certain.
    Metadata { error: String },
}

/// A summary of older turns.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// The summary text, starting with [`SUMMARY_HEADER`].
    pub text: String,
    pub source: SummarySource,
}

impl Summary {
    /// The message stored (model-only) in place of the summarised turns.
    pub fn to_message(&self) -> Message {
        Message::user_text(self.text.clone())
    }
}

const SUMMARY_SYSTEM_PROMPT: &str = "\
You compact the history of a session between a user and a coding agent, so the agent can \
continue the work without the full transcript. Write a faithful, specific summary: exact file \
paths, function and type names, commands, error messages, and decisions with their reasons. \
Never invent anything that is not in the transcript. Answer with exactly these Markdown \
sections, in this order, each with short bullet points (write \"- none\" when a section is empty):

## Intent
## Files touched
## Decisions
## Open questions
## Next steps";

/// Summarises `messages` (the turns to be replaced) with `provider`, collecting the streamed
/// answer. Never fails: when the call fails, is cancelled, or returns no text, the summary falls
/// back to [`metadata_summary`] and says why.
pub async fn summarize(
    provider: &dyn Provider,
    messages: &[Message],
    cancel: CancellationToken,
) -> Summary {
    match request_summary(provider, messages, cancel).await {
        Ok(text) => Summary {
            text: format!("{SUMMARY_HEADER}\n\n{}", text.trim()),
            source: SummarySource::Model,
        },
        Err(error) => Summary {
            text: metadata_summary(messages),
            source: SummarySource::Metadata {
                error: error.to_string(),
            },
        },
    }
}

async fn request_summary(
    provider: &dyn Provider,
    messages: &[Message],
    cancel: CancellationToken,
) -> Result<String, LlmError> {
    let info = provider.info();
    // Leave room for the prompt, the answer and tokenizer differences between models.
    let transcript_budget = (info.context_window as usize)
        .saturating_sub(SUMMARY_MAX_TOKENS as usize)
        .saturating_mul(7)
        / 10;
    let transcript = render_transcript(messages, transcript_budget);
    let request = ChatRequest {
        system: SUMMARY_SYSTEM_PROMPT.to_owned(),
        messages: vec![Message::user_text(format!(
            "Summarise this session transcript.\n\n<transcript>\n{transcript}</transcript>"
        ))],
        tools: Vec::new(),
        max_tokens: Some(SUMMARY_MAX_TOKENS.min(info.max_output_tokens.max(1))),
        temperature: Some(0.0),
        cache_key: None,
    };
    let mut stream = tokio::select! {
        biased;
        _ = cancel.cancelled() => return Err(LlmError::Cancelled),
        stream = provider.stream(&request, cancel.clone()) => stream?,
    };
    let mut text = String::new();
    let mut finished = false;
    loop {
        let next = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(LlmError::Cancelled),
            next = futures::StreamExt::next(&mut stream) => next,
        };
        match next {
            None => break,
            Some(Err(error)) => return Err(error),
            Some(Ok(StreamEvent::TextDelta(delta))) => text.push_str(&delta),
            Some(Ok(StreamEvent::Finished(_))) => finished = true,
            Some(Ok(_)) => {}
        }
    }
    if !finished {
        return Err(LlmError::Truncated);
    }
    if text.trim().is_empty() {
        return Err(LlmError::Malformed("the summary came back empty".into()));
    }
    Ok(text)
}

/// The messages as a plain transcript, each text and tool output cut, oldest messages dropped
/// when the whole does not fit `max_tokens`.
fn render_transcript(messages: &[Message], max_tokens: usize) -> String {
    let mut tool_names: HashMap<&str, &str> = HashMap::new();
    let mut entries: Vec<String> = Vec::with_capacity(messages.len());
    for message in messages {
        let mut entry = String::new();
        let speaker = match message.role {
            Role::User => "User",
            Role::Assistant => "Agent",
        };
        for part in &message.content {
            match part {
                ContentPart::Text { text } => entry.push_str(&format!(
                    "{speaker}: {}\n",
                    cut_middle(text, TRANSCRIPT_TEXT_CHARS)
                )),
                // The turn's context is lode's own and comes again with later turns.
                ContentPart::Thinking { .. } | ContentPart::Context { .. } => {}
                ContentPart::Image { mime_type, .. } => {
                    entry.push_str(&format!("{speaker}: [image {mime_type}]\n"))
                }
                ContentPart::ToolCall(call) => {
                    tool_names.insert(&call.id, &call.name);
                    entry.push_str(&format!(
                        "Agent called {}({})\n",
                        call.name,
                        cut_middle(&call.arguments.to_string(), TRANSCRIPT_TEXT_CHARS)
                    ));
                }
                ContentPart::ToolResult(result) => {
                    let tool = tool_names
                        .get(result.call_id.as_str())
                        .copied()
                        .unwrap_or("tool");
                    let label = if result.is_error { "error" } else { "result" };
                    entry.push_str(&format!(
                        "{tool} {label}: {}\n",
                        cut_middle(&result.content, TRANSCRIPT_TOOL_OUTPUT_CHARS)
                    ));
                }
            }
        }
        entries.push(entry);
    }
    let mut used = 0usize;
    let mut first_kept = entries.len();
    for (index, entry) in entries.iter().enumerate().rev() {
        let tokens = count_tokens(entry);
        if used + tokens > max_tokens {
            break;
        }
        used += tokens;
        first_kept = index;
    }
    let mut out = String::new();
    if first_kept > 0 {
        out.push_str(&format!(
            "[{first_kept} older messages left out: they did not fit]\n"
        ));
    }
    for entry in &entries[first_kept..] {
        out.push_str(entry);
    }
    out
}

/// `text` with its middle replaced by a marker when longer than `max_chars` characters.
fn cut_middle(text: &str, max_chars: usize) -> String {
    let count = text.chars().count();
    if count <= max_chars {
        return text.to_owned();
    }
    let half = max_chars / 2;
    let head: String = text.chars().take(half).collect();
    let tail: String = text.chars().skip(count - half).collect();
    format!(
        "{head}\n[… {} characters left out …]\n{tail}",
        count - 2 * half
    )
}

/// A summary made without the model: what the messages show for certain.
pub fn metadata_summary(messages: &[Message]) -> String {
    let mut user_messages = 0usize;
    let mut assistant_messages = 0usize;
    let mut tool_result_messages = 0usize;
    let mut tools: BTreeMap<String, usize> = BTreeMap::new();
    let mut files: BTreeSet<String> = BTreeSet::new();
    let mut failed_calls = 0usize;
    let mut requests: Vec<String> = Vec::new();
    for message in messages {
        match message.role {
            Role::User if starts_turn(message) => user_messages += 1,
            Role::User => tool_result_messages += 1,
            Role::Assistant => assistant_messages += 1,
        }
        for part in &message.content {
            match part {
                ContentPart::ToolCall(call) => {
                    *tools.entry(call.name.clone()).or_default() += 1;
                    collect_paths(&call.arguments, &mut files);
                }
                ContentPart::ToolResult(result) if result.is_error => failed_calls += 1,
                ContentPart::Text { text }
                    if message.role == Role::User && !text.starts_with(SUMMARY_HEADER) =>
                {
                    let line = text.lines().next().unwrap_or("").trim();
                    if !line.is_empty() {
                        requests.push(cut_middle(line, 200));
                    }
                }
                _ => {}
            }
        }
    }
    let mut out = format!(
        "{SUMMARY_HEADER}\n(The summary could not be written by the model; this lists what is known \
from the replaced messages. Re-read files before relying on details.)\n\n"
    );
    out.push_str("## Intent\n");
    if requests.is_empty() {
        out.push_str("- unknown\n");
    }
    for request in requests.iter().rev().take(5).rev() {
        out.push_str(&format!("- user asked: {request}\n"));
    }
    out.push_str("\n## Files touched\n");
    if files.is_empty() {
        out.push_str("- none recorded\n");
    }
    for file in &files {
        out.push_str(&format!("- {file}\n"));
    }
    out.push_str("\n## Decisions\n- not recorded (metadata-only summary)\n");
    out.push_str("\n## Open questions\n- not recorded (metadata-only summary)\n");
    out.push_str("\n## Next steps\n- continue from the most recent messages below\n");
    out.push_str(&format!(
        "\n## Activity\n- {user_messages} user messages, {assistant_messages} agent messages and \
{tool_result_messages} tool results replaced\n"
    ));
    if tools.is_empty() {
        out.push_str("- no tools used\n");
    } else {
        let used: Vec<String> = tools
            .iter()
            .map(|(tool, count)| format!("{tool} ×{count}"))
            .collect();
        out.push_str(&format!("- tools used: {}\n", used.join(", ")));
    }
    if failed_calls > 0 {
        out.push_str(&format!("- {failed_calls} tool calls failed\n"));
    }
    out
}

fn collect_paths(arguments: &serde_json::Value, files: &mut BTreeSet<String>) {
    if let serde_json::Value::Object(map) = arguments {
        for (key, value) in map {
            match (key.as_str(), value) {
                ("path" | "file" | "file_path" | "filepath", serde_json::Value::String(path)) => {
                    files.insert(path.clone());
                }
                ("paths" | "files", serde_json::Value::Array(items)) => {
                    files.extend(
                        items
                            .iter()
                            .filter_map(|item| item.as_str().map(str::to_owned)),
                    );
                }
                _ => collect_paths(value, files),
            }
        }
    }
}

/// What [`compact_session`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionOutcome {
    /// The last seq the summary replaces.
    pub up_to_seq: u64,
    /// The stored summary's seq.
    pub summary_seq: u64,
    pub summary: Summary,
    /// How many model-visible messages the summary replaced.
    pub replaced_messages: usize,
    /// Tokens of the replaced messages and of the summary.
    pub tokens_before: usize,
    pub tokens_after: usize,
}

/// Summarises all but the newest `keep_recent_turns` turns of a stored session and records the
/// summary in the store. When the newest turn is the only one (one long turn of many tool calls,
/// perhaps after an earlier summary), that turn is cut instead, before an assistant message that follows tool results, so that at
/// most about half of the history's tokens are kept and no call is separated from its result.
/// Returns `None` when there is nothing old enough to replace.
pub async fn compact_session(
    store: &SessionStore,
    session_id: &str,
    provider: &dyn Provider,
    keep_recent_turns: usize,
    cancel: CancellationToken,
) -> Result<Option<CompactionOutcome>, StoreError> {
    let history = store.load_history(session_id)?;
    let entries = history.model_entries();
    let messages: Vec<Message> = entries.iter().map(|entry| entry.to_message()).collect();
    // The last ordinary message before a cut; a previous summary alone is nothing new.
    let up_to = |cut: usize| {
        entries[..cut]
            .iter()
            .filter(|entry| entry.summary_of.is_none())
            .map(|entry| entry.seq)
            .max()
    };
    let Some((cut, up_to_seq)) = turn_cut(&messages, keep_recent_turns)
        .and_then(|cut| Some((cut, up_to(cut)?)))
        .or_else(|| {
            // Only when the newest turn is the only one left (besides summaries): a session of
            // one long turn of tool calls.
            let newest = *turn_starts(&messages).last()?;
            if up_to(newest).is_some() {
                return None;
            }
            let cut = split_newest_turn(&messages)?;
            Some((cut, up_to(cut)?))
        })
    else {
        return Ok(None);
    };
    let replaced = &messages[..cut];
    let summary = summarize(provider, replaced, cancel).await;
    let summary_message = summary.to_message();
    let summary_seq = store.mark_compacted(session_id, up_to_seq, &summary_message)?;
    Ok(Some(CompactionOutcome {
        up_to_seq,
        summary_seq,
        replaced_messages: cut,
        tokens_before: replaced.iter().map(message_tokens).sum(),
        tokens_after: message_tokens(&summary_message),
        summary,
    }))
}

/// The index of the first message of the newest `keep_recent_turns` turns (at least one), when
/// there are older turns before it.
fn turn_cut(messages: &[Message], keep_recent_turns: usize) -> Option<usize> {
    let starts = turn_starts(messages);
    let keep = keep_recent_turns.max(1);
    (starts.len() > keep).then(|| starts[starts.len() - keep])
}

/// A cut inside the newest turn: the earliest assistant message that follows a message of tool
/// results and leaves at most half of the tokens after it; the latest such message when none
/// leaves that little.
fn split_newest_turn(messages: &[Message]) -> Option<usize> {
    let last_start = *turn_starts(messages).last()?;
    let total: usize = messages.iter().map(message_tokens).sum();
    let candidates: Vec<usize> = (last_start + 1..messages.len())
        .filter(|&index| {
            messages[index].role == Role::Assistant
                && messages[index - 1]
                    .content
                    .iter()
                    .any(|part| matches!(part, ContentPart::ToolResult(_)))
        })
        .collect();
    candidates
        .iter()
        .copied()
        .find(|&index| messages[index..].iter().map(message_tokens).sum::<usize>() <= total / 2)
        .or_else(|| candidates.last().copied())
}

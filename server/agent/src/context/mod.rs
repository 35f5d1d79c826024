//! Context assembly: what the model is sent for one step of a turn, fitted to a token budget.
//!
//! The input budget is the model's context window minus the output reserved for the answer and
//! the tool definitions. It is shared out in this order (each share is a fraction of the input
//! budget with an absolute cap, see [`ContextShares`]; what a piece does not use goes to history):
//!
//! | piece | share (default) | source |
//! |---|---|---|
//! | base instructions | fixed (about 340–500 tokens) | [`base_instructions`] per mode |
//! | environment | ≤ 800 tokens | [`Environment::detect`]: cwd, OS, date, git branch and changes |
//! | instruction files | ≤ 10 %, ≤ 8k | [`find_instruction_files`]: `AGENTS.md`, `CLAUDE.md`, `.lode/instructions.md` |
//! | memory | ≤ 5 %, ≤ 4k | caller-supplied texts (`crate::memory::memory_texts`) |
//! | skills | ≤ 5 %, ≤ 4k | caller-supplied texts (the turn's selected skills) |
//! | repo map | ≤ 10 %, ≤ 4k | [`CodeContext::repo_map`], personalised by [`extract_mentions`] |
//! | retrieved code | ≤ 10 %, ≤ 6k | [`CodeContext::retrieve`] for the latest user message, minus files already read |
//! | history | the rest | newest turns kept whole; older turns dropped when they do not fit |
//!
//! A *turn* starts at a user message with text (not a message of tool results) and runs to the
//! next one, so a tool call is never separated from its result. The newest turn is always kept,
//! even over budget; [`AssembledContext::history_overflow`] then tells the loop to compact
//! (see `crate::compaction`). Every piece is measured with the cl100k tokenizer and reported in
//! [`TokenBreakdown`].
//!
//! Instruction files, the repo map and retrieved code come from the workspace: each reaches the
//! model inside an `<untrusted_content>` block (see `lode_tools::untrusted`), counted in its share; the
//! memory and skill texts arrive already marked, and [`base_instructions`] says what the blocks
//! mean.
//!
//! ```text
//! let environment = Environment::detect(&root);
//! let mentions = extract_mentions(&root, &history);
//! let instructions = find_instruction_files(&root, &mentions.files, config.agent.instruction_file_max_bytes);
//! let assembled = assemble(&ContextInput {
//!     mode, root: &root, history: &history, tools: &tools, environment: &environment,
//!     instructions: &instructions, memory: &[], skills: &[], code: &WorkspaceCode::new(index.clone()),
//!     budget: ContextBudget::for_model(&provider.info()), shares: &config.agent.context,
//! });
//! let request = assembled.into_request(tools, Some(max_tokens));
//! ```

mod code;
mod environment;
mod instructions;
mod mentions;
mod prompts;
mod system_prompt;
mod tokens;

use std::path::Path;

use serde::{Deserialize, Serialize};

use lode_llm::{ChatRequest, ContentPart, Message, ModelInfo, Role, ToolSpec};
use lode_policy::Mode;

pub use code::{
    CodeContext, CodeContextError, MAX_CHUNK_LINES, NoCode, PrecomputedCode, RETRIEVAL_CANDIDATES,
    RetrievedChunk, WorkspaceCode, fit_chunks,
};
pub use environment::{Environment, GIT_TIMEOUT, GitState, MAX_DIRTY_FILES_SHOWN};
pub use instructions::{
    DEFAULT_INSTRUCTION_FILE_MAX_BYTES, InstructionFile, NESTED_INSTRUCTION_FILES,
    ROOT_INSTRUCTION_FILES, find_instruction_files, render_instruction_files,
    render_instruction_files_within,
};
pub use mentions::{
    MAX_MENTIONED_FILES, MAX_MENTIONED_IDENTIFIERS, Mentions, RECENT_MESSAGES, extract_mentions,
};
pub use prompts::base_instructions;
use system_prompt::SystemPrompt;
pub use tokens::{
    IMAGE_TOKENS, MESSAGE_OVERHEAD_TOKENS, count_tokens, count_tokens_joined,
    count_tokens_uncached, message_tokens, messages_tokens, part_tokens, tools_tokens,
    truncate_to_tokens, wrap_within,
};

/// How the input budget is shared (`[agent.context]` in the config). Each piece gets
/// `min(share × input budget, max_tokens)`; history gets whatever the others leave.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ContextShares {
    pub environment_max_tokens: usize,
    pub instructions_share: f64,
    pub instructions_max_tokens: usize,
    pub memory_share: f64,
    pub memory_max_tokens: usize,
    pub skills_share: f64,
    pub skills_max_tokens: usize,
    pub repo_map_share: f64,
    pub repo_map_max_tokens: usize,
    pub retrieval_share: f64,
    pub retrieval_max_tokens: usize,
}

impl Default for ContextShares {
    fn default() -> Self {
        ContextShares {
            environment_max_tokens: 800,
            instructions_share: 0.10,
            instructions_max_tokens: 8_000,
            memory_share: 0.05,
            memory_max_tokens: 4_000,
            skills_share: 0.05,
            skills_max_tokens: 4_000,
            repo_map_share: 0.10,
            repo_map_max_tokens: 4_000,
            retrieval_share: 0.10,
            retrieval_max_tokens: 6_000,
        }
    }
}

impl ContextShares {
    /// Checks that every share is a fraction in `0..=1` and that they leave history at least
    /// half the budget. Returns the first problem found, naming its key.
    pub fn validate(&self) -> Result<(), String> {
        let shares = [
            ("instructions_share", self.instructions_share),
            ("memory_share", self.memory_share),
            ("skills_share", self.skills_share),
            ("repo_map_share", self.repo_map_share),
            ("retrieval_share", self.retrieval_share),
        ];
        for (key, value) in shares {
            if !(0.0..=1.0).contains(&value) || value.is_nan() {
                return Err(format!("{key} must be between 0 and 1, got {value}"));
            }
        }
        let total: f64 = shares.iter().map(|(_, value)| value).sum();
        if total > 0.5 {
            return Err(format!(
                "the shares add up to {total:.2}; they must leave at least half the budget (0.5) to history"
            ));
        }
        Ok(())
    }

    /// Tokens a piece with `share` and `max_tokens` gets out of `input_budget`.
    pub fn cap(share: f64, max_tokens: usize, input_budget: usize) -> usize {
        ((input_budget as f64 * share) as usize).min(max_tokens)
    }
}

/// The model's limits for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextBudget {
    /// The model's context window in tokens.
    pub context_window: usize,
    /// Tokens kept free for the model's answer.
    pub reserved_output: usize,
}

impl ContextBudget {
    /// Tokens the request's input may use: the window minus the reserved output.
    pub fn input_tokens(&self) -> usize {
        self.context_window.saturating_sub(self.reserved_output)
    }

    /// The budget of a configured model: its window, with its output cap reserved.
    pub fn for_model(info: &ModelInfo) -> Self {
        ContextBudget {
            context_window: info.context_window as usize,
            reserved_output: info.max_output_tokens as usize,
        }
    }
}

/// Everything one assembly needs. Environment and instruction files are passed in already
/// found, so the loop can compute them once per turn.
pub struct ContextInput<'a> {
    pub mode: Mode,
    /// The workspace root.
    pub root: &'a Path,
    /// The model's view of the conversation (e.g. `History::model_messages()`), oldest first,
    /// ending with the latest user message or tool results.
    pub history: &'a [Message],
    pub tools: &'a [ToolSpec],
    pub environment: &'a Environment,
    pub instructions: &'a [InstructionFile],
    /// Memory texts, most relevant first (empty until memory is wired in).
    pub memory: &'a [String],
    /// Skill texts, most relevant first (empty until skills are wired in).
    pub skills: &'a [String],
    pub code: &'a dyn CodeContext,
    pub budget: ContextBudget,
    pub shares: &'a ContextShares,
}

/// Tokens per piece of an assembled request (cl100k).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenBreakdown {
    pub base: usize,
    pub environment: usize,
    pub instructions: usize,
    pub memory: usize,
    pub skills: usize,
    pub repo_map: usize,
    pub retrieved: usize,
    /// The whole system prompt (the pieces above plus headings).
    pub system: usize,
    pub tools: usize,
    /// The history actually sent.
    pub history: usize,
    /// The input budget (window minus reserved output).
    pub budget: usize,
}

impl TokenBreakdown {
    /// What the request's input costs: system prompt, tools and history.
    pub fn total(&self) -> usize {
        self.system + self.tools + self.history
    }
}

/// An assembled request, before tools and output settings are attached.
#[derive(Debug, Clone, PartialEq)]
pub struct AssembledContext {
    pub system: String,
    pub messages: Vec<Message>,
    pub breakdown: TokenBreakdown,
    /// Tokens history may use (the input budget minus the system prompt and tools).
    pub history_budget: usize,
    /// Tokens of the whole history passed in, before any turn was dropped.
    pub history_full: usize,
    /// How many older turns were dropped to fit.
    pub dropped_turns: usize,
    /// The retrieved chunks included (for display and tests).
    pub retrieved: Vec<RetrievedChunk>,
    /// What the repo map was personalised with.
    pub mentions: Mentions,
    /// Problems that left a piece out (e.g. an index error); the request is still usable.
    pub warnings: Vec<String>,
}

impl AssembledContext {
    /// Whether history had to be cut, or the newest turn alone is over its budget: the loop
    /// should compact and assemble again.
    pub fn history_overflow(&self) -> bool {
        self.dropped_turns > 0 || self.breakdown.history > self.history_budget
    }

    /// The full history's tokens as a fraction of the history budget (1.0 = exactly full).
    pub fn history_pressure(&self) -> f64 {
        if self.history_budget == 0 {
            return f64::INFINITY;
        }
        self.history_full as f64 / self.history_budget as f64
    }

    /// The request to send.
    pub fn into_request(self, tools: Vec<ToolSpec>, max_tokens: Option<u32>) -> ChatRequest {
        ChatRequest {
            system: self.system,
            messages: self.messages,
            tools,
            max_tokens,
            temperature: None,
        }
    }
}

/// Assembles the system prompt and the history for one model step. Never fails: a piece that
/// cannot be produced is left out and named in `warnings`.
pub fn assemble(input: &ContextInput<'_>) -> AssembledContext {
    let counts: Vec<usize> = input.history.iter().map(message_tokens).collect();
    let (mut assembled, keep_from) = assemble_counted(input, &counts);
    assembled.messages = input.history[keep_from..].to_vec();
    assembled
}

/// [`assemble`], given each history message's tokens (`counts[i]` for `history[i]`), and
/// without copying the history: `messages` is left empty and the index of the first message
/// kept is returned, for a caller that keeps its history and its counts from request to
/// request (the turn loop).
pub(crate) fn assemble_counted(
    input: &ContextInput<'_>,
    counts: &[usize],
) -> (AssembledContext, usize) {
    debug_assert_eq!(counts.len(), input.history.len());
    let mut prompt = SystemPrompt::new(input);
    prompt.add_base_instructions();
    prompt.add_environment();
    prompt.add_instruction_files();
    prompt.add_memory();
    prompt.add_skills();
    let mentions = extract_mentions(input.root, input.history);
    prompt.add_repo_map(&mentions);
    let retrieved = prompt.add_retrieved_code(&mentions);
    let system = prompt.join();
    let SystemPrompt {
        mut breakdown,
        warnings,
        ..
    } = prompt;

    let history_budget = breakdown.budget.saturating_sub(breakdown.system);
    let history_full = counts.iter().sum();
    let (keep_from, dropped_turns) = fit_history_counted(input.history, counts, history_budget);
    breakdown.history = counts[keep_from..].iter().sum();

    let assembled = AssembledContext {
        system,
        messages: Vec::new(),
        breakdown,
        history_budget,
        history_full,
        dropped_turns,
        retrieved,
        mentions,
        warnings,
    };
    (assembled, keep_from)
}

/// Whether `message` starts a turn: a user message with text and no tool results.
pub fn starts_turn(message: &Message) -> bool {
    message.role == Role::User
        && message
            .content
            .iter()
            .any(|part| matches!(part, ContentPart::Text { .. }))
        && !message
            .content
            .iter()
            .any(|part| matches!(part, ContentPart::ToolResult(_)))
}

/// The index of the first message of each turn, in order. Messages before the first turn start
/// (if any) form a turn of their own starting at 0.
pub fn turn_starts(messages: &[Message]) -> Vec<usize> {
    let mut starts: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, message)| starts_turn(message))
        .map(|(index, _)| index)
        .collect();
    if !messages.is_empty() && starts.first() != Some(&0) {
        starts.insert(0, 0);
    }
    starts
}

/// Keeps the newest whole turns that fit `budget` (always at least the newest turn); returns
/// the kept messages and how many turns were dropped.
pub fn fit_history(messages: &[Message], budget: usize) -> (Vec<Message>, usize) {
    let counts: Vec<usize> = messages.iter().map(message_tokens).collect();
    let (keep_from, dropped) = fit_history_counted(messages, &counts, budget);
    (messages[keep_from..].to_vec(), dropped)
}

/// [`fit_history`] with each message's tokens given (`counts[i]` for `messages[i]`): the index
/// of the first kept message and how many turns were dropped.
fn fit_history_counted(messages: &[Message], counts: &[usize], budget: usize) -> (usize, usize) {
    let starts = turn_starts(messages);
    let mut keep_from = messages.len();
    let mut used = 0usize;
    let mut kept_turns = 0usize;
    for (turn, &start) in starts.iter().enumerate().rev() {
        let end = starts.get(turn + 1).copied().unwrap_or(messages.len());
        let tokens: usize = counts[start..end].iter().sum();
        if kept_turns > 0 && used + tokens > budget {
            break;
        }
        used += tokens;
        kept_turns += 1;
        keep_from = start;
    }
    (keep_from, starts.len() - kept_turns)
}

/// The text of the latest user message that has text (the question retrieval answers).
pub fn latest_user_text(messages: &[Message]) -> Option<String> {
    messages
        .iter()
        .rev()
        .find(|message| starts_turn(message))
        .map(Message::text)
        .filter(|text| !text.trim().is_empty())
}

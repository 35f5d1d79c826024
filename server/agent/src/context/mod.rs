//! Context assembly: what the model is sent for one step of a turn, fitted to a token budget.
//!
//! A request is laid out so that each one is a prefix of the next and providers' prompt caches
//! hit: the tools, then the session's stable system prompt, then the history, with the turn's
//! changing context attached to the turn's own user message (a [`ContentPart::Context`] part
//! before the user's words), where it stays for the rest of the session:
//!
//! | piece | where | share (default) | source |
//! |---|---|---|---|
//! | base instructions | system | fixed (about 450–600 tokens; lean 150) | [`base_instructions`] per mode and profile |
//! | root instruction files | system | ≤ 10 %, ≤ 8k | [`find_instruction_files`]: `AGENTS.md`, `CLAUDE.md`, `.lode/instructions.md` |
//! | skill list | system | ≤ 5 %, ≤ 4k (with the bodies) | every skill by name and one line (caller-supplied) |
//! | environment | turn | ≤ 800 tokens (lean 200) | [`Environment::detect`]: cwd, OS, date, git branch and changes |
//! | nested instruction files | turn | what the root's leave | those between the root and the files in question |
//! | memory | turn | ≤ 5 %, ≤ 4k | caller-supplied texts (`crate::memory::memory_texts`) |
//! | selected skills | turn | what the list leaves | caller-supplied texts (the turn's selected skills: a line each naming `load_skill`, full profile) |
//! | repo map | turn | ≤ 10 %, ≤ 2k | [`CodeContext::repo_map`], personalised by [`extract_mentions`] |
//! | retrieved code | turn | ≤ 10 %, ≤ 3k | [`CodeContext::retrieve`] for the latest user message, minus files already read |
//! | history | messages | the rest | newest turns kept whole; older turns dropped when they do not fit |
//!
//! A piece of the turn's context already sent in an earlier turn, and still in the conversation,
//! is not sent again ([`build_turn_context`]'s `already_sent`). The [`Profile`] decides how much
//! of each there is: the lean profile, for small windows, has short instructions, a core set of
//! tools with compact schemas, skills by name only and a smaller environment.
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
//!     mode, profile: Profile::Full, root: &root, history: &history, tools: &tools,
//!     environment: &environment, instructions: &instructions, memory: &[], skills: &[],
//!     skill_catalogue: None, code: &WorkspaceCode::new(index.clone()),
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
use system_prompt::{SystemPrompt, TurnContextBuilder};
pub use system_prompt::{TURN_CONTEXT_TAG, TurnContext};
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
            // The map and the retrieved code are hints the model can extend with its own
            // searches; 2k and 3k keep a large window's first request near 8k tokens, where
            // 4k and 6k made it 11k on a 200-line crate (bench/agent/tokens.sh).
            repo_map_share: 0.10,
            repo_map_max_tokens: 2_000,
            retrieval_share: 0.10,
            retrieval_max_tokens: 3_000,
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

/// How much lode sends: everything it can offer (`full`), or a core that fits a small window
/// (`lean`: short instructions, the core tools with short descriptions and compact schemas,
/// skills by name only, a smaller environment). `[agent] profile`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Profile {
    Full,
    Lean,
}

/// `[agent] profile`: a profile, or `auto` (lean below [`LEAN_BELOW_WINDOW`] tokens).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProfileSetting {
    #[default]
    Auto,
    Full,
    Lean,
}

/// `auto` picks the lean profile for context windows below this many tokens.
pub const LEAN_BELOW_WINDOW: usize = 16_000;

impl ProfileSetting {
    /// The profile for a model with `context_window` tokens.
    pub fn resolve(self, context_window: usize) -> Profile {
        match self {
            ProfileSetting::Full => Profile::Full,
            ProfileSetting::Lean => Profile::Lean,
            ProfileSetting::Auto if context_window < LEAN_BELOW_WINDOW => Profile::Lean,
            ProfileSetting::Auto => Profile::Full,
        }
    }
}

impl Profile {
    pub fn as_str(self) -> &'static str {
        match self {
            Profile::Full => "full",
            Profile::Lean => "lean",
        }
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
    /// Tokens the request's input may use: the window minus the reserved output, less a
    /// margin for what the cl100k count does not see (the server's chat template around the
    /// messages and tools, another tokenizer's differences): 1/32 of the window, at most 2048.
    pub fn input_tokens(&self) -> usize {
        let margin = (self.context_window / 32).min(2048);
        self.context_window
            .saturating_sub(self.reserved_output)
            .saturating_sub(margin)
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
    pub profile: Profile,
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
    /// The bodies of the skills selected for the turn, most relevant first.
    pub skills: &'a [String],
    /// Every skill by name and one line (the system prompt's list), if there are skills.
    pub skill_catalogue: Option<&'a str>,
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
    /// The session's stable system prompt.
    pub system: String,
    /// The turn's context block (see [`build_turn_context`]); [`assemble`] attaches it to the
    /// newest turn's user message in `messages`, the loop to the user's message as it stores it.
    pub turn_context: String,
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
            cache_key: None,
        }
    }
}

/// Assembles the system prompt, the turn's context and the history for one model step: the
/// turn's context is attached to the newest turn's user message (as the loop does when it
/// stores that message). Never fails: a piece that cannot be produced is left out and named in
/// `warnings`.
pub fn assemble(input: &ContextInput<'_>) -> AssembledContext {
    let turn = build_turn_context(input, &[]);
    let mut history = input.history.to_vec();
    if !turn.text.is_empty()
        && let Some(start) = history.iter().rposition(starts_turn)
    {
        attach_turn_context(&mut history[start], &turn.text);
    }
    let counts: Vec<usize> = history.iter().map(message_tokens).collect();
    let with_context = ContextInput {
        history: &history,
        ..*input
    };
    let (mut assembled, keep_from) = assemble_counted(&with_context, &counts);
    assembled.messages = history[keep_from..].to_vec();
    assembled.turn_context = turn.text;
    let pieces = turn.breakdown;
    assembled.breakdown.environment = pieces.environment;
    assembled.breakdown.instructions += pieces.instructions;
    assembled.breakdown.memory = pieces.memory;
    assembled.breakdown.skills += pieces.skills;
    assembled.breakdown.repo_map = pieces.repo_map;
    assembled.breakdown.retrieved = pieces.retrieved;
    assembled.retrieved = turn.retrieved;
    assembled.mentions = turn.mentions;
    assembled.warnings.extend(turn.warnings);
    assembled
}

/// Puts `context` (a [`TurnContext`]'s text) before the user's words in `message`, replacing
/// any context it had.
pub fn attach_turn_context(message: &mut Message, context: &str) {
    message
        .content
        .retain(|part| !matches!(part, ContentPart::Context { .. }));
    if !context.is_empty() {
        message.content.insert(
            0,
            ContentPart::Context {
                text: context.to_owned(),
            },
        );
    }
}

/// The stable system prompt and the history that fits, given each history message's tokens
/// (`counts[i]` for `history[i]`), without copying the history: `messages` is left empty and
/// the index of the first message kept is returned, for a caller that keeps its history and
/// its counts from request to request (the turn loop). The turn's context is not built here:
/// it is already in the history (see [`build_turn_context`]).
pub(crate) fn assemble_counted(
    input: &ContextInput<'_>,
    counts: &[usize],
) -> (AssembledContext, usize) {
    debug_assert_eq!(counts.len(), input.history.len());
    let (system, mut breakdown, warnings) = system_prompt(input);
    let history_budget = breakdown.budget.saturating_sub(breakdown.system);
    let history_full = counts.iter().sum();
    let (keep_from, dropped_turns) = fit_history_counted(input.history, counts, history_budget);
    breakdown.history = counts[keep_from..].iter().sum();

    let assembled = AssembledContext {
        system,
        turn_context: String::new(),
        messages: Vec::new(),
        breakdown,
        history_budget,
        history_full,
        dropped_turns,
        retrieved: Vec::new(),
        mentions: Mentions::default(),
        warnings,
    };
    (assembled, keep_from)
}

/// The session's stable system prompt: the mode's instructions, the root instruction files and
/// the list of skills; its breakdown (tools and budget counted) and warnings.
pub fn system_prompt(input: &ContextInput<'_>) -> (String, TokenBreakdown, Vec<String>) {
    let mut prompt = SystemPrompt::new(input);
    prompt.add_base_instructions();
    prompt.add_root_instruction_files();
    prompt.add_skill_catalogue();
    prompt.finish()
}

/// The turn's context, for the user message that starts the turn (the newest in
/// `input.history`): environment, the instruction files near the files in question, memories,
/// the selected skills' bodies, the repo map personalised to the conversation and the code
/// retrieved for the message. A piece found in `already_sent` (the context blocks of earlier
/// turns the model still sees) is left out, or said to be unchanged.
pub fn build_turn_context(input: &ContextInput<'_>, already_sent: &[&str]) -> TurnContext {
    let (_, stable, _) = system_prompt(input);
    let mut turn = TurnContextBuilder::new(input, already_sent);
    turn.add_environment();
    turn.add_nested_instruction_files(stable.instructions);
    turn.add_memory();
    turn.add_skills(stable.skills);
    let mentions = extract_mentions(input.root, input.history);
    turn.add_repo_map(&mentions);
    let retrieved = turn.add_retrieved_code(&mentions);
    turn.finish(retrieved, mentions)
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

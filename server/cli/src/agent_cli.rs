//! The terminal front ends of the agent: `lode chat` (a REPL) and `lode run` (one prompt,
//! non-interactive). Both are thin: they turn agent events into terminal output and answer
//! permission questions, and leave everything else to `lode_agent::Agent`.

use parking_lot::Mutex;
use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use lode_agent::event::{AgentEvent, StopReason, ToolContent, ToolStatus};
use lode_agent::host::{PermissionAnswer, PermissionRequest, SessionHost};
use lode_agent::{Agent, UserInput};
use lode_policy::{HeadlessGrants, Mode, SubjectKind};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::render::{ask, say};

/// Exit code of `lode run` when the turn ended for another reason than finishing its answer.
pub const EXIT_TURN_INCOMPLETE: u8 = 4;

/// How `lode run` answers permission questions nobody can be asked.
struct RunPolicy {
    /// `--yes-to` patterns, matched against what the policy judged (resolved paths, parsed
    /// commands, tool names), never against a title.
    allowed: HeadlessGrants,
    /// `--ask`: questions `--yes-to` does not answer (must-asks included) are put to the person
    /// at stdin, one answer line each, as `lode chat` does; without it they are refused.
    person: Option<Lines>,
}

/// Lines read from stdin on their own thread, shared by the REPL and permission questions.
type Lines = Arc<tokio::sync::Mutex<mpsc::UnboundedReceiver<String>>>;

/// Reads stdin line by line on a thread of its own (blocking reads never stall the runtime).
fn stdin_lines() -> Lines {
    let (line_sender, line_receiver) = mpsc::unbounded_channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if line_sender.send(line).is_err() {
                break;
            }
        }
    });
    Arc::new(tokio::sync::Mutex::new(line_receiver))
}

/// The `--yes-to` pattern that would approve `request`, for the message that says how.
fn suggested_pattern(request: &PermissionRequest) -> &str {
    match request.subject_kind {
        SubjectKind::Tool => request
            .subjects
            .first()
            .map_or(request.tool.as_str(), String::as_str),
        SubjectKind::Path | SubjectKind::Command => &request.always_pattern,
    }
}

/// What is shown and how permission is answered.
enum Interaction {
    /// `lode run`: deny unless `--yes-to` allows.
    Batch(RunPolicy),
    /// `lode chat`: ask on the terminal, reading answers from the shared stdin line channel.
    Interactive(Lines),
}

/// Renders agent events on the terminal.
struct TerminalHost {
    json: bool,
    interaction: Interaction,
    /// Whether the last thing written to stdout ended a line (tool cards go on their own line).
    at_line_start: Mutex<bool>,
}

impl TerminalHost {
    fn finish_line(&self) {
        let mut at_start = self.at_line_start.lock();
        if !*at_start {
            println!();
            *at_start = true;
        }
    }

    fn render(&self, event: &AgentEvent) {
        match event {
            AgentEvent::TextDelta { text } => {
                print!("{text}");
                let _ = std::io::stdout().flush();
                *self.at_line_start.lock() = text.ends_with('\n');
            }
            AgentEvent::ThoughtDelta { text } => {
                ask!("\x1b[2m{text}\x1b[0m");
            }
            AgentEvent::ToolCallStarted(start) => {
                self.finish_line();
                say!("● {}", start.title);
            }
            AgentEvent::ToolCallUpdated(update) => match update.status {
                ToolStatus::Completed => {
                    for content in &update.content {
                        if let ToolContent::Diff {
                            path,
                            old_text,
                            new_text,
                        } = content
                        {
                            let (added, removed) = line_changes(old_text.as_deref(), new_text);
                            say!("  ⎿ {} (+{added} −{removed})", path.display());
                        }
                    }
                }
                ToolStatus::Failed => {
                    let message = update
                        .content
                        .iter()
                        .find_map(|content| match content {
                            ToolContent::Text { text } => Some(first_line(text)),
                            _ => None,
                        })
                        .unwrap_or("failed");
                    say!("  ⎿ ✗ {message}");
                }
                ToolStatus::Pending | ToolStatus::InProgress => {}
            },
            AgentEvent::Plan { entries } => {
                self.finish_line();
                say!("plan:");
                for entry in entries {
                    let mark = match entry.status {
                        lode_agent::event::PlanStatus::Completed => "☒",
                        lode_agent::event::PlanStatus::InProgress => "◐",
                        lode_agent::event::PlanStatus::Pending => "☐",
                    };
                    say!("  {mark} {}", entry.content);
                }
            }
            AgentEvent::Notice { message } => {
                self.finish_line();
                say!("lode: {message}");
            }
            AgentEvent::UserMessage { text } => {
                self.finish_line();
                println!("> {text}");
            }
            AgentEvent::Usage { .. } | AgentEvent::TitleChanged { .. } => {}
            AgentEvent::TurnFinished { .. } => self.finish_line(),
            // Shown by `emit` on stderr in both modes.
            AgentEvent::IndexProgress { .. } => {}
        }
    }
}

fn first_line(text: &str) -> &str {
    text.lines()
        .find(|line| !line.trim().is_empty() && !line.starts_with('<'))
        .unwrap_or(text)
}

fn line_changes(old: Option<&str>, new: &str) -> (usize, usize) {
    let diff = similar::TextDiff::from_lines(old.unwrap_or(""), new);
    let mut added = 0;
    let mut removed = 0;
    for change in diff.iter_all_changes() {
        match change.tag() {
            similar::ChangeTag::Insert => added += 1,
            similar::ChangeTag::Delete => removed += 1,
            similar::ChangeTag::Equal => {}
        }
    }
    (added, removed)
}

#[async_trait::async_trait]
impl SessionHost for TerminalHost {
    fn emit(&self, event: AgentEvent) {
        // The index's progress goes to stderr, also with --json: stdout is the answer.
        if let AgentEvent::IndexProgress {
            stage, done, total, ..
        } = &event
        {
            if !self.json {
                self.finish_line();
            }
            say!(
                "lode: {}",
                lode_agent::event::index_progress_text(*stage, *done, *total)
            );
            return;
        }
        if self.json {
            if let Ok(line) = serde_json::to_string(&event) {
                println!("{line}");
            }
        } else {
            self.render(&event);
        }
    }

    async fn request_permission(&self, request: PermissionRequest) -> PermissionAnswer {
        match &self.interaction {
            Interaction::Batch(policy) => {
                if !request.must_ask
                    && policy
                        .allowed
                        .approve(false, request.subject_kind, &request.subjects)
                {
                    return PermissionAnswer::AllowOnce;
                }
                if let Some(lines) = &policy.person {
                    return self.ask_person(lines, &request).await;
                }
                if request.must_ask {
                    if !self.json {
                        say!(
                            "lode: refused {}: only a person can approve this ({}); --yes-to \
                             cannot. Answer it with `lode run --ask`, in `lode chat` or in an \
                             editor.",
                            request.title,
                            request.reason
                        );
                    }
                    return PermissionAnswer::RejectOnce;
                }
                if !self.json {
                    say!(
                        "lode: denied {} (not allowed by policy; rerun with --yes-to '{}' to allow)",
                        request.title,
                        suggested_pattern(&request)
                    );
                }
                PermissionAnswer::RejectOnce
            }
            Interaction::Interactive(lines) => self.ask_person(lines, &request).await,
        }
    }
}

impl TerminalHost {
    /// Puts the question to the person at stdin and reads one answer line (no line: no).
    async fn ask_person(&self, lines: &Lines, request: &PermissionRequest) -> PermissionAnswer {
        self.finish_line();
        let network = if request.offer_network {
            " / yes [w]ith network"
        } else {
            ""
        };
        let always = request.offers_always();
        if request.must_ask && !request.reason.is_empty() {
            say!(
                "lode: this needs your decision each time: {}",
                request.reason
            );
        }
        let choices = if always { " / [a]lways / ne[v]er" } else { "" };
        ask!("Allow {}? [y]es{network} / [n]o{choices}: ", request.title);
        let answer = lines.lock().await.recv().await;
        match answer.as_deref().map(str::trim) {
            Some("y" | "yes") => PermissionAnswer::AllowOnce,
            Some("w") if request.offer_network => PermissionAnswer::AllowOnceWithNetwork,
            Some("a" | "always") if always => PermissionAnswer::AllowAlways,
            Some("v" | "never") if always => PermissionAnswer::RejectAlways,
            _ => PermissionAnswer::RejectOnce,
        }
    }
}

/// Options shared by `lode chat` and `lode run`.
pub struct AgentArgs {
    pub root: PathBuf,
    pub options: lode_agent::AgentOptions,
    pub mode: Option<Mode>,
    pub model: Option<String>,
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

fn start_session(agent: &Agent, args: &AgentArgs) -> anyhow::Result<String> {
    let session = agent.new_session(args.root.clone(), Vec::new())?;
    if let Some(mode) = args.mode {
        agent.set_mode(&session.id, mode)?;
    }
    if let Some(model) = &args.model {
        agent.set_model(&session.id, model)?;
    }
    Ok(session.id)
}

/// `lode run PROMPT`: one turn; questions are answered by `--yes-to`, or with `--ask` by the
/// person at stdin. Exit 0 when the model finished its answer.
pub fn run(
    args: AgentArgs,
    prompt: String,
    json: bool,
    yes_to: Vec<String>,
    ask: bool,
) -> anyhow::Result<ExitCode> {
    let allowed = HeadlessGrants::new(&yes_to).context("bad --yes-to pattern")?;
    let person = ask.then(stdin_lines);
    let host = Arc::new(TerminalHost {
        json,
        interaction: Interaction::Batch(RunPolicy { allowed, person }),
        at_line_start: Mutex::new(true),
    });
    let runtime = runtime()?;
    runtime.block_on(async move {
        let agent = Agent::open(&args.root, args.options.clone())?;
        announce_detected_provider(&agent);
        let session = start_session(&agent, &args)?;
        let cancel = CancellationToken::new();
        let on_interrupt = cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                on_interrupt.cancel();
            }
        });
        let stop = agent
            .prompt(
                &session,
                vec![UserInput::Text(prompt)],
                host.clone(),
                cancel,
            )
            .await?;
        host.finish_line();
        if !json && stop != StopReason::EndTurn {
            say!("lode: the turn ended: {}", stop_reason_text(stop));
        }
        Ok(if stop == StopReason::EndTurn {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(EXIT_TURN_INCOMPLETE)
        })
    })
}

/// Says on stderr which provider lode took from the environment, and why (zero-config models).
pub fn announce_detected_provider(agent: &Agent) {
    if let Some(detected) = agent.detected_provider() {
        say!("lode: {}", detected.notice());
    }
}

fn stop_reason_text(stop: StopReason) -> &'static str {
    match stop {
        StopReason::EndTurn => "finished",
        StopReason::MaxTokens => "the model hit its output limit",
        StopReason::MaxTurnRequests => "the tool-iteration limit was reached",
        StopReason::Refusal => "the model refused",
        StopReason::Cancelled => "cancelled",
    }
}

/// `lode chat`: a REPL. Lines starting with `/` are lode's commands; Ctrl-C cancels a running turn.
pub fn chat(args: AgentArgs, resume: Option<String>) -> anyhow::Result<ExitCode> {
    let runtime = runtime()?;
    runtime.block_on(async move {
        let agent = Agent::open(&args.root, args.options.clone())?;
        announce_detected_provider(&agent);
        // Lines reach the REPL and permission prompts through one channel, so both read from
        // the same place in order.
        let lines = stdin_lines();
        let host = Arc::new(TerminalHost {
            json: false,
            interaction: Interaction::Interactive(lines.clone()),
            at_line_start: Mutex::new(true),
        });
        let mut session = match resume {
            Some(id) => {
                let (info, history) = agent.load_session(&id)?;
                for event in history {
                    host.emit(event);
                }
                host.finish_line();
                info.id
            }
            None => start_session(&agent, &args)?,
        };
        let interactive = std::io::stdin().is_terminal();
        if interactive {
            say!("lode chat: session {session}. /help for commands, Ctrl-D to leave.");
            say!("lode chat: {}", agent.sandbox().status().describe());
        }
        loop {
            if interactive {
                ask!("› ");
            }
            let Some(line) = lines.lock().await.recv().await else {
                break;
            };
            let line = line.trim().to_owned();
            if line.is_empty() {
                continue;
            }
            if line == "/quit" || line == "/exit" {
                break;
            }
            if line == "/clear" {
                session = start_session(&agent, &args)?;
                say!("lode: new session {session}");
                continue;
            }
            let cancel = CancellationToken::new();
            let on_interrupt = cancel.clone();
            let watcher = tokio::spawn(async move {
                if tokio::signal::ctrl_c().await.is_ok() {
                    on_interrupt.cancel();
                }
            });
            let outcome = agent
                .prompt(&session, vec![UserInput::Text(line)], host.clone(), cancel)
                .await;
            watcher.abort();
            host.finish_line();
            match outcome {
                Ok(StopReason::EndTurn) => {}
                Ok(stop) => say!("lode: the turn ended: {}", stop_reason_text(stop)),
                Err(error) => say!("lode: {error}"),
            }
        }
        Ok(ExitCode::SUCCESS)
    })
}

/// Parses `--mode`.
pub fn parse_mode_flag(text: &str) -> Result<Mode, String> {
    Mode::ALL
        .into_iter()
        .find(|mode| mode.as_str() == text)
        .ok_or_else(|| format!("unknown mode {text:?}: ask, code or architect"))
}

/// The agent options from the global workspace flags and the agent flags.
pub fn agent_args(
    workspace: &crate::commands::WorkspaceArgs,
    flags: crate::commands::AgentFlags,
) -> anyhow::Result<AgentArgs> {
    let root = crate::commands::resolve_root(workspace, None)?;
    let setup = AgentSetup::from_args(workspace)?;
    Ok(AgentArgs {
        options: setup.options_for(&root, workspace.index_dir.clone())?,
        root,
        mode: flags.mode,
        model: flags.model,
    })
}

/// What opening an agent takes from the global flags, whatever its workspace: one process that
/// opens several workspaces (`lode acp`) builds the embedder once and shares it.
pub struct AgentSetup {
    config_file: Option<PathBuf>,
    scan: lode_index::ScanOptions,
    embedder: Option<Arc<dyn lode_index::Embedder>>,
    vector_store: crate::qdrant_cli::VectorStoreArgs,
}

impl AgentSetup {
    pub fn from_args(workspace: &crate::commands::WorkspaceArgs) -> anyhow::Result<AgentSetup> {
        let flags = &workspace.vector_store;
        Ok(AgentSetup {
            config_file: workspace.config.clone(),
            scan: crate::commands::scan_options(workspace),
            embedder: crate::semantic_cli::embedder(&workspace.embedding)?,
            vector_store: crate::qdrant_cli::VectorStoreArgs {
                vectors: flags.vectors.clone(),
                qdrant_url: flags.qdrant_url.clone(),
                qdrant_api_key_env: flags.qdrant_api_key_env.clone(),
            },
        })
    }

    /// The `--config` file, if one was given.
    pub fn config_file(&self) -> Option<&std::path::Path> {
        self.config_file.as_deref()
    }

    /// The options of the agent on `root`: its own diagnostics source and vector store, its
    /// index in `index_dir` (`None`: `<root>/.lode/index`).
    pub fn options_for(
        &self,
        root: &std::path::Path,
        index_dir: Option<PathBuf>,
    ) -> anyhow::Result<lode_agent::AgentOptions> {
        let sources = crate::diagnostics_adapter::sources_for(root, self.config_file.as_deref())?;
        let (diagnostics, navigation) = match sources {
            Some(sources) => (Some(sources.diagnostics), Some(sources.navigation)),
            None => (None, None),
        };
        Ok(lode_agent::AgentOptions {
            config_file: self.config_file.clone(),
            index_dir,
            scan: Some(self.scan.clone()),
            index: None,
            embedder: self.embedder.clone(),
            vector_store: crate::qdrant_cli::vector_store(
                &self.vector_store,
                root,
                self.embedder.as_ref(),
            )?,
            data_dir: None,
            state_dir: None,
            diagnostics,
            navigation,
            sandbox_launcher: crate::sandbox_command::launcher(),
            allow_no_provider: false,
            provider_env: None,
        })
    }
}

//! The command line: argument definitions and what each command does.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, bail};
use clap::{Args, Parser, Subcommand};
use lode_index::{
    Answer, ChunkSizes, DEFAULT_MAX_FILE_BYTES, FieldBoosts, Freshness, IndexError, Language,
    Query, RefreshProgress, ScanOptions, SearchRequest, Workspace, WorkspaceOptions,
};

use crate::output::progress_bar;
use crate::render::say;
use crate::root::discover_root;

/// lode: an editor-native coding agent with a live model of your code.
#[derive(Debug, Parser)]
#[command(
    name = "lode",
    version,
    about = "An editor-native coding agent with a live model of your code",
    propagate_version = true
)]
pub struct Cli {
    #[command(flatten)]
    pub workspace: WorkspaceArgs,
    #[command(flatten)]
    pub log: crate::logging::LogArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// Options shared by every command that touches a workspace.
#[derive(Debug, Args)]
#[command(next_help_heading = "Workspace options (every command)")]
pub struct WorkspaceArgs {
    /// Workspace root (default: the nearest ancestor with .lode/ or .git, else the current dir).
    #[arg(long, global = true, value_name = "PATH")]
    pub root: Option<PathBuf>,
    /// The config file with the highest precedence (then $LODE_CONFIG, <root>/.lode/config.toml,
    /// the user config dir).
    #[arg(long, global = true, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// Where the index lives (default: <root>/.lode/index). Also $LODE_INDEX_DIR.
    #[arg(long, global = true, value_name = "PATH", env = "LODE_INDEX_DIR")]
    pub index_dir: Option<PathBuf>,
    /// Extra gitignore-style patterns to leave out of the index (repeatable).
    #[arg(long, global = true, value_name = "GLOB")]
    pub exclude: Vec<String>,
    /// Skip files larger than this many bytes.
    #[arg(long, global = true, value_name = "BYTES", default_value_t = DEFAULT_MAX_FILE_BYTES)]
    pub max_file_size: u64,
    /// Benchmark knob: chunk sizes in non-whitespace bytes as TARGET,MAX,MIN.
    #[arg(long, global = true, hide = true, value_name = "T,M,m", value_parser = parse_chunk_sizes)]
    pub chunk_sizes: Option<ChunkSizes>,
    #[command(flatten)]
    pub embedding: crate::semantic_cli::EmbedderArgs,
    #[command(flatten)]
    pub vector_store: crate::qdrant_cli::VectorStoreArgs,
}

fn parse_numbers<const N: usize>(text: &str) -> Result<[f64; N], String> {
    let numbers: Vec<f64> = text
        .split(',')
        .map(|part| {
            part.trim()
                .parse::<f64>()
                .map_err(|e| format!("{part:?}: {e}"))
        })
        .collect::<Result<_, _>>()?;
    numbers
        .try_into()
        .map_err(|_| format!("expected {N} comma-separated numbers"))
}

fn parse_chunk_sizes(text: &str) -> Result<ChunkSizes, String> {
    let [target, max, min] = parse_numbers::<3>(text)?;
    Ok(ChunkSizes {
        target: target as usize,
        max: max as usize,
        min: min as usize,
    })
}

/// `W` (every role) or `TEST,FIXTURE,GENERATED,DATA,HEADER`.
fn parse_demotions(text: &str) -> Result<lode_index::DemotionWeights, String> {
    if !text.contains(',') {
        let [weight] = parse_numbers::<1>(text)?;
        return Ok(lode_index::DemotionWeights::uniform(weight as f32));
    }
    let [test, fixture, generated, data, header] = parse_numbers::<5>(text)?;
    Ok(lode_index::DemotionWeights {
        test: test as f32,
        fixture: fixture as f32,
        generated: generated as f32,
        data: data as f32,
        header: header as f32,
    })
}

fn parse_boosts(text: &str) -> Result<FieldBoosts, String> {
    let [symbols, path, content] = parse_numbers::<3>(text)?;
    Ok(FieldBoosts {
        symbols: symbols as f32,
        path: path as f32,
        content: content as f32,
    })
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Build or update the index of a workspace.
    Index {
        /// The workspace root (overrides --root).
        path: Option<PathBuf>,
        /// Also print how long each phase took.
        #[arg(long, short = 'v')]
        verbose: bool,
    },
    /// Ranked code chunks for a query (words or identifiers).
    Search {
        query: String,
        /// At most this many hits.
        #[arg(long, short = 'n', default_value_t = 10)]
        limit: usize,
        /// Only files matching this glob (`*.rs`, `src/**`).
        #[arg(long, value_name = "GLOB")]
        path: Option<String>,
        /// Only files in this language (rust, python, javascript, typescript, tsx, go, text).
        #[arg(long, value_name = "LANG")]
        lang: Option<String>,
        /// Benchmark knob: field weights as SYMBOLS,PATH,CONTENT.
        #[arg(long, hide = true, value_parser = parse_boosts)]
        boosts: Option<FieldBoosts>,
        /// lexical (BM25), semantic (vectors) or hybrid (both, fused; the default when the
        /// index has vectors, else lexical).
        #[arg(long, value_name = "MODE")]
        mode: Option<lode_index::SearchMode>,
        /// Benchmark knob: hybrid fusion weights for all query shapes, as
        /// LEXICAL,SEMANTIC,SYMBOLS,K[,TABLE] (reciprocal rank fusion),
        /// scores:LEXICAL,SEMANTIC,SYMBOLS[,TABLE] (score fusion) or
        /// standard:LEXICAL,SEMANTIC,SYMBOLS[,TABLE] (standard scores); TABLE weighs the built-in
        /// table's cosine over the candidates when the vectors come from another embedder.
        #[arg(long, hide = true, value_parser = crate::semantic_cli::parse_fusion)]
        fusion: Option<lode_index::FusionWeights>,
        /// Benchmark knob: penalties of tests, fixtures, generated files, data files and module
        /// headers, as W (all) or TEST,FIXTURE,GENERATED,DATA,HEADER (0 turns one off).
        #[arg(long, hide = true, value_parser = parse_demotions)]
        demotions: Option<lode_index::DemotionWeights>,
        #[command(flatten)]
        common: QueryArgs,
    },
    /// Definitions by name: exact, then prefix, substring and fuzzy matches.
    Symbols {
        name: String,
        #[arg(long, short = 'n', default_value_t = 20)]
        limit: usize,
        #[command(flatten)]
        common: QueryArgs,
    },
    /// References (calls, type uses, imports, macro uses) to a name.
    Refs {
        name: String,
        #[arg(long, short = 'n', default_value_t = 100)]
        limit: usize,
        #[command(flatten)]
        common: QueryArgs,
    },
    /// A map of the repository's most relevant definitions, fitted to a token budget.
    Map {
        /// Token budget (cl100k tokens).
        #[arg(long, default_value_t = 1024)]
        tokens: usize,
        /// A file the task is about (repeatable); the map favours what it uses.
        #[arg(long, value_name = "FILE")]
        focus: Vec<PathBuf>,
        /// An identifier the task mentions (repeatable).
        #[arg(long, value_name = "IDENT")]
        mention: Vec<String>,
        #[command(flatten)]
        common: QueryArgs,
    },
    /// Chat with the agent in the terminal (a REPL; /help lists lode's commands).
    Chat {
        /// Continue a stored session (its history is shown first).
        #[arg(long, value_name = "SESSION_ID")]
        resume: Option<String>,
        #[command(flatten)]
        agent: AgentFlags,
    },
    /// Run one prompt non-interactively. Tools that need permission are denied unless the
    /// policy or --yes-to allows them. Exit 0 when the agent finished, 4 when it stopped early.
    Run {
        prompt: String,
        /// Print every event as one JSON object per line.
        #[arg(long)]
        json: bool,
        /// Allow a tool call when everything the policy judged matches one of these globs
        /// (repeatable): each edited file's resolved workspace-relative path (`--yes-to
        /// 'src/**'`), each simple command of a command line (`--yes-to 'cargo test*'`), or an
        /// MCP tool's name. Never the title; never a call only a person may approve (`$(…)`,
        /// `eval`, edits under .git/ or .lode/, …).
        #[arg(long, value_name = "PATTERN")]
        yes_to: Vec<String>,
        /// Put the questions --yes-to does not answer to the person at stdin, one answer line
        /// each (`y`, `n`, `w` = yes with network, `a` = always), as `lode chat` does: the way
        /// to approve what only a person may approve from a script you control. Without it
        /// they are refused.
        #[arg(long)]
        ask: bool,
        #[command(flatten)]
        agent: AgentFlags,
    },
    /// The background daemon that keeps a large workspace's index current and answers its
    /// queries from memory: start, status, stop. A query starts one by itself in a workspace
    /// of 2,000 files or more unless `[index] daemon = "never"` or `LODE_DAEMON=never`.
    Daemon(crate::daemon_command::DaemonArgs),
    /// Keep the index current from file-system events until Ctrl-C (logs on stderr). While it
    /// runs, query commands skip their freshness check: they ask it to flush instead.
    Watch {
        /// The workspace root (overrides --root).
        path: Option<PathBuf>,
        /// Also log every batch and every flush a query asked for.
        #[arg(long, short = 'v')]
        verbose: bool,
    },
    /// Serve the Language Server Protocol over stdio (for Helix, Neovim, VS Code, ...).
    Lsp(crate::lsp_command::LspArgs),
    /// Serve the Agent Client Protocol on stdio (Zed, VS Code ACP clients, ...), or over HTTP
    /// and WebSocket with --http.
    Acp(crate::acp_command::AcpArgs),
    /// Serve lode's code intelligence (search, map, symbols, references, read_file) as MCP
    /// tools on stdio, for other agents (Claude Code, Codex, Zed, ...).
    Mcp(crate::mcp_command::McpArgs),
    /// Ask a running `lode acp --http` one question (an ACP client for Helix and scripts):
    /// the answer streams to stdout, stdin is attached as context, named sessions continue.
    /// Exit 0 when the agent finished, 4 when it stopped early.
    Ask(crate::ask_command::AskArgs),
    /// Print the effective configuration (files layered, defaults filled, secrets redacted)
    /// and the files it came from.
    Config(crate::config_command::ConfigArgs),
    /// Skills: list them, show one, trust or revoke a workspace skill.
    Skill(crate::skill_command::SkillArgs),
    /// Review and trust the workspace's own settings (.lode/config.toml). Until you do, they
    /// can only tighten lode: no providers, MCP servers, allow rules or server commands.
    Trust(crate::trust_command::TrustArgs),
    /// Check what lode depends on and explain each finding with its fix: providers reachable,
    /// credentials present (never shown), the index, the daemon or watcher, the sandbox,
    /// language servers, editor configs, Qdrant. Exit 0 when nothing failed, 1 otherwise.
    Doctor(crate::doctor::DoctorArgs),
    /// What the command sandbox can enforce here (Landlock, seccomp, namespaces), the profile
    /// commands get in this workspace, and a live self-test. Exit 3 when commands would run
    /// unconfined (unless `[sandbox] mode = "off"` says so).
    SandboxCheck(crate::sandbox_command::SandboxCheckArgs),
    /// Print the shell completion script for bash, zsh, fish, elvish or powershell, e.g.
    /// `lode completions bash > ~/.local/share/bash-completion/completions/lode`.
    Completions {
        /// The shell to complete in.
        shell: clap_complete::Shell,
    },
    /// Print lode's manual page (roff), or write one page per command into --dir, e.g.
    /// `lode man --dir ~/.local/share/man/man1`.
    Man {
        /// Write `lode.1` and a page for every command (`lode-search.1`, ...) into this
        /// directory instead of printing `lode.1`.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// Benchmark reference: parse every indexable file with tree-sitter and report the time.
    #[command(hide = true)]
    ParseOnly {
        path: Option<PathBuf>,
        /// Parse only; skip the tags query.
        #[arg(long)]
        no_tags: bool,
    },
    /// Test support: serve a scripted LLM (OpenAI and Anthropic APIs) on 127.0.0.1 until killed.
    #[command(hide = true)]
    LlmScript {
        /// The script (see docs/providers.md and fixtures/llm/).
        #[arg(long, value_name = "FILE")]
        script: PathBuf,
        /// The port; 0 picks a free one. The address is printed as `listening on URL`.
        #[arg(long, default_value_t = 0)]
        port: u16,
    },
}

/// Options of the agent commands.
#[derive(Debug, Args)]
pub struct AgentFlags {
    /// Start in this mode: ask (read-only), code, architect (plans, no edits).
    #[arg(long, value_name = "MODE", value_parser = crate::agent_cli::parse_mode_flag)]
    pub mode: Option<lode_policy::Mode>,
    /// Use this configured provider (its `name`) instead of the default.
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
}

/// Options of the query commands.
#[derive(Debug, Args)]
pub struct QueryArgs {
    /// Print JSON Lines (one object per line) instead of text.
    #[arg(long)]
    pub json: bool,
    /// Query the index as it is, without first bringing it up to date.
    #[arg(long)]
    pub no_refresh: bool,
    /// Say on stderr how the index was brought up to date (a watcher's flush or a check of
    /// every file) and how long that took.
    #[arg(long, short = 'v')]
    pub verbose: bool,
}

pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let args = cli.workspace;
    match cli.command {
        Command::Index { path, verbose } => {
            crate::index_command::run_index(&args, path.as_deref(), verbose)
        }
        Command::Search {
            query,
            limit,
            path,
            lang,
            boosts,
            mode,
            fusion,
            demotions,
            common,
        } => search(
            &args, &common, query, limit, path, lang, boosts, mode, fusion, demotions,
        ),
        Command::Symbols {
            name,
            limit,
            common,
        } => {
            let query = Query::Symbols { name, limit };
            let answer = crate::served::answer(&args, &common, query, Needs::CatalogOnly)?;
            print_answer(&answer, common.json)
        }
        Command::Refs {
            name,
            limit,
            common,
        } => {
            let query = Query::References { name, limit };
            let answer = crate::served::answer(&args, &common, query, Needs::CatalogOnly)?;
            print_answer(&answer, common.json)
        }
        Command::Map {
            tokens,
            focus,
            mention,
            common,
        } => map(&args, &common, tokens, &focus, mention),
        Command::Chat { resume, agent } => {
            crate::agent_cli::chat(crate::agent_cli::agent_args(&args, agent)?, resume)
        }
        Command::Run {
            prompt,
            json,
            yes_to,
            ask,
            agent,
        } => crate::agent_cli::run(
            crate::agent_cli::agent_args(&args, agent)?,
            prompt,
            json,
            yes_to,
            ask,
        ),
        Command::Watch { path, verbose } => {
            crate::watch_command::run_watch(&args, path.as_deref(), verbose)
        }
        Command::Daemon(daemon) => crate::daemon_command::run(&args, daemon),
        Command::Completions { shell } => {
            crate::shell_command::completions(shell)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Man { dir } => {
            crate::shell_command::man(dir.as_deref())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Lsp(lsp) => crate::lsp_command::run_lsp(&args, lsp),
        Command::Acp(acp) => crate::acp_command::run_acp(&args, acp),
        Command::Mcp(mcp) => crate::mcp_command::run_mcp(&args, mcp),
        Command::Ask(ask) => crate::ask_command::run_ask(&args, ask),
        Command::Config(config) => crate::config_command::run_config(&args, config),
        Command::Skill(skill) => crate::skill_command::run_skill(&args, skill),
        Command::Trust(trust) => crate::trust_command::run_trust(&args, trust),
        Command::SandboxCheck(check) => crate::sandbox_command::run(&args, check),
        Command::Doctor(doctor) => crate::doctor::run(&args, doctor),
        Command::ParseOnly { path, no_tags } => parse_only(&args, path.as_deref(), no_tags),
        Command::LlmScript { script, port } => crate::llm_script_command::run(&script, port),
    }
}

/// `lode search`: a query the lease holder or this process answers; the benchmark knobs are
/// always answered here.
#[allow(clippy::too_many_arguments)]
fn search(
    args: &WorkspaceArgs,
    common: &QueryArgs,
    query: String,
    limit: usize,
    path: Option<String>,
    lang: Option<String>,
    boosts: Option<FieldBoosts>,
    mode: Option<lode_index::SearchMode>,
    fusion: Option<lode_index::FusionWeights>,
    demotions: Option<lode_index::DemotionWeights>,
) -> anyhow::Result<ExitCode> {
    if let Some(name) = &lang
        && Language::from_name(name).is_none()
    {
        bail!("unknown language {name:?} (rust, python, javascript, typescript, tsx, go, text)");
    }
    if boosts.is_some() || fusion.is_some() || demotions.is_some() {
        // Benchmark knobs: always answered here, never by a lease holder.
        return search_with_knobs(
            args, common, query, limit, path, lang, boosts, mode, fusion, demotions,
        );
    }
    let query = Query::Search {
        query,
        limit,
        path_glob: path,
        language: lang,
        mode: mode.map(|mode| mode.name().to_owned()),
    };
    let answer = crate::served::answer(args, common, query, Needs::Everything)?;
    print_answer(&answer, common.json)
}

/// `lode map`: the repo map, personalised to `focus` files and mentioned names.
fn map(
    args: &WorkspaceArgs,
    common: &QueryArgs,
    tokens: usize,
    focus: &[PathBuf],
    mention: Vec<String>,
) -> anyhow::Result<ExitCode> {
    let root = canonical_root(args)?;
    let focus_files = focus
        .iter()
        .map(|file| lode_index::relative_to_root(&root, file))
        .collect::<Result<Vec<_>, _>>()?;
    let query = Query::Map {
        max_tokens: tokens,
        focus_files,
        mentions: mention,
    };
    let answer = crate::served::answer(args, common, query, Needs::CatalogOnly)?;
    print_answer(&answer, common.json)
}

/// `lode parse-only`: the benchmark reference pass (parsing alone, no index writes).
fn parse_only(
    args: &WorkspaceArgs,
    path: Option<&Path>,
    no_tags: bool,
) -> anyhow::Result<ExitCode> {
    let root = resolve_root(args, path)?;
    let report = crate::parse_only::parse_everything(&root, &scan_options(args), !no_tags)?;
    println!("{report}");
    Ok(ExitCode::SUCCESS)
}

/// Prints an answer as text or JSON Lines; exit 1 when it holds nothing (a map always counts).
fn print_answer(answer: &Answer, json: bool) -> anyhow::Result<ExitCode> {
    Ok(crate::render::print_answer(answer, json)?)
}

/// `lode search` with the hidden benchmark knobs (field boosts, fusion weights, demotions).
#[allow(clippy::too_many_arguments)]
fn search_with_knobs(
    args: &WorkspaceArgs,
    common: &QueryArgs,
    query: String,
    limit: usize,
    path: Option<String>,
    lang: Option<String>,
    boosts: Option<FieldBoosts>,
    mode: Option<lode_index::SearchMode>,
    fusion: Option<lode_index::FusionWeights>,
    demotions: Option<lode_index::DemotionWeights>,
) -> anyhow::Result<ExitCode> {
    let (workspace, _) = open_fresh(args, common, Needs::Everything, None)?;
    let request = SearchRequest {
        query,
        limit,
        path_glob: path,
        language: lang.as_deref().and_then(Language::from_name),
        boosts,
        demotions,
    };
    // Asking whether there are vectors opens the store: only when no mode was given.
    let mode = mode.unwrap_or_else(|| {
        if workspace.has_vectors() {
            lode_index::SearchMode::Hybrid
        } else {
            lode_index::SearchMode::Lexical
        }
    });
    let hits = match fusion {
        Some(weights) if mode == lode_index::SearchMode::Hybrid => {
            workspace.search_hybrid_with(&request, weights)?
        }
        _ => workspace.search_with_mode(&request, mode)?,
    };
    report_repairs(&workspace);
    let mode = mode.name().to_owned();
    print_answer(
        &Answer::Search {
            mode,
            hits,
            below_floor: None,
        },
        common.json,
    )
}

pub fn scan_options(args: &WorkspaceArgs) -> ScanOptions {
    ScanOptions {
        max_file_bytes: args.max_file_size,
        exclude: args.exclude.clone(),
    }
}

pub fn resolve_root(args: &WorkspaceArgs, explicit: Option<&Path>) -> anyhow::Result<PathBuf> {
    let root = match explicit.or(args.root.as_deref()) {
        Some(path) => path.to_path_buf(),
        None => {
            discover_root(&std::env::current_dir().context("cannot read the current directory")?)
        }
    };
    if !root.is_dir() {
        bail!("workspace root {} is not a directory", root.display());
    }
    Ok(root)
}

/// The workspace root, canonical as the index names it.
pub fn canonical_root(args: &WorkspaceArgs) -> anyhow::Result<PathBuf> {
    let root = resolve_root(args, None)?;
    std::fs::canonicalize(&root).with_context(|| format!("cannot resolve {}", root.display()))
}

pub fn open(args: &WorkspaceArgs, explicit_root: Option<&Path>) -> anyhow::Result<Workspace> {
    open_for(args, explicit_root, Needs::Everything, None)
}

/// What a command reads from the index.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Needs {
    /// Search: the lexical index and vectors too.
    Everything,
    /// Symbols, references, the repo map: only the catalog. A derived index that would have
    /// to be built from scratch is left to the next command that needs it
    /// (`WorkspaceOptions::defer_derived`).
    CatalogOnly,
}

/// An embedder the caller already made from the same arguments (an HTTP embedder may have
/// asked its service for the vector length: once per run is enough).
pub(crate) type MadeEmbedder = Option<Option<std::sync::Arc<dyn lode_index::Embedder>>>;

pub(crate) fn open_for(
    args: &WorkspaceArgs,
    explicit_root: Option<&Path>,
    needs: Needs,
    embedder: MadeEmbedder,
) -> anyhow::Result<Workspace> {
    let root = resolve_root(args, explicit_root)?;
    let mut options = WorkspaceOptions::new(&root);
    options.defer_derived = needs == Needs::CatalogOnly;
    options.index_dir = args.index_dir.clone();
    options.scan = scan_options(args);
    if let Some(sizes) = args.chunk_sizes {
        options.chunk_sizes = sizes;
    }
    options.embedder = match embedder {
        Some(embedder) => embedder,
        None => crate::semantic_cli::embedder(&args.embedding)?,
    };
    options.vector_store =
        crate::qdrant_cli::vector_store(&args.vector_store, &root, options.embedder.as_ref())?;
    if let Some(files) = std::env::var("LODE_CHECKPOINT_FILES")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        options.checkpoint_files = files;
    }
    tracing::debug!(
        root = %root.display(),
        index_dir = ?options.index_dir,
        embedder = ?options.embedder.as_ref().map(|embedder| embedder.identity()),
        "opening the index"
    );
    let workspace = Workspace::open(options)
        .with_context(|| format!("cannot open the index of {}", root.display()))?;
    report_repairs(&workspace);
    Ok(workspace)
}

/// Logs what the workspace repaired since the last call: `open` checks the catalog and the
/// lexical index, the vector store is checked when a command first uses it.
pub(crate) fn report_repairs(workspace: &Workspace) {
    for repair in workspace.take_repairs() {
        tracing::warn!("repaired the index: {repair}");
    }
}

/// Opens the workspace and, unless told not to, brings the index up to date first: through the
/// watcher that holds the index's lease (`lode watch`, `lode lsp`, `lode acp`) when one answers,
/// else by checking every file the last walk saw.
pub(crate) fn open_fresh(
    args: &WorkspaceArgs,
    query: &QueryArgs,
    needs: Needs,
    embedder: MadeEmbedder,
) -> anyhow::Result<(Workspace, Option<Freshness>)> {
    let workspace = open_for(args, None, needs, embedder)?;
    if query.no_refresh {
        if query.verbose {
            say!("lode: freshness: not checked (--no-refresh)");
        }
        return Ok((workspace, None));
    }
    let started = Instant::now();
    let freshness = with_progress_bar(&workspace, |progress| workspace.bring_up_to_date(progress))
        .with_context(|| format!("cannot index {}", workspace.root().display()))?;
    match &freshness {
        Freshness::Watched(flushed) if query.verbose => say!(
            "lode: freshness: watcher (pid {}) flushed {} changed paths in {:.1} ms; 0 files checked",
            flushed.watcher_pid,
            flushed.applied,
            flushed.elapsed.as_secs_f64() * 1000.0
        ),
        Freshness::Checked { not_watched, stats } if query.verbose => say!(
            "lode: freshness: quick check ({not_watched}); {} files checked{}, {} parsed, {} removed in {:.1} ms",
            stats.files,
            if stats.walked { " by a full walk" } else { "" },
            stats.parsed,
            stats.removed,
            started.elapsed().as_secs_f64() * 1000.0
        ),
        // Another lode is writing: answer from the index as it stands.
        Freshness::Locked { not_watched } => {
            say!("lode: another process is updating the index; searching it as it is");
            if query.verbose {
                say!("lode: freshness: not checked ({not_watched}; the index is locked)");
            }
        }
        _ => {}
    }
    Ok((workspace, Some(freshness)))
}

/// Runs an index update with a progress bar on stderr (none when it is not a terminal), then
/// reports what was repaired.
pub(crate) fn with_progress_bar<T>(
    workspace: &Workspace,
    update: impl FnOnce(&(dyn Fn(RefreshProgress) + Sync)) -> Result<T, IndexError>,
) -> Result<T, IndexError> {
    let bar = progress_bar("indexing");
    let result = update(&|progress| {
        if progress.phase == lode_index::RefreshPhase::Embed {
            crate::semantic_cli::show_embedding(&bar);
        }
        bar.set_length(progress.total as u64);
        bar.set_position(progress.done as u64);
    });
    bar.finish_and_clear();
    report_repairs(workspace);
    result
}

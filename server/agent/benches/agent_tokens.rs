//! What the agent sends: the tokens of a session's first model request, the input tokens of a
//! scripted session in all, and how much of each request is a prefix of the next one (what a
//! provider's prompt cache can reuse).
//!
//! A real `Agent` (real index, tools, SQLite) on a copy of a small crate talks to the scripted LLM
//! server, which records every request. Every turn reads a large file, searches the code, then
//! answers (`fixtures/llm/agent_tokens.json`), so tool output piles up and the session prunes and
//! compacts as it goes. Run once per profile: `full` (a 128k window) and `lean` (a 4096-token
//! window, what Ollama keeps by default).
//!
//! Tokens are cl100k, counted the way the agent budgets a request: each tool's name, description
//! and JSON schema, the system prompt, and every message's text, tool calls and tool results,
//! with a small framing cost per message and per tool. The prefix figure compares each request's
//! serialized input (tools, system prompt, then the messages, as JSON) with the next one's.
//!
//! `cargo bench -p lode-agent --bench agent_tokens -- [--turns N] [--source DIR]
//! [--profile full|lean]` (or `bench/agent/tokens.sh`).

mod support;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use lode_agent::context::count_tokens;
use lode_agent::event::{AgentEvent, StopReason};
use lode_agent::host::SessionHost;
use lode_agent::{Agent, AgentOptions, UserInput};
use lode_llm_script::{RecordedRequest, Script, ScriptedServer};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// Counts compactions; read-only tools need no permission.
#[derive(Default)]
struct CountingHost {
    compactions: std::sync::atomic::AtomicUsize,
}

impl SessionHost for CountingHost {
    fn emit(&self, event: AgentEvent) {
        if let AgentEvent::Notice { message } = event
            && message.starts_with("compacted ")
        {
            self.compactions
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

struct Options {
    turns: usize,
    source: PathBuf,
    profiles: Vec<Profile>,
}

#[derive(Clone, Copy)]
struct Profile {
    name: &'static str,
    context_window: u32,
    max_tokens: u32,
}

const FULL: Profile = Profile {
    name: "full",
    context_window: 128_000,
    max_tokens: 4_096,
};
const LEAN: Profile = Profile {
    name: "lean",
    context_window: 4_096,
    max_tokens: 1_024,
};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn parse_options() -> Result<Options, String> {
    let mut options = Options {
        turns: 30,
        source: repo_root().join("fixtures/agent/calculator"),
        profiles: vec![FULL, LEAN],
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--turns" => {
                options.turns = value("--turns")?
                    .parse()
                    .map_err(|e| format!("--turns: {e}"))?
            }
            "--source" => options.source = PathBuf::from(value("--source")?),
            "--profile" => {
                options.profiles = match value("--profile")?.as_str() {
                    "full" => vec![FULL],
                    "lean" => vec![LEAN],
                    other => return Err(format!("--profile: full or lean, not {other:?}")),
                }
            }
            // `cargo bench` passes `--bench`; libtest-style filters are not used here.
            "--bench" => {}
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(options)
}

/// A generated Rust file of about 12k characters: what the session reads every turn.
fn large_file() -> String {
    let mut text = String::from("//! Generated operations, read whole by the benchmark.\n\n");
    for index in 0..120 {
        text.push_str(&format!(
            "/// Applies operation {index} to both operands.\npub fn operation_{index}(left: i64, right: i64) -> i64 {{\n    left * {index} + right\n}}\n\n"
        ));
    }
    text
}

/// What one session sent.
struct Measured {
    requests: Vec<RecordedRequest>,
    compactions: usize,
}

async fn run(options: &Options, profile: Profile) -> Result<Measured, Box<dyn std::error::Error>> {
    let script = Script::load(&repo_root().join("fixtures/llm/agent_tokens.json"))?;
    let server = ScriptedServer::start(script).await?;
    let dir = tempfile::tempdir()?;
    let root = dir.path().join("workspace");
    support::copy_dir(&options.source, &root)?;
    std::fs::write(root.join("src/operations.rs"), large_file())?;
    std::fs::create_dir_all(root.join(".lode"))?;
    std::fs::write(
        root.join(".lode/config.toml"),
        format!(
            "[[llm.providers]]\nname = \"scripted\"\nkind = \"openai\"\nbase_url = \"{}\"\nmodel = \"bench\"\ncontext_window = {}\nmax_tokens = {}\n",
            server.openai_base_url(),
            profile.context_window,
            profile.max_tokens,
        ),
    )?;
    // Named as the user's own configuration (`--config`); the user's state lives in the
    // benchmark's folder.
    let agent = Agent::open(
        &root,
        AgentOptions {
            config_file: Some(root.join(".lode/config.toml")),
            state_dir: Some(dir.path().join("user-state")),
            ..AgentOptions::default()
        },
    )?;
    let session = agent.new_session(root.clone(), Vec::new())?;
    let host = Arc::new(CountingHost::default());
    for turn in 0..options.turns {
        let stop = agent
            .prompt(
                &session.id,
                vec![UserInput::Text(format!(
                    "Question {turn}: which operation adds the operands, and how is add tested?"
                ))],
                host.clone(),
                CancellationToken::new(),
            )
            .await?;
        if stop != StopReason::EndTurn {
            return Err(format!("turn {turn} stopped with {stop:?}").into());
        }
    }
    let requests = server
        .requests()
        .into_iter()
        // The summary requests of compactions are not the session's.
        .filter(|request| request.body["tools"].is_array())
        .collect();
    Ok(Measured {
        requests,
        compactions: host.compactions.load(std::sync::atomic::Ordering::Relaxed),
    })
}

/// cl100k tokens of an OpenAI-style request body, counted as the agent budgets one.
fn request_tokens(body: &Value) -> usize {
    let text = |value: &Value| match value {
        Value::String(text) => count_tokens(text),
        Value::Null => 0,
        Value::Array(parts) => parts
            .iter()
            .map(|part| part["text"].as_str().map_or(0, count_tokens))
            .sum(),
        other => count_tokens(&other.to_string()),
    };
    let tools: usize = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|tool| {
            let function = &tool["function"];
            count_tokens(function["name"].as_str().unwrap_or_default())
                + count_tokens(function["description"].as_str().unwrap_or_default())
                + count_tokens(&function["parameters"].to_string())
                + 8
        })
        .sum();
    let messages: usize = body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|message| {
            let calls: usize = message["tool_calls"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|call| {
                    count_tokens(call["function"]["name"].as_str().unwrap_or_default())
                        + count_tokens(call["function"]["arguments"].as_str().unwrap_or_default())
                        + 3
                })
                .sum();
            4 + text(&message["content"]) + calls
        })
        .sum();
    tools + messages
}

/// Tokens of the first request's tools, system prompt and user message (which carries the
/// turn's context), counted as [`request_tokens`] does.
fn first_request_parts(body: &Value) -> (usize, usize, usize) {
    let only = |key: &str, role: Option<&str>| {
        let mut part = serde_json::json!({});
        if key == "tools" {
            part["tools"] = body["tools"].clone();
        } else {
            let messages: Vec<Value> = body["messages"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|message| message["role"].as_str() == role)
                .cloned()
                .collect();
            part["messages"] = Value::Array(messages);
        }
        request_tokens(&part)
    };
    (
        only("tools", None),
        only("messages", Some("system")),
        only("messages", Some("user")),
    )
}

/// A request's input as a provider's cache sees it: the tools, then the messages (the system
/// prompt first), each as JSON.
fn serialized_input(body: &Value) -> String {
    let mut out = body["tools"].to_string();
    for message in body["messages"].as_array().into_iter().flatten() {
        out.push('\n');
        out.push_str(&message.to_string());
    }
    out
}

fn common_prefix(a: &str, b: &str) -> usize {
    a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count()
}

fn report(profile: Profile, measured: &Measured) {
    let requests = &measured.requests;
    let tokens: Vec<usize> = requests.iter().map(|r| request_tokens(&r.body)).collect();
    let total: usize = tokens.iter().sum();
    let largest = tokens.iter().copied().max().unwrap_or(0);
    let inputs: Vec<String> = requests.iter().map(|r| serialized_input(&r.body)).collect();
    let mut shared = 0usize;
    let mut compared = 0usize;
    let mut ratios = Vec::new();
    // What a provider's prompt cache can serve: the part of each request that repeats the start
    // of the one before (in tokens, by its share of the request's bytes); the rest is billed in
    // full. Anthropic bills cached input at a tenth, OpenAI at a half.
    let mut cacheable = 0.0f64;
    for (index, pair) in inputs.windows(2).enumerate() {
        let prefix = common_prefix(&pair[0], &pair[1]);
        shared += prefix;
        compared += pair[0].len();
        ratios.push(prefix as f64 / pair[0].len().max(1) as f64);
        cacheable += tokens[index + 1] as f64 * prefix as f64 / pair[1].len().max(1) as f64;
    }
    let uncached = total as f64 - cacheable;
    let below = ratios.iter().filter(|ratio| **ratio < 0.95).count();
    let worst = ratios.iter().copied().fold(1.0, f64::min);
    println!(
        "{} profile ({}-token window, {} reserved for output): {} model requests, {} compactions",
        profile.name,
        profile.context_window,
        profile.max_tokens,
        requests.len(),
        measured.compactions
    );
    println!(
        "  first request {} tokens; input over the session {total} tokens (mean {:.0}, largest {largest})",
        tokens.first().copied().unwrap_or(0),
        total as f64 / requests.len().max(1) as f64,
    );
    if let Some(first) = requests.first() {
        if let Some(path) = std::env::var_os("LODE_BENCH_DUMP_FIRST") {
            let _ = std::fs::write(
                path,
                serde_json::to_string_pretty(&first.body).unwrap_or_default(),
            );
        }
        let (tools, system, user) = first_request_parts(&first.body);
        println!(
            "  first request's parts: tools {tools}, system prompt {system}, the user message with the turn's context {user}"
        );
    }
    println!(
        "  prefix kept from one request to the next: {:.1}% of the bytes; {below} of {} requests keep less than 95% (worst {:.1}%)",
        100.0 * shared as f64 / compared.max(1) as f64,
        ratios.len(),
        100.0 * worst
    );
    println!(
        "  cacheable input {:.0} tokens ({:.1}%), uncached {uncached:.0}; billed as input tokens with cached input at 0.1 / 0.5 of the price: {:.0} / {:.0}",
        cacheable,
        100.0 * cacheable / total.max(1) as f64,
        uncached + 0.1 * cacheable,
        uncached + 0.5 * cacheable
    );
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let options = parse_options()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        println!(
            "agent request tokens on {} ({} turns of 3 model requests each)",
            options.source.display(),
            options.turns
        );
        for profile in &options.profiles {
            let measured = run(&options, *profile).await?;
            report(*profile, &measured);
        }
        Ok(())
    })
}

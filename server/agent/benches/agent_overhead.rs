//! The agent's own overhead per turn: everything except waiting for the model.
//!
//! A real `Agent` (real index, tools, SQLite) on a copy of a workspace talks to the scripted LLM
//! server (`fixtures/llm/agent_bench.json`): every turn is three model requests (read a file,
//! search the code, answer), and every response is held back by a known `slow_first_byte_ms`.
//! The wall time of each turn minus the time the server spent delaying, and minus the time the
//! stand-in server spent reading the requests (parsing their JSON: a real provider does that on
//! its own machines, and it grows with the conversation), is lode's overhead: context assembly
//! (repo map, retrieval, token counting), HTTP and SSE, the tools, the permission policy, the
//! session store and the audit log. The server's share is printed too.
//!
//! `cargo bench -p lode-agent --bench agent_overhead -- [--turns N] [--delay-ms MS]
//! [--source DIR]` (or `bench/agent/overhead.sh`). The first turn, which waits for the initial
//! index refresh, is reported separately and left out of the figures.

mod support;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use lode_agent::event::{AgentEvent, StopReason};
use lode_agent::host::SessionHost;
use lode_agent::{Agent, AgentOptions, UserInput};
use lode_llm_script::{Script, ScriptedServer};
use tokio_util::sync::CancellationToken;

/// Shows nothing; read-only tools need no permission.
struct QuietHost;

impl SessionHost for QuietHost {
    fn emit(&self, _event: AgentEvent) {}
}

struct Options {
    turns: usize,
    delay_ms: u64,
    source: PathBuf,
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn parse_options() -> Result<Options, String> {
    let mut options = Options {
        turns: 20,
        delay_ms: 200,
        source: repo_root().join("fixtures/agent/calculator"),
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
            "--delay-ms" => {
                options.delay_ms = value("--delay-ms")?
                    .parse()
                    .map_err(|e| format!("--delay-ms: {e}"))?
            }
            "--source" => options.source = PathBuf::from(value("--source")?),
            // `cargo bench` passes `--bench`; libtest-style filters are not used here.
            "--bench" => {}
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(options)
}

/// One turn: its wall time, the model requests it made, the time the stand-in server spent
/// reading them, and the CPU time the process used meanwhile (lode's threads and the stand-in
/// server's: a figure that waiting for a busy machine's cores does not inflate).
struct Turn {
    elapsed: Duration,
    requests: usize,
    server: Duration,
    cpu: Duration,
}

/// User and system CPU time of the whole process so far, its finished threads included.
fn process_cpu() -> Duration {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes a whole `rusage` into the pointer it is given, which points at
    // one; RUSAGE_SELF cannot fail for the calling process.
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr());
        usage.assume_init()
    };
    let time = |value: libc::timeval| {
        Duration::from_secs(value.tv_sec as u64) + Duration::from_micros(value.tv_usec as u64)
    };
    time(usage.ru_utime) + time(usage.ru_stime)
}

/// The turns of one session, for one delay.
struct Run {
    first_turn: Duration,
    turns: Vec<Turn>,
}

async fn run(options: &Options, delay_ms: u64) -> Result<Run, Box<dyn std::error::Error>> {
    let mut script = Script::load(&repo_root().join("fixtures/llm/agent_bench.json"))?;
    for turn in &mut script.turns {
        if let Some(fault) = &mut turn.fault {
            fault.slow_first_byte_ms = Some(delay_ms);
        }
    }
    let server = ScriptedServer::start(script).await?;
    let dir = tempfile::tempdir()?;
    let root = dir.path().join("workspace");
    support::copy_dir(&options.source, &root)?;
    std::fs::create_dir_all(root.join(".lode"))?;
    std::fs::write(
        root.join(".lode/config.toml"),
        format!(
            "[[llm.providers]]\nname = \"scripted\"\nkind = \"openai\"\nbase_url = \"{}\"\nmodel = \"bench\"\ncontext_window = 128000\nmax_tokens = 2000\n",
            server.openai_base_url()
        ),
    )?;
    // The providers are named as the user's own configuration (`--config`): a workspace's
    // `.lode/config.toml` applies in full only once the user trusts it, and the user's state
    // (trust, remembered answers) lives in the benchmark's folder, not the real home.
    let agent = Agent::open(
        &root,
        AgentOptions {
            config_file: Some(root.join(".lode/config.toml")),
            state_dir: Some(dir.path().join("user-state")),
            ..AgentOptions::default()
        },
    )?;
    let session = agent.new_session(root.clone(), Vec::new())?;
    let host: Arc<dyn SessionHost> = Arc::new(QuietHost);
    let mut first_turn = Duration::ZERO;
    let mut turns = Vec::new();
    for turn in 0..=options.turns {
        let before = server.request_count();
        let server_before = server.processing_time();
        let cpu_before = process_cpu();
        let started = Instant::now();
        let stop = agent
            .prompt(
                &session.id,
                vec![UserInput::Text(format!(
                    "Question {turn}: where is addition implemented?"
                ))],
                host.clone(),
                CancellationToken::new(),
            )
            .await?;
        let elapsed = started.elapsed();
        let cpu = process_cpu() - cpu_before;
        if stop != StopReason::EndTurn {
            return Err(format!("turn {turn} stopped with {stop:?}").into());
        }
        let requests = server.request_count() - before;
        if turn == 0 {
            first_turn = elapsed;
        } else {
            turns.push(Turn {
                elapsed,
                requests,
                server: server.processing_time() - server_before,
                cpu,
            });
        }
    }
    Ok(Run { first_turn, turns })
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn report(label: &str, run: &Run, delay_ms: u64) {
    let overheads: Vec<f64> = run
        .turns
        .iter()
        .map(|turn| ms(turn.elapsed) - (turn.requests as f64 * delay_ms as f64) - ms(turn.server))
        .collect();
    let requests: usize = run.turns.iter().map(|turn| turn.requests).sum();
    let wall: f64 = run.turns.iter().map(|turn| ms(turn.elapsed)).sum();
    let waited = requests as f64 * delay_ms as f64;
    let server: f64 = run.turns.iter().map(|turn| ms(turn.server)).sum();
    let turns = run.turns.len() as f64;
    let mean = overheads.iter().sum::<f64>() / turns;
    let lode = wall - waited - server;
    println!(
        "{label}: {} turns, {requests} model requests, first turn (index refresh) {:.0} ms",
        run.turns.len(),
        ms(run.first_turn)
    );
    println!(
        "  wall {wall:.0} ms, server delay {waited:.0} ms, server reading requests {server:.0} ms ({:.2} ms per request)",
        server / requests as f64
    );
    println!(
        "  lode's overhead per turn mean {mean:.1} ms, median {:.1} ms, max {:.1} ms; per model request {:.1} ms",
        median(overheads.clone()),
        overheads.iter().copied().fold(f64::MIN, f64::max),
        lode / requests as f64,
    );
    let cpu: f64 = run.turns.iter().map(|turn| ms(turn.cpu)).sum();
    println!(
        "  CPU per model request {:.1} ms (lode and the stand-in server, its reading apart)",
        (cpu - server) / requests as f64
    );
    if waited > 0.0 {
        println!(
            "  overhead / server latency = {:.3} ({:.1}% of the turn is lode)",
            lode / waited,
            100.0 * lode / wall
        );
    }
    report_curve(run, &overheads, delay_ms);
}

/// How many turns one line of the curve covers.
const CURVE_BUCKET: usize = 5;

/// The overhead over the session: per bucket of [`CURVE_BUCKET`] turns, the median overhead per
/// model request (and, with a delay, as a ratio of the server's latency), then the last bucket
/// against the first: flat is close to 1.
fn report_curve(run: &Run, overheads: &[f64], delay_ms: u64) {
    if run.turns.len() < 2 * CURVE_BUCKET {
        return;
    }
    let per_request: Vec<(f64, f64, f64)> = overheads
        .iter()
        .zip(&run.turns)
        .map(|(overhead, turn)| {
            let requests = turn.requests.max(1) as f64;
            (
                overhead / requests,
                ms(turn.server) / requests,
                (ms(turn.cpu) - ms(turn.server)) / requests,
            )
        })
        .collect();
    println!(
        "  per model request over the session (median of each {CURVE_BUCKET} turns; the stand-in server's reading apart):"
    );
    let mut medians = Vec::new();
    for (bucket, values) in per_request.chunks(CURVE_BUCKET).enumerate() {
        let first = bucket * CURVE_BUCKET + 1;
        let value = median(values.iter().map(|(lode, _, _)| *lode).collect());
        let server = median(values.iter().map(|(_, server, _)| *server).collect());
        let cpu = median(values.iter().map(|(_, _, cpu)| *cpu).collect());
        medians.push(value);
        let latency = if delay_ms > 0 {
            format!("  ({:.3} of the server's latency)", value / delay_ms as f64)
        } else {
            String::new()
        };
        println!(
            "    turns {first:>3}-{:<3} {value:6.1} ms{latency}  [CPU {cpu:.1} ms; server reading {server:.2} ms]",
            first + values.len() - 1,
        );
    }
    if let (Some(first), Some(last)) = (medians.first(), medians.last())
        && *first > 0.0
    {
        println!("  last / first = {:.2}", last / first);
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let options = parse_options()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        println!(
            "agent overhead on {} ({} turns of 3 model requests each)",
            options.source.display(),
            options.turns
        );
        let baseline = run(&options, 0).await?;
        report("no server delay", &baseline, 0);
        let delayed = run(&options, options.delay_ms).await?;
        report(
            &format!("{} ms before each response's first byte", options.delay_ms),
            &delayed,
            options.delay_ms,
        );
        Ok(())
    })
}

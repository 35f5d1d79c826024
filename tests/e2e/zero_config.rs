//! Zero-config models through the real binary: with no provider configured, `lode run` takes
//! the first of `ANTHROPIC_API_KEY`, `OPENAI_API_KEY`, `OPENROUTER_API_KEY`, then a local Ollama
//! with a tool-capable model, and says on stderr which and why; a configured provider always
//! wins. The providers are the scripted LLM server (real HTTP on 127.0.0.1); the Ollama is a
//! stand-in written here (real HTTP on 127.0.0.1) that answers `/api/tags` and `/api/show`
//! itself and hands every other connection (the chat) to the scripted server byte for byte.

use crate::support;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::Output;
use std::sync::{Arc, Mutex};

use lode_llm_script::{Script, ScriptedServer, ScriptedServerHandle};
use support::{copy_tree, fixtures, lode, stderr, stdout};

const HELLO: &str = "Hello from the scripted server. I stream in small pieces.";
const SECRET: &str = "sk-zero-config-test-secret-4f9a1c";

struct Server {
    handle: ScriptedServerHandle,
    _runtime: tokio::runtime::Runtime,
}

fn start_server() -> Server {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let script = Script::load(&fixtures().join("llm/hello.json")).unwrap();
    let handle = runtime.block_on(ScriptedServer::start(script)).unwrap();
    Server {
        handle,
        _runtime: runtime,
    }
}

/// A port with nothing listening: bound, then released.
fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// `lode run --json PROMPT` in a fresh workspace with no config anywhere, the provider
/// variables cleared and then set to `vars`. Without an `OLLAMA_HOST` in `vars`, Ollama is
/// looked for on a closed port.
fn run_with(root: &Path, vars: &[(&str, String)]) -> Output {
    let home = tempfile::tempdir().unwrap();
    let mut command = lode(root);
    command
        .args(["run", "--json", "say hello"])
        .env("LODE_CONFIG", support::workspace_config_env(root))
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .env("XDG_DATA_HOME", home.path().join("data"))
        .env("HOME", home.path())
        .env("OLLAMA_HOST", format!("127.0.0.1:{}", closed_port()));
    for variable in [
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "OPENROUTER_API_KEY",
        "ANTHROPIC_BASE_URL",
        "OPENAI_BASE_URL",
        "LODE_MODEL",
        "OLLAMA_CONTEXT_LENGTH",
    ] {
        command.env_remove(variable);
    }
    for (name, value) in vars {
        command.env(name, value);
    }
    command.output().expect("lode runs")
}

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&fixtures().join("agent/calculator"), dir.path());
    dir
}

fn answered(output: &Output) -> bool {
    stdout(output)
        .lines()
        .any(|line| line.contains("text_delta"))
        && stdout(output)
            .lines()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .filter(|event| event["event"] == "text_delta")
            .filter_map(|event| event["text"].as_str().map(str::to_owned))
            .collect::<String>()
            == HELLO
}

fn assert_no_secret(output: &Output) {
    assert!(!stdout(output).contains(SECRET), "the key leaked to stdout");
    assert!(!stderr(output).contains(SECRET), "the key leaked to stderr");
}

#[test]
fn an_openai_key_is_used_and_said_on_stderr_never_stdout() {
    let server = start_server();
    let dir = workspace();
    let output = run_with(
        dir.path(),
        &[
            ("OPENAI_API_KEY", SECRET.to_owned()),
            ("OPENAI_BASE_URL", server.handle.openai_base_url()),
            ("OPENROUTER_API_KEY", "sk-or-unused".to_owned()),
        ],
    );
    eprintln!("{}", stderr(&output));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(answered(&output), "{}", stdout(&output));
    let err = stderr(&output);
    assert!(
        err.contains("using openai model gpt-4.1 (OPENAI_API_KEY is set, at OPENAI_BASE_URL"),
        "{err}"
    );
    assert!(!stdout(&output).contains("no LLM provider is configured"));
    assert_no_secret(&output);
    let requests = server.handle.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(requests[0].body["model"], "gpt-4.1");
    assert_eq!(
        requests[0].headers.get("authorization").map(String::as_str),
        Some(format!("Bearer {SECRET}").as_str()),
        "the detected key is what is sent"
    );
}

#[test]
fn anthropic_comes_before_openai_and_lode_model_picks_the_model() {
    let anthropic = start_server();
    let openai = start_server();
    let dir = workspace();
    let output = run_with(
        dir.path(),
        &[
            ("ANTHROPIC_API_KEY", SECRET.to_owned()),
            ("ANTHROPIC_BASE_URL", anthropic.handle.base_url()),
            ("OPENAI_API_KEY", "sk-openai-unused".to_owned()),
            ("OPENAI_BASE_URL", openai.handle.openai_base_url()),
            ("LODE_MODEL", "claude-test-model".to_owned()),
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(answered(&output), "{}", stdout(&output));
    assert!(
        stderr(&output).contains("using anthropic model claude-test-model (ANTHROPIC_API_KEY"),
        "{}",
        stderr(&output)
    );
    assert_no_secret(&output);
    assert_eq!(openai.handle.request_count(), 0);
    let requests = anthropic.handle.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].path, "/v1/messages");
    assert_eq!(requests[0].body["model"], "claude-test-model");
}

#[test]
fn a_configured_provider_wins_over_every_key() {
    let configured = start_server();
    let detected = start_server();
    let dir = workspace();
    std::fs::create_dir_all(dir.path().join(".lode")).unwrap();
    std::fs::write(
        dir.path().join(".lode/config.toml"),
        format!(
            "[[llm.providers]]\nname = \"mine\"\nkind = \"openai\"\nbase_url = \"{}\"\nmodel = \"configured-model\"\ncontext_window = 32000\n",
            configured.handle.openai_base_url()
        ),
    )
    .unwrap();
    let output = run_with(
        dir.path(),
        &[
            ("ANTHROPIC_API_KEY", SECRET.to_owned()),
            ("ANTHROPIC_BASE_URL", detected.handle.base_url()),
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(answered(&output), "{}", stdout(&output));
    assert!(
        !stderr(&output).contains("no LLM provider is configured"),
        "{}",
        stderr(&output)
    );
    assert_eq!(detected.handle.request_count(), 0);
    assert_eq!(
        configured.handle.requests()[0].body["model"],
        "configured-model"
    );
}

/// What the stand-in Ollama answers.
#[derive(Clone, Copy, PartialEq)]
enum Behaviour {
    /// Two models: an embedding model, then a tool-capable chat model.
    Normal,
    /// `/api/tags` answers text that is not JSON.
    Garbage,
    /// `/api/tags` lists 500 models, none tool-capable.
    ManyWithoutTools,
    /// Accepts connections and never answers.
    Silent,
}

struct StandInOllama {
    port: u16,
    /// The request lines of the `/api/*` requests, in order.
    seen: Arc<Mutex<Vec<String>>>,
}

fn start_ollama(behaviour: Behaviour, chat_to: Option<std::net::SocketAddr>) -> StandInOllama {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let recorded = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let recorded = recorded.clone();
            std::thread::spawn(move || serve(stream, behaviour, chat_to, &recorded));
        }
    });
    StandInOllama { port, seen }
}

/// Reads one request's head (and its body, by Content-Length) from `stream`.
fn read_request(stream: &mut TcpStream) -> Option<(String, Vec<u8>, String)> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).ok()? == 0 {
            return None;
        }
        head.push(byte[0]);
    }
    let text = String::from_utf8_lossy(&head).into_owned();
    let length = text
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<usize>().ok())
                .flatten()
        })
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).ok()?;
    let request_line = text.lines().next().unwrap_or("").to_owned();
    Some((
        request_line,
        head,
        String::from_utf8_lossy(&body).into_owned(),
    ))
}

fn respond(stream: &mut TcpStream, status: &str, body: &str) {
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

fn serve(
    mut stream: TcpStream,
    behaviour: Behaviour,
    chat_to: Option<std::net::SocketAddr>,
    seen: &Mutex<Vec<String>>,
) {
    if behaviour == Behaviour::Silent {
        std::thread::sleep(std::time::Duration::from_secs(30));
        return;
    }
    let Some((request_line, head, body)) = read_request(&mut stream) else {
        return;
    };
    if request_line.contains(" /api/") {
        seen.lock().unwrap().push(format!("{request_line} {body}"));
    }
    if request_line.starts_with("GET /api/tags ") {
        let answer = match behaviour {
            Behaviour::Garbage => "<html>this is not ollama</html>".to_owned(),
            Behaviour::ManyWithoutTools => {
                let models: Vec<serde_json::Value> = (0..500)
                    .map(|n| serde_json::json!({"name": format!("m{n}:latest"), "model": format!("m{n}:latest")}))
                    .collect();
                serde_json::json!({ "models": models }).to_string()
            }
            _ => serde_json::json!({"models": [
                {"name": "nomic-embed-text:latest", "model": "nomic-embed-text:latest", "size": 274302450},
                {"name": "qwen3:8b", "model": "qwen3:8b", "size": 5225388164u64},
            ]})
            .to_string(),
        };
        respond(&mut stream, "200 OK", &answer);
    } else if request_line.starts_with("POST /api/show ") {
        let asked: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
        let answer = match asked["model"].as_str() {
            Some("qwen3:8b") => serde_json::json!({
                "capabilities": ["completion", "tools", "thinking"],
                "model_info": {"general.architecture": "qwen3", "qwen3.context_length": 40960},
            }),
            Some("nomic-embed-text:latest") => serde_json::json!({"capabilities": ["embedding"]}),
            _ => serde_json::json!({"capabilities": ["completion"]}),
        };
        respond(&mut stream, "200 OK", &answer.to_string());
    } else if let Some(target) = chat_to {
        // Everything else is the chat: hand the connection to the scripted server as it is.
        let Ok(mut upstream) = TcpStream::connect(target) else {
            return;
        };
        let _ = upstream.write_all(&head);
        let _ = upstream.write_all(body.as_bytes());
        let (Ok(mut from_client), Ok(mut to_client)) = (stream.try_clone(), upstream.try_clone())
        else {
            return;
        };
        let mut from_upstream = upstream;
        std::thread::spawn(move || std::io::copy(&mut from_client, &mut to_client));
        let _ = std::io::copy(&mut from_upstream, &mut stream);
    } else {
        respond(&mut stream, "404 Not Found", "{\"error\":\"not found\"}");
    }
}

#[test]
fn a_local_ollama_with_a_tool_capable_model_is_used_end_to_end() {
    let server = start_server();
    let ollama = start_ollama(Behaviour::Normal, Some(server.handle.addr()));
    let dir = workspace();
    let output = run_with(
        dir.path(),
        // No scheme: Ollama's own form of the variable.
        &[("OLLAMA_HOST", format!("127.0.0.1:{}", ollama.port))],
    );
    eprintln!("{}", stderr(&output));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(answered(&output), "{}", stdout(&output));
    let err = stderr(&output);
    assert!(
        err.contains(&format!(
            "using ollama model qwen3:8b (no API key is set and Ollama at http://127.0.0.1:{} has this tool-capable model; context window 4096 tokens",
            ollama.port
        )),
        "{err}"
    );
    let seen = ollama.seen.lock().unwrap().clone();
    assert!(seen[0].starts_with("GET /api/tags "), "{seen:?}");
    assert!(
        seen.iter()
            .any(|line| line.starts_with("POST /api/show ") && line.contains("qwen3:8b")),
        "{seen:?}"
    );
    // Ollama's native API, told the window lode budgets: Ollama's OpenAI-compatible endpoint
    // would ignore it and cut a longer prompt from the front.
    let requests = server.handle.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].path, "/api/chat");
    assert_eq!(requests[0].body["model"], "qwen3:8b");
    assert_eq!(requests[0].body["options"]["num_ctx"], 4096);
    assert_eq!(requests[0].body["options"]["num_predict"], 1024);
    assert!(
        !requests[0].headers.contains_key("authorization"),
        "no key is sent to a local Ollama"
    );
}

#[test]
fn ollama_context_length_is_read_from_the_environment() {
    let server = start_server();
    let ollama = start_ollama(Behaviour::Normal, Some(server.handle.addr()));
    let dir = workspace();
    let output = run_with(
        dir.path(),
        &[
            ("OLLAMA_HOST", format!("http://127.0.0.1:{}/", ollama.port)),
            ("OLLAMA_CONTEXT_LENGTH", "32768".to_owned()),
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("context window 32768 tokens from OLLAMA_CONTEXT_LENGTH"),
        "{}",
        stderr(&output)
    );
    let requests = server.handle.requests();
    assert_eq!(requests[0].body["options"]["num_ctx"], 32768);
}

fn assert_nothing_detected(output: &Output, why: &str) {
    let err = stderr(output);
    assert_ne!(output.status.code(), Some(0), "{err}");
    assert!(err.contains("no LLM provider is configured and nothing detected: none of ANTHROPIC_API_KEY, OPENAI_API_KEY, OPENROUTER_API_KEY is set; no Ollama with a tool-capable model at"), "{err}");
    assert!(err.contains(why), "{err}");
    assert!(
        err.contains("[[llm.providers]]"),
        "the config example stays: {err}"
    );
}

#[test]
fn nothing_listening_nothing_detected_and_the_fix_is_printed() {
    let dir = workspace();
    let output = run_with(dir.path(), &[]);
    assert_nothing_detected(&output, "(nothing listening)");
}

#[test]
fn a_server_that_is_not_ollama_is_not_used() {
    let ollama = start_ollama(Behaviour::Garbage, None);
    let dir = workspace();
    let output = run_with(
        dir.path(),
        &[("OLLAMA_HOST", format!("127.0.0.1:{}", ollama.port))],
    );
    assert_nothing_detected(&output, "/api/tags did not answer Ollama's JSON");
}

#[test]
fn many_models_without_tools_are_asked_about_at_most_eight() {
    let ollama = start_ollama(Behaviour::ManyWithoutTools, None);
    let dir = workspace();
    let output = run_with(
        dir.path(),
        &[("OLLAMA_HOST", format!("127.0.0.1:{}", ollama.port))],
    );
    assert_nothing_detected(&output, "none of its 500 models reports tool support");
    let shows = ollama
        .seen
        .lock()
        .unwrap()
        .iter()
        .filter(|line| line.starts_with("POST /api/show "))
        .count();
    assert_eq!(shows, 8);
}

#[test]
fn a_silent_server_is_given_up_on() {
    let ollama = start_ollama(Behaviour::Silent, None);
    let dir = workspace();
    let started = std::time::Instant::now();
    let output = run_with(
        dir.path(),
        &[("OLLAMA_HOST", format!("127.0.0.1:{}", ollama.port))],
    );
    eprintln!(
        "lode gave up on a silent Ollama after {:?}",
        started.elapsed()
    );
    assert_nothing_detected(&output, "(no answer in time)");
}

#[test]
fn lode_acp_outside_a_workspace_says_which_provider_on_stderr_only() {
    let home = tempfile::tempdir().unwrap();
    let output = lode(home.path())
        .arg("acp")
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .env("XDG_DATA_HOME", home.path().join("data"))
        .env_remove("LODE_CONFIG")
        .env("OPENROUTER_API_KEY", SECRET)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("lode acp runs");
    assert!(
        stderr(&output).contains(
            "using openrouter model anthropic/claude-sonnet-4.5 (OPENROUTER_API_KEY is set)"
        ),
        "{}",
        stderr(&output)
    );
    assert!(
        stdout(&output).is_empty(),
        "stdout is the protocol: {}",
        stdout(&output)
    );
    assert_no_secret(&output);
}

#[test]
fn lode_config_shows_the_detected_provider_and_check_accepts_it() {
    let dir = workspace();
    let home = tempfile::tempdir().unwrap();
    let config = |vars: &[(&str, &str)]| {
        let mut command = lode(dir.path());
        command
            .args(["config", "--check"])
            .env("LODE_CONFIG", "")
            .env("HOME", home.path())
            .env("XDG_CONFIG_HOME", home.path().join("config"))
            .env("XDG_DATA_HOME", home.path().join("data"));
        for (name, value) in vars {
            command.env(name, value);
        }
        command.output().expect("lode config runs")
    };
    let output = config(&[("ANTHROPIC_API_KEY", SECRET)]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(
        text.contains("# provider \"anthropic\" below is in no file: detected from the environment (ANTHROPIC_API_KEY is set)"),
        "{text}"
    );
    assert!(
        text.contains("api_key_env = \"ANTHROPIC_API_KEY\""),
        "{text}"
    );
    assert_no_secret(&output);
    let output = config(&[]);
    assert_eq!(output.status.code(), Some(3), "{}", stdout(&output));
    assert!(
        stderr(&output).contains("nothing detected"),
        "{}",
        stderr(&output)
    );
}

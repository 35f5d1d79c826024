//! The HTTP server: routes `POST /v1/chat/completions`, `POST /v1/messages` and Ollama's
//! `POST /api/chat`, records every
//! request, picks the turn that answers it, injects the turn's fault, and streams the answer.

use parking_lot::{Mutex, MutexGuard};
use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::Value;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::conversation::{Api, Conversation};
use crate::script::{Fault, Respond, Script, ScriptError, ScriptUsage, Turn};
use crate::wire;

/// The largest request body accepted by default (agent requests carry whole conversations).
pub const DEFAULT_BODY_LIMIT: usize = 64 * 1024 * 1024;

/// A request as the server received it.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// `/v1/chat/completions` or `/v1/messages`.
    pub path: String,
    /// Header names in lower case.
    pub headers: BTreeMap<String, String>,
    /// The body as JSON, or as a JSON string when it was not JSON.
    pub body: Value,
}

/// Where and how to listen.
#[derive(Debug, Clone, Copy)]
pub struct ServerOptions {
    /// On 127.0.0.1; 0 picks a free port.
    pub port: u16,
    pub body_limit: usize,
}

impl Default for ServerOptions {
    fn default() -> Self {
        Self {
            port: 0,
            body_limit: DEFAULT_BODY_LIMIT,
        }
    }
}

#[derive(Debug, Default)]
struct Progress {
    used: Vec<bool>,
    faults_served: Vec<u32>,
    requests: Vec<RecordedRequest>,
    /// Time spent reading requests: parsing, recording and matching them to turns.
    processing: Duration,
    /// Streams whose body was dropped before its last event (the client went away).
    abandoned_streams: usize,
}

#[derive(Debug)]
struct Shared {
    script: Script,
    progress: Mutex<Progress>,
}

impl Shared {
    fn progress(&self) -> MutexGuard<'_, Progress> {
        // A panic while holding the lock leaves plain bookkeeping behind; keep serving.
        self.progress.lock()
    }
}

/// Starts scripted servers.
pub struct ScriptedServer;

impl ScriptedServer {
    /// Serves `script` on 127.0.0.1 at a free port, in the current tokio runtime.
    pub async fn start(script: Script) -> Result<ScriptedServerHandle, ScriptError> {
        Self::start_with(script, ServerOptions::default()).await
    }

    pub async fn start_with(
        script: Script,
        options: ServerOptions,
    ) -> Result<ScriptedServerHandle, ScriptError> {
        let listener =
            tokio::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, options.port)))
                .await?;
        let addr = listener.local_addr()?;
        let turns = script.turns.len();
        let shared = Arc::new(Shared {
            script,
            progress: Mutex::new(Progress {
                used: vec![false; turns],
                faults_served: vec![0; turns],
                requests: Vec::new(),
                processing: Duration::ZERO,
                abandoned_streams: 0,
            }),
        });
        let router = Router::new()
            .route("/v1/chat/completions", post(chat_completions))
            .route("/v1/messages", post(messages))
            .route("/api/chat", post(ollama_chat))
            .fallback(unknown_path)
            .layer(DefaultBodyLimit::max(options.body_limit))
            .with_state(Arc::clone(&shared));
        let (shutdown, stop) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let serve = axum::serve(listener, router).with_graceful_shutdown(async move {
                let _ = stop.await;
            });
            // A failing accept loop ends the server; tests then see connection errors.
            let _ = serve.await;
        });
        Ok(ScriptedServerHandle {
            addr,
            shared,
            shutdown: Some(shutdown),
            task,
        })
    }

    /// Serves `script` until the process is killed, on its own runtime. `on_listening` is
    /// called once the socket is bound.
    pub fn serve_blocking(
        script: Script,
        options: ServerOptions,
        on_listening: impl FnOnce(SocketAddr),
    ) -> Result<(), ScriptError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?;
        runtime.block_on(async move {
            let handle = Self::start_with(script, options).await?;
            on_listening(handle.addr());
            std::future::pending::<()>().await;
            Ok(())
        })
    }
}

/// A running server; dropping it stops the server.
#[derive(Debug)]
pub struct ScriptedServerHandle {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

impl ScriptedServerHandle {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`, which is the Anthropic-style base URL.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://127.0.0.1:PORT/v1`, the OpenAI-style base URL.
    pub fn openai_base_url(&self) -> String {
        format!("{}/v1", self.base_url())
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.progress().requests.clone()
    }

    /// How many requests were received so far (without copying them, as [`Self::requests`]
    /// does).
    pub fn request_count(&self) -> usize {
        self.shared.progress().requests.len()
    }

    /// The time the server spent reading the requests so far (parsing their JSON, recording
    /// them, matching them to turns), not waiting or streaming: the stand-in's own share of a
    /// request, which a benchmark of its client leaves out.
    pub fn processing_time(&self) -> Duration {
        self.shared.progress().processing
    }

    /// How many streamed answers lost their client before the last event: a client that
    /// cancels must close its connection, and this is how a test sees that it did.
    pub fn abandoned_streams(&self) -> usize {
        self.shared.progress().abandoned_streams
    }

    /// Turns not yet served (labels, or `#n`), repeating turns excluded.
    pub fn unused_turns(&self) -> Vec<String> {
        let progress = self.shared.progress();
        self.shared
            .script
            .turns
            .iter()
            .enumerate()
            .filter(|(index, turn)| !turn.repeat && !progress.used[*index])
            .map(|(index, turn)| turn_label(index, turn))
            .collect()
    }
}

impl Drop for ScriptedServerHandle {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        // Open streams (slow or delayed ones) must not outlive the handle.
        self.task.abort();
    }
}

fn turn_label(index: usize, turn: &Turn) -> String {
    match &turn.name {
        Some(name) => format!("#{} {name:?}", index + 1),
        None => format!("#{}", index + 1),
    }
}

async fn chat_completions(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    answer(shared, Api::OpenAi, "/v1/chat/completions", headers, body).await
}

async fn messages(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    answer(shared, Api::Anthropic, "/v1/messages", headers, body).await
}

async fn ollama_chat(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    answer(shared, Api::Ollama, "/api/chat", headers, body).await
}

async fn unknown_path(uri: Uri) -> Response {
    let message = format!(
        "lode-llm-script serves POST /v1/chat/completions, POST /v1/messages and POST /api/chat, not {}",
        uri.path()
    );
    json_response(
        StatusCode::NOT_FOUND,
        wire::error_body(Api::OpenAi, 404, &message, None),
        None,
    )
}

/// What to send for one request, decided under the lock.
enum Plan {
    Refuse(String),
    Serve {
        turn_index: usize,
        fault: Option<Fault>,
    },
}

async fn answer(
    shared: Arc<Shared>,
    api: Api,
    path: &str,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let started = std::time::Instant::now();
    let parsed: Result<Value, String> =
        serde_json::from_slice(&body).map_err(|error| error.to_string());
    // Planned from the parsed body, which is then recorded as it is (not copied: agent requests
    // carry whole conversations); serving needs only the model's name from it.
    let (plan, request_number, model) = {
        let mut progress = shared.progress();
        let request_number = progress.requests.len() as u64 + 1;
        let plan = plan(&shared.script, &mut progress, api, &parsed, request_number);
        let model = parsed
            .as_ref()
            .ok()
            .and_then(|request| request.get("model"))
            .and_then(Value::as_str)
            .unwrap_or("scripted")
            .to_string();
        progress.requests.push(RecordedRequest {
            path: path.to_string(),
            headers: headers
                .iter()
                .map(|(name, value)| {
                    (
                        name.as_str().to_string(),
                        String::from_utf8_lossy(value.as_bytes()).into_owned(),
                    )
                })
                .collect(),
            body: match parsed {
                Ok(value) => value,
                Err(_) => Value::String(String::from_utf8_lossy(&body).into_owned()),
            },
        });
        progress.processing += started.elapsed();
        (plan, request_number, model)
    };
    match plan {
        Plan::Serve { turn_index, fault } => {
            let turn = &shared.script.turns[turn_index];
            let guard = AbandonGuard {
                shared: Arc::clone(&shared),
                completed: false,
            };
            serve_turn(
                api,
                &model,
                turn_index + 1,
                &turn.respond,
                fault,
                body.len(),
                guard,
            )
            .await
        }
        Plan::Refuse(reason) => refuse(
            api,
            &format!("lode-llm-script: request {request_number}: {reason}"),
        ),
    }
}

fn plan(
    script: &Script,
    progress: &mut Progress,
    api: Api,
    parsed: &Result<Value, String>,
    request_number: u64,
) -> Plan {
    let request = match parsed {
        Ok(request) => request,
        Err(error) => return Plan::Refuse(format!("the request body is not JSON: {error}")),
    };
    if request.get("stream").and_then(Value::as_bool) != Some(true) {
        return Plan::Refuse("only streaming requests (\"stream\": true) are scripted".to_string());
    }
    let conversation = match Conversation::read(api, request) {
        Ok(conversation) => conversation,
        Err(reason) => return Plan::Refuse(reason),
    };
    let mut reasons = Vec::new();
    for (index, turn) in script.turns.iter().enumerate() {
        if progress.used[index] && !turn.repeat {
            continue;
        }
        if let Some(mismatch) = conversation.mismatch(&turn.matcher, request_number) {
            reasons.push(format!("turn {} wants {mismatch}", turn_label(index, turn)));
            continue;
        }
        if let Some(fault) = &turn.fault
            && progress.faults_served[index] < fault.times()
        {
            progress.faults_served[index] += 1;
            return Plan::Serve {
                turn_index: index,
                fault: Some(fault.clone()),
            };
        }
        progress.used[index] = true;
        return Plan::Serve {
            turn_index: index,
            fault: None,
        };
    }
    let why = if reasons.is_empty() {
        "every scripted turn has been used".to_string()
    } else {
        reasons.join("; ")
    };
    Plan::Refuse(format!(
        "no scripted turn matches ({}): {why}",
        conversation.describe()
    ))
}

fn refuse(api: Api, message: &str) -> Response {
    json_response(
        StatusCode::BAD_REQUEST,
        wire::error_body(api, 400, message, None),
        None,
    )
}

fn json_response(status: StatusCode, body: Value, retry_after: Option<u64>) -> Response {
    let mut response = (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response();
    if let Some(seconds) = retry_after {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, seconds.into());
    }
    response
}

/// Counts a streamed body dropped before its end as abandoned.
struct AbandonGuard {
    shared: Arc<Shared>,
    completed: bool,
}

impl AbandonGuard {
    fn complete(&mut self) {
        self.completed = true;
    }
}

impl Drop for AbandonGuard {
    fn drop(&mut self) {
        if !self.completed {
            self.shared.progress().abandoned_streams += 1;
        }
    }
}

async fn serve_turn(
    api: Api,
    model: &str,
    turn_number: usize,
    respond: &Respond,
    fault: Option<Fault>,
    request_bytes: usize,
    mut guard: AbandonGuard,
) -> Response {
    let fault = fault.unwrap_or_default();
    if let Some(wait) = fault.slow_first_byte_ms {
        tokio::time::sleep(Duration::from_millis(wait)).await;
    }
    if let Some(status) = fault.status {
        guard.complete();
        let message = fault
            .message
            .clone()
            .unwrap_or_else(|| wire::default_message(status).to_string());
        let status_code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        return json_response(
            status_code,
            wire::error_body(api, status, &message, fault.code.as_deref()),
            fault.retry_after,
        );
    }
    let usage = respond
        .usage
        .unwrap_or_else(|| estimate_usage(respond, request_bytes));
    let mut frames = match api {
        Api::OpenAi => wire::openai_frames(respond, model, turn_number, usage),
        Api::Anthropic => wire::anthropic_frames(respond, model, turn_number, usage),
        Api::Ollama => wire::ollama_frames(respond, model, usage),
    };
    if let Some(kind) = &fault.error_event {
        frames.truncate(fault.truncate_after_events.unwrap_or(0));
        let message = fault.message.as_deref().unwrap_or("scripted stream error");
        frames.push(wire::error_frame(api, kind, message));
    } else if let Some(keep) = fault.truncate_after_events {
        frames.truncate(keep);
    }
    if fault.malformed_json
        && let Some(first) = frames.first_mut()
    {
        first.data = "{\"choices\": [{\"delta\": {\"content\": \"unterminated".to_string();
    }
    let delay = fault.delay_between_events_ms.map(Duration::from_millis);
    let body = futures::stream::unfold(
        (frames.into_iter(), true, guard),
        move |(mut frames, first, mut guard)| async move {
            let Some(frame) = frames.next() else {
                guard.complete();
                return None;
            };
            if let (Some(delay), false) = (delay, first) {
                tokio::time::sleep(delay).await;
            }
            Some((
                Ok::<_, Infallible>(frame.encode_for(api)),
                (frames, false, guard),
            ))
        },
    );
    Response::builder()
        .status(StatusCode::OK)
        .header(
            header::CONTENT_TYPE,
            match api {
                Api::Ollama => "application/x-ndjson",
                Api::OpenAi | Api::Anthropic => "text/event-stream",
            },
        )
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(body))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// About four bytes a token, for scripts that give no usage.
fn estimate_usage(respond: &Respond, request_bytes: usize) -> ScriptUsage {
    let output_chars = respond
        .text
        .as_ref()
        .map_or(0, |text| text.full_text().len())
        + respond
            .thinking
            .as_ref()
            .map_or(0, |thinking| thinking.full_text().len())
        + respond
            .tool_calls
            .iter()
            .map(|call| call.name.len() + call.argument_text().len())
            .sum::<usize>();
    ScriptUsage {
        input_tokens: (request_bytes / 4).max(1) as u64,
        output_tokens: (output_chars / 4).max(1) as u64,
        cache_read_tokens: 0,
    }
}

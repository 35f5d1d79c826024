//! HTTP plumbing the providers share: the API key that never prints, timeouts, sending a request
//! under cancellation, mapping HTTP failures to [`LlmError`], and turning an SSE body into an
//! [`EventStream`] through a provider-specific [`SseDecoder`].

use std::collections::VecDeque;
use std::fmt;
use std::time::Duration;

use reqwest::header::HeaderMap;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::sse::{SseEvent, SseParser};
use super::{EventStream, LlmError, StreamEvent};

/// How long to wait, at each stage of a request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timeouts {
    /// Establishing the TCP (and TLS) connection.
    pub connect: Duration,
    /// From sending the request to the first byte of the response body.
    pub first_byte: Duration,
    /// The longest silence between two chunks of a streaming body.
    pub idle: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(15),
            // Reasoning models may think for minutes before their first token.
            first_byte: Duration::from_secs(300),
            idle: Duration::from_secs(120),
        }
    }
}

/// An API key. Its `Debug` output is redacted and it is only read where a header is set, so it
/// cannot reach a log line or an error message by accident.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    pub(crate) fn expose(&self) -> &str {
        &self.0
    }

    /// `text` with every occurrence of the key replaced, for messages that echo it back.
    pub(crate) fn scrub(&self, text: &str) -> String {
        if self.0.is_empty() {
            text.to_string()
        } else {
            text.replace(&self.0, "[redacted]")
        }
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey([redacted])")
    }
}

fn scrub(key: Option<&ApiKey>, text: &str) -> String {
    match key {
        Some(key) => key.scrub(text),
        None => text.to_string(),
    }
}

/// The most of an error body read and quoted.
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;
const MAX_ERROR_MESSAGE_CHARS: usize = 1000;

/// Sends `request` and waits for a successful status, failing with `Cancelled` as soon as
/// `cancel` fires. Returns the response and the deadline for its first body byte.
async fn send(
    request: reqwest::RequestBuilder,
    key: Option<&ApiKey>,
    timeouts: &Timeouts,
    cancel: &CancellationToken,
) -> Result<(reqwest::Response, Instant), LlmError> {
    let first_byte_deadline = Instant::now() + timeouts.first_byte;
    let response = tokio::select! {
        biased;
        () = cancel.cancelled() => return Err(LlmError::Cancelled),
        sent = tokio::time::timeout_at(first_byte_deadline, request.send()) => match sent {
            Err(_) => return Err(first_byte_timeout(timeouts)),
            Ok(Err(error)) => return Err(transport_error(&error, key, timeouts)),
            Ok(Ok(response)) => response,
        },
    };
    let status = response.status();
    let is_json = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/json"));
    if status.is_success() && !is_json {
        return Ok((response, first_byte_deadline));
    }
    let headers = response.headers().clone();
    let body = tokio::select! {
        biased;
        () = cancel.cancelled() => return Err(LlmError::Cancelled),
        body = tokio::time::timeout(timeouts.idle, read_capped(response)) => body.unwrap_or_default(),
    };
    if status.is_success() {
        // Some servers answer a streaming request with one JSON object: an error, or a
        // complete non-streamed response that this client did not ask for.
        return Err(match provider_message(status.as_u16(), &body) {
            (message, _) if body.contains("\"error\"") => LlmError::Server {
                status: status.as_u16(),
                message: scrub(key, &message),
            },
            _ => LlmError::Malformed(
                "the provider answered with JSON instead of an event stream".to_string(),
            ),
        });
    }
    Err(error_from_status(status.as_u16(), &headers, &body, key))
}

/// What every provider needs to reach its endpoint.
#[derive(Debug, Clone)]
pub(crate) struct Connection {
    pub client: reqwest::Client,
    /// The full endpoint URL.
    pub url: String,
    pub key: Option<ApiKey>,
    /// Extra headers from the configuration.
    pub headers: HeaderMap,
    pub timeouts: Timeouts,
}

impl Connection {
    /// A POST of `body`, JSON text (`application/json` unless the configured headers say
    /// otherwise).
    pub fn post(&self, body: Vec<u8>) -> reqwest::RequestBuilder {
        let builder = self
            .client
            .post(&self.url)
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .headers(self.headers.clone());
        let builder = if self.headers.contains_key(reqwest::header::CONTENT_TYPE) {
            builder
        } else {
            builder.header(reqwest::header::CONTENT_TYPE, "application/json")
        };
        builder.body(body)
    }
}

async fn read_capped(mut response: reqwest::Response) -> String {
    let mut bytes = Vec::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        bytes.extend_from_slice(&chunk);
        if bytes.len() >= MAX_ERROR_BODY_BYTES {
            bytes.truncate(MAX_ERROR_BODY_BYTES);
            break;
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

fn first_byte_timeout(timeouts: &Timeouts) -> LlmError {
    LlmError::Timeout(format!(
        "no response within {:.1}s of sending the request",
        timeouts.first_byte.as_secs_f64()
    ))
}

fn transport_error(error: &reqwest::Error, key: Option<&ApiKey>, timeouts: &Timeouts) -> LlmError {
    let mut message = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    let message = scrub(key, &message);
    if error.is_timeout() {
        LlmError::Timeout(format!(
            "connecting took longer than {:.1}s ({message})",
            timeouts.connect.as_secs_f64()
        ))
    } else {
        LlmError::Transport(message)
    }
}

/// Maps a failed HTTP response to the error the agent loop acts on.
pub(crate) fn error_from_status(
    status: u16,
    headers: &HeaderMap,
    body: &str,
    key: Option<&ApiKey>,
) -> LlmError {
    let (message, code) = provider_message(status, body);
    let message = scrub(key, &message);
    let code = code.map(|code| scrub(key, &code)).unwrap_or_default();
    match status {
        429 if code.contains("insufficient_quota") => LlmError::BadRequest { status, message },
        429 => LlmError::RateLimited {
            retry_after: retry_after(headers),
        },
        401 | 403 => LlmError::Auth { status, message },
        408 => LlmError::Timeout(format!("the provider timed out the request: {message}")),
        413 => LlmError::ContextLength { message },
        400..=499 if mentions_context_length(&message) || mentions_context_length(&code) => {
            LlmError::ContextLength { message }
        }
        400..=499 => LlmError::BadRequest { status, message },
        _ => LlmError::Server { status, message },
    }
}

/// Whether a provider's error text says the prompt is larger than the model's context window.
pub(crate) fn mentions_context_length(text: &str) -> bool {
    const PHRASES: [&str; 9] = [
        "context_length_exceeded",
        "context length",
        "context window",
        "maximum context",
        "prompt is too long",
        "too many tokens",
        "input is too long",
        "reduce the length of the messages",
        "exceeds the model's",
    ];
    let text = text.to_lowercase();
    PHRASES.iter().any(|phrase| text.contains(phrase))
}

/// The human message and machine code of an error body, in the shapes OpenAI-compatible servers
/// and Anthropic use, falling back to the raw body.
pub(crate) fn provider_message(status: u16, body: &str) -> (String, Option<String>) {
    let parsed: Option<serde_json::Value> = serde_json::from_str(body).ok();
    let pick = |value: &serde_json::Value, keys: &[&str]| -> Option<String> {
        keys.iter().find_map(|key| match value.get(key) {
            Some(serde_json::Value::String(text)) if !text.is_empty() => Some(text.clone()),
            _ => None,
        })
    };
    if let Some(value) = &parsed {
        let error = value.get("error").unwrap_or(value);
        if let serde_json::Value::String(text) = error {
            return (clip(text), None);
        }
        let code = pick(error, &["code", "type"]);
        if let Some(message) =
            pick(error, &["message", "detail"]).or_else(|| pick(value, &["message", "detail"]))
        {
            return (clip(&message), code);
        }
        if code.is_some() {
            return (clip(body.trim()), code);
        }
    }
    let body = body.trim();
    if body.is_empty() {
        let reason = reqwest::StatusCode::from_u16(status)
            .ok()
            .and_then(|status| status.canonical_reason())
            .unwrap_or("no message");
        (reason.to_string(), None)
    } else {
        (clip(body), None)
    }
}

fn clip(text: &str) -> String {
    if text.chars().count() <= MAX_ERROR_MESSAGE_CHARS {
        return text.to_string();
    }
    let mut clipped: String = text.chars().take(MAX_ERROR_MESSAGE_CHARS).collect();
    clipped.push('…');
    clipped
}

/// `retry-after-ms` (OpenAI) or `retry-after` in seconds or as an HTTP date.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let header = |name: &str| headers.get(name).and_then(|value| value.to_str().ok());
    if let Some(millis) = header("retry-after-ms").and_then(|text| text.trim().parse::<f64>().ok())
        && millis.is_finite()
        && millis >= 0.0
    {
        return Some(Duration::from_secs_f64(millis / 1000.0));
    }
    parse_retry_after(header("retry-after")?, chrono::Utc::now())
}

pub(crate) fn parse_retry_after(
    text: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Option<Duration> {
    let text = text.trim();
    if let Ok(seconds) = text.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds));
    }
    let date = chrono::DateTime::parse_from_rfc2822(text).ok()?;
    let wait = date.with_timezone(&chrono::Utc) - now;
    Some(wait.to_std().unwrap_or(Duration::ZERO))
}

/// What decoding one SSE event concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decoded {
    /// More events follow.
    Continue,
    /// The provider's end-of-stream marker; the stream is complete.
    Done,
}

/// A provider's reading of its SSE events into [`StreamEvent`]s.
pub(crate) trait SseDecoder: Send + 'static {
    /// Whether the body is newline-delimited JSON (each line one event) rather than SSE.
    const NDJSON: bool = false;

    fn decode(
        &mut self,
        event: SseEvent,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<Decoded, LlmError>;
}

struct StreamState<D> {
    body: reqwest::Response,
    parser: SseParser,
    decoder: D,
    pending: VecDeque<Result<StreamEvent, LlmError>>,
    /// Nothing is read after the end marker or an error.
    finished: bool,
    next_deadline: Instant,
    timeouts: Timeouts,
    cancel: CancellationToken,
    key: Option<ApiKey>,
    received_bytes: bool,
}

/// Sends a provider's request and, once it answers, streams its events through `decoder`:
/// [`send`] then [`event_stream`], with the first-byte deadline carried from one to the other.
pub(crate) async fn open_stream<D: SseDecoder>(
    request: reqwest::RequestBuilder,
    decoder: D,
    key: Option<&ApiKey>,
    timeouts: Timeouts,
    cancel: CancellationToken,
) -> Result<EventStream, LlmError> {
    let (response, deadline) = send(request, key, &timeouts, &cancel).await?;
    Ok(event_stream(
        response,
        decoder,
        deadline,
        timeouts,
        cancel,
        key.cloned(),
    ))
}

/// The response body as a stream of events. It ends after the provider's end marker or after
/// the first error; dropping it closes the connection.
fn event_stream<D: SseDecoder>(
    response: reqwest::Response,
    decoder: D,
    first_byte_deadline: Instant,
    timeouts: Timeouts,
    cancel: CancellationToken,
    key: Option<ApiKey>,
) -> EventStream {
    let state = StreamState {
        body: response,
        parser: if D::NDJSON {
            SseParser::ndjson()
        } else {
            SseParser::new()
        },
        decoder,
        pending: VecDeque::new(),
        finished: false,
        next_deadline: first_byte_deadline,
        timeouts,
        cancel,
        key,
        received_bytes: false,
    };
    Box::pin(futures::stream::unfold(state, |mut state| async move {
        loop {
            if let Some(item) = state.pending.pop_front() {
                return Some((item, state));
            }
            if state.finished {
                return None;
            }
            state.read_more().await;
        }
    }))
}

impl<D: SseDecoder> StreamState<D> {
    /// Reads one chunk and queues what it decodes to (events, an error, or the end).
    async fn read_more(&mut self) {
        let chunk = tokio::select! {
            biased;
            () = self.cancel.cancelled() => Err(LlmError::Cancelled),
            next = tokio::time::timeout_at(self.next_deadline, self.body.chunk()) => match next {
                Err(_) => Err(self.silence_error()),
                Ok(Err(error)) => Err(transport_error(&error, self.key.as_ref(), &self.timeouts)),
                Ok(Ok(bytes)) => Ok(bytes),
            },
        };
        match chunk {
            Err(error) => self.fail(error),
            Ok(Some(bytes)) => {
                self.received_bytes = true;
                self.next_deadline = Instant::now() + self.timeouts.idle;
                if self.parser.push(&bytes).is_err() {
                    self.fail(LlmError::Malformed(
                        "an event-stream line or event was too large".to_string(),
                    ));
                    return;
                }
                self.decode_ready();
            }
            Ok(None) => {
                self.parser.finish();
                self.decode_ready();
                if !self.finished {
                    self.fail(LlmError::Truncated);
                }
            }
        }
    }

    fn silence_error(&self) -> LlmError {
        if self.received_bytes {
            LlmError::Timeout(format!(
                "the response stream was silent for {:.1}s",
                self.timeouts.idle.as_secs_f64()
            ))
        } else {
            first_byte_timeout(&self.timeouts)
        }
    }

    fn decode_ready(&mut self) {
        let mut events = VecDeque::new();
        while !self.finished {
            let Some(sse) = self.parser.next_event() else {
                break;
            };
            match self.decoder.decode(sse, &mut events) {
                Ok(Decoded::Continue) => {}
                Ok(Decoded::Done) => self.finished = true,
                Err(error) => {
                    self.pending.extend(events.drain(..).map(Ok));
                    self.fail(error);
                    return;
                }
            }
        }
        self.pending.extend(events.into_iter().map(Ok));
    }

    fn fail(&mut self, error: LlmError) {
        let error = match error {
            LlmError::Malformed(message) => LlmError::Malformed(scrub(self.key.as_ref(), &message)),
            other => other,
        };
        self.pending.push_back(Err(error));
        self.finished = true;
    }
}

/// A temperature as JSON with the digits the caller wrote (`0.2`, not `0.20000000298…`).
pub(crate) fn temperature_json(temperature: f32) -> serde_json::Value {
    let decimal: f64 = temperature
        .to_string()
        .parse()
        .unwrap_or(f64::from(temperature));
    serde_json::json!(decimal)
}

/// Parses one event's JSON, naming the event when it is not JSON.
pub(crate) fn parse_json(event: &SseEvent) -> Result<serde_json::Value, LlmError> {
    serde_json::from_str(&event.data).map_err(|error| {
        let mut snippet: String = event.data.chars().take(120).collect();
        if snippet.len() < event.data.len() {
            snippet.push('…');
        }
        LlmError::Malformed(format!("event data is not JSON ({error}): {snippet}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn retry_after_seconds_and_http_date() {
        let now = chrono::DateTime::parse_from_rfc3339("2015-10-21T07:28:00Z")
            .unwrap()
            .with_timezone(&chrono::Utc);
        assert_eq!(parse_retry_after("2", now), Some(Duration::from_secs(2)));
        assert_eq!(
            parse_retry_after(" 0.5 ", now),
            Some(Duration::from_millis(500))
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:30 GMT", now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("-3", now), None);
        assert_eq!(parse_retry_after("soon", now), None);
    }

    #[test]
    fn retry_after_ms_wins() {
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", HeaderValue::from_static("7"));
        headers.insert("retry-after-ms", HeaderValue::from_static("250"));
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(250)));
    }

    #[test]
    fn statuses_map_to_errors() {
        let empty = HeaderMap::new();
        let openai = |message: &str, code: &str| {
            serde_json::json!({"error": {"message": message, "type": "invalid_request_error", "code": code}})
                .to_string()
        };
        assert!(matches!(
            error_from_status(
                400,
                &empty,
                &openai(
                    "This model's maximum context length is 8192 tokens",
                    "context_length_exceeded"
                ),
                None
            ),
            LlmError::ContextLength { .. }
        ));
        let anthropic = serde_json::json!({"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 210000 tokens > 200000 maximum"}}).to_string();
        assert!(matches!(
            error_from_status(400, &empty, &anthropic, None),
            LlmError::ContextLength { .. }
        ));
        assert_eq!(
            error_from_status(
                400,
                &empty,
                &openai("Unknown parameter: 'foo'", "unknown_parameter"),
                None
            ),
            LlmError::BadRequest {
                status: 400,
                message: "Unknown parameter: 'foo'".to_string()
            }
        );
        assert!(matches!(
            error_from_status(413, &empty, "", None),
            LlmError::ContextLength { .. }
        ));
        assert!(matches!(
            error_from_status(401, &empty, "", None),
            LlmError::Auth { status: 401, .. }
        ));
        assert!(matches!(
            error_from_status(403, &empty, "", None),
            LlmError::Auth { status: 403, .. }
        ));
        assert_eq!(
            error_from_status(429, &empty, "", None),
            LlmError::RateLimited { retry_after: None }
        );
        assert!(matches!(
            error_from_status(
                429,
                &empty,
                &openai("You exceeded your current quota", "insufficient_quota"),
                None
            ),
            LlmError::BadRequest { status: 429, .. }
        ));
        let overloaded = error_from_status(529, &empty, "", None);
        assert!(matches!(overloaded, LlmError::Server { status: 529, .. }));
        assert!(overloaded.is_retryable());
        assert_eq!(
            error_from_status(502, &empty, "<html>bad gateway</html>", None),
            LlmError::Server {
                status: 502,
                message: "<html>bad gateway</html>".to_string()
            }
        );
        assert_eq!(
            error_from_status(503, &empty, "  ", None),
            LlmError::Server {
                status: 503,
                message: "Service Unavailable".to_string()
            }
        );
    }

    #[test]
    fn vllm_and_plain_error_shapes() {
        let vllm = r#"{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens","type":"BadRequestError","code":400}"#;
        assert!(matches!(
            error_from_status(400, &HeaderMap::new(), vllm, None),
            LlmError::ContextLength { .. }
        ));
        let ollama = r#"{"error":"model \"llama9\" not found, try pulling it first"}"#;
        assert_eq!(
            provider_message(404, ollama).0,
            "model \"llama9\" not found, try pulling it first"
        );
    }

    #[test]
    fn key_is_scrubbed_from_messages_and_debug() {
        let key = ApiKey::new("sk-secret-123");
        let body = r#"{"error":{"message":"Incorrect API key provided: sk-secret-123","code":"invalid_api_key"}}"#;
        let error = error_from_status(401, &HeaderMap::new(), body, Some(&key));
        let text = error.to_string();
        assert!(!text.contains("sk-secret-123"), "{text}");
        assert!(text.contains("[redacted]"), "{text}");
        assert!(!format!("{key:?}").contains("secret"));
    }

    #[test]
    fn long_messages_are_clipped() {
        let body = "x".repeat(5000);
        let (message, _) = provider_message(500, &body);
        assert_eq!(message.chars().count(), MAX_ERROR_MESSAGE_CHARS + 1);
    }
}

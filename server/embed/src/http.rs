//! HTTP embedders: OpenAI-compatible `/v1/embeddings` (OpenAI, vLLM, llama.cpp server,
//! LM Studio, ...) and Ollama's `/api/embed`.
//!
//! Texts go in batches; 429 and 5xx answers and transport failures are retried with
//! exponential backoff (honouring `Retry-After`); every request has a timeout. API keys come
//! from an environment variable and never appear in errors. The client is blocking: call it
//! from a blocking context (`spawn_blocking`) in async code.

use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use super::{EmbedError, Embedder, EmbedderIdentity, normalize};

/// Longest text sent, in bytes (longer ones are cut at a character boundary): chunks are far
/// smaller; this only guards against a model's context limit turning into a failed batch.
const MAX_TEXT_BYTES: usize = 16_384;
/// Longest part of an error body quoted in an error.
const MAX_ERROR_BODY: usize = 400;
/// Longest wait between retries.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// Settings shared by the HTTP embedders.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpEmbedderConfig {
    /// Base URL: `https://api.openai.com/v1` (the `/embeddings` path is added unless present)
    /// or `http://127.0.0.1:11434` for Ollama (`/api/embed` is added unless present).
    pub url: String,
    pub model: String,
    /// Environment variable holding the API key, sent as `Authorization: Bearer`. `None`
    /// sends no key; a named variable that is unset is an error.
    pub api_key_env: Option<String>,
    /// The vectors' length. `None` asks the service once, when the embedder is created.
    /// For OpenAI's `text-embedding-3-*` models it is also sent as `dimensions`.
    pub dimensions: Option<usize>,
    /// Texts per request.
    pub batch_size: usize,
    /// Per request.
    pub timeout: Duration,
    /// Retries after a 429, a 5xx or a transport failure.
    pub max_retries: u32,
    /// First wait before retrying; doubles each time.
    pub initial_backoff: Duration,
}

impl HttpEmbedderConfig {
    pub fn new(url: impl Into<String>, model: impl Into<String>) -> Self {
        HttpEmbedderConfig {
            url: url.into(),
            model: model.into(),
            api_key_env: None,
            dimensions: None,
            batch_size: 64,
            timeout: Duration::from_secs(60),
            max_retries: 4,
            initial_backoff: Duration::from_millis(500),
        }
    }
}

/// The wire dialect of a service.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dialect {
    OpenAi,
    Ollama,
}

/// The client both embedders share.
struct HttpClient {
    client: reqwest::blocking::Client,
    endpoint: String,
    api_key: Option<String>,
    config: HttpEmbedderConfig,
    dialect: Dialect,
}

impl HttpClient {
    fn new(config: HttpEmbedderConfig, dialect: Dialect) -> Result<HttpClient, EmbedError> {
        if config.model.trim().is_empty() {
            return Err(EmbedError::Config(
                "the embedding model name is empty".into(),
            ));
        }
        let base = config.url.trim_end_matches('/');
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(EmbedError::Config(format!(
                "the embedding URL {:?} must start with http:// or https://",
                config.url
            )));
        }
        let path = match dialect {
            Dialect::OpenAi => "/embeddings",
            Dialect::Ollama => "/api/embed",
        };
        let endpoint = if base.ends_with(path) {
            base.to_string()
        } else {
            format!("{base}{path}")
        };
        let api_key = match &config.api_key_env {
            Some(variable) => Some(
                std::env::var(variable)
                    .ok()
                    .filter(|key| !key.is_empty())
                    .ok_or_else(|| EmbedError::MissingApiKey(variable.clone()))?,
            ),
            None => None,
        };
        let client = reqwest::blocking::Client::builder()
            .timeout(config.timeout)
            .build()
            .map_err(|e| EmbedError::Config(format!("cannot build the HTTP client: {e}")))?;
        Ok(HttpClient {
            client,
            endpoint,
            api_key,
            config,
            dialect,
        })
    }

    fn body(&self, texts: &[&str]) -> serde_json::Value {
        let input: Vec<&str> = texts.iter().map(|t| truncate(t, MAX_TEXT_BYTES)).collect();
        match self.dialect {
            Dialect::OpenAi => {
                let mut body = json!({
                    "model": self.config.model,
                    "input": input,
                    "encoding_format": "float",
                });
                if let Some(dimensions) = self.config.dimensions
                    && self.config.model.starts_with("text-embedding-3")
                {
                    body["dimensions"] = json!(dimensions);
                }
                body
            }
            Dialect::Ollama => json!({ "model": self.config.model, "input": input }),
        }
    }

    /// One request for one batch, with retries.
    fn request(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let body = self.body(texts);
        let mut attempt = 0u32;
        loop {
            let mut request = self.client.post(&self.endpoint).json(&body);
            if let Some(key) = &self.api_key {
                request = request.bearer_auth(key);
            }
            let retry_after;
            let failure = match request.send() {
                Ok(response) if response.status().is_success() => {
                    let text = response.text().map_err(|e| self.unreachable(&e))?;
                    return self.parse(&text, texts.len());
                }
                Ok(response) => {
                    let status = response.status();
                    retry_after = response
                        .headers()
                        .get(reqwest::header::RETRY_AFTER)
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.trim().parse::<u64>().ok())
                        .map(Duration::from_secs);
                    let body = response.text().unwrap_or_default();
                    let error = EmbedError::Status {
                        url: self.endpoint.clone(),
                        status: status.as_u16(),
                        body: truncate(body.trim(), MAX_ERROR_BODY).to_string(),
                    };
                    if !(status.as_u16() == 429 || status.is_server_error()) {
                        return Err(error);
                    }
                    error
                }
                Err(error) => {
                    retry_after = None;
                    self.unreachable(&error)
                }
            };
            if attempt >= self.config.max_retries {
                return Err(failure);
            }
            let backoff = self
                .config
                .initial_backoff
                .saturating_mul(1 << attempt.min(16))
                .min(MAX_BACKOFF);
            std::thread::sleep(retry_after.map_or(backoff, |wait| wait.min(MAX_BACKOFF)));
            attempt += 1;
        }
    }

    fn unreachable(&self, error: &reqwest::Error) -> EmbedError {
        let mut message = error.to_string();
        if error.is_timeout() {
            message = format!("timed out after {:?} ({message})", self.config.timeout);
        }
        EmbedError::Unreachable {
            url: self.endpoint.clone(),
            message,
        }
    }

    fn parse(&self, text: &str, expected: usize) -> Result<Vec<Vec<f32>>, EmbedError> {
        let bad = |message: String| EmbedError::BadResponse {
            url: self.endpoint.clone(),
            message,
        };
        let vectors = match self.dialect {
            Dialect::OpenAi => {
                #[derive(Deserialize)]
                struct Item {
                    index: usize,
                    embedding: Vec<f32>,
                }
                #[derive(Deserialize)]
                struct Response {
                    data: Vec<Item>,
                }
                let mut response: Response =
                    serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
                response.data.sort_by_key(|item| item.index);
                if response
                    .data
                    .iter()
                    .enumerate()
                    .any(|(i, item)| item.index != i)
                {
                    return Err(bad("the indexes of the embeddings are not 0..n".into()));
                }
                response
                    .data
                    .into_iter()
                    .map(|item| item.embedding)
                    .collect()
            }
            Dialect::Ollama => {
                #[derive(Deserialize)]
                struct Response {
                    embeddings: Vec<Vec<f32>>,
                }
                let response: Response =
                    serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
                response.embeddings
            }
        };
        let mut vectors: Vec<Vec<f32>> = vectors;
        if vectors.len() != expected {
            return Err(bad(format!(
                "{} embeddings for {expected} texts",
                vectors.len()
            )));
        }
        let dimension = vectors.first().map_or(0, Vec::len);
        if dimension == 0 || vectors.iter().any(|v| v.len() != dimension) {
            return Err(bad("empty or ragged embeddings".into()));
        }
        if let Some(wanted) = self.config.dimensions
            && wanted != dimension
        {
            return Err(bad(format!(
                "vectors of dimension {dimension}, configured {wanted}"
            )));
        }
        if vectors.iter().flatten().any(|x| !x.is_finite()) {
            return Err(bad("non-finite numbers in an embedding".into()));
        }
        for vector in &mut vectors {
            normalize(vector);
        }
        Ok(vectors)
    }

    fn embed_all(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut out = Vec::with_capacity(texts.len());
        for batch in texts.chunks(self.config.batch_size.max(1)) {
            out.extend(self.request(batch)?);
        }
        Ok(out)
    }

    /// The identity, asking the service for the dimension when it is not configured.
    fn identity(&mut self, backend: &str) -> Result<EmbedderIdentity, EmbedError> {
        let dimension = match self.config.dimensions {
            Some(dimension) => dimension,
            None => {
                let probe = self.embed_all(&["dimension probe"])?;
                let dimension = probe.first().map_or(0, Vec::len);
                self.config.dimensions = Some(dimension);
                dimension
            }
        };
        Ok(EmbedderIdentity {
            backend: backend.into(),
            model: self.config.model.clone(),
            dimension,
        })
    }
}

/// Cuts `text` to at most `max` bytes at a character boundary.
fn truncate(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// An OpenAI-compatible `/v1/embeddings` service.
pub struct OpenAiEmbedder {
    client: HttpClient,
    identity: EmbedderIdentity,
}

impl OpenAiEmbedder {
    /// Connects (and, without configured dimensions, asks the service for them once).
    pub fn new(config: HttpEmbedderConfig) -> Result<OpenAiEmbedder, EmbedError> {
        let mut client = HttpClient::new(config, Dialect::OpenAi)?;
        let identity = client.identity("openai")?;
        Ok(OpenAiEmbedder { client, identity })
    }
}

impl Embedder for OpenAiEmbedder {
    fn identity(&self) -> &EmbedderIdentity {
        &self.identity
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.client.embed_all(texts)
    }

    fn batch_size(&self) -> usize {
        self.client.config.batch_size.max(1)
    }
}

/// An Ollama server's `/api/embed`.
pub struct OllamaEmbedder {
    client: HttpClient,
    identity: EmbedderIdentity,
}

impl OllamaEmbedder {
    /// Connects (and, without configured dimensions, asks the server for them once).
    pub fn new(config: HttpEmbedderConfig) -> Result<OllamaEmbedder, EmbedError> {
        let mut client = HttpClient::new(config, Dialect::Ollama)?;
        let identity = client.identity("ollama")?;
        Ok(OllamaEmbedder { client, identity })
    }
}

impl Embedder for OllamaEmbedder {
    fn identity(&self) -> &EmbedderIdentity {
        &self.identity
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.client.embed_all(texts)
    }

    fn batch_size(&self) -> usize {
        self.client.config.batch_size.max(1)
    }
}

//! Provider configuration (one `[[llm.providers]]` entry of lode's TOML config) and
//! [`build_provider`], which turns an entry into a ready [`Provider`].
//!
//! API keys never live in the config: an entry names the environment variable that holds one.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::{Deserialize, Serialize};

use super::anthropic::{AnthropicOptions, AnthropicProvider};
use super::http::{ApiKey, Connection, Timeouts};
use super::ollama::OllamaProvider;
use super::openai::{MaxTokensField, OpenAiOptions, OpenAiProvider};
use super::{ModelInfo, Provider};

/// Which wire API a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ProviderKind {
    /// OpenAI-compatible chat completions (OpenAI, Ollama, vLLM, llama.cpp, LM Studio,
    /// OpenRouter).
    #[serde(rename = "openai")]
    OpenAi,
    /// Anthropic Messages.
    #[serde(rename = "anthropic")]
    Anthropic,
    /// Ollama's native chat API (`/api/chat`), which, unlike its OpenAI-compatible endpoint,
    /// takes the context length per request (`num_ctx`): see [`crate::ollama`].
    #[serde(rename = "ollama")]
    Ollama,
}

impl ProviderKind {
    /// The base URL when the config gives none. OpenAI-style base URLs include the `/v1`
    /// (`{base_url}/chat/completions`); Anthropic-style ones do not (`{base_url}/v1/messages`),
    /// as in each vendor's own SDK.
    pub fn default_base_url(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "https://api.openai.com/v1",
            ProviderKind::Anthropic => "https://api.anthropic.com",
            ProviderKind::Ollama => crate::ollama::DEFAULT_BASE_URL,
        }
    }

    fn default_context_window(self) -> u32 {
        match self {
            ProviderKind::OpenAi => 128_000,
            ProviderKind::Anthropic => 200_000,
            // What Ollama itself runs a model with when nothing says otherwise.
            ProviderKind::Ollama => crate::detect::OLLAMA_DEFAULT_CONTEXT,
        }
    }
}

/// The output cap when the config sets none.
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

/// One `[[llm.providers]]` entry.
///
/// ```toml
/// [[llm.providers]]
/// name = "claude"
/// kind = "anthropic"
/// model = "claude-sonnet-4-5"
/// api_key_env = "ANTHROPIC_API_KEY"
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    /// How lode refers to this provider (`/model NAME`).
    pub name: String,
    pub kind: ProviderKind,
    /// Defaults per kind, see [`ProviderKind::default_base_url`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    pub model: String,
    /// The environment variable holding the API key; no key is sent when unset (local servers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// Output cap per request (default 8192).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// The model's context window in tokens (default 128000 for openai, 200000 for anthropic).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u32>,
    /// Seconds to establish a connection (default 15).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_timeout_secs: Option<f64>,
    /// Seconds from sending a request to the first byte of the answer (default 300).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_byte_timeout_secs: Option<f64>,
    /// Longest silence between two chunks of a streamed answer, in seconds (default 120).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_timeout_secs: Option<f64>,
    /// Extra HTTP headers sent with every request (e.g. OpenRouter's `HTTP-Referer`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// Whether the model accepts images.
    #[serde(default)]
    pub supports_images: bool,
    /// openai only: `reasoning_effort` ("low", "medium", "high") for reasoning models.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<String>,
    /// anthropic only: enables extended thinking with this token budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_budget_tokens: Option<u32>,
    /// openai only: send the session's id as `prompt_cache_key`, so a session's requests reach
    /// the same prompt cache (default: on for api.openai.com, off elsewhere, since some
    /// compatible servers refuse fields they do not know).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_cache_key: Option<bool>,
}

/// Why a provider entry cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProviderConfigError {
    #[error(
        "provider \"{provider}\": the environment variable {variable} is not set (it should hold the API key; see api_key_env)"
    )]
    MissingApiKey { provider: String, variable: String },
    #[error(
        "provider \"{provider}\": {host} needs an API key; set api_key_env to the environment variable that holds it (usually {suggestion})"
    )]
    NoApiKeyEnv {
        provider: String,
        host: String,
        suggestion: &'static str,
    },
    #[error("provider \"{provider}\": {field} must not be empty")]
    Empty {
        provider: String,
        field: &'static str,
    },
    #[error("provider \"{provider}\": base_url {url:?} is not usable: {reason}")]
    InvalidBaseUrl {
        provider: String,
        url: String,
        reason: String,
    },
    #[error("provider \"{provider}\": {field} must be a positive number of seconds, not {value}")]
    InvalidTimeout {
        provider: String,
        field: &'static str,
        value: f64,
    },
    #[error("provider \"{provider}\": {message}")]
    InvalidLimits { provider: String, message: String },
    #[error("provider \"{provider}\": header {name:?} cannot be sent: {reason}")]
    InvalidHeader {
        provider: String,
        name: String,
        reason: String,
    },
    #[error("provider \"{provider}\": could not set up the HTTP client: {reason}")]
    Client { provider: String, reason: String },
}

impl ProviderConfig {
    /// A minimal entry; every optional field at its default.
    pub fn new(name: impl Into<String>, kind: ProviderKind, model: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            kind,
            base_url: None,
            model: model.into(),
            api_key_env: None,
            max_tokens: None,
            context_window: None,
            connect_timeout_secs: None,
            first_byte_timeout_secs: None,
            idle_timeout_secs: None,
            headers: BTreeMap::new(),
            supports_images: false,
            reasoning_effort: None,
            thinking_budget_tokens: None,
            prompt_cache_key: None,
        }
    }

    /// The base URL in effect, without a trailing slash.
    pub fn effective_base_url(&self) -> String {
        self.base_url
            .as_deref()
            .unwrap_or(self.kind.default_base_url())
            .trim_end_matches('/')
            .to_string()
    }

    /// What the model is, with defaults filled in.
    pub fn model_info(&self) -> ModelInfo {
        ModelInfo {
            provider: self.name.clone(),
            model: self.model.clone(),
            context_window: self
                .context_window
                .unwrap_or(self.kind.default_context_window()),
            max_output_tokens: self.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
            supports_images: self.supports_images,
        }
    }

    /// The timeouts in effect.
    pub fn timeouts(&self) -> Result<Timeouts, ProviderConfigError> {
        let defaults = Timeouts::default();
        let pick = |field: &'static str, value: Option<f64>, default: Duration| match value {
            None => Ok(default),
            Some(secs) if secs.is_finite() && secs > 0.0 && secs < 1e9 => {
                Ok(Duration::from_secs_f64(secs))
            }
            Some(secs) => Err(ProviderConfigError::InvalidTimeout {
                provider: self.name.clone(),
                field,
                value: secs,
            }),
        };
        Ok(Timeouts {
            connect: pick(
                "connect_timeout_secs",
                self.connect_timeout_secs,
                defaults.connect,
            )?,
            first_byte: pick(
                "first_byte_timeout_secs",
                self.first_byte_timeout_secs,
                defaults.first_byte,
            )?,
            idle: pick("idle_timeout_secs", self.idle_timeout_secs, defaults.idle)?,
        })
    }

    /// The entry as `lode config` shows it: header values that look like credentials and a
    /// password in the base URL are replaced. (API keys are never in the config at all.)
    pub fn redacted(&self) -> Self {
        let mut copy = self.clone();
        for (name, value) in copy.headers.iter_mut() {
            if looks_secret(name) {
                *value = REDACTED.to_string();
            }
        }
        if let Some(url) = &self.base_url
            && let Ok(mut parsed) = reqwest::Url::parse(url)
            && parsed.password().is_some()
            && parsed.set_password(Some(REDACTED)).is_ok()
        {
            copy.base_url = Some(parsed.to_string());
        }
        copy
    }
}

const REDACTED: &str = "[redacted]";

fn looks_secret(header: &str) -> bool {
    let name = header.to_ascii_lowercase();
    ["auth", "key", "token", "secret", "cookie", "password"]
        .iter()
        .any(|word| name.contains(word))
}

/// A provider for `config`, reading its API key from the process environment.
pub fn build_provider(config: &ProviderConfig) -> Result<Arc<dyn Provider>, ProviderConfigError> {
    build_provider_with_env(config, &|name| std::env::var(name).ok())
}

/// [`build_provider`] with the environment looked up through `env` (for tests and for front
/// ends that carry their own environment).
pub fn build_provider_with_env(
    config: &ProviderConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Arc<dyn Provider>, ProviderConfigError> {
    let info = checked_model_info(config)?;
    let (base_url, parsed) = checked_base_url(config)?;
    let key = api_key(config, &parsed, env)?;
    let connection = http_connection(config, &base_url, key)?;
    Ok(match config.kind {
        ProviderKind::OpenAi => {
            let openai_itself = parsed.host_str() == Some("api.openai.com");
            let max_tokens_field = if openai_itself {
                MaxTokensField::MaxCompletionTokens
            } else {
                MaxTokensField::MaxTokens
            };
            let options = OpenAiOptions {
                max_tokens_field,
                reasoning_effort: config.reasoning_effort.clone(),
                prompt_cache_key: config.prompt_cache_key.unwrap_or(openai_itself),
            };
            Arc::new(OpenAiProvider::new(connection, info, options))
        }
        ProviderKind::Anthropic => {
            let options = AnthropicOptions {
                thinking_budget_tokens: config.thinking_budget_tokens,
            };
            Arc::new(AnthropicProvider::new(connection, info, options))
        }
        ProviderKind::Ollama => Arc::new(OllamaProvider::new(connection, info)),
    })
}

/// The model's limits, once the entry names a provider and a model and its token limits agree.
fn checked_model_info(config: &ProviderConfig) -> Result<ModelInfo, ProviderConfigError> {
    let provider = config.name.clone();
    if config.name.trim().is_empty() {
        return Err(ProviderConfigError::Empty {
            provider,
            field: "name",
        });
    }
    if config.model.trim().is_empty() {
        return Err(ProviderConfigError::Empty {
            provider,
            field: "model",
        });
    }
    let info = config.model_info();
    if info.max_output_tokens == 0 || info.max_output_tokens >= info.context_window {
        return Err(ProviderConfigError::InvalidLimits {
            provider,
            message: format!(
                "max_tokens ({}) must be above 0 and below context_window ({})",
                info.max_output_tokens, info.context_window
            ),
        });
    }
    Ok(info)
}

/// The base URL in effect, as written and parsed; only http and https are accepted.
fn checked_base_url(
    config: &ProviderConfig,
) -> Result<(String, reqwest::Url), ProviderConfigError> {
    let base_url = config.effective_base_url();
    let parsed =
        reqwest::Url::parse(&base_url).map_err(|error| ProviderConfigError::InvalidBaseUrl {
            provider: config.name.clone(),
            url: base_url.clone(),
            reason: error.to_string(),
        })?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(ProviderConfigError::InvalidBaseUrl {
            provider: config.name.clone(),
            url: base_url,
            reason: "only http and https are supported".to_string(),
        });
    }
    Ok((base_url, parsed))
}

/// The API key from the variable the entry names; none for a server without one, which a
/// hosted API (at `base_url`) is not.
fn api_key(
    config: &ProviderConfig,
    base_url: &reqwest::Url,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<ApiKey>, ProviderConfigError> {
    let Some(variable) = &config.api_key_env else {
        if let Some((host, suggestion)) = hosted_api(base_url) {
            return Err(ProviderConfigError::NoApiKeyEnv {
                provider: config.name.clone(),
                host: host.to_string(),
                suggestion,
            });
        }
        return Ok(None);
    };
    match env(variable).filter(|value| !value.trim().is_empty()) {
        Some(value) => Ok(Some(ApiKey::new(value.trim()))),
        None => Err(ProviderConfigError::MissingApiKey {
            provider: config.name.clone(),
            variable: variable.clone(),
        }),
    }
}

/// The HTTP side of a provider: client, endpoint, key, extra headers and timeouts.
fn http_connection(
    config: &ProviderConfig,
    base_url: &str,
    key: Option<ApiKey>,
) -> Result<Connection, ProviderConfigError> {
    let timeouts = config.timeouts()?;
    let headers = extra_headers(config)?;
    let client = reqwest::Client::builder()
        .connect_timeout(timeouts.connect)
        .user_agent(concat!("lode/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|error| ProviderConfigError::Client {
            provider: config.name.clone(),
            reason: error.to_string(),
        })?;
    let url = match config.kind {
        ProviderKind::OpenAi => format!("{base_url}/chat/completions"),
        ProviderKind::Anthropic => format!("{base_url}/v1/messages"),
        // A base URL copied from an OpenAI-compatible setup (`…:11434/v1`) names the same
        // server.
        ProviderKind::Ollama => format!(
            "{}/api/chat",
            base_url.strip_suffix("/v1").unwrap_or(base_url)
        ),
    };
    Ok(Connection {
        client,
        url,
        key,
        headers,
        timeouts,
    })
}

/// Hosted APIs that always need a key, with the variable people usually keep it in.
fn hosted_api(url: &reqwest::Url) -> Option<(&'static str, &'static str)> {
    const HOSTED: [(&str, &str); 3] = [
        ("api.openai.com", "OPENAI_API_KEY"),
        ("api.anthropic.com", "ANTHROPIC_API_KEY"),
        ("openrouter.ai", "OPENROUTER_API_KEY"),
    ];
    let host = url.host_str()?;
    HOSTED.iter().find(|(hosted, _)| host == *hosted).copied()
}

fn extra_headers(config: &ProviderConfig) -> Result<HeaderMap, ProviderConfigError> {
    let mut headers = HeaderMap::new();
    for (name, value) in &config.headers {
        let invalid = |reason: String| ProviderConfigError::InvalidHeader {
            provider: config.name.clone(),
            name: name.clone(),
            reason,
        };
        let header_name =
            HeaderName::from_bytes(name.as_bytes()).map_err(|error| invalid(error.to_string()))?;
        let mut header_value = HeaderValue::from_str(value)
            .map_err(|_| invalid("the value has characters a header cannot carry".to_string()))?;
        if looks_secret(name) {
            header_value.set_sensitive(true);
        }
        headers.insert(header_name, header_value);
    }
    Ok(headers)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ProviderConfig, toml::de::Error> {
        toml::from_str(text)
    }

    #[test]
    fn toml_entry_with_defaults() {
        let config = parse(
            r#"
            name = "local"
            kind = "openai"
            base_url = "http://localhost:11434/v1/"
            model = "qwen3"
            "#,
        )
        .unwrap();
        assert_eq!(config.effective_base_url(), "http://localhost:11434/v1");
        let info = config.model_info();
        assert_eq!(info.context_window, 128_000);
        assert_eq!(info.max_output_tokens, DEFAULT_MAX_TOKENS);
        assert_eq!(config.timeouts().unwrap(), Timeouts::default());
        let provider = build_provider_with_env(&config, &|_| None).unwrap();
        assert_eq!(provider.info().model, "qwen3");
    }

    #[test]
    fn unknown_fields_and_kinds_are_refused() {
        let error = parse("name='a'\nkind='openai'\nmodel='m'\nmax_token=3").unwrap_err();
        assert!(error.to_string().contains("max_token"), "{error}");
        let error = parse("name='a'\nkind='gemini'\nmodel='m'").unwrap_err();
        assert!(error.to_string().contains("gemini"), "{error}");
    }

    #[test]
    fn missing_key_names_the_variable() {
        let mut config = ProviderConfig::new("claude", ProviderKind::Anthropic, "claude-x");
        config.api_key_env = Some("LODE_TEST_KEY_THAT_IS_NOT_SET_ANYWHERE".to_string());
        let error = build_provider(&config).err().unwrap();
        assert_eq!(
            error,
            ProviderConfigError::MissingApiKey {
                provider: "claude".to_string(),
                variable: "LODE_TEST_KEY_THAT_IS_NOT_SET_ANYWHERE".to_string()
            }
        );
        assert!(
            error
                .to_string()
                .contains("LODE_TEST_KEY_THAT_IS_NOT_SET_ANYWHERE")
        );
        let empty = build_provider_with_env(&config, &|_| Some("  ".to_string()));
        assert!(matches!(
            empty,
            Err(ProviderConfigError::MissingApiKey { .. })
        ));
        assert!(build_provider_with_env(&config, &|_| Some("k".to_string())).is_ok());
    }

    #[test]
    fn hosted_apis_without_a_key_variable_are_refused() {
        let config = ProviderConfig::new("claude", ProviderKind::Anthropic, "claude-x");
        let error = build_provider_with_env(&config, &|_| None).err().unwrap();
        assert!(error.to_string().contains("ANTHROPIC_API_KEY"), "{error}");
        let mut config = ProviderConfig::new("router", ProviderKind::OpenAi, "m");
        config.base_url = Some("https://openrouter.ai/api/v1".to_string());
        let error = build_provider_with_env(&config, &|_| None).err().unwrap();
        assert!(error.to_string().contains("OPENROUTER_API_KEY"), "{error}");
    }

    #[test]
    fn invalid_values_get_clear_errors() {
        let mut config = ProviderConfig::new("p", ProviderKind::OpenAi, "m");
        config.base_url = Some("ftp://example.com".to_string());
        assert!(matches!(
            build_provider_with_env(&config, &|_| None),
            Err(ProviderConfigError::InvalidBaseUrl { .. })
        ));
        config.base_url = Some("not a url".to_string());
        assert!(matches!(
            build_provider_with_env(&config, &|_| None),
            Err(ProviderConfigError::InvalidBaseUrl { .. })
        ));
        config.base_url = Some("http://localhost:8080/v1".to_string());
        config.idle_timeout_secs = Some(-1.0);
        assert!(matches!(
            build_provider_with_env(&config, &|_| None),
            Err(ProviderConfigError::InvalidTimeout {
                field: "idle_timeout_secs",
                ..
            })
        ));
        config.idle_timeout_secs = Some(0.25);
        assert_eq!(config.timeouts().unwrap().idle, Duration::from_millis(250));
        config.max_tokens = Some(200_000);
        assert!(matches!(
            build_provider_with_env(&config, &|_| None),
            Err(ProviderConfigError::InvalidLimits { .. })
        ));
        config.max_tokens = None;
        config
            .headers
            .insert("bad header".to_string(), "x".to_string());
        assert!(matches!(
            build_provider_with_env(&config, &|_| None),
            Err(ProviderConfigError::InvalidHeader { .. })
        ));
        config.model = " ".to_string();
        assert!(matches!(
            build_provider_with_env(&config, &|_| None),
            Err(ProviderConfigError::Empty { field: "model", .. })
        ));
    }

    #[test]
    fn redacted_hides_credentials_and_round_trips() {
        let mut config = ProviderConfig::new("router", ProviderKind::OpenAi, "m");
        config.base_url = Some("https://user:hunter2@example.com/v1".to_string());
        config.api_key_env = Some("OPENROUTER_API_KEY".to_string());
        config
            .headers
            .insert("Authorization".to_string(), "Bearer abc".to_string());
        config
            .headers
            .insert("HTTP-Referer".to_string(), "https://lode.dev".to_string());
        let redacted = config.redacted();
        let text = toml::to_string(&redacted).unwrap();
        assert!(!text.contains("hunter2"), "{text}");
        assert!(!text.contains("Bearer abc"), "{text}");
        assert!(text.contains("https://lode.dev"), "{text}");
        assert!(text.contains("OPENROUTER_API_KEY"), "{text}");
        let back: ProviderConfig = toml::from_str(&toml::to_string(&config).unwrap()).unwrap();
        assert_eq!(back, config);
    }
}

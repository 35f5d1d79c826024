//! Zero-config providers: when no `[[llm.providers]]` entry is configured anywhere, lode takes
//! the first provider the environment offers, in this order:
//!
//! 1. `ANTHROPIC_API_KEY` → Anthropic (`claude-sonnet-4-5`; `ANTHROPIC_BASE_URL` is honoured),
//! 2. `OPENAI_API_KEY` → OpenAI (`gpt-4.1`; `OPENAI_BASE_URL` is honoured),
//! 3. `OPENROUTER_API_KEY` → OpenRouter (`anthropic/claude-sonnet-4.5`),
//! 4. a local Ollama at `$OLLAMA_HOST` (default `http://127.0.0.1:11434`) whose `GET /api/tags`
//!    lists a tool-capable model.
//!
//! `LODE_MODEL` replaces the model of a key-detected provider (an Ollama model is whichever is
//! installed). A variable set to an empty string counts as unset.
//!
//! **Which Ollama model is tool-capable**: the first model in `/api/tags` order (Ollama lists the
//! most recently modified first) whose `POST /api/show` answer has `"tools"` in `capabilities`;
//! an Ollama too old to report capabilities (before 0.6.4) counts a model whose chat template
//! mentions `.Tools`, which is how Ollama itself decided. At most [`MAX_OLLAMA_SHOWS`] models are
//! asked about. The probe only happens when no key is present, and every request has a short
//! timeout ([`OLLAMA_PROBE_TIMEOUT`]); a refused connection answers at once.
//!
//! An Ollama model's context window is `OLLAMA_CONTEXT_LENGTH` when that variable is set here
//! (Ollama reads the same variable when it starts), else [`OLLAMA_DEFAULT_CONTEXT`], Ollama's
//! own default, never more than the model's trained length. The provider speaks Ollama's native
//! API (`kind = "ollama"`), which is told that window with every request (`num_ctx`), so what
//! lode budgets is what the server keeps.
//!
//! Configuration always wins: detection runs only when no provider is configured.

use std::time::Duration;

use serde::Deserialize;

use super::config::{ProviderConfig, ProviderKind};

/// Where Ollama listens when `OLLAMA_HOST` is unset.
pub const DEFAULT_OLLAMA_HOST: &str = "http://127.0.0.1:11434";
/// Replaces the model of a provider detected from an API key.
pub const MODEL_ENV: &str = "LODE_MODEL";
/// The longest any one request of the Ollama probe may take (connection included).
pub const OLLAMA_PROBE_TIMEOUT: Duration = Duration::from_millis(1500);
/// How long the probe waits for a connection to Ollama.
pub const OLLAMA_CONNECT_TIMEOUT: Duration = Duration::from_millis(500);
/// At most this many installed models are asked about (`/api/show`).
pub const MAX_OLLAMA_SHOWS: usize = 8;
/// Ollama's context length when the server is not told otherwise.
pub const OLLAMA_DEFAULT_CONTEXT: u32 = 4096;

/// A provider found in the environment.
#[derive(Debug, Clone, PartialEq)]
pub struct DetectedProvider {
    /// The entry lode uses, as if it were configured (`name` is `anthropic`, `openai`,
    /// `openrouter` or `ollama`).
    pub provider: ProviderConfig,
    /// Why it was chosen, e.g. "ANTHROPIC_API_KEY is set".
    pub reason: String,
}

impl DetectedProvider {
    /// One line for stderr: which provider and model, and why.
    pub fn notice(&self) -> String {
        format!(
            "no LLM provider is configured; using {} model {} ({}). A [[llm.providers]] entry \
             in your config replaces this (`lode config` shows the files).",
            self.provider.name, self.provider.model, self.reason
        )
    }
}

/// Nothing usable in the environment: what was looked at, one clause each.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("nothing detected: {}", tried.join("; "))]
pub struct NothingDetected {
    pub tried: Vec<String>,
}

/// A provider whose key comes from the environment.
struct Keyed {
    variable: &'static str,
    name: &'static str,
    kind: ProviderKind,
    model: &'static str,
    /// The variable that may move the base URL (as the vendor's own SDK reads it).
    base_url_env: Option<&'static str>,
    base_url: Option<&'static str>,
}

/// The detection order for keys.
const KEYED: [Keyed; 3] = [
    Keyed {
        variable: "ANTHROPIC_API_KEY",
        name: "anthropic",
        kind: ProviderKind::Anthropic,
        model: "claude-sonnet-4-5",
        base_url_env: Some("ANTHROPIC_BASE_URL"),
        base_url: None,
    },
    Keyed {
        variable: "OPENAI_API_KEY",
        name: "openai",
        kind: ProviderKind::OpenAi,
        model: "gpt-4.1",
        base_url_env: Some("OPENAI_BASE_URL"),
        base_url: None,
    },
    Keyed {
        variable: "OPENROUTER_API_KEY",
        name: "openrouter",
        kind: ProviderKind::OpenAi,
        model: "anthropic/claude-sonnet-4.5",
        base_url_env: None,
        base_url: Some("https://openrouter.ai/api/v1"),
    },
];

/// The variables detection reads for keys, in order.
pub const KEY_VARIABLES: [&str; 3] = ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY"];

fn set(env: &dyn Fn(&str) -> Option<String>, name: &str) -> Option<String> {
    env(name)
        .map(|value| value.trim().to_owned())
        .filter(|value| !value.is_empty())
}

/// The first provider the environment offers (module docs), probing Ollama only when no key is
/// set.
pub fn detect(env: &dyn Fn(&str) -> Option<String>) -> Result<DetectedProvider, NothingDetected> {
    if let Some(found) = detect_from_keys(env) {
        return Ok(found);
    }
    let host = ollama_host(env);
    probe_ollama(&host, env).map_err(|why| NothingDetected {
        tried: vec![
            format!("none of {} is set", KEY_VARIABLES.join(", ")),
            format!("no Ollama with a tool-capable model at {host} ({why})"),
        ],
    })
}

/// The first provider whose key variable is set, without touching the network.
pub fn detect_from_keys(env: &dyn Fn(&str) -> Option<String>) -> Option<DetectedProvider> {
    let keyed = KEYED
        .iter()
        .find(|keyed| set(env, keyed.variable).is_some())?;
    let model = set(env, MODEL_ENV).unwrap_or_else(|| keyed.model.to_owned());
    let mut provider = ProviderConfig::new(keyed.name, keyed.kind, model);
    provider.api_key_env = Some(keyed.variable.to_owned());
    provider.base_url = keyed
        .base_url_env
        .and_then(|variable| set(env, variable))
        .or_else(|| keyed.base_url.map(str::to_owned));
    if keyed.name == "openrouter" {
        // OpenRouter's attribution headers; nothing secret.
        provider
            .headers
            .insert("X-Title".to_owned(), "lode".to_owned());
    }
    let mut reason = format!("{} is set", keyed.variable);
    if let Some(variable) = keyed
        .base_url_env
        .filter(|variable| set(env, variable).is_some())
    {
        reason.push_str(&format!(", at {variable}"));
    }
    if set(env, MODEL_ENV).is_some() {
        reason.push_str(&format!(", model from {MODEL_ENV}"));
    }
    Some(DetectedProvider { provider, reason })
}

/// Ollama's address from `OLLAMA_HOST` as Ollama reads it: a scheme (default `http`), a host
/// (default `127.0.0.1`) and a port (default 11434); no trailing slash.
pub fn ollama_host(env: &dyn Fn(&str) -> Option<String>) -> String {
    let Some(raw) = set(env, "OLLAMA_HOST") else {
        return DEFAULT_OLLAMA_HOST.to_owned();
    };
    let (scheme, rest) = match raw.split_once("://") {
        Some((scheme, rest)) => (scheme.to_owned(), rest.to_owned()),
        None => ("http".to_owned(), raw.clone()),
    };
    let rest = rest.trim_end_matches('/');
    let (authority, path) = match rest.split_once('/') {
        Some((authority, path)) => (authority, format!("/{path}")),
        None => (rest, String::new()),
    };
    // An authority without a port (`host`, `[::1]`) takes Ollama's default port.
    let has_port = match authority.rsplit_once(':') {
        Some((host, port)) => {
            !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) && !host.is_empty()
        }
        None => false,
    } && !authority.ends_with(']');
    let authority = if authority.is_empty() {
        "127.0.0.1:11434".to_owned()
    } else if has_port {
        authority.to_owned()
    } else {
        format!("{authority}:11434")
    };
    format!("{scheme}://{authority}{path}")
}

#[derive(Deserialize)]
struct Tags {
    #[serde(default)]
    models: Vec<TagModel>,
}

#[derive(Deserialize)]
struct TagModel {
    #[serde(default)]
    name: String,
    #[serde(default)]
    model: String,
}

#[derive(Deserialize)]
struct Show {
    capabilities: Option<Vec<String>>,
    #[serde(default)]
    template: String,
    #[serde(default)]
    model_info: serde_json::Map<String, serde_json::Value>,
}

impl Show {
    /// The module docs' rule.
    fn has_tools(&self) -> bool {
        match &self.capabilities {
            Some(capabilities) => capabilities.iter().any(|c| c == "tools"),
            None => self.template.contains(".Tools"),
        }
    }

    /// The model's trained context length (`<architecture>.context_length`).
    fn context_length(&self) -> Option<u32> {
        self.model_info.iter().find_map(|(key, value)| {
            key.ends_with(".context_length")
                .then(|| value.as_u64())
                .flatten()
                .and_then(|length| u32::try_from(length).ok())
        })
    }
}

/// Asks the Ollama at `host` for its models and picks the first tool-capable one. Runs on its
/// own thread and runtime so that it can be called from synchronous code inside or outside an
/// async runtime. The error says why nothing was found, in a few words.
pub fn probe_ollama(
    host: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<DetectedProvider, String> {
    let context_env = set(env, "OLLAMA_CONTEXT_LENGTH").and_then(|value| value.parse().ok());
    let host_owned = host.to_owned();
    let answer = std::thread::scope(|scope| {
        scope
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|error| format!("cannot start a runtime: {error}"))?;
                runtime.block_on(probe(&host_owned))
            })
            .join()
            .unwrap_or_else(|_| Err("the probe panicked".to_owned()))
    })?;
    let (model, show) = answer;
    let trained = show.context_length();
    let wanted = context_env.unwrap_or(OLLAMA_DEFAULT_CONTEXT);
    let context_window = trained
        .map_or(wanted, |trained| wanted.min(trained))
        .max(1024);
    // Ollama's native API, which is told the window lode budgets with every request.
    let mut provider = ProviderConfig::new("ollama", ProviderKind::Ollama, model);
    provider.base_url = Some(host.to_owned());
    provider.context_window = Some(context_window);
    provider.max_tokens = Some((context_window / 4).min(super::config::DEFAULT_MAX_TOKENS));
    Ok(DetectedProvider {
        provider,
        reason: format!(
            "no API key is set and Ollama at {host} has this tool-capable model; context window \
             {context_window} tokens{}",
            if context_env.is_some() {
                " from OLLAMA_CONTEXT_LENGTH"
            } else {
                " (Ollama's default; lode asks Ollama for it with every request; set \
                 OLLAMA_CONTEXT_LENGTH, or a provider's context_window, to use more)"
            }
        ),
    })
}

async fn probe(host: &str) -> Result<(String, Show), String> {
    let client = reqwest::Client::builder()
        .connect_timeout(OLLAMA_CONNECT_TIMEOUT)
        .timeout(OLLAMA_PROBE_TIMEOUT)
        .build()
        .map_err(|error| error.to_string())?;
    let tags: Tags = client
        .get(format!("{host}/api/tags"))
        .send()
        .await
        .map_err(|error| short(&error))?
        .error_for_status()
        .map_err(|error| short(&error))?
        .json()
        .await
        .map_err(|_| "/api/tags did not answer Ollama's JSON".to_owned())?;
    if tags.models.is_empty() {
        return Err("it lists no models; `ollama pull qwen3` installs one".to_owned());
    }
    for listed in tags.models.iter().take(MAX_OLLAMA_SHOWS) {
        let name = if listed.model.is_empty() {
            &listed.name
        } else {
            &listed.model
        };
        if name.is_empty() {
            continue;
        }
        let show = client
            .post(format!("{host}/api/show"))
            .json(&serde_json::json!({ "model": name }))
            .send()
            .await;
        let Ok(response) = show.and_then(reqwest::Response::error_for_status) else {
            continue;
        };
        if let Ok(show) = response.json::<Show>().await
            && show.has_tools()
        {
            return Ok((name.clone(), show));
        }
    }
    Err(format!(
        "none of its {} models reports tool support; `ollama pull qwen3` installs one that does",
        tags.models.len()
    ))
}

/// A transport error in a few words (reqwest's Display nests the URL and causes).
fn short(error: &reqwest::Error) -> String {
    if error.is_timeout() {
        "no answer in time".to_owned()
    } else if error.is_connect() {
        "nothing listening".to_owned()
    } else if let Some(status) = error.status() {
        format!("HTTP {status}")
    } else {
        "not reachable".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn keys_are_taken_in_the_documented_order() {
        let all = env(&[
            ("OPENROUTER_API_KEY", "r"),
            ("OPENAI_API_KEY", "o"),
            ("ANTHROPIC_API_KEY", "a"),
        ]);
        assert_eq!(detect_from_keys(&all).unwrap().provider.name, "anthropic");
        let two = env(&[("OPENROUTER_API_KEY", "r"), ("OPENAI_API_KEY", "o")]);
        assert_eq!(detect_from_keys(&two).unwrap().provider.name, "openai");
        let empty_anthropic = env(&[("ANTHROPIC_API_KEY", "  "), ("OPENROUTER_API_KEY", "r")]);
        let found = detect_from_keys(&empty_anthropic).unwrap();
        assert_eq!(found.provider.name, "openrouter");
        assert_eq!(
            found.provider.effective_base_url(),
            "https://openrouter.ai/api/v1"
        );
        assert_eq!(
            found.provider.api_key_env.as_deref(),
            Some("OPENROUTER_API_KEY")
        );
        assert!(detect_from_keys(&env(&[])).is_none());
    }

    #[test]
    fn base_url_and_model_overrides_are_read_and_the_key_never_shown() {
        let found = detect_from_keys(&env(&[
            ("ANTHROPIC_API_KEY", "sk-ant-secret-value"),
            ("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/"),
            ("LODE_MODEL", "claude-opus-4-1"),
        ]))
        .unwrap();
        assert_eq!(found.provider.model, "claude-opus-4-1");
        assert_eq!(
            found.provider.base_url.as_deref(),
            Some("http://127.0.0.1:9/")
        );
        assert!(!found.notice().contains("sk-ant-secret-value"));
        assert!(found.notice().contains("ANTHROPIC_API_KEY is set"));
    }

    #[test]
    fn ollama_host_is_read_as_ollama_reads_it() {
        for (given, expected) in [
            (None, "http://127.0.0.1:11434"),
            (Some("0.0.0.0"), "http://0.0.0.0:11434"),
            (Some("127.0.0.1:8080"), "http://127.0.0.1:8080"),
            (Some("http://gpu-box:11434/"), "http://gpu-box:11434"),
            (
                Some("https://ollama.example"),
                "https://ollama.example:11434",
            ),
            (Some("[::1]"), "http://[::1]:11434"),
            (Some("[::1]:9000"), "http://[::1]:9000"),
        ] {
            let vars = match given {
                Some(value) => env(&[("OLLAMA_HOST", value)]),
                None => env(&[]),
            };
            assert_eq!(ollama_host(&vars), expected, "{given:?}");
        }
    }

    #[test]
    fn tool_capability_rule() {
        let show: Show =
            serde_json::from_str(r#"{"capabilities":["completion","tools"]}"#).unwrap();
        assert!(show.has_tools());
        let show: Show =
            serde_json::from_str(r#"{"capabilities":["completion"],"template":"{{ .Tools }}"}"#)
                .unwrap();
        assert!(!show.has_tools(), "capabilities, when given, decide");
        let show: Show = serde_json::from_str(
            r#"{"template":"{{ if .Tools }}x{{ end }}","model_info":{"llama.context_length":131072}}"#,
        )
        .unwrap();
        assert!(show.has_tools());
        assert_eq!(show.context_length(), Some(131072));
    }

    #[test]
    fn nothing_listening_is_reported_quickly() {
        // Port 9 (discard) has no listener here: the connection is refused.
        let error = probe_ollama("http://127.0.0.1:9", &env(&[])).unwrap_err();
        assert_eq!(error, "nothing listening");
    }
}

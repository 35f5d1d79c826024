//! The configuration and the LLM providers: the files read, each provider's entry and
//! credentials (present or not; a value is never shown, not even in part), and one small request
//! to each (`GET /models`, which costs no tokens) with a short timeout.

use std::path::Path;
use std::time::{Duration, Instant};

use lode_agent::config::{Config, ConfigError, LoadedConfig};
use lode_llm::{ProviderConfig, ProviderConfigError, ProviderKind};

use super::Check;
use crate::commands::WorkspaceArgs;

/// How long a provider has to accept the connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// How long the whole request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(6);

/// Loads the configuration (with zero-config detection), appends the config, provider and
/// credential checks, and returns the configuration for the checks that read it.
pub fn check(args: &WorkspaceArgs, root: &Path, checks: &mut Vec<Check>) -> Option<LoadedConfig> {
    let mut loaded = match Config::load(args.config.as_deref(), root) {
        Ok(loaded) => loaded,
        Err(error) => {
            checks.push(Check::fail(
                "config",
                format!("the configuration cannot be used: {error}"),
                "correct the file named above (`lode config --check` re-checks it)",
            ));
            return None;
        }
    };
    checks.push(if loaded.files.is_empty() {
        Check::ok("config", "no config file; defaults apply")
    } else {
        Check::ok(
            "config",
            format!(
                "read {}",
                loaded
                    .files
                    .iter()
                    .map(|file| file.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
    });
    for warning in &loaded.warnings {
        checks.push(Check::warn(
            "config",
            warning.clone(),
            "see the message; `lode config` shows the effective configuration",
        ));
    }
    loaded.detect_provider(&|name| std::env::var(name).ok());
    if let Some(detected) = &loaded.detected {
        checks.push(Check::ok(
            "provider",
            format!(
                "none configured; detected {} model {} ({})",
                detected.provider.name, detected.provider.model, detected.reason
            ),
        ));
    }
    match loaded.provider(None) {
        Err(error @ ConfigError::UntrustedProviders { .. }) => {
            checks.push(Check::fail(
                "provider",
                "no LLM provider outside the workspace's untrusted .lode/config.toml",
                format!("review it and run `lode trust`; {error}"),
            ));
            return Some(loaded);
        }
        Err(ConfigError::NoProvider { detection, .. }) => {
            checks.push(Check::fail(
                "provider",
                format!(
                    "no LLM provider is configured{}",
                    detection
                        .map(|why| format!(" and {why}"))
                        .unwrap_or_default()
                ),
                "set ANTHROPIC_API_KEY, OPENAI_API_KEY or OPENROUTER_API_KEY, start Ollama with \
                 a tool-capable model (`ollama pull qwen3`), or add a [[llm.providers]] entry \
                 (docs/providers.md)",
            ));
            return Some(loaded);
        }
        Err(error) => {
            checks.push(Check::fail(
                "provider",
                error.to_string(),
                "correct [llm] in your config",
            ));
            return Some(loaded);
        }
        Ok(_) => {}
    }
    let default = loaded.provider(None).ok().map(|entry| entry.name.clone());
    let mut reachable = Vec::new();
    for entry in &loaded.config.llm.providers {
        let label = if Some(&entry.name) == default.as_ref() {
            format!("{} (default)", entry.name)
        } else {
            entry.name.clone()
        };
        match lode_llm::build_provider(entry) {
            Err(ProviderConfigError::MissingApiKey { variable, .. }) => {
                checks.push(Check::fail(
                    "credentials",
                    format!("{label}: ${variable} is not set"),
                    format!(
                        "export {variable}=<your key> (lode reads keys only from the \
                         environment), or change api_key_env"
                    ),
                ));
            }
            Err(error) => checks.push(Check::fail(
                "provider",
                error.to_string(),
                "correct this [[llm.providers]] entry (`lode config` shows the files)",
            )),
            Ok(_) => {
                if let Some(variable) = &entry.api_key_env {
                    checks.push(Check::ok(
                        "credentials",
                        format!("{label}: ${variable} is set (value not shown)"),
                    ));
                }
                reachable.push((label, entry.clone()));
            }
        }
    }
    checks.extend(reach_all(reachable));
    Some(loaded)
}

/// One request to each provider, all at once.
fn reach_all(providers: Vec<(String, ProviderConfig)>) -> Vec<Check> {
    if providers.is_empty() {
        return Vec::new();
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            return vec![Check::warn(
                "provider",
                format!("providers not checked: cannot start a runtime ({error})"),
                "run `lode doctor` again",
            )];
        }
    };
    runtime.block_on(async move {
        let mut tasks = tokio::task::JoinSet::new();
        for (index, (label, entry)) in providers.into_iter().enumerate() {
            tasks.spawn(async move { (index, reach(&label, &entry).await) });
        }
        let mut checks = Vec::new();
        while let Some(done) = tasks.join_next().await {
            if let Ok(done) = done {
                checks.push(done);
            }
        }
        checks.sort_by_key(|(index, _)| *index);
        checks.into_iter().map(|(_, check)| check).collect()
    })
}

/// `GET /models` (OpenAI-style) or `GET /v1/models` (Anthropic), with the entry's key and
/// headers: reachable, credentials accepted, the model offered.
async fn reach(label: &str, entry: &ProviderConfig) -> Check {
    let base = entry.redacted().effective_base_url();
    let real_base = entry.effective_base_url();
    let (url, shown) = match entry.kind {
        ProviderKind::OpenAi => (format!("{real_base}/models"), format!("{base}/models")),
        ProviderKind::Anthropic => (
            format!("{real_base}/v1/models"),
            format!("{base}/v1/models"),
        ),
        ProviderKind::Ollama => {
            let strip = |url: &str| url.strip_suffix("/v1").unwrap_or(url).to_owned();
            (
                format!("{}/api/tags", strip(&real_base)),
                format!("{}/api/tags", strip(&base)),
            )
        }
    };
    let client = match reqwest::Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .timeout(REQUEST_TIMEOUT)
        .user_agent(concat!("lode/", env!("CARGO_PKG_VERSION"), " doctor"))
        .build()
    {
        Ok(client) => client,
        Err(error) => {
            return Check::warn(
                "provider",
                format!("{label}: not checked ({error})"),
                "run `lode doctor` again",
            );
        }
    };
    let mut request = client.get(&url);
    for (name, value) in &entry.headers {
        request = request.header(name, value);
    }
    let key = entry
        .api_key_env
        .as_ref()
        .and_then(|variable| std::env::var(variable).ok())
        .map(|key| key.trim().to_owned())
        .filter(|key| !key.is_empty());
    request = match (entry.kind, key) {
        (ProviderKind::OpenAi | ProviderKind::Ollama, Some(key)) => request.bearer_auth(key),
        (ProviderKind::Anthropic, Some(key)) => request
            .header("x-api-key", key)
            .header("anthropic-version", "2023-06-01"),
        (_, None) => request,
    };
    let started = Instant::now();
    let response = request.send().await;
    let took = started.elapsed().as_millis();
    let local = reqwest::Url::parse(&real_base).is_ok_and(|url| {
        matches!(
            url.host_str(),
            Some("localhost" | "127.0.0.1" | "[::1]" | "0.0.0.0")
        )
    });
    let unreachable_fix = format!(
        "{} or correct base_url of provider \"{}\" (`lode config` shows where it is set); lode \
         cannot answer without it",
        if local {
            "start the server"
        } else {
            "check that this machine reaches it (network, proxy, DNS)"
        },
        entry.name
    );
    let response = match response {
        Ok(response) => response,
        Err(error) if error.is_timeout() => {
            return Check::fail(
                "provider",
                format!("{label}: no answer from {shown} within {REQUEST_TIMEOUT:?}"),
                unreachable_fix,
            );
        }
        Err(error) => {
            return Check::fail(
                "provider",
                format!("{label}: cannot reach {shown} ({})", root_cause(&error)),
                unreachable_fix,
            );
        }
    };
    let status = response.status();
    if status.as_u16() == 401 || status.as_u16() == 403 {
        return Check::fail(
            "provider",
            format!("{label}: {shown} refused the credentials (HTTP {status})"),
            match &entry.api_key_env {
                Some(variable) => format!("check that ${variable} holds a valid key for it"),
                None => {
                    "this server wants a key: set api_key_env to the variable holding it".to_owned()
                }
            },
        );
    }
    if !status.is_success() {
        return Check::warn(
            "provider",
            format!("{label}: {shown} answered HTTP {status} in {took} ms"),
            "the server is up, but check base_url (OpenAI-style base URLs end in /v1)",
        );
    }
    let models: Vec<String> = response
        .json::<serde_json::Value>()
        .await
        .ok()
        .and_then(|body| {
            // OpenAI-style `data[].id`; Ollama's `/api/tags` has `models[].name`.
            let (list, field) = match body.get("data") {
                Some(data) => (data, "id"),
                None => (body.get("models")?, "name"),
            };
            list.as_array().map(|items| {
                items
                    .iter()
                    .filter_map(|item| item.get(field)?.as_str().map(str::to_owned))
                    .collect()
            })
        })
        .unwrap_or_default();
    let offered = models.iter().any(|id| {
        id == &entry.model || id.starts_with(&entry.model) || entry.model.starts_with(id.as_str())
    });
    if models.is_empty() || offered {
        Check::ok(
            "provider",
            format!(
                "{label}: {} model {} at {base}, answered in {took} ms",
                kind_name(entry.kind),
                entry.model
            ),
        )
    } else {
        Check::warn(
            "provider",
            format!(
                "{label}: {base} answered in {took} ms but does not list model {}",
                entry.model
            ),
            format!(
                "set model to one it lists ({}{})",
                models
                    .iter()
                    .take(5)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", "),
                if models.len() > 5 { ", …" } else { "" }
            ),
        )
    }
}

fn kind_name(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::OpenAi => "OpenAI-compatible",
        ProviderKind::Anthropic => "Anthropic",
        ProviderKind::Ollama => "Ollama",
    }
}

/// The innermost cause (`Connection refused (os error 111)`), which names no URL.
fn root_cause(error: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = error;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

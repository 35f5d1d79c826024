//! ACP authentication: the `authMethods` lode advertises in `initialize` and the `authenticate`
//! check behind them.
//!
//! lode needs no login of its own; what a client can help with is the model provider's API key.
//! Each method names one environment variable (the hosted APIs lode knows). ACP v1's stable
//! schema has two method types, `agent` (the default: the client calls `authenticate`) and
//! `terminal`; the `env_var` type of the auth-methods RFD is not in v1. So each method is an
//! `agent` method, which every v1 client and the ACP registry accept, and its `_meta` carries
//! the RFD's `env_var` description (`type`, `vars`, `link`) for clients that can ask the user
//! for the variable and restart the agent with it set. `authenticate` then checks, in lode's own
//! environment, that the variable is set and that the provider zero-config detection takes from
//! it can be built. It never
//! prints the key, and it sends no request: it proves the key is present and usable in a
//! provider's configuration, not that the vendor accepts it (`lode doctor` asks the vendor).

use lode_llm::config::{ProviderConfigError, build_provider_with_env};
use lode_llm::detect::{KEY_VARIABLES, detect_from_keys};

use agent_client_protocol::v1::schema::{AuthMethod, AuthMethodAgent};
use agent_client_protocol::{Error, ErrorCode};

/// One API-key method: the variable it names. The provider built from it is the one lode's
/// zero-config detection takes for that variable (`lode_llm::detect`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyMethod {
    /// The method id clients pass to `authenticate`.
    pub id: &'static str,
    pub name: &'static str,
    /// The environment variable holding the key.
    pub variable: &'static str,
    /// Where the user gets a key.
    pub link: &'static str,
}

/// The methods, in zero-config detection's order of the variables.
pub const KEY_METHODS: [KeyMethod; 3] = [
    KeyMethod {
        id: "anthropic-api-key",
        name: "Anthropic API key",
        variable: "ANTHROPIC_API_KEY",
        link: "https://console.anthropic.com/settings/keys",
    },
    KeyMethod {
        id: "openai-api-key",
        name: "OpenAI API key",
        variable: "OPENAI_API_KEY",
        link: "https://platform.openai.com/api-keys",
    },
    KeyMethod {
        id: "openrouter-api-key",
        name: "OpenRouter API key",
        variable: "OPENROUTER_API_KEY",
        link: "https://openrouter.ai/settings/keys",
    },
];

/// Why `authenticate` failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AuthError {
    #[error("unknown authentication method {id:?}; lode offers {}", known_ids())]
    UnknownMethod { id: String },
    #[error(
        "{variable} is not set in the environment lode was started with: set it to your API key \
         in the agent's environment (the client's agent settings `env`, or the shell that starts \
         the editor) and restart the agent; or add a provider to lode's config (`lode config --check` \
         shows where lode looks)"
    )]
    NotSet { variable: &'static str },
    #[error("{variable} is set but empty: it should hold your API key")]
    Empty { variable: &'static str },
    #[error("{variable} is set but no provider can be built from it: {source}")]
    Provider {
        variable: &'static str,
        source: ProviderConfigError,
    },
}

/// At most this many characters of an unknown id are echoed back in the error.
const ECHOED_ID_CHARS: usize = 64;

fn shortened(id: &str) -> String {
    if id.chars().count() <= ECHOED_ID_CHARS {
        return id.to_string();
    }
    let mut short: String = id.chars().take(ECHOED_ID_CHARS).collect();
    short.push('…');
    short
}

fn known_ids() -> String {
    KEY_METHODS
        .iter()
        .map(|method| method.id)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The `authMethods` of lode's `initialize` answer.
pub fn auth_methods() -> Vec<AuthMethod> {
    KEY_METHODS
        .iter()
        .map(|method| {
            let meta = serde_json::json!({
                "type": "env_var",
                "vars": [{"name": method.variable, "label": method.name, "secret": true}],
                "link": method.link,
            });
            let meta = match meta {
                serde_json::Value::Object(map) => map,
                // json! of an object literal is always an object.
                _ => serde_json::Map::new(),
            };
            AuthMethod::Agent(
                AuthMethodAgent::new(method.id, method.name)
                    .description(format!(
                        "Set {} in the agent's environment; lode then uses that provider",
                        method.variable
                    ))
                    .meta(meta),
            )
        })
        .collect()
}

/// `authenticate(method_id)`: the method's variable is set (looked up through `env`) and a
/// provider can be built from it. Returns the method checked.
pub fn authenticate(
    method_id: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<&'static KeyMethod, AuthError> {
    let method = KEY_METHODS
        .iter()
        .find(|method| method.id == method_id)
        .ok_or_else(|| AuthError::UnknownMethod {
            id: shortened(method_id),
        })?;
    let variable = method.variable;
    match env(variable) {
        None => return Err(AuthError::NotSet { variable }),
        Some(value) if value.trim().is_empty() => return Err(AuthError::Empty { variable }),
        Some(_) => {}
    }
    // Detection as if this were the only key set: the provider (model, base URL) zero-config
    // would take from this variable.
    let only_this = |name: &str| {
        if KEY_VARIABLES.contains(&name) && name != variable {
            None
        } else {
            env(name)
        }
    };
    let detected = detect_from_keys(&only_this).ok_or(AuthError::NotSet { variable })?;
    build_provider_with_env(&detected.provider, env)
        .map_err(|source| AuthError::Provider { variable, source })?;
    Ok(method)
}

/// The ACP error for a failed `authenticate`: an unknown id is invalid params (-32602); a
/// missing or unusable key is `auth_required` (-32000), its message naming the fix.
pub fn acp_error(error: &AuthError) -> Error {
    let code = match error {
        AuthError::UnknownMethod { .. } => ErrorCode::INVALID_PARAMS,
        AuthError::NotSet { .. } | AuthError::Empty { .. } | AuthError::Provider { .. } => {
            ErrorCode::AUTH_REQUIRED
        }
    };
    Error::new(code, error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_with(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        }
    }

    #[test]
    fn every_method_is_an_agent_method_describing_its_variable() {
        let methods = serde_json::to_value(auth_methods()).unwrap();
        let methods = methods.as_array().unwrap();
        assert_eq!(methods.len(), 3);
        for (json, method) in methods.iter().zip(KEY_METHODS) {
            assert_eq!(json["id"], method.id);
            assert!(
                json.get("type").is_none(),
                "v1 agent methods carry no type: {json}"
            );
            assert_eq!(json["_meta"]["type"], "env_var");
            assert_eq!(json["_meta"]["vars"][0]["name"], method.variable);
            assert_eq!(json["_meta"]["vars"][0]["secret"], true);
        }
    }

    #[test]
    fn a_set_variable_authenticates_and_the_key_is_never_in_an_error() {
        let env = env_with(&[("OPENROUTER_API_KEY", "sk-or-secret")]);
        assert_eq!(
            authenticate("openrouter-api-key", &env).unwrap().variable,
            "OPENROUTER_API_KEY"
        );
        let error = authenticate("anthropic-api-key", &env).unwrap_err();
        assert_eq!(
            error,
            AuthError::NotSet {
                variable: "ANTHROPIC_API_KEY"
            }
        );
        assert!(!error.to_string().contains("sk-or-secret"));
    }

    #[test]
    fn the_provider_checked_is_the_detected_one_and_its_errors_are_named() {
        for method in KEY_METHODS {
            assert!(
                KEY_VARIABLES.contains(&method.variable),
                "{}",
                method.variable
            );
        }
        let env = env_with(&[
            ("ANTHROPIC_API_KEY", "sk-ant-secret"),
            ("OPENAI_API_KEY", "sk-secret"),
            ("OPENAI_BASE_URL", "ftp://example.invalid"),
        ]);
        // Each variable is checked on its own, whatever else is set.
        assert!(authenticate("anthropic-api-key", &env).is_ok());
        let error = authenticate("openai-api-key", &env).unwrap_err();
        assert!(
            matches!(
                &error,
                AuthError::Provider {
                    variable: "OPENAI_API_KEY",
                    ..
                }
            ),
            "{error:?}"
        );
        assert!(error.to_string().contains("only http and https"), "{error}");
        assert!(!error.to_string().contains("sk-secret"), "{error}");
    }

    #[test]
    fn empty_values_and_unknown_ids_are_refused_with_the_fix() {
        let env = env_with(&[("OPENAI_API_KEY", "  ")]);
        let empty = authenticate("openai-api-key", &env).unwrap_err();
        assert!(
            empty
                .to_string()
                .contains("OPENAI_API_KEY is set but empty"),
            "{empty}"
        );
        let unknown = authenticate("password", &env).unwrap_err();
        assert!(
            unknown
                .to_string()
                .contains("anthropic-api-key, openai-api-key, openrouter-api-key"),
            "{unknown}"
        );
    }
}

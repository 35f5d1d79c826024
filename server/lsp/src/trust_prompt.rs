//! Asks the editor, once per connection, whether to trust the workspace's own lode settings
//! (`window/showMessageRequest`), when its `.lode/config.toml` sets what an untrusted file may
//! not (see `lode_agent::trust`). The answer is recorded per user; the agent behind the code
//! actions applies it at once.

use std::path::{Path, PathBuf};

use lode_agent::Agent;
use lode_agent::config::WORKSPACE_CONFIG;
use tower_lsp_server::Client;
use tower_lsp_server::lsp_types::{MessageActionItem, MessageType};

/// The button that records trust.
pub const TRUST: &str = "Trust";
/// The button that trusts until the server exits.
pub const TRUST_ONCE: &str = "Trust until restart";
/// The button that keeps the settings ignored.
pub const DONT_TRUST: &str = "Don't trust";

/// Most ignored settings spelled out in the message.
const LISTED: usize = 5;

/// What the untrusted workspace file sets that lode ignores (empty: nothing to ask).
pub fn ignored_settings(
    root: &Path,
    config_file: Option<&Path>,
    agent: Option<&Agent>,
) -> Vec<String> {
    if let Some(agent) = agent {
        return agent.untrusted_settings();
    }
    let trusted = lode_agent::trust::TrustStore::for_user()
        .map(|store| store.status(root).is_trusted())
        .unwrap_or(false);
    if trusted {
        return Vec::new();
    }
    lode_agent::trust::ignored_until_trusted(config_file, root).unwrap_or_default()
}

/// Asks and acts on the answer. Returns what the user chose (`None`: dismissed or no answer).
pub async fn ask(
    client: &Client,
    root: PathBuf,
    ignored: Vec<String>,
    agent: Option<Agent>,
) -> Option<String> {
    if ignored.is_empty() {
        return None;
    }
    let file = root.join(WORKSPACE_CONFIG);
    let message = format!(
        "lode: {} is not trusted, so lode ignores: {}. Trust it? Providers receive your API \
         keys and code; MCP and language servers run as you. (`lode trust` shows it all.)",
        file.display(),
        lode_agent::trust::summary(&ignored, LISTED)
    );
    let actions = [TRUST, TRUST_ONCE, DONT_TRUST]
        .map(|title| MessageActionItem {
            title: title.to_owned(),
            properties: Default::default(),
        })
        .to_vec();
    let choice = match client
        .show_message_request(MessageType::WARNING, message, Some(actions))
        .await
    {
        Ok(Some(item)) => item.title,
        Ok(None) => return None,
        Err(error) => {
            tracing::warn!(%error, "the editor did not answer the trust question");
            return None;
        }
    };
    let outcome = match (choice.as_str(), &agent) {
        (TRUST | TRUST_ONCE, Some(agent)) => agent
            .trust_workspace(choice == TRUST)
            .map_err(|error| error.to_string()),
        (TRUST, None) => lode_agent::trust::TrustStore::for_user()
            .map_err(|error| error.to_string())
            .and_then(|store| {
                store
                    .trust(&root)
                    .map(|_| ())
                    .map_err(|error| error.to_string())
            }),
        _ => Ok(()),
    };
    let applied_now = if agent.is_some() {
        "code actions use it now, language-server settings after a restart"
    } else {
        "restart the language server to use it"
    };
    let reply = match (choice.as_str(), outcome) {
        (TRUST, Ok(())) => format!(
            "lode: trusted {} until it changes; {applied_now}",
            file.display()
        ),
        (TRUST_ONCE, Ok(())) if agent.is_some() => format!(
            "lode: {}'s settings apply to code actions until the server exits",
            file.display()
        ),
        (_, Err(error)) => format!("lode: could not trust {}: {error}", file.display()),
        _ => format!(
            "lode: {} stays untrusted; its settings stay ignored",
            file.display()
        ),
    };
    client.show_message(MessageType::INFO, reply).await;
    Some(choice)
}

//! [`AgentBackend`] for lode's agent: the only place the adapter touches `lode_agent::Agent`,
//! converting its session, mode, MCP and input types to and from the adapter's.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use lode_agent::event::{AgentEvent, StopReason};
use lode_agent::host::SessionHost;
use lode_agent::mcp::{McpServerConfig, McpTransport};
use lode_agent::{Agent, AgentError, SessionInfo, UserInput};
use lode_llm::ModelInfo;
use lode_policy::Mode;
use tokio_util::sync::CancellationToken;

use crate::backend::{
    AgentBackend, BackendError, McpServerSpec, PromptInput, SessionSummary, SlashCommandInfo,
};

fn backend_error(error: AgentError) -> BackendError {
    match error {
        AgentError::NoSuchSession(id) => BackendError::SessionNotFound(id),
        AgentError::NoProvider(message) => BackendError::AuthRequired(message),
        error @ (AgentError::UnknownModel { .. } | AgentError::Busy(_)) => {
            BackendError::InvalidInput(error.to_string())
        }
        other => BackendError::Internal(other.to_string()),
    }
}

fn summary(info: SessionInfo) -> SessionSummary {
    SessionSummary {
        id: info.id,
        title: info.title,
        cwd: info.cwd,
        mode: info.mode.as_str().to_string(),
        model: info.model,
        updated_at: info.updated_at.to_rfc3339(),
    }
}

fn mcp_config(spec: McpServerSpec) -> McpServerConfig {
    match spec {
        McpServerSpec::Stdio {
            name,
            command,
            args,
            env,
        } => {
            let mut config =
                McpServerConfig::stdio(name, command.to_string_lossy().into_owned(), args);
            if let McpTransport::Stdio { env: slot, .. } = &mut config.transport {
                *slot = env;
            }
            config
        }
        McpServerSpec::Http { name, url, headers } => {
            let mut config = McpServerConfig::http(name, url);
            if let McpTransport::Http { headers: slot, .. } = &mut config.transport {
                *slot = headers;
            }
            config
        }
    }
}

fn user_input(input: PromptInput) -> UserInput {
    match input {
        PromptInput::Text(text) => UserInput::Text(text),
        PromptInput::Image { mime_type, data } => UserInput::Image { mime_type, data },
        PromptInput::ResourceLink { uri, name } => UserInput::ResourceLink { uri, name },
        PromptInput::Resource {
            uri,
            text,
            mime_type,
        } => UserInput::Resource {
            uri,
            text,
            mime_type,
        },
    }
}

#[async_trait::async_trait]
impl AgentBackend for Agent {
    fn models(&self, _session_id: Option<&str>) -> Vec<ModelInfo> {
        Agent::models(self)
    }

    fn slash_commands(&self) -> Vec<SlashCommandInfo> {
        Agent::slash_commands(self)
            .into_iter()
            .map(|command| SlashCommandInfo {
                name: command.name,
                description: command.description,
                input_hint: command.input_hint,
            })
            .collect()
    }

    fn new_session(
        &self,
        cwd: PathBuf,
        mcp_servers: Vec<McpServerSpec>,
    ) -> Result<SessionSummary, BackendError> {
        let servers = mcp_servers.into_iter().map(mcp_config).collect();
        Agent::new_session(self, cwd, servers)
            .map(summary)
            .map_err(backend_error)
    }

    fn list_sessions(&self, _cwd: Option<&Path>) -> Result<Vec<SessionSummary>, BackendError> {
        Agent::list_sessions(self)
            .map(|sessions| sessions.into_iter().map(summary).collect())
            .map_err(backend_error)
    }

    fn load_session(
        &self,
        id: &str,
        _cwd: &Path,
    ) -> Result<(SessionSummary, Vec<AgentEvent>), BackendError> {
        Agent::load_session(self, id)
            .map(|(info, history)| (summary(info), history))
            .map_err(backend_error)
    }

    fn workspace_trusted(&self, _cwd: &Path) -> Result<bool, BackendError> {
        Ok(Agent::workspace_trusted(self))
    }

    fn attach_mcp_servers(
        &self,
        id: &str,
        servers: Vec<McpServerSpec>,
    ) -> Result<(), BackendError> {
        Agent::attach_mcp_servers(self, id, servers.into_iter().map(mcp_config).collect())
            .map_err(backend_error)
    }

    fn resume_session(&self, id: &str, _cwd: &Path) -> Result<SessionSummary, BackendError> {
        Agent::resume_session(self, id)
            .map(summary)
            .map_err(backend_error)
    }

    fn release_session(&self, id: &str) -> bool {
        Agent::release_session(self, id)
    }

    fn close_session(&self, id: &str) -> Result<(), BackendError> {
        Agent::close_session(self, id).map_err(backend_error)
    }

    fn delete_session(&self, id: &str) -> Result<(), BackendError> {
        Agent::delete_session(self, id).map_err(backend_error)
    }

    fn set_mode(&self, id: &str, mode: &str) -> Result<(), BackendError> {
        let mode: Mode = mode
            .parse()
            .map_err(|error| BackendError::InvalidInput(format!("{error}")))?;
        Agent::set_mode(self, id, mode).map_err(backend_error)
    }

    fn push_diagnostics(
        &self,
        _session_id: Option<&str>,
        path: PathBuf,
        diagnostics: Vec<lode_tools::diagnostics::Diagnostic>,
    ) -> bool {
        // The agent's diagnostics are per workspace file, shared by its sessions.
        let file = lode_tools::diagnostics::FileDiagnostics {
            path,
            diagnostics,
            checked_by: Some(lode_tools::pushed_diagnostics::EDITOR_CHECKER.to_owned()),
            error: None,
        };
        Agent::push_diagnostics(self, vec![file]) == 1
    }

    fn file_saved(&self, path: &Path) -> bool {
        Agent::file_saved(self, path)
    }

    fn set_model(&self, id: &str, provider: &str) -> Result<(), BackendError> {
        Agent::set_model(self, id, provider).map_err(backend_error)
    }

    async fn prompt(
        &self,
        id: &str,
        input: Vec<PromptInput>,
        host: Arc<dyn SessionHost>,
        cancel: CancellationToken,
    ) -> Result<StopReason, BackendError> {
        let input = input.into_iter().map(user_input).collect();
        Agent::prompt(self, id, input, host, cancel)
            .await
            .map_err(backend_error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mcp_specs_become_agent_configs_with_env_and_headers() {
        let stdio = mcp_config(McpServerSpec::Stdio {
            name: "files".into(),
            command: PathBuf::from("/bin/mcp"),
            args: vec!["-v".into()],
            env: vec![("K".into(), "V".into())],
        });
        assert_eq!(stdio.name, "files");
        assert_eq!(
            stdio.transport,
            McpTransport::Stdio {
                command: "/bin/mcp".into(),
                args: vec!["-v".into()],
                env: vec![("K".into(), "V".into())],
                cwd: None,
            }
        );
        let http = mcp_config(McpServerSpec::Http {
            name: "web".into(),
            url: "http://127.0.0.1:1/mcp".into(),
            headers: vec![("Authorization".into(), "Bearer t".into())],
        });
        assert_eq!(
            http.transport,
            McpTransport::Http {
                url: "http://127.0.0.1:1/mcp".into(),
                headers: vec![("Authorization".into(), "Bearer t".into())],
            }
        );
    }

    #[test]
    fn agent_errors_keep_their_meaning() {
        assert_eq!(
            backend_error(AgentError::NoSuchSession("s".into())),
            BackendError::SessionNotFound("s".into())
        );
        assert!(matches!(
            backend_error(AgentError::Busy("s".into())),
            BackendError::InvalidInput(_)
        ));
        assert_eq!(
            backend_error(AgentError::NoProvider("add a provider".into())),
            BackendError::AuthRequired("add a provider".into())
        );
        assert!(matches!(
            backend_error(AgentError::Other("disk".into())),
            BackendError::Internal(_)
        ));
    }
}

//! A scripted stand-in for the agent, shared by the adapter's protocol tests. Its turns follow
//! the prompt text: `stream`, `permission`, `wait`, `no provider`, `panic`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use lode_acp::{
    AgentBackend, BackendError, McpServerSpec, PromptInput, SessionSummary, SlashCommandInfo,
};
use lode_agent::event::{
    AgentEvent, StopReason, ToolCallStart, ToolCallUpdate, ToolContent, ToolKind, ToolStatus,
};
use lode_agent::host::{PermissionRequest, SessionHost};
use lode_llm::ModelInfo;
use lode_tools::host::TerminalCommand;
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// A backend whose turns follow the prompt text: `stream`, `permission`, `wait`, `no provider`,
/// `panic`.
#[derive(Default)]
pub struct ScriptedBackend {
    sessions: Mutex<HashMap<String, SessionSummary>>,
    pub mcp: Mutex<Vec<McpServerSpec>>,
    pub answers: Mutex<Vec<String>>,
    /// Sessions the adapter released for being idle, in order.
    pub released: Mutex<Vec<String>>,
}

impl ScriptedBackend {
    fn get(&self, id: &str) -> Result<SessionSummary, BackendError> {
        self.sessions
            .lock()
            .unwrap()
            .get(id)
            .cloned()
            .ok_or_else(|| BackendError::SessionNotFound(id.to_string()))
    }
}

#[async_trait::async_trait]
impl AgentBackend for ScriptedBackend {
    fn models(&self, _session_id: Option<&str>) -> Vec<ModelInfo> {
        ["local", "cloud"]
            .map(|provider| ModelInfo {
                provider: provider.into(),
                model: format!("{provider}-1"),
                context_window: 32000,
                max_output_tokens: 1000,
                supports_images: false,
            })
            .to_vec()
    }
    fn slash_commands(&self) -> Vec<SlashCommandInfo> {
        vec![SlashCommandInfo {
            name: "help".into(),
            description: "Show help".into(),
            input_hint: None,
        }]
    }
    fn new_session(
        &self,
        cwd: PathBuf,
        mcp_servers: Vec<McpServerSpec>,
    ) -> Result<SessionSummary, BackendError> {
        let mut sessions = self.sessions.lock().unwrap();
        let session = SessionSummary {
            id: format!("s{}", sessions.len() + 1),
            title: None,
            cwd,
            mode: "code".into(),
            model: "local".into(),
            updated_at: "2026-11-22T00:00:00Z".into(),
        };
        sessions.insert(session.id.clone(), session.clone());
        *self.mcp.lock().unwrap() = mcp_servers;
        Ok(session)
    }
    fn list_sessions(&self, _cwd: Option<&Path>) -> Result<Vec<SessionSummary>, BackendError> {
        let mut sessions: Vec<_> = self.sessions.lock().unwrap().values().cloned().collect();
        sessions.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(sessions)
    }
    fn load_session(
        &self,
        id: &str,
        _cwd: &Path,
    ) -> Result<(SessionSummary, Vec<AgentEvent>), BackendError> {
        let history = vec![
            AgentEvent::UserMessage {
                text: "earlier question".into(),
            },
            AgentEvent::TextDelta {
                text: "earlier answer".into(),
            },
        ];
        Ok((self.get(id)?, history))
    }
    fn resume_session(&self, id: &str, _cwd: &Path) -> Result<SessionSummary, BackendError> {
        self.get(id)
    }
    fn release_session(&self, id: &str) -> bool {
        self.released.lock().unwrap().push(id.to_string());
        true
    }
    fn close_session(&self, id: &str) -> Result<(), BackendError> {
        self.get(id).map(drop)
    }
    fn delete_session(&self, id: &str) -> Result<(), BackendError> {
        self.sessions
            .lock()
            .unwrap()
            .remove(id)
            .map(drop)
            .ok_or_else(|| BackendError::SessionNotFound(id.to_string()))
    }
    fn set_mode(&self, id: &str, mode: &str) -> Result<(), BackendError> {
        self.sessions
            .lock()
            .unwrap()
            .get_mut(id)
            .map(|s| s.mode = mode.into())
            .ok_or_else(|| BackendError::SessionNotFound(id.into()))
    }
    fn set_model(&self, id: &str, provider: &str) -> Result<(), BackendError> {
        self.sessions
            .lock()
            .unwrap()
            .get_mut(id)
            .map(|s| s.model = provider.into())
            .ok_or_else(|| BackendError::SessionNotFound(id.into()))
    }
    async fn prompt(
        &self,
        id: &str,
        input: Vec<PromptInput>,
        host: Arc<dyn SessionHost>,
        cancel: CancellationToken,
    ) -> Result<StopReason, BackendError> {
        self.get(id)?;
        let PromptInput::Text(text) = &input[0] else {
            return Err(BackendError::InvalidInput("text first".into()));
        };
        match text.as_str() {
            "stream" => {
                host.emit(AgentEvent::TextDelta {
                    text: "Hello".into(),
                });
                host.emit(AgentEvent::TextDelta {
                    text: " world".into(),
                });
                host.emit(AgentEvent::ToolCallStarted(ToolCallStart {
                    id: "c1".into(),
                    tool: "read_file".into(),
                    title: "Read a.rs".into(),
                    kind: ToolKind::Read,
                    locations: vec![],
                    raw_input: json!({"path": "a.rs"}),
                }));
                host.emit(AgentEvent::ToolCallUpdated(ToolCallUpdate {
                    id: "c1".into(),
                    status: ToolStatus::Completed,
                    title: None,
                    content: vec![ToolContent::Text {
                        text: "fn a() {}".into(),
                    }],
                    locations: vec![],
                    raw_output: None,
                }));
                host.emit(AgentEvent::TitleChanged {
                    title: "Streaming".into(),
                });
                Ok(StopReason::EndTurn)
            }
            "permission" => {
                let answer = host
                    .request_permission(PermissionRequest {
                        tool_call_id: "c2".into(),
                        tool: "run".into(),
                        title: "Run `ls`".into(),
                        kind: ToolKind::Execute,
                        raw_input: json!({"command": "ls"}),
                        always_pattern: "ls*".into(),
                        offer_network: false,
                        must_ask: false,
                        reason: "commands ask by default".into(),
                        subjects: vec!["ls".into()],
                        subject_kind: lode_policy::SubjectKind::Command,
                    })
                    .await;
                let answer = serde_json::to_value(answer)
                    .unwrap()
                    .as_str()
                    .unwrap()
                    .to_string();
                self.answers.lock().unwrap().push(answer.clone());
                host.emit(AgentEvent::TextDelta {
                    text: format!("answer: {answer}"),
                });
                Ok(StopReason::EndTurn)
            }
            "wait" => {
                host.emit(AgentEvent::TextDelta {
                    text: "waiting".into(),
                });
                cancel.cancelled().await;
                self.answers.lock().unwrap().push("wait cancelled".into());
                Ok(StopReason::Cancelled)
            }
            "terminal" => {
                let Some(terminals) = host.client_terminals() else {
                    return Err(BackendError::InvalidInput("no client terminals".into()));
                };
                let command = TerminalCommand {
                    command: "cargo".into(),
                    args: vec!["test".into()],
                    cwd: PathBuf::from("/work/project"),
                    env: vec![("RUST_LOG".into(), "info".into())],
                    output_byte_limit: Some(4096),
                };
                let id = terminals
                    .create(&command)
                    .await
                    .map_err(|e| BackendError::Internal(e.0))?;
                let exit = terminals
                    .wait_for_exit(&id)
                    .await
                    .map_err(|e| BackendError::Internal(e.0))?;
                let output = terminals
                    .output(&id)
                    .await
                    .map_err(|e| BackendError::Internal(e.0))?;
                terminals
                    .release(&id)
                    .await
                    .map_err(|e| BackendError::Internal(e.0))?;
                host.emit(AgentEvent::TextDelta {
                    text: format!("{id} exited {:?}: {}", exit.exit_code, output.output),
                });
                Ok(StopReason::EndTurn)
            }
            "read" => {
                let Some(fs) = host.client_fs() else {
                    return Err(BackendError::InvalidInput("no client fs".into()));
                };
                let text = fs
                    .read_text_file(std::path::Path::new("/work/project/a.rs"), Some(2), Some(1))
                    .await
                    .map_err(|e| BackendError::Internal(e.0))?;
                host.emit(AgentEvent::TextDelta { text });
                Ok(StopReason::EndTurn)
            }
            "no provider" => Err(BackendError::AuthRequired(
                "no LLM provider is configured: add [[llm.providers]] to your config".into(),
            )),
            "panic" => panic!("scripted panic inside a turn"),
            other => Err(BackendError::InvalidInput(format!(
                "no script for {other:?}"
            ))),
        }
    }
}

//! The agent's front end for one ACP turn: events become `session/update` notifications,
//! permission questions become `session/request_permission`, and — when the client offers them —
//! file access and commands go through the editor (`fs/*`, `terminal/*`).

use std::path::Path;
use std::sync::Arc;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ClientCapabilities, CreateTerminalRequest, EnvVariable, KillTerminalRequest,
    ReadTextFileRequest, ReleaseTerminalRequest, RequestPermissionRequest, SessionId,
    SessionNotification, TerminalExitStatus, TerminalOutputRequest, WaitForTerminalExitRequest,
    WriteTextFileRequest,
};
use lode_agent::event::AgentEvent;
use lode_agent::host::{PermissionAnswer, PermissionRequest, SessionHost};
use lode_tools::host::{
    ClientFs, ClientTerminals, HostError, TerminalCommand, TerminalExit, TerminalOutput,
};
use tokio_util::sync::CancellationToken;

use crate::mapping;

/// The host of one turn on one ACP connection.
pub struct AcpSessionHost {
    connection: ConnectionTo<Client>,
    session_id: SessionId,
    capabilities: ClientCapabilities,
    /// Fires when the turn is cancelled or the connection goes away.
    cancel: CancellationToken,
    /// The editor's language servers, when the client negotiated the LSP extension.
    editor_lsp: Option<Arc<crate::ext_lsp::AcpEditorLsp>>,
}

impl AcpSessionHost {
    pub fn new(
        connection: ConnectionTo<Client>,
        session_id: SessionId,
        capabilities: ClientCapabilities,
        cancel: CancellationToken,
    ) -> Self {
        Self {
            connection,
            session_id,
            capabilities,
            cancel,
            editor_lsp: None,
        }
    }

    /// Offers the editor's language servers to the turn's navigation (`crate::ext_lsp`).
    pub fn with_editor_lsp(mut self, editor_lsp: Option<crate::ext_lsp::AcpEditorLsp>) -> Self {
        self.editor_lsp = editor_lsp.map(Arc::new);
        self
    }

    fn notices_supported(&self) -> bool {
        self.capabilities
            .session
            .as_ref()
            .is_some_and(|session| session.notices.is_some())
    }
}

/// Sends one agent event as a `session/update`. The connection's outgoing queue keeps the order
/// and never blocks; a client that has gone away simply gets nothing.
pub fn send_event(
    connection: &ConnectionTo<Client>,
    session_id: &SessionId,
    event: &AgentEvent,
    notices: bool,
) {
    if let Some(update) = mapping::session_update(event, notices) {
        let _ = connection.send_notification(SessionNotification::new(session_id.clone(), update));
    }
}

#[async_trait::async_trait]
impl SessionHost for AcpSessionHost {
    fn emit(&self, event: AgentEvent) {
        send_event(
            &self.connection,
            &self.session_id,
            &event,
            self.notices_supported(),
        );
    }

    async fn request_permission(&self, request: PermissionRequest) -> PermissionAnswer {
        if self.cancel.is_cancelled() {
            return PermissionAnswer::Cancelled;
        }
        let question = RequestPermissionRequest::new(
            self.session_id.clone(),
            mapping::permission_tool_call(&request),
            mapping::permission_options(&request),
        )
        .meta(mapping::permission_meta(&request));
        let answer = self.connection.send_request(question).block_task();
        tokio::select! {
            // Dropping the pending request tells the client to withdraw the question.
            () = self.cancel.cancelled() => PermissionAnswer::Cancelled,
            response = answer => match response {
                Ok(response) => mapping::permission_answer(&response.outcome),
                // A client that cannot answer (gone, or an error) has not allowed anything.
                Err(_) => PermissionAnswer::RejectOnce,
            },
        }
    }

    fn client_fs(&self) -> Option<Arc<dyn ClientFs>> {
        let fs = &self.capabilities.fs;
        (fs.read_text_file || fs.write_text_file).then(|| {
            Arc::new(AcpClientFs {
                connection: self.connection.clone(),
                session_id: self.session_id.clone(),
                can_read: fs.read_text_file,
                can_write: fs.write_text_file,
            }) as Arc<dyn ClientFs>
        })
    }

    fn client_terminals(&self) -> Option<Arc<dyn ClientTerminals>> {
        self.capabilities.terminal.then(|| {
            Arc::new(AcpClientTerminals {
                connection: self.connection.clone(),
                session_id: self.session_id.clone(),
            }) as Arc<dyn ClientTerminals>
        })
    }

    fn editor_language_server(
        &self,
    ) -> Option<Arc<dyn lode_tools::editor_lsp::EditorLanguageServer>> {
        self.editor_lsp
            .clone()
            .map(|lsp| lsp as Arc<dyn lode_tools::editor_lsp::EditorLanguageServer>)
    }
}

fn host_error(operation: &str, error: agent_client_protocol::Error) -> HostError {
    HostError(format!("{operation} failed in the client: {error}"))
}

/// The editor's file system (`fs/read_text_file`, `fs/write_text_file`), which sees unsaved
/// buffers and lets the editor review writes. A side the client did not advertise reads or writes
/// the local disk instead, so the agent never has to know which one it got.
struct AcpClientFs {
    connection: ConnectionTo<Client>,
    session_id: SessionId,
    can_read: bool,
    can_write: bool,
}

#[async_trait::async_trait]
impl ClientFs for AcpClientFs {
    async fn read_text_file(
        &self,
        path: &Path,
        line: Option<u32>,
        limit: Option<u32>,
    ) -> Result<String, HostError> {
        if !self.can_read {
            let text = tokio::fs::read_to_string(path)
                .await
                .map_err(|error| HostError(format!("cannot read {}: {error}", path.display())))?;
            return Ok(select_lines(&text, line, limit));
        }
        let request = ReadTextFileRequest::new(self.session_id.clone(), path.to_path_buf())
            .line(line)
            .limit(limit);
        let response = self
            .connection
            .send_request(request)
            .block_task()
            .await
            .map_err(|error| host_error("fs/read_text_file", error))?;
        Ok(response.content)
    }

    async fn write_text_file(&self, path: &Path, content: &str) -> Result<(), HostError> {
        if !self.can_write {
            return tokio::fs::write(path, content)
                .await
                .map_err(|error| HostError(format!("cannot write {}: {error}", path.display())));
        }
        let request =
            WriteTextFileRequest::new(self.session_id.clone(), path.to_path_buf(), content);
        self.connection
            .send_request(request)
            .block_task()
            .await
            .map_err(|error| host_error("fs/write_text_file", error))?;
        Ok(())
    }
}

/// `limit` lines from 1-based `line`, as `fs/read_text_file` defines them.
fn select_lines(text: &str, line: Option<u32>, limit: Option<u32>) -> String {
    if line.is_none() && limit.is_none() {
        return text.to_string();
    }
    let skip = line.map_or(0, |line| line.saturating_sub(1) as usize);
    let take = limit.map_or(usize::MAX, |limit| limit as usize);
    text.split_inclusive('\n').skip(skip).take(take).collect()
}

/// The editor's terminals (`terminal/*`): commands run where the user sees them live.
struct AcpClientTerminals {
    connection: ConnectionTo<Client>,
    session_id: SessionId,
}

fn terminal_exit(status: &TerminalExitStatus) -> TerminalExit {
    TerminalExit {
        exit_code: status
            .exit_code
            .map(|code| i32::try_from(code).unwrap_or(i32::MAX)),
        signal: status.signal.clone(),
    }
}

#[async_trait::async_trait]
impl ClientTerminals for AcpClientTerminals {
    async fn create(&self, command: &TerminalCommand) -> Result<String, HostError> {
        let request = CreateTerminalRequest::new(self.session_id.clone(), command.command.clone())
            .args(command.args.clone())
            .env(
                command
                    .env
                    .iter()
                    .map(|(name, value)| EnvVariable::new(name.clone(), value.clone()))
                    .collect(),
            )
            .cwd(command.cwd.clone())
            .output_byte_limit(command.output_byte_limit);
        let response = self
            .connection
            .send_request(request)
            .block_task()
            .await
            .map_err(|error| host_error("terminal/create", error))?;
        Ok(response.terminal_id.0.to_string())
    }

    async fn output(&self, terminal_id: &str) -> Result<TerminalOutput, HostError> {
        let request = TerminalOutputRequest::new(self.session_id.clone(), terminal_id.to_string());
        let response = self
            .connection
            .send_request(request)
            .block_task()
            .await
            .map_err(|error| host_error("terminal/output", error))?;
        Ok(TerminalOutput {
            output: response.output,
            truncated: response.truncated,
            exit: response.exit_status.as_ref().map(terminal_exit),
        })
    }

    async fn wait_for_exit(&self, terminal_id: &str) -> Result<TerminalExit, HostError> {
        let request =
            WaitForTerminalExitRequest::new(self.session_id.clone(), terminal_id.to_string());
        let response = self
            .connection
            .send_request(request)
            .block_task()
            .await
            .map_err(|error| host_error("terminal/wait_for_exit", error))?;
        Ok(terminal_exit(&response.exit_status))
    }

    async fn kill(&self, terminal_id: &str) -> Result<(), HostError> {
        let request = KillTerminalRequest::new(self.session_id.clone(), terminal_id.to_string());
        self.connection
            .send_request(request)
            .block_task()
            .await
            .map_err(|error| host_error("terminal/kill", error))?;
        Ok(())
    }

    async fn release(&self, terminal_id: &str) -> Result<(), HostError> {
        let request = ReleaseTerminalRequest::new(self.session_id.clone(), terminal_id.to_string());
        self.connection
            .send_request(request)
            .block_task()
            .await
            .map_err(|error| host_error("terminal/release", error))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::select_lines;

    #[test]
    fn select_lines_takes_a_one_based_window() {
        let text = "one\ntwo\nthree\nfour";
        assert_eq!(select_lines(text, None, None), text);
        assert_eq!(select_lines(text, Some(2), Some(2)), "two\nthree\n");
        assert_eq!(select_lines(text, Some(4), None), "four");
        assert_eq!(select_lines(text, None, Some(1)), "one\n");
        assert_eq!(select_lines(text, Some(9), Some(1)), "");
    }
}

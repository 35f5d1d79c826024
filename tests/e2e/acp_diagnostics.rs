//! `_lode/diagnostics` end to end: the real `lode acp`, an ACP client that writes files for the
//! agent (`fs/write_text_file`) and, like an editor running its own language servers, pushes the
//! file's diagnostics after each write; the scripted model only answers as expected when the
//! error the client pushed after the edit is in the edit's result. Malformed and out-of-workspace
//! pushes are ignored without breaking the connection.

use crate::acp_support as support;

use std::path::Path;
use std::sync::{Arc, Mutex};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    ClientCapabilities, FileSystemCapabilities, InitializeRequest, NewSessionRequest,
    PromptRequest, RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse,
    SelectedPermissionOutcome, SessionNotification, StopReason, WriteTextFileRequest,
    WriteTextFileResponse,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client, UntypedMessage};
use serde_json::{Value, json};
use support::{PATIENCE, Workspace, agent_text, stdio_transport};

fn file_uri(path: &Path) -> String {
    format!("file://{}", path.display())
}

fn diagnostic(line: u32, character: u32, severity: u8, message: &str, code: &str) -> Value {
    json!({
        "range": {"start": {"line": line, "character": character},
                  "end": {"line": line, "character": character + 1}},
        "severity": severity,
        "message": message,
        "code": code,
        "source": "editor-ls",
    })
}

fn push(uri: &str, diagnostics: Vec<Value>) -> UntypedMessage {
    UntypedMessage::new(
        "_lode/diagnostics",
        json!({"uri": uri, "diagnostics": diagnostics}),
    )
    .unwrap()
}

#[tokio::test]
async fn diagnostics_the_editor_pushes_after_an_edit_reach_the_model() {
    let workspace = Workspace::new("acp_diagnostics.json");
    let mut acp = workspace.spawn_acp(&[]);
    let root = workspace.root();
    let main_rs = root.join("src/main.rs");
    let uri = file_uri(&main_rs);
    let warning = diagnostic(0, 3, 2, "PUSHED-BEFORE-EDIT unused import", "W1");
    let writes: Arc<Mutex<Vec<String>>> = Arc::default();
    let updates: Arc<Mutex<Vec<SessionNotification>>> = Arc::default();

    let on_write = {
        let writes = writes.clone();
        let warning = warning.clone();
        async move |request: WriteTextFileRequest,
                    responder: Responder<WriteTextFileResponse>,
                    cx: ConnectionTo<Agent>| {
            std::fs::write(&request.path, &request.content).unwrap();
            writes
                .lock()
                .unwrap()
                .push(request.path.display().to_string());
            responder.respond(WriteTextFileResponse::new())?;
            // As an editor would: the language server re-checks the changed buffer.
            let error = diagnostic(
                1,
                14,
                1,
                "PUSHED-AFTER-EDIT mismatched quotes\nsecond line",
                "E9999",
            );
            cx.send_notification(push(&file_uri(&request.path), vec![warning.clone(), error]))
        }
    };
    let on_update = {
        let updates = updates.clone();
        async move |notification: SessionNotification, _cx| {
            updates.lock().unwrap().push(notification);
            Ok(())
        }
    };
    let run = Client
        .v1()
        .name("lode-diagnostics-e2e")
        .on_receive_notification(on_update, agent_client_protocol::on_receive_notification!())
        .on_receive_request(
            async move |_question: RequestPermissionRequest,
                        responder: Responder<RequestPermissionResponse>,
                        _cx| {
                responder.respond(RequestPermissionResponse::new(
                    RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(
                        "allow_once",
                    )),
                ))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(on_write, agent_client_protocol::on_receive_request!())
        .connect_with(stdio_transport(&mut acp), async |cx: ConnectionTo<Agent>| {
            cx.send_request(
                InitializeRequest::new(ProtocolVersion::V1).client_capabilities(
                    ClientCapabilities::new()
                        .fs(FileSystemCapabilities::new().write_text_file(true)),
                ),
            )
            .block_task()
            .await?;
            let session = cx
                .send_request(NewSessionRequest::new(root.clone()))
                .block_task()
                .await?;
            // Malformed, misdirected and foreign pushes: each is logged and dropped.
            for params in [
                json!([1, 2]),
                json!({"uri": 42, "diagnostics": []}),
                json!({"uri": uri, "diagnostics": [{"message": "no range"}]}),
                json!({"uri": "file:///etc/hosts", "diagnostics": [diagnostic(0, 0, 1, "FOREIGN", "X")]}),
            ] {
                cx.send_notification(UntypedMessage::new("_lode/diagnostics", params)?)?;
            }
            // What the editor knows before the agent touches the file.
            cx.send_notification(push(&uri, vec![warning.clone()]))?;
            let response = cx
                .send_request(PromptRequest::new(
                    session.session_id,
                    vec!["Please say goodbye instead".into()],
                ))
                .block_task()
                .await?;
            Ok(response.stop_reason)
        });
    let stop = tokio::time::timeout(PATIENCE, run)
        .await
        .expect("the ACP exchange finished in time")
        .expect("the ACP exchange succeeded");

    assert_eq!(stop, StopReason::EndTurn);
    assert_eq!(
        *writes.lock().unwrap(),
        [main_rs.display().to_string()],
        "the edit went through the client"
    );
    assert!(
        std::fs::read_to_string(&main_rs)
            .unwrap()
            .contains("goodbye")
    );
    let updates: Vec<_> = updates
        .lock()
        .unwrap()
        .iter()
        .map(|notification| notification.update.clone())
        .collect();
    let answer = agent_text(&updates);
    // The scripted model says this only when the edit's result carried exactly the pushed new
    // error (1-based position, code, first line of the message) and not the older warning.
    assert!(
        answer.contains("The editor reports an error I introduced."),
        "{answer}"
    );
    // The turn-end check used the pushed diagnostics too: the error was not there before.
    assert!(answer.ends_with("It stays: the test wants it."), "{answer}");
}

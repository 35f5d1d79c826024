//! The connection's side of the ACP LSP extension ([`crate::ext_lsp`]): negotiation in
//! `initialize`, the editor's `_lsp/publishDiagnostics` and `_lsp/didSave` notifications, and
//! the provider a turn gets. Notifications are never answered: what cannot be used is logged to
//! stderr (stdout carries the protocol) and dropped.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{AgentCapabilities, InitializeRequest, SessionId};
use lode_tools::editor_lsp::EditorLanguageServer;

use crate::connection::ConnectionState;
use crate::ext_lsp::{self, AcpEditorLsp, DID_SAVE, LspNotification, PUBLISH_DIAGNOSTICS};

/// Records whether this client negotiated the extension: it offered it and `[acp.lsp]` allows
/// it. A second `initialize` negotiates again.
pub fn negotiate(state: &ConnectionState, request: &InitializeRequest) -> bool {
    let offered = ext_lsp::client_offers(&request.client_capabilities);
    let on = offered && state.lsp.enabled;
    if offered && !on {
        tracing::info!(
            "the client offers the LSP extension, but [acp.lsp] enabled = false: navigation \
             uses lode's own language servers and index"
        );
    }
    state.lsp_negotiated.store(on, Ordering::SeqCst);
    on
}

/// The capabilities with `_meta.lsp` (the methods lode calls, the notifications it accepts)
/// when the extension was negotiated; as they are otherwise.
pub fn advertise(capabilities: AgentCapabilities, negotiated: bool) -> AgentCapabilities {
    if !negotiated {
        return capabilities;
    }
    let mut meta = capabilities.meta.clone().unwrap_or_default();
    meta.insert(ext_lsp::META_KEY.into(), ext_lsp::advertised());
    capabilities.meta(meta)
}

fn negotiated(state: &ConnectionState) -> bool {
    state.lsp_negotiated.load(Ordering::SeqCst)
}

/// The editor's language servers for a turn of `session_id`, when negotiated.
pub fn editor_lsp(
    state: &ConnectionState,
    connection: &ConnectionTo<Client>,
    session_id: &SessionId,
) -> Option<AcpEditorLsp> {
    negotiated(state).then(|| AcpEditorLsp::new(connection.clone(), session_id.clone(), &state.lsp))
}

/// One `_lsp/*` notification from the editor.
pub fn receive(
    state: &Arc<ConnectionState>,
    notification: LspNotification,
    cx: &ConnectionTo<Client>,
) {
    let method = notification.method.as_str();
    if method != PUBLISH_DIAGNOSTICS && method != DID_SAVE {
        tracing::warn!(
            "ignored the unknown notification {method}; lode accepts {PUBLISH_DIAGNOSTICS} and \
             {DID_SAVE}"
        );
        return;
    }
    if !negotiated(state) {
        tracing::warn!(
            "ignored {method}: the LSP extension was not negotiated (it needs an initialize \
             whose clientCapabilities._meta.lsp is true, and [acp.lsp] enabled)"
        );
        return;
    }
    if method == PUBLISH_DIAGNOSTICS {
        publish(state, &notification.params);
    } else {
        saved(state, &notification.params, cx);
    }
}

fn publish(state: &ConnectionState, params: &serde_json::Value) {
    let file = match ext_lsp::parse_publish(params, state.lsp.max_diagnostics_per_file) {
        Ok(file) => file,
        Err(why) => {
            tracing::warn!(error = %why, "ignored a malformed {PUBLISH_DIAGNOSTICS}");
            return;
        }
    };
    let shown = file.path.display().to_string();
    if !state
        .backend
        .push_diagnostics(None, file.path, file.diagnostics)
    {
        tracing::warn!(
            "ignored {PUBLISH_DIAGNOSTICS} for {shown}: not a file in an open workspace (a \
             session whose cwd is in the project opens it)"
        );
    }
}

/// The editor saved a file: the index takes it at once, and the editor's diagnostics for it are
/// asked for (`lsp/diagnostics`) and kept like pushed ones. Both run off the handler.
fn saved(state: &Arc<ConnectionState>, params: &serde_json::Value, cx: &ConnectionTo<Client>) {
    let path = match ext_lsp::parse_did_save(params) {
        Ok(path) => path,
        Err(why) => {
            tracing::warn!(error = %why, "ignored a malformed {DID_SAVE}");
            return;
        }
    };
    let state = state.clone();
    let editor = AcpEditorLsp::without_session(cx.clone(), &state.lsp);
    let _ = cx.spawn(async move {
        let backend = state.backend.clone();
        let indexed = {
            let path = path.clone();
            tokio::task::spawn_blocking(move || backend.file_saved(&path))
                .await
                .unwrap_or(false)
        };
        if !indexed {
            tracing::warn!(
                "{DID_SAVE} for {}: not a file lode indexes in an open workspace",
                path.display()
            );
            return Ok(());
        }
        match editor.diagnostics(&path).await {
            Ok(found) => {
                state.backend.push_diagnostics(None, path, found.value);
            }
            Err(why) => tracing::warn!(error = %why, "after {DID_SAVE}"),
        }
        Ok(())
    });
}

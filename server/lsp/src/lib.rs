//! lode as a language server (`lode lsp`): live buffers into the shared index, symbols,
//! definitions and references from it; and lode as a client of other language servers, for
//! the diagnostics the agent needs ([`downstream`]).
//!
//! An adapter: it translates LSP into calls on the index (and later the agent) and holds no
//! business logic. Logs go to stderr; stdout is the protocol.

pub mod actions;
pub mod agent_diagnostics;
pub mod agent_navigation;
pub mod buffers;
pub mod direct;
pub mod document;
pub mod downstream;
pub mod framing;
pub mod live;
#[cfg(test)]
mod live_syntax_tests;
pub mod navigate;
pub mod outline;
pub mod resolved;
pub mod server;
pub mod transport;
pub mod trust_prompt;
pub mod watch;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::io::{AsyncRead, AsyncWrite};
use tower_lsp_server::{LspService, Server};

pub use actions::DiagnosticsSettings;
pub use live::LiveIndex;
pub use server::{LodeServer, ServerOptions};

/// Messages handled at once.
const CONCURRENCY: usize = 64;

/// How a session ended, for the process exit code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionEnd {
    /// `shutdown` came before `exit` (or the input ended after it): exit code 0.
    Clean,
    /// `exit` without `shutdown`, or the input ended first: exit code 1, as LSP asks.
    Abrupt,
}

/// Serves one LSP connection over the given streams until `exit` or end of input.
pub async fn serve<I, O>(input: I, output: O, options: ServerOptions) -> SessionEnd
where
    I: AsyncRead + Unpin + Send + 'static,
    O: AsyncWrite + Unpin + Send + 'static,
{
    let shut_down = Arc::new(AtomicBool::new(false));
    let direct = Arc::new(direct::DirectAnswers::new(shut_down.clone()));
    let pipes = transport::guard(input, output, options.max_message_bytes, direct.clone());
    let server_flag = shut_down.clone();
    let (service, socket) =
        LspService::build(move |client| LodeServer::new(client, options, server_flag, direct))
            .custom_method(
                "window/workDoneProgress/cancel",
                LodeServer::work_done_progress_cancel,
            )
            .finish();
    // A code action's `workspace/executeCommand` stays pending while its agent turn runs;
    // the default of 4 concurrent messages would let a few of them stall every other message
    // (including the `$/cancelRequest` meant for them).
    Server::new(pipes.server_input, pipes.server_output, socket)
        .concurrency_level(CONCURRENCY)
        .serve(service)
        .await;
    pipes.input_task.abort();
    // The server's output pipe closed with `serve`: the writer drains what is left and stops.
    let _ = pipes.output_task.await;
    if shut_down.load(Ordering::SeqCst) {
        SessionEnd::Clean
    } else {
        SessionEnd::Abrupt
    }
}

/// `lode lsp`: serves stdin/stdout.
pub async fn serve_stdio(options: ServerOptions) -> SessionEnd {
    serve(tokio::io::stdin(), tokio::io::stdout(), options).await
}

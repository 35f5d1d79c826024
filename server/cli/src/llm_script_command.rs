//! `lode llm-script` (hidden): runs the scripted LLM server from a script file until killed, so
//! end-to-end tests of the ACP and LSP front ends can point a provider at it.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use lode_llm_script::{Script, ScriptedServer, ServerOptions};

/// Serves `script_path` on 127.0.0.1:`port` (0 picks a free port) and prints
/// `listening on http://127.0.0.1:PORT` on stdout once the socket is bound.
pub fn run(script_path: &Path, port: u16) -> anyhow::Result<ExitCode> {
    let script = Script::load(script_path)?;
    let options = ServerOptions {
        port,
        ..ServerOptions::default()
    };
    ScriptedServer::serve_blocking(script, options, |addr| {
        let mut stdout = std::io::stdout().lock();
        // Whoever spawned us waits for this line; if stdout is gone there is nobody to tell.
        let _ = writeln!(stdout, "listening on http://{addr}");
        let _ = stdout.flush();
    })
    .with_context(|| format!("serving {}", script_path.display()))?;
    Ok(ExitCode::SUCCESS)
}

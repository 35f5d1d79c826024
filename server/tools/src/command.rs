//! `run_command`: a shell line run with `sh -c` in the workspace (or a directory inside it), with
//! a timeout, output capped head and tail, and cancellation that kills the whole process group.
//! When the client offers terminals, the command runs in one of them and the client shows it live.

use parking_lot::Mutex;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::json;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio_util::sync::CancellationToken;

use super::args::{failed, invalid, parse_args, peek_str};
use super::output::{DEFAULT_OUTPUT_CAP, cap_output};
use super::paths::resolve_path;
use super::{
    PermissionTarget, Tool, ToolContext, ToolError, ToolErrorCategory, ToolOutput, ToolPresentation,
};
use crate::event::{Location, ToolCallUpdate, ToolContent, ToolKind, ToolStatus};
use crate::host::{ClientTerminals, TerminalCommand, ToolEvent};
use lode_llm::ToolSpec;

/// Limits for `run_command`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandLimits {
    pub default_timeout: Duration,
    /// The most a model may ask for.
    pub max_timeout: Duration,
    /// Characters of output the model sees.
    pub output_cap: usize,
}

impl Default for CommandLimits {
    fn default() -> Self {
        CommandLimits {
            default_timeout: Duration::from_secs(120),
            max_timeout: Duration::from_secs(600),
            output_cap: DEFAULT_OUTPUT_CAP,
        }
    }
}

/// How long to wait for output pipes after the shell exits (a background child may hold them).
const PIPE_DRAIN_GRACE: Duration = Duration::from_secs(2);

#[derive(Deserialize)]
struct CommandArgs {
    command: String,
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    timeout_secs: Option<u64>,
}

/// How a finished process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessResult {
    /// Combined stdout and stderr, in arrival order, lossily decoded, already bounded.
    pub output: String,
    /// Bytes dropped from the middle while collecting (before any character cap).
    pub dropped_bytes: u64,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub ending: ProcessEnding,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessEnding {
    Exited,
    TimedOut,
    Cancelled,
}

/// Output kept while a process runs: the first and last bytes, with a count of what was dropped,
/// so a command that prints gigabytes cannot exhaust memory.
struct HeadTail {
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    limit: usize,
    dropped: u64,
}

impl HeadTail {
    fn new(limit: usize) -> Self {
        HeadTail {
            head: Vec::new(),
            tail: std::collections::VecDeque::new(),
            limit,
            dropped: 0,
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            if self.head.len() < self.limit {
                self.head.push(byte);
            } else {
                if self.tail.len() >= self.limit {
                    self.tail.pop_front();
                    self.dropped += 1;
                }
                self.tail.push_back(byte);
            }
        }
    }

    fn finish(&self) -> (String, u64) {
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        if self.dropped > 0 {
            text.push_str(&format!("\n[… {} bytes omitted …]\n", self.dropped));
        }
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        text.push_str(&String::from_utf8_lossy(&tail));
        (text, self.dropped)
    }
}

async fn pump(mut reader: impl AsyncRead + Unpin, sink: Arc<Mutex<HeadTail>>) {
    let mut buffer = [0u8; 8192];
    loop {
        match reader.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(read) => {
                // A poisoned lock only means another pump panicked; keep what is there.
                let mut sink = sink.lock();
                sink.push(&buffer[..read]);
            }
        }
    }
}

/// Kills every process in the group led by `pid`.
fn kill_group(pid: u32) {
    let Ok(pid) = i32::try_from(pid) else {
        return;
    };
    // SAFETY: kill(2) with a negative pid signals the process group; it has no memory effects.
    // The group was created for this child (process_group(0)), so nothing else is hit.
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
    }
}

/// How a command line is confined: through the sandbox's launcher when it can confine, else
/// as it is (the policy has then asked the user before any command that runs workspace code).
#[derive(Clone, Copy)]
pub struct Confinement<'a> {
    pub sandbox: &'a lode_sandbox::Sandbox,
    pub roots: &'a [PathBuf],
    pub network: bool,
}

impl<'a> Confinement<'a> {
    /// The confinement of a tool call: its sandbox, roots and network grant.
    pub fn of(context: &'a ToolContext) -> Confinement<'a> {
        Confinement {
            sandbox: &context.sandbox,
            roots: &context.roots,
            network: context.network,
        }
    }

    /// The program and arguments that run `sh -c line`.
    pub fn shell(&self, line: &str) -> (std::ffi::OsString, Vec<std::ffi::OsString>) {
        let shell = ["-c", line];
        match self.sandbox.wrap(self.roots, self.network, "sh", shell) {
            Some(wrapped) => (wrapped.program.into_os_string(), wrapped.args),
            None => ("sh".into(), shell.iter().map(Into::into).collect()),
        }
    }
}

/// Runs `sh -c line` (confined as `confinement` says) in `cwd` as the leader of a new process
/// group, collecting output until it exits, the timeout passes, or `cancel` fires (then the
/// whole group is killed).
pub async fn run_shell(
    line: &str,
    cwd: &Path,
    timeout: Duration,
    cancel: &CancellationToken,
    output_bytes: usize,
    confinement: Confinement<'_>,
) -> Result<ProcessResult, ToolError> {
    let (program, args) = confinement.shell(line);
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|error| failed(format!("cannot start `sh -c`: {error}")))?;
    let pid = child.id();
    let sink = Arc::new(Mutex::new(HeadTail::new(output_bytes / 2)));
    let mut pumps = Vec::new();
    if let Some(stdout) = child.stdout.take() {
        pumps.push(tokio::spawn(pump(stdout, Arc::clone(&sink))));
    }
    if let Some(stderr) = child.stderr.take() {
        pumps.push(tokio::spawn(pump(stderr, Arc::clone(&sink))));
    }
    let (status, ending) = tokio::select! {
        status = child.wait() => (status.ok(), ProcessEnding::Exited),
        _ = tokio::time::sleep(timeout) => (None, ProcessEnding::TimedOut),
        _ = cancel.cancelled() => (None, ProcessEnding::Cancelled),
    };
    if let Some(pid) = pid {
        // Also after a normal exit: background children left in the group would hold the pipes.
        kill_group(pid);
    }
    let status = match status {
        Some(status) => Some(status),
        None => child.wait().await.ok(),
    };
    for pump in pumps {
        let _ = tokio::time::timeout(PIPE_DRAIN_GRACE, pump).await;
    }
    let (output, dropped_bytes) = sink.lock().finish();
    use std::os::unix::process::ExitStatusExt;
    Ok(ProcessResult {
        output,
        dropped_bytes,
        exit_code: if ending == ProcessEnding::Exited {
            status.and_then(|s| s.code())
        } else {
            None
        },
        signal: if ending == ProcessEnding::Exited {
            status.and_then(|s| s.signal())
        } else {
            None
        },
        ending,
    })
}

/// `run_command`.
pub struct RunCommandTool {
    limits: CommandLimits,
}

impl RunCommandTool {
    pub fn new(limits: CommandLimits) -> Self {
        RunCommandTool { limits }
    }
}

impl Default for RunCommandTool {
    fn default() -> Self {
        RunCommandTool::new(CommandLimits::default())
    }
}

fn resolve_cwd(context: &ToolContext, cwd: Option<&str>) -> Result<PathBuf, ToolError> {
    let resolved = resolve_path(&context.roots, cwd.unwrap_or("."))?;
    if !resolved.absolute.is_dir() {
        return Err(invalid(format!(
            "cwd {} is not a directory",
            resolved.display(&context.roots)
        )));
    }
    Ok(resolved.absolute)
}

#[async_trait::async_trait]
impl Tool for RunCommandTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "run_command".into(),
            description: format!(
                "Run a shell command line with `sh -c` in the workspace root (or `cwd`, a \
                 directory inside it) and return its exit code and combined stdout/stderr. \
                 Non-interactive: stdin is empty. Times out after `timeout_secs` (default {}, \
                 at most {}). Long output keeps its beginning and end. Use it to build, run \
                 tests and inspect the system; do not use it to read or edit files when \
                 read_file or edit_file can.",
                self.limits.default_timeout.as_secs(),
                self.limits.max_timeout.as_secs()
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "The shell command line, e.g. `cargo test -p core`."},
                    "cwd": {"type": "string", "description": "Directory to run in, relative to the workspace root. Default: the root."},
                    "timeout_secs": {"type": "integer", "minimum": 1, "maximum": self.limits.max_timeout.as_secs(), "description": "Seconds before the command is killed."}
                },
                "required": ["command"],
                "additionalProperties": false
            }),
        }
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Execute
    }

    fn read_only(&self) -> bool {
        false
    }

    fn present(&self, arguments: &serde_json::Value, context: &ToolContext) -> ToolPresentation {
        let command = peek_str(arguments, "command").unwrap_or("a command");
        ToolPresentation {
            title: format!("Run `{command}`"),
            locations: resolve_cwd(context, peek_str(arguments, "cwd"))
                .map(|path| vec![Location { path, line: None }])
                .unwrap_or_default(),
        }
    }

    fn permission_target(&self, arguments: &serde_json::Value) -> PermissionTarget {
        PermissionTarget::Command {
            command: peek_str(arguments, "command").unwrap_or("").to_owned(),
        }
    }

    async fn run(
        &self,
        arguments: serde_json::Value,
        context: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let args: CommandArgs = parse_args("run_command", &arguments)?;
        if args.command.trim().is_empty() {
            return Err(invalid("run_command: the command is empty"));
        }
        let cwd = resolve_cwd(context, args.cwd.as_deref())?;
        let timeout = args
            .timeout_secs
            .map(Duration::from_secs)
            .unwrap_or(self.limits.default_timeout)
            .clamp(Duration::from_secs(1), self.limits.max_timeout);
        if let Some(terminals) = context.host.client_terminals() {
            return run_in_terminal(
                &terminals,
                &args.command,
                &cwd,
                timeout,
                context,
                self.limits,
            )
            .await;
        }
        let result = run_shell(
            &args.command,
            &cwd,
            timeout,
            &context.cancel,
            self.limits.output_cap * 4,
            Confinement::of(context),
        )
        .await?;
        finish(result, self.limits, timeout, Vec::new())
    }
}

/// Turns a finished run into the tool's answer.
fn finish(
    result: ProcessResult,
    limits: CommandLimits,
    timeout: Duration,
    display: Vec<ToolContent>,
) -> Result<ToolOutput, ToolError> {
    let capped = cap_output(&result.output, limits.output_cap);
    let truncated = capped.truncated || result.dropped_bytes > 0;
    match result.ending {
        ProcessEnding::Cancelled => Err(ToolError::new(
            ToolErrorCategory::Cancelled,
            "the command was cancelled and its processes were killed",
            false,
        )),
        ProcessEnding::TimedOut => Err(ToolError::new(
            ToolErrorCategory::Timeout,
            format!(
                "the command did not finish within {} s and was killed. Output so far:\n{}",
                timeout.as_secs(),
                capped.text
            ),
            true,
        )),
        ProcessEnding::Exited => {
            let status = match (result.exit_code, result.signal) {
                (Some(code), _) => format!("exit code {code}"),
                (None, Some(signal)) => format!("killed by signal {signal}"),
                (None, None) => "exit status unknown".to_owned(),
            };
            let body = if capped.text.trim().is_empty() {
                "(no output)".to_owned()
            } else {
                capped.text
            };
            Ok(ToolOutput {
                model_text: format!("{status}\n{body}"),
                display,
                locations: Vec::new(),
                raw_output: Some(json!({
                    "exit_code": result.exit_code,
                    "signal": result.signal,
                    "truncated": truncated,
                })),
            })
        }
    }
}

async fn run_in_terminal(
    terminals: &Arc<dyn ClientTerminals>,
    line: &str,
    cwd: &Path,
    timeout: Duration,
    context: &ToolContext,
    limits: CommandLimits,
) -> Result<ToolOutput, ToolError> {
    // The editor's terminal runs the same confined command line as a local spawn would.
    let (program, args) = Confinement::of(context).shell(line);
    let command = TerminalCommand {
        command: program.to_string_lossy().into_owned(),
        args: args
            .iter()
            .map(|arg| arg.to_string_lossy().into_owned())
            .collect(),
        cwd: cwd.to_path_buf(),
        env: Vec::new(),
        output_byte_limit: Some((limits.output_cap * 4) as u64),
    };
    let terminal_id = terminals
        .create(&command)
        .await
        .map_err(|error| failed(format!("the editor could not start a terminal: {error}")))?;
    let display = vec![ToolContent::Terminal {
        terminal_id: terminal_id.clone(),
    }];
    context.host.emit(ToolEvent::Updated(ToolCallUpdate {
        id: context.call_id.clone(),
        status: ToolStatus::InProgress,
        title: None,
        content: display.clone(),
        locations: Vec::new(),
        raw_output: None,
    }));
    let (exit, ending) = tokio::select! {
        exit = terminals.wait_for_exit(&terminal_id) => (exit.ok(), ProcessEnding::Exited),
        _ = tokio::time::sleep(timeout) => (None, ProcessEnding::TimedOut),
        _ = context.cancel.cancelled() => (None, ProcessEnding::Cancelled),
    };
    if ending != ProcessEnding::Exited {
        let _ = terminals.kill(&terminal_id).await;
    }
    let output = terminals.output(&terminal_id).await;
    let (text, client_truncated, exit) = match output {
        Ok(output) => (output.output, output.truncated, exit.or(output.exit)),
        Err(error) => (
            format!("(the editor could not return the output: {error})"),
            false,
            exit,
        ),
    };
    let result = ProcessResult {
        output: text,
        dropped_bytes: u64::from(client_truncated),
        exit_code: exit.as_ref().and_then(|e| e.exit_code),
        signal: None,
        ending,
    };
    // On success the terminal stays alive until the agent loop has sent the final update that
    // shows it (ACP: release only after the last `tool_call_update` naming it); the loop
    // releases it then. A failure shows text instead, so the terminal goes now.
    let mut answer = match finish(result, limits, timeout, display) {
        Ok(answer) => answer,
        Err(error) => {
            let _ = terminals.release(&terminal_id).await;
            return Err(error);
        }
    };
    if let (Some(raw), Some(signal)) = (answer.raw_output.as_mut(), exit.and_then(|e| e.signal)) {
        raw["signal"] = json!(signal);
    }
    Ok(answer)
}

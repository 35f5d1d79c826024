//! A REAL Qdrant server for the tests: the Qdrant binary started on free loopback ports with a
//! throwaway storage directory, ready when its REST `GET /readyz` answers 200 and its gRPC port
//! accepts connections (the REST side can be ready first), killed on drop.
//!
//! The binary is `$LODE_QDRANT_BIN` when set (a missing file there is an error), else
//! `<repository root>/../shared/bin/qdrant` (Qdrant 1.18.3; see `../shared/bin/README.md`).
//! When there is none the test FAILS and says where it looked: a backend test that silently
//! skips tests nothing.
//!
//! Used by `real_qdrant.rs`, by the `lode` end-to-end suite `qdrant_cli` (the repository's
//! `tests/e2e/`, through `#[path]`) and by the benchmark example (`examples/qdrant_bench.rs`,
//! through `#[path]`).

#![allow(dead_code)]

use std::fs::File;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The environment variable that names the Qdrant binary.
pub const BINARY_ENV: &str = "LODE_QDRANT_BIN";
/// How long a start may take before the test fails (Qdrant needs about a second; a loaded CI
/// machine more).
const READY_WITHIN: Duration = Duration::from_secs(60);

/// The workspace root: the nearest ancestor of this crate's manifest directory with a
/// `Cargo.lock`.
fn repository_root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest
        .ancestors()
        .find(|dir| dir.join("Cargo.lock").is_file())
        .unwrap_or(&manifest)
        .to_path_buf()
}

/// The Qdrant binary, or an error that says where it was looked for.
pub fn find_binary() -> Result<PathBuf, String> {
    locate(std::env::var_os(BINARY_ENV), &repository_root())
}

/// [`find_binary`] with the environment variable's value and the repository root given.
pub fn locate(from_env: Option<std::ffi::OsString>, root: &Path) -> Result<PathBuf, String> {
    let mut looked = Vec::new();
    match from_env.filter(|p| !p.is_empty()).map(PathBuf::from) {
        Some(path) if path.is_file() => return Ok(path),
        // Named but missing: an error, not a silent fall-back to another binary.
        Some(path) => {
            return Err(format!(
                "no Qdrant binary at ${BINARY_ENV} = {} (no such file); unset it to use {}",
                path.display(),
                root.join("../shared/bin/qdrant").display()
            ));
        }
        None => looked.push(format!("${BINARY_ENV} (not set)")),
    }
    let shared = root.join("../shared/bin/qdrant");
    if shared.is_file() {
        return Ok(shared);
    }
    looked.push(format!("{} (no such file)", shared.display()));
    Err(format!(
        "no Qdrant binary found; looked at: {}. Set {BINARY_ENV} to a Qdrant (1.x) server binary",
        looked.join(", ")
    ))
}

/// A free loopback port (free when asked; the server binds it a moment later).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .expect("bind a loopback port")
}

/// A running Qdrant: its ports, its storage and its logs.
pub struct RealQdrant {
    /// The gRPC endpoint lode talks to, `http://127.0.0.1:<port>`.
    pub url: String,
    pub grpc_port: u16,
    pub http_port: u16,
    api_key: Option<String>,
    binary: PathBuf,
    /// Storage, snapshots, the scratch working directory and the logs.
    dir: tempfile::TempDir,
    child: Option<Child>,
    /// How many times the server was started (each start writes its own log).
    starts: usize,
}

impl RealQdrant {
    /// Starts Qdrant on free ports with a new storage directory; panics (failing the test)
    /// with the reason when there is no binary or it does not become ready.
    pub fn start() -> RealQdrant {
        RealQdrant::start_with_key(None)
    }

    /// As [`RealQdrant::start`], with `QDRANT__SERVICE__API_KEY` set: requests without that
    /// key are refused.
    pub fn start_with_key(api_key: Option<&str>) -> RealQdrant {
        match RealQdrant::try_start(api_key) {
            Ok(server) => server,
            Err(message) => panic!("{message}"),
        }
    }

    pub fn try_start(api_key: Option<&str>) -> Result<RealQdrant, String> {
        let binary = find_binary()?;
        let dir = tempfile::tempdir().map_err(|e| format!("temporary directory: {e}"))?;
        std::fs::create_dir_all(dir.path().join("cwd")).map_err(|e| e.to_string())?;
        let grpc_port = free_port();
        let http_port = free_port();
        let mut server = RealQdrant {
            url: format!("http://127.0.0.1:{grpc_port}"),
            grpc_port,
            http_port,
            api_key: api_key.map(str::to_string),
            binary,
            dir,
            child: None,
            starts: 0,
        };
        server.launch()?;
        Ok(server)
    }

    /// The storage directory (kept across [`RealQdrant::restart`]).
    pub fn storage(&self) -> PathBuf {
        self.dir.path().join("storage")
    }

    fn log_path(&self, start: usize) -> PathBuf {
        self.dir.path().join(format!("qdrant-{start}.log"))
    }

    /// Spawns the binary on this server's ports and storage and waits until it is ready.
    fn launch(&mut self) -> Result<(), String> {
        self.starts += 1;
        let log_path = self.log_path(self.starts);
        let log = File::create(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
        let log_err = log.try_clone().map_err(|e| e.to_string())?;
        let mut command = Command::new(&self.binary);
        command
            // Qdrant reads `config/` under its working directory: give it an empty one.
            .current_dir(self.dir.path().join("cwd"))
            .env("QDRANT__SERVICE__HOST", "127.0.0.1")
            .env("QDRANT__SERVICE__HTTP_PORT", self.http_port.to_string())
            .env("QDRANT__SERVICE__GRPC_PORT", self.grpc_port.to_string())
            .env("QDRANT__STORAGE__STORAGE_PATH", self.storage())
            .env(
                "QDRANT__STORAGE__SNAPSHOTS_PATH",
                self.dir.path().join("snapshots"),
            )
            .env("QDRANT__TELEMETRY_DISABLED", "true")
            .env_remove("QDRANT__SERVICE__API_KEY")
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(log_err));
        if let Some(key) = &self.api_key {
            command.env("QDRANT__SERVICE__API_KEY", key);
        }
        let child = command
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", self.binary.display()))?;
        self.child = Some(child);
        let started = Instant::now();
        loop {
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                self.child = None;
                return Err(format!(
                    "Qdrant ({}) exited with {status} before it was ready; its log ends with:\n{}",
                    self.binary.display(),
                    self.log_tail()
                ));
            }
            // `/readyz` can answer before the gRPC port listens: wait for both.
            if self.ready() && TcpStream::connect(("127.0.0.1", self.grpc_port)).is_ok() {
                eprintln!(
                    "real Qdrant ready on gRPC {} (REST {}) after {:?}",
                    self.grpc_port,
                    self.http_port,
                    started.elapsed()
                );
                return Ok(());
            }
            if started.elapsed() > READY_WITHIN {
                self.kill();
                return Err(format!(
                    "Qdrant ({}) was not ready within {READY_WITHIN:?} (GET http://127.0.0.1:{}/readyz); its log ends with:\n{}",
                    self.binary.display(),
                    self.http_port,
                    self.log_tail()
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Whether `GET /readyz` answers 200 (one plain HTTP/1.1 request).
    pub fn ready(&self) -> bool {
        let Ok(mut stream) = TcpStream::connect(("127.0.0.1", self.http_port)) else {
            return false;
        };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
        let request = format!(
            "GET /readyz HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n\r\n",
            self.http_port
        );
        if stream.write_all(request.as_bytes()).is_err() {
            return false;
        }
        let _ = stream.shutdown(Shutdown::Write);
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer);
        answer.starts_with("HTTP/1.1 200")
    }

    /// The last lines of the current start's log (Qdrant logs to stdout and stderr alike).
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(self.log_path(self.starts)).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    /// Whether the server process is running.
    pub fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// SIGKILL, as a crash: no shutdown, nothing flushed beyond what Qdrant already wrote.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again on the same ports and storage (after [`RealQdrant::kill`]).
    pub fn restart(&mut self) {
        self.kill();
        if let Err(message) = self.launch() {
            panic!("restart: {message}");
        }
    }
}

impl Drop for RealQdrant {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Reads `GET <path>` from the server's REST port and returns the body (for checks the gRPC
/// store does not expose, e.g. a collection's configuration).
pub fn rest_get(server: &RealQdrant, path: &str) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", server.http_port)).expect("REST port");
    let key = server
        .api_key
        .as_ref()
        .map(|k| format!("api-key: {k}\r\n"))
        .unwrap_or_default();
    let request =
        format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{key}Connection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).expect("REST request");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("REST answer");
    answer
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_string())
        .unwrap_or(answer)
}

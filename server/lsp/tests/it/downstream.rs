//! The LSP client half against real checkers: pyright's language server (installed by
//! scripts/install-test-tools.sh into target/test-tools), `pyright --outputjson`, and
//! `cargo check` on a crate with a deliberate error.

use std::collections::HashMap;
use std::path::PathBuf;

use lode_lsp::downstream::{
    DiagnosticsConfig, DiagnosticsProvider, DiagnosticsSource, Severity, commands,
};

use crate::support::{settings, tool};

const BROKEN: &str =
    "def greet(name: str) -> str:\n    return \"hello \" + name\n\n\ncount: int = greet(\"x\")\n";
const FIXED: &str =
    "def greet(name: str) -> str:\n    return \"hello \" + name\n\n\nmessage: str = greet(\"x\")\n";
const FINE: &str = "def add(a: int, b: int) -> int:\n    return a + b\n";

fn python_workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("broken.py"), BROKEN).unwrap();
    std::fs::write(dir.path().join("fine.py"), FINE).unwrap();
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pyright_language_server_reports_then_clears_a_type_error() {
    let Some(server) = tool("pyright-langserver") else {
        return;
    };
    let dir = python_workspace();
    let config = DiagnosticsConfig {
        servers: HashMap::from([(
            "python".to_string(),
            vec![server.to_string_lossy().into_owned(), "--stdio".into()],
        )]),
        default_servers: false,
        commands: false,
        client: settings(),
        ..DiagnosticsConfig::default()
    };
    let provider = DiagnosticsProvider::new(dir.path(), config);
    let broken = dir.path().join("broken.py");
    let fine = dir.path().join("fine.py");

    let found = provider
        .diagnostics_for(&[broken.clone(), fine.clone()])
        .await;
    assert_eq!(found.len(), 2);
    assert!(
        matches!(&found[0].source, DiagnosticsSource::Server(command) if command.contains("pyright-langserver")),
        "{:?}",
        found[0]
    );
    let errors: Vec<_> = found[0].errors().collect();
    assert_eq!(errors.len(), 1, "{found:?}");
    assert_eq!(errors[0].line, 5);
    assert_eq!(errors[0].column, 14);
    assert!(errors[0].message.contains("str"), "{}", errors[0].message);
    assert_eq!(found[0].path, std::fs::canonicalize(&broken).unwrap());
    assert!(
        found[1]
            .diagnostics
            .iter()
            .all(|d| d.severity != Severity::Error),
        "{:?}",
        found[1]
    );

    // The agent fixes the file: the warm server is told and the error goes away.
    std::fs::write(&broken, FIXED).unwrap();
    let found = provider
        .diagnostics_for(std::slice::from_ref(&broken))
        .await;
    assert_eq!(found[0].errors().count(), 0, "{found:?}");

    // Breaking it again brings the error back (a second change to an open file).
    std::fs::write(&broken, BROKEN).unwrap();
    let found = provider
        .diagnostics_for(std::slice::from_ref(&broken))
        .await;
    assert_eq!(found[0].errors().count(), 1, "{found:?}");
    provider.shutdown().await;
}

#[tokio::test]
async fn pyright_command_reports_the_same_error() {
    let Some(pyright) = tool("pyright") else {
        return;
    };
    let dir = python_workspace();
    let broken = std::fs::canonicalize(dir.path().join("broken.py")).unwrap();
    // pyright runs no workspace code; without a sandbox launcher (none in this crate's tests)
    // it runs as it is. The confined run is tested with the real binary in
    // tests/sandbox_checkers.rs.
    let sandbox = lode_sandbox::Sandbox::unavailable("no launcher in this test");
    let confinement = lode_lsp::downstream::Confinement {
        sandbox: &sandbox,
        root: dir.path(),
    };
    let found = commands::pyright(
        &pyright.to_string_lossy(),
        dir.path(),
        std::slice::from_ref(&broken),
        confinement,
    )
    .await
    .unwrap();
    let diagnostics = &found[&broken];
    assert_eq!(diagnostics.len(), 1, "{found:?}");
    assert_eq!(
        (diagnostics[0].line, diagnostics[0].severity),
        (5, Severity::Error)
    );
}

/// `cargo check` runs build scripts and proc macros: with no sandbox to confine it (this crate's
/// tests have no launcher), the fallback refuses it and says why instead of running it. The
/// confined fallback is tested with the real binary in tests/sandbox_checkers.rs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cargo_check_is_not_run_unconfined() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("Cargo.toml"),
        "[package]\nname = \"broken_fixture\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(
        dir.path().join("build.rs"),
        "fn main() { std::fs::write(\"ran-build-script\", \"\").unwrap(); }\n",
    )
    .unwrap();
    let lib = dir.path().join("src/lib.rs");
    std::fs::write(&lib, "pub fn answer() -> u32 {\n    \"forty-two\"\n}\n").unwrap();
    let config = DiagnosticsConfig {
        // No server configured for Rust: the provider would fall back to cargo check.
        servers: HashMap::from([("rust".to_string(), Vec::new())]),
        default_servers: false,
        commands: true,
        client: settings(),
        ..DiagnosticsConfig::default()
    };
    let provider = DiagnosticsProvider::new(dir.path(), config);
    let found = provider
        .diagnostics_for(&[PathBuf::from("src/lib.rs")])
        .await;
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].source, DiagnosticsSource::None, "{:?}", found[0]);
    let reason = found[0].error.as_deref().unwrap_or_default();
    assert!(reason.contains("without its sandbox"), "{reason}");
    assert!(!dir.path().join("ran-build-script").exists());
    assert!(!dir.path().join("target").exists());
}

/// Where the sandbox cannot confine (no launcher in this crate's tests), a language server
/// that is not on the named list of parse-only checkers is not started at all: here a "gopls"
/// that would leave a marker. pyright (on the list) still runs, above.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn language_servers_that_run_workspace_code_are_not_started_unconfined() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("main.go"),
        "package main\n\nfunc main() {}\n",
    )
    .unwrap();
    let server = dir.path().join("gopls");
    let marker = dir.path().join("server-ran");
    std::fs::write(
        &server,
        format!("#!/bin/sh\ntouch '{}'\nexec cat\n", marker.display()),
    )
    .unwrap();
    std::fs::set_permissions(&server, std::fs::Permissions::from_mode(0o755)).unwrap();
    let config = DiagnosticsConfig {
        servers: HashMap::from([(
            "go".to_string(),
            vec![server.to_string_lossy().into_owned()],
        )]),
        default_servers: false,
        commands: true,
        client: settings(),
        ..DiagnosticsConfig::default()
    };
    let provider = DiagnosticsProvider::new(dir.path(), config);
    let found = provider.diagnostics_for(&[PathBuf::from("main.go")]).await;
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].source, DiagnosticsSource::None, "{:?}", found[0]);
    let reason = found[0].error.as_deref().unwrap_or_default();
    assert!(
        reason.contains("gopls") && reason.contains("without its sandbox"),
        "{reason}"
    );
    assert!(!marker.exists(), "the server ran unconfined");
}

#[tokio::test]
async fn files_nothing_can_check_say_why() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "hello\n").unwrap();
    std::fs::write(dir.path().join("main.go"), "package main\n").unwrap();
    let config = DiagnosticsConfig {
        servers: HashMap::from([("go".to_string(), vec!["lode-no-such-server".to_string()])]),
        default_servers: false,
        commands: true,
        client: settings(),
        ..DiagnosticsConfig::default()
    };
    let provider = DiagnosticsProvider::new(dir.path(), config);
    let found = provider
        .diagnostics_for(&[PathBuf::from("notes.txt"), PathBuf::from("main.go")])
        .await;
    assert_eq!(found.len(), 2);
    assert_eq!(found[0].source, DiagnosticsSource::None);
    assert!(found[0].error.as_deref().unwrap().contains("no checker"));
    assert!(
        found[1]
            .error
            .as_deref()
            .unwrap()
            .contains("lode-no-such-server is not on PATH"),
        "{:?}",
        found[1]
    );
}

/// A server that dies before answering `initialize` (as a rustup proxy whose component is not
/// installed does) is reported once, with the last lines it wrote, which go to the
/// language-server log instead of lode's stderr.
#[tokio::test]
async fn a_server_that_dies_at_start_is_one_notice_with_its_last_words() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("app.py"), "x = 1\n").unwrap();
    // Named as a parse-only checker, which may start where the sandbox cannot confine (this
    // crate's tests have no launcher); any other name would not be started at all.
    let server = dir.path().join("pyright-langserver");
    std::fs::write(
        &server,
        "#!/bin/sh\nfor n in 1 2 3 4 5 6; do echo \"noise line $n\" >&2; done\n\
         echo \"error: 'pylsp-test' is not installed for the toolchain\" >&2\nexit 1\n",
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&server, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let config = DiagnosticsConfig {
        servers: HashMap::from([(
            "python".to_string(),
            vec![server.to_string_lossy().into_owned()],
        )]),
        default_servers: false,
        commands: false,
        client: settings(),
        ..DiagnosticsConfig::default()
    };
    let provider = DiagnosticsProvider::new(dir.path(), config);
    let found = provider.diagnostics_for(&[PathBuf::from("app.py")]).await;
    let error = found[0].error.as_deref().unwrap_or_default().to_owned();
    assert_eq!(found[0].source, DiagnosticsSource::None, "{error}");
    assert!(
        error.contains("is not installed for the toolchain"),
        "{error}"
    );
    // The notice carries the last lines, not all of them.
    assert!(!error.contains("noise line 1"), "{error}");
    if let Some(log) = lode_lsp::downstream::server_log::log_path() {
        let logged = std::fs::read_to_string(&log).unwrap_or_default();
        assert!(logged.contains("noise line 1"), "{}", log.display());
    }
}

//! `lode doctor` through the real binary: a stand-in provider (real HTTP on 127.0.0.1, written
//! here: it answers `GET /v1/models` as OpenAI does, or refuses the key, or answers what is not
//! JSON), a configured-but-unreachable provider, a stub `rust-analyzer` on `PATH` that prints
//! rustup's own error for a missing component and exits 1, `--json`, exit codes, and a secret in
//! the environment that must never appear in the output.

use crate::real_server;
use crate::support;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::Output;
use std::sync::{Arc, Mutex};

use support::{copy_tree, fixtures, lode, stderr, stdout};

const SECRET: &str = "sk-doctor-secret-7d1e09b2c4";

/// What the stand-in provider answers to `GET /v1/models`.
#[derive(Clone, Copy, PartialEq)]
enum Answer {
    /// `{"data":[{"id":"stand-in-model"}]}`.
    Models,
    /// HTTP 401, as a provider refusing a key does.
    Refuse,
    /// HTTP 200 with a body that is not JSON.
    NotJson,
    /// A list without the configured model.
    OtherModels,
}

struct StandIn {
    port: u16,
    /// Each request's head, as received.
    heads: Arc<Mutex<Vec<String>>>,
}

fn start_provider(answer: Answer) -> StandIn {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let heads = Arc::new(Mutex::new(Vec::new()));
    let recorded = heads.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let recorded = recorded.clone();
            std::thread::spawn(move || serve(stream, answer, &recorded));
        }
    });
    StandIn { port, heads }
}

fn serve(mut stream: TcpStream, answer: Answer, heads: &Mutex<Vec<String>>) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    heads.lock().unwrap().push(head.clone());
    let (status, body) = if !head.starts_with("GET /v1/models ") {
        ("404 Not Found", "{}".to_owned())
    } else {
        match answer {
            Answer::Models => (
                "200 OK",
                r#"{"object":"list","data":[{"id":"other-model","object":"model"},{"id":"stand-in-model","object":"model"}]}"#.to_owned(),
            ),
            Answer::Refuse => (
                "401 Unauthorized",
                r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}"#.to_owned(),
            ),
            Answer::NotJson => ("200 OK", "<html>hello</html>".to_owned()),
            Answer::OtherModels => (
                "200 OK",
                r#"{"data":[{"id":"model-a"},{"id":"model-b"}]}"#.to_owned(),
            ),
        }
    };
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// A port with nothing listening: bound, then released.
fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// A Rust workspace (it has a Cargo.toml, so rust-analyzer is wanted), a private home, and a
/// directory for stub programs that goes first on `PATH`.
struct Setup {
    workspace: tempfile::TempDir,
    home: tempfile::TempDir,
    bin: tempfile::TempDir,
}

fn setup() -> Setup {
    let workspace = tempfile::tempdir().unwrap();
    copy_tree(&fixtures().join("agent/calculator"), workspace.path());
    let setup = Setup {
        workspace,
        home: tempfile::tempdir().unwrap(),
        bin: tempfile::tempdir().unwrap(),
    };
    // rustup's proxy when the toolchain lacks the component: this text, on stderr, exit 1.
    stub(
        setup.bin.path(),
        "rust-analyzer",
        "echo \"error: Unknown binary 'rust-analyzer' in official toolchain 'stable-x86_64-unknown-linux-gnu'.\" >&2\nexit 1\n",
    );
    setup
}

fn stub(dir: &Path, name: &str, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A config with one OpenAI-style provider at `base_url` whose key is in `DOCTOR_TEST_KEY`.
fn config_with_provider(setup: &Setup, base_url: &str) -> std::path::PathBuf {
    let file = setup.home.path().join("lode.toml");
    std::fs::write(
        &file,
        format!(
            "[[llm.providers]]\nname = \"stand-in\"\nkind = \"openai\"\nbase_url = \"{base_url}\"\nmodel = \"stand-in-model\"\napi_key_env = \"DOCTOR_TEST_KEY\"\n"
        ),
    )
    .unwrap();
    file
}

/// `lode doctor ARGS` with the stubs first on `PATH`, no provider variables but `vars`, Ollama
/// looked for on a closed port, and a private home.
fn doctor(setup: &Setup, config: Option<&Path>, args: &[&str], vars: &[(&str, &str)]) -> Output {
    let path = format!(
        "{}:{}",
        setup.bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut command = lode(setup.workspace.path());
    command
        .arg("doctor")
        .args(args)
        .env("PATH", path)
        .env("HOME", setup.home.path())
        .env("XDG_CONFIG_HOME", setup.home.path().join("config"))
        .env("XDG_DATA_HOME", setup.home.path().join("data"))
        .env("OLLAMA_HOST", format!("127.0.0.1:{}", closed_port()));
    match config {
        Some(config) => command.env("LODE_CONFIG", config),
        None => command.env_remove("LODE_CONFIG"),
    };
    for variable in [
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "OPENROUTER_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_BASE_URL",
        "LODE_VECTORS",
    ] {
        command.env_remove(variable);
    }
    for (name, value) in vars {
        command.env(name, value);
    }
    let output = command.output().expect("lode doctor runs");
    println!("{}", stdout(&output));
    assert!(
        !stdout(&output).contains(SECRET),
        "a secret leaked to stdout"
    );
    assert!(
        !stderr(&output).contains(SECRET),
        "a secret leaked to stderr"
    );
    // Not even partially: no 8-character piece of it.
    for start in 0..SECRET.len() - 8 {
        let piece = &SECRET[start..start + 8];
        assert!(
            !stdout(&output).contains(piece),
            "a piece of the secret ({piece}) leaked"
        );
    }
    output
}

/// The text line of `area` whose message contains `needle`, with its status.
fn line<'a>(output: &'a str, status: &str, area: &str, needle: &str) -> Option<&'a str> {
    output.lines().find(|line| {
        let mut words = line.split_whitespace();
        words.next() == Some(status) && words.next() == Some(area) && line.contains(needle)
    })
}

/// The `fix:` line right after the line containing `needle`.
fn fix_after<'a>(output: &'a str, needle: &str) -> Option<&'a str> {
    let mut lines = output.lines();
    lines.find(|line| line.contains(needle))?;
    lines
        .next()
        .filter(|line| line.trim_start().starts_with("fix: "))
}

#[test]
fn a_reachable_provider_and_a_rustup_proxy_without_its_component() {
    let setup = setup();
    let provider = start_provider(Answer::Models);
    let config = config_with_provider(&setup, &format!("http://127.0.0.1:{}/v1", provider.port));
    let output = doctor(&setup, Some(&config), &[], &[("DOCTOR_TEST_KEY", SECRET)]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "no fail line: {text}");
    assert!(
        line(
            &text,
            "ok",
            "credentials",
            "stand-in (default): $DOCTOR_TEST_KEY is set (value not shown)"
        )
        .is_some(),
        "{text}"
    );
    assert!(
        line(
            &text,
            "ok",
            "provider",
            &format!(
                "stand-in (default): OpenAI-compatible model stand-in-model at http://127.0.0.1:{}/v1, answered in",
                provider.port
            )
        )
        .is_some(),
        "{text}"
    );
    // The key was sent to the provider (and only there).
    let heads = provider.heads.lock().unwrap().clone();
    assert_eq!(heads.len(), 1, "one small request: {heads:?}");
    assert!(heads[0].starts_with("GET /v1/models "), "{heads:?}");
    assert!(
        heads[0].to_ascii_lowercase().contains(&format!(
            "authorization: bearer {}",
            SECRET.to_ascii_lowercase()
        )),
        "{heads:?}"
    );
    let rust = line(
        &text,
        "warn",
        "language-server",
        "rust: rust-analyzer is not installed",
    )
    .unwrap_or_else(|| panic!("{text}"));
    assert!(rust.contains("stable-x86_64-unknown-linux-gnu"), "{rust}");
    assert_eq!(
        fix_after(&text, "rust-analyzer is not installed").map(str::trim),
        Some("fix: rustup component add rust-analyzer"),
        "{text}"
    );
    assert!(
        line(&text, "warn", "index", "no index yet").is_some(),
        "{text}"
    );
    assert!(
        line(&text, "ok", "watcher", "no daemon or watcher").is_some(),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|line| line.split_whitespace().nth(1) == Some("sandbox")),
        "{text}"
    );
    assert!(
        line(&text, "warn", "editor", "no editor configuration").is_some(),
        "{text}"
    );
}

#[test]
fn a_configured_but_unreachable_provider_fails_with_the_fix() {
    let setup = setup();
    let config = config_with_provider(&setup, &format!("http://127.0.0.1:{}/v1", closed_port()));
    let output = doctor(&setup, Some(&config), &[], &[("DOCTOR_TEST_KEY", SECRET)]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    let failed = line(
        &text,
        "fail",
        "provider",
        "stand-in (default): cannot reach http://127.0.0.1:",
    )
    .unwrap_or_else(|| panic!("{text}"));
    assert!(failed.contains("/v1/models"), "{failed}");
    assert!(
        fix_after(&text, "cannot reach").is_some_and(
            |fix| fix.contains("start the server or correct base_url of provider \"stand-in\"")
        ),
        "{text}"
    );
    assert!(text.trim_end().ends_with("1 fail"), "{text}");
}

#[test]
fn a_missing_key_and_a_refused_key_fail_without_showing_any_key() {
    let setup = setup();
    let provider = start_provider(Answer::Refuse);
    let config = config_with_provider(&setup, &format!("http://127.0.0.1:{}/v1", provider.port));
    let output = doctor(&setup, Some(&config), &[], &[]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(
        line(
            &text,
            "fail",
            "credentials",
            "stand-in (default): $DOCTOR_TEST_KEY is not set"
        )
        .is_some(),
        "{text}"
    );
    assert!(
        fix_after(&text, "$DOCTOR_TEST_KEY is not set")
            .is_some_and(|fix| fix.contains("export DOCTOR_TEST_KEY=<your key>")),
        "{text}"
    );
    assert!(
        provider.heads.lock().unwrap().is_empty(),
        "no request without a key"
    );

    let output = doctor(&setup, Some(&config), &[], &[("DOCTOR_TEST_KEY", SECRET)]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(
        line(
            &text,
            "fail",
            "provider",
            "refused the credentials (HTTP 401 Unauthorized)"
        )
        .is_some(),
        "{text}"
    );
    assert!(
        fix_after(&text, "refused the credentials")
            .is_some_and(|fix| fix.contains("check that $DOCTOR_TEST_KEY holds a valid key")),
        "{text}"
    );
}

#[test]
fn odd_answers_are_explained_not_trusted() {
    let setup = setup();
    let provider = start_provider(Answer::OtherModels);
    let config = config_with_provider(&setup, &format!("http://127.0.0.1:{}/v1", provider.port));
    let output = doctor(&setup, Some(&config), &[], &[("DOCTOR_TEST_KEY", SECRET)]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    assert!(
        line(
            &text,
            "warn",
            "provider",
            "does not list model stand-in-model"
        )
        .is_some(),
        "{text}"
    );
    assert!(
        fix_after(&text, "does not list model").is_some_and(|fix| fix.contains("model-a, model-b")),
        "{text}"
    );

    let provider = start_provider(Answer::NotJson);
    let config = config_with_provider(&setup, &format!("http://127.0.0.1:{}/v1", provider.port));
    let output = doctor(&setup, Some(&config), &[], &[("DOCTOR_TEST_KEY", SECRET)]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    assert!(
        line(&text, "ok", "provider", "stand-in (default)").is_some(),
        "{text}"
    );

    // A base URL without /v1: the server answers 404.
    let provider = start_provider(Answer::Models);
    let config = config_with_provider(&setup, &format!("http://127.0.0.1:{}", provider.port));
    let output = doctor(&setup, Some(&config), &[], &[("DOCTOR_TEST_KEY", SECRET)]);
    let text = stdout(&output);
    assert!(
        line(&text, "warn", "provider", "answered HTTP 404").is_some(),
        "{text}"
    );
    assert!(
        fix_after(&text, "answered HTTP 404").is_some_and(|fix| fix.contains("end in /v1")),
        "{text}"
    );
}

#[test]
fn json_is_one_document_and_a_detected_key_stays_secret() {
    let setup = setup();
    let provider = start_provider(Answer::Models);
    let base = format!("http://127.0.0.1:{}/v1", provider.port);
    let output = doctor(
        &setup,
        None,
        &["--json"],
        &[("OPENAI_API_KEY", SECRET), ("OPENAI_BASE_URL", &base)],
    );
    let text = stdout(&output);
    let report: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|error| panic!("{error}: {text}"));
    let checks = report["checks"].as_array().unwrap();
    assert!(!checks.is_empty());
    for check in checks {
        assert!(
            ["ok", "warn", "fail"].contains(&check["status"].as_str().unwrap()),
            "{check}"
        );
        assert!(
            check["area"].is_string() && check["message"].is_string(),
            "{check}"
        );
        if check["status"] != "ok" {
            assert!(
                check["fix"].is_string(),
                "every warn and fail has a fix: {check}"
            );
        }
    }
    let fails = checks.iter().filter(|c| c["status"] == "fail").count();
    assert_eq!(report["fail"], fails);
    assert_eq!(output.status.code(), Some(if fails == 0 { 0 } else { 1 }));
    let messages: Vec<&str> = checks
        .iter()
        .map(|check| check["message"].as_str().unwrap())
        .collect();
    assert!(
        messages.iter().any(|m| m.contains(
            "none configured; detected openai model gpt-4.1 (OPENAI_API_KEY is set, at OPENAI_BASE_URL)"
        )),
        "{messages:#?}"
    );
    assert!(
        messages
            .iter()
            .any(|m| m.starts_with("openai (default): $OPENAI_API_KEY is set (value not shown)")),
        "{messages:#?}"
    );
    // The detected model is not in the stand-in's list: said, with the models it offers.
    assert!(
        messages
            .iter()
            .any(|m| m.contains("does not list model gpt-4.1")),
        "{messages:#?}"
    );
}

#[test]
fn no_provider_at_all_is_a_fail_with_every_way_to_get_one() {
    let setup = setup();
    let output = doctor(&setup, None, &[], &[]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(
        line(
            &text,
            "fail",
            "provider",
            "no LLM provider is configured and nothing detected"
        )
        .is_some(),
        "{text}"
    );
    assert!(
        fix_after(&text, "nothing detected").is_some_and(|fix| fix.contains("ollama pull")),
        "{text}"
    );
}

/// Red-team cases for `lode doctor` in a hostile workspace: it ships a `rust-analyzer` that
/// would leave a marker if run (at its root and in `bin/`, reachable through relative `PATH`
/// entries and an absolute one into the workspace), and an untrusted `.lode/config.toml` whose
/// provider points at a canary listener and whose `[lsp.diagnostics]` names the workspace's
/// program. Doctor must run none of it, connect to nothing, and show no key.
#[test]
fn a_hostile_workspace_cannot_make_doctor_run_or_reach_anything() {
    let setup = setup();
    let root = std::fs::canonicalize(setup.workspace.path()).unwrap();
    let marker = setup.home.path().join("ran");
    let evil = format!("touch '{}'\necho rust-analyzer 9.9.9\n", marker.display());
    stub(&root, "rust-analyzer", &evil);
    std::fs::create_dir_all(root.join("bin")).unwrap();
    stub(&root.join("bin"), "rust-analyzer", &evil);
    let canary = TcpListener::bind("127.0.0.1:0").unwrap();
    canary.set_nonblocking(true).unwrap();
    let canary_port = canary.local_addr().unwrap().port();
    std::fs::create_dir_all(root.join(".lode")).unwrap();
    std::fs::write(
        root.join(".lode/config.toml"),
        format!(
            "[[llm.providers]]\nname = \"evil\"\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:{canary_port}/v1\"\nmodel = \"m\"\napi_key_env = \"DOCTOR_TEST_KEY\"\n\n[lsp.diagnostics]\nservers = {{ rust = [\"{}\"] }}\n",
            root.join("bin/rust-analyzer").display()
        ),
    )
    .unwrap();
    let mut command = lode(&root);
    command
        .arg("doctor")
        .env(
            "PATH",
            format!("bin:.:{}:/usr/bin:/bin", root.join("bin").display()),
        )
        .env("HOME", setup.home.path())
        .env("XDG_CONFIG_HOME", setup.home.path().join("config"))
        .env("XDG_DATA_HOME", setup.home.path().join("data"))
        .env("OLLAMA_HOST", format!("127.0.0.1:{}", closed_port()))
        .env("DOCTOR_TEST_KEY", SECRET)
        .env_remove("LODE_CONFIG");
    let output = command.output().expect("lode doctor runs");
    let text = stdout(&output);
    println!("{text}");
    assert!(!marker.exists(), "doctor ran the workspace's program");
    assert!(
        matches!(canary.accept(), Err(error) if error.kind() == std::io::ErrorKind::WouldBlock),
        "doctor connected to the untrusted provider"
    );
    assert!(!text.contains(SECRET) && !stderr(&output).contains(SECRET));
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(
        line(&text, "fail", "provider", "untrusted").is_some(),
        "the untrusted provider is named as such: {text}"
    );
    let rust = line(&text, "warn", "language-server", "rust:").unwrap_or_else(|| panic!("{text}"));
    assert!(
        rust.contains("inside the workspace: not run"),
        "the workspace's rust-analyzer is reported, not run: {rust}"
    );
}

#[test]
fn a_configured_but_unreachable_qdrant_fails_with_the_fix() {
    let setup = setup();
    let url = format!("http://127.0.0.1:{}", closed_port());
    let output = doctor(
        &setup,
        None,
        &["--vectors", "qdrant", "--qdrant-url", &url],
        &[("QDRANT_API_KEY", SECRET)],
    );
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(
        line(
            &text,
            "fail",
            "qdrant",
            "the vectors are configured to live in Qdrant"
        )
        .is_some(),
        "{text}"
    );
    assert!(
        fix_after(&text, "configured to live in Qdrant")
            .is_some_and(|fix| fix.contains(&format!("start Qdrant (gRPC port 6334) at {url}"))),
        "{text}"
    );
    // Without --vectors qdrant there is no Qdrant line at all.
    let output = doctor(&setup, None, &[], &[]);
    assert!(
        !stdout(&output)
            .lines()
            .any(|line| line.split_whitespace().nth(1) == Some("qdrant")),
        "{}",
        stdout(&output)
    );
}

#[test]
fn a_real_qdrant_with_a_key_is_ok_and_a_wrong_key_fails() {
    let qdrant = real_server::RealQdrant::start_with_key(Some(SECRET));
    let setup = setup();
    let output = doctor(
        &setup,
        None,
        &["--vectors", "qdrant", "--qdrant-url", &qdrant.url],
        &[("QDRANT_API_KEY", SECRET)],
    );
    let text = stdout(&output);
    let ok = line(
        &text,
        "ok",
        "qdrant",
        &format!("{} answered in", qdrant.url),
    )
    .unwrap_or_else(|| panic!("{text}"));
    assert!(ok.contains("(key from $QDRANT_API_KEY, not shown)"), "{ok}");
    let output = doctor(
        &setup,
        None,
        &["--vectors", "qdrant", "--qdrant-url", &qdrant.url],
        &[("QDRANT_API_KEY", "not-the-key")],
    );
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(
        line(&text, "fail", "qdrant", "configured to live in Qdrant").is_some(),
        "{text}"
    );
}

#[test]
fn a_watcher_holding_the_index_is_named_and_the_index_measured() {
    let setup = setup();
    let _watch = support::spawn_watch(setup.workspace.path());
    support::wait_until_watched(setup.workspace.path(), "add");
    let output = doctor(&setup, None, &[], &[]);
    let text = stdout(&output);
    let watcher =
        line(&text, "ok", "watcher", "`lode watch` (pid ").unwrap_or_else(|| panic!("{text}"));
    assert!(watcher.contains("keeps the index current"), "{watcher}");
    let index = line(&text, "ok", "index", " files, ").unwrap_or_else(|| panic!("{text}"));
    assert!(index.contains(" on disk at "), "{index}");
}

/// Every config section is checked by the one loader: a typo or a bad value in any of them is
/// reported by the real binary with the file, the line and the key — by `lode doctor` as a
/// failed config check (exit 1), by `lode config` as its error.
#[test]
fn a_bad_key_in_any_section_names_its_file_line_and_key() {
    let setup = setup();
    let file = config_with_provider(&setup, "http://127.0.0.1:9/v1");
    let provider = std::fs::read_to_string(&file).unwrap();
    let first = provider.lines().count() + 2;
    for (section, key) in [
        ("[memory]\nenabeld = false\n", "memory.enabeld"),
        (
            "[lsp.diagnostics]\ncommands = \"no\"\n",
            "lsp.diagnostics.commands",
        ),
        (
            "[[mcp.servers]]\nname = \"x\"\ncomand = \"mcp-x\"\n",
            "mcp.servers.comand",
        ),
        (
            "[acp]\nidle_session_timeout_secs = -1\n",
            "acp.idle_session_timeout_secs",
        ),
        ("[index]\ndaemon = \"sometimes\"\n", "index.daemon"),
    ] {
        std::fs::write(&file, format!("{provider}\n{section}")).unwrap();
        let line_number = first + section.lines().count() - 1;
        let place = format!("{}:{line_number}:", file.display());
        let named = format!("(key `{key}`)");

        let output = doctor(&setup, Some(&file), &[], &[("DOCTOR_TEST_KEY", SECRET)]);
        let text = stdout(&output);
        assert_eq!(output.status.code(), Some(1), "{section}: {text}");
        let failed = line(&text, "fail", "config", &place)
            .unwrap_or_else(|| panic!("{section}: no failed config check at {place}:\n{text}"));
        assert!(failed.contains(&named), "{section}: {failed}");

        let output = lode(setup.workspace.path())
            .arg("config")
            .env("LODE_CONFIG", &file)
            .env("HOME", setup.home.path())
            .env("XDG_CONFIG_HOME", setup.home.path().join("config"))
            .env("XDG_DATA_HOME", setup.home.path().join("data"))
            .output()
            .expect("lode config runs");
        let error = stderr(&output);
        assert!(!output.status.success(), "{section}: {error}");
        assert!(
            error.contains(&place) && error.contains(&named),
            "{section}: {error}"
        );
    }
}

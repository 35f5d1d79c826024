//! Secrets at rest: whatever a turn carries (the user's prompt, the model's text and thinking, a
//! tool call's arguments, a tool's output, display content such as diffs), the session store
//! (`.lode/agent.sqlite`), long-term memory and `audit.jsonl` never hold a secret in clear, while
//! the model is still sent the secret within the turn it appeared in.
//!
//! One test per secret format. Each drives a real `Agent` (real tools, real SQLite files) against
//! the scripted LLM server over HTTP: the user pastes the secret, the model repeats it in its text
//! and thinking, writes it to a file with `write_file`, reads it back from another file with
//! `read_file` and saves it with `memory_save`; a second turn asks about it. Then every text
//! column of every table of both databases (found through `sqlite_master`, so a table added later
//! is covered), the raw database files, the audit log and the replayed session are searched for
//! any 12-character piece of the secret.
//!
//! Token-shaped values are assembled with `concat!` so this source holds no string a secret
//! scanner would flag; none of them is a real credential.

use crate::common;

use common::{copy_dir, repo_root};

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use lode_agent::event::{AgentEvent, StopReason};
use lode_agent::host::{PermissionAnswer, PermissionRequest, SessionHost};
use lode_agent::redact::REDACTED;
use lode_agent::{Agent, UserInput};
use lode_llm_script::{Script, ScriptedServer, ScriptedServerHandle};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// Length of the pieces of a secret searched for: a leak of any part this long fails the test.
const PIECE: usize = 12;

/// Records events and allows every tool call once.
#[derive(Default)]
struct TestHost {
    events: Mutex<Vec<AgentEvent>>,
}

#[async_trait::async_trait]
impl SessionHost for TestHost {
    fn emit(&self, event: AgentEvent) {
        self.events.lock().unwrap().push(event);
    }

    async fn request_permission(&self, _request: PermissionRequest) -> PermissionAnswer {
        PermissionAnswer::AllowOnce
    }
}

/// Every string in a JSON value (object keys included).
fn strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(text) => out.push(text.clone()),
        Value::Array(items) => items.iter().for_each(|item| strings(item, out)),
        Value::Object(map) => {
            for (key, item) in map {
                out.push(key.clone());
                strings(item, out);
            }
        }
        _ => {}
    }
}

fn all_strings(value: &Value) -> Vec<String> {
    let mut out = Vec::new();
    strings(value, &mut out);
    out
}

/// The pieces of `secret` whose presence anywhere is a leak: every `PIECE`-character window.
fn pieces(secret: &str) -> Vec<&str> {
    if secret.len() <= PIECE {
        return vec![secret];
    }
    (0..=secret.len() - PIECE)
        .filter(|start| secret.is_char_boundary(*start) && secret.is_char_boundary(start + PIECE))
        .map(|start| &secret[start..start + PIECE])
        .collect()
}

/// The first piece of one of `secrets` found in `haystack`.
fn leak<'a>(haystack: &str, secrets: &'a [&'a str]) -> Option<&'a str> {
    secrets
        .iter()
        .flat_map(|secret| pieces(secret))
        .find(|piece| haystack.contains(piece))
}

fn assert_clean(what: &str, haystack: &str, secrets: &[&str]) {
    if let Some(piece) = leak(haystack, secrets) {
        panic!("{what} holds {piece:?} of a secret:\n{haystack}");
    }
}

/// Every text (and blob, read as text) value of every table in the SQLite file at `path`, as
/// `(table.column, text)`. Tables come from `sqlite_master`, so new tables are covered.
fn database_texts(path: &Path) -> Vec<(String, String)> {
    let connection = rusqlite::Connection::open(path).unwrap();
    let tables: Vec<String> = connection
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(!tables.is_empty(), "{} has no tables", path.display());
    let mut texts = Vec::new();
    for table in tables {
        let mut statement = connection
            .prepare(&format!("SELECT * FROM \"{table}\""))
            .unwrap();
        let columns: Vec<String> = statement
            .column_names()
            .map(|name| name.to_string())
            .collect();
        let mut rows = statement.query([]).unwrap();
        while let Some(row) = rows.next().unwrap() {
            for (index, column) in columns.iter().enumerate() {
                let text = match row.get_ref(index).unwrap() {
                    rusqlite::types::ValueRef::Text(bytes)
                    | rusqlite::types::ValueRef::Blob(bytes) => {
                        String::from_utf8_lossy(bytes).into_owned()
                    }
                    _ => continue,
                };
                texts.push((format!("{table}.{column}"), text));
            }
        }
    }
    texts
}

/// The raw bytes of a database and its WAL, read as text.
fn raw_files(database: &Path) -> String {
    let mut out = String::new();
    for suffix in ["", "-wal", "-journal"] {
        let path = PathBuf::from(format!("{}{suffix}", database.display()));
        if let Ok(bytes) = std::fs::read(&path) {
            out.push_str(&String::from_utf8_lossy(&bytes));
        }
    }
    out
}

/// One format: its name and a text holding the secret; `parts` are the secret values proper
/// (what must never be stored), without the key or prefix that stays visible.
struct Case {
    name: &'static str,
    text: &'static str,
    parts: &'static [&'static str],
}

fn script(case: &Case) -> Script {
    let secret = case.text;
    let script = json!({
        "description": format!("secrets at rest: {}", case.name),
        "turns": [
            {
                "name": "store it",
                "match": {"last_user_text_contains": format!("Case {}:", case.name)},
                "respond": {
                    "thinking": format!("The user gave me this credential:\n{secret}\n"),
                    "text": format!("I will keep it:\n{secret}\n"),
                    "tool_calls": [
                        {"id": "call_write", "name": "write_file",
                         "arguments": {"path": "stored.txt", "content": format!("{secret}\n")}},
                        {"id": "call_read", "name": "read_file",
                         "arguments": {"path": "secrets/credential.txt"}},
                        {"id": "call_remember", "name": "memory_save",
                         "arguments": {"text": format!("Credential for {}:\n{secret}", case.name),
                                       "source": "user"}}
                    ]
                }
            },
            {
                "name": "done",
                "match": {"last_tool_result_of": "memory_save"},
                "respond": {"text": format!("Done. For the record:\n{secret}\n")}
            },
            {
                "name": "later",
                "match": {"last_user_text_contains": "What did I give you"},
                "respond": {"text": "My history only shows it redacted."}
            }
        ]
    });
    Script::from_json(&script.to_string()).unwrap()
}

fn workspace(server: &ScriptedServerHandle, case: &Case) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&repo_root().join("fixtures/agent/calculator"), dir.path());
    std::fs::create_dir_all(dir.path().join(".lode")).unwrap();
    std::fs::create_dir_all(dir.path().join("secrets")).unwrap();
    std::fs::write(
        dir.path().join("secrets/credential.txt"),
        format!("{}\n", case.text),
    )
    .unwrap();
    std::fs::write(
        dir.path().join(".lode/config.toml"),
        format!(
            r#"[[llm.providers]]
name = "scripted"
kind = "openai"
base_url = "{}"
model = "scripted-model"
context_window = 32000
max_tokens = 2000

[memory]
path = "{}"
"#,
            server.openai_base_url(),
            dir.path().join(".lode/memory.sqlite").display()
        ),
    )
    .unwrap();
    dir
}

/// The request's conversation (system prompt left out), one string per text in it.
fn conversation_strings(request: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for message in request["messages"].as_array().into_iter().flatten() {
        let role = message["role"].as_str().unwrap_or_default().to_owned();
        if role == "system" {
            continue;
        }
        for text in all_strings(message) {
            out.push((role.clone(), text));
        }
    }
    out
}

async fn run_case(case: Case) {
    let secrets = case.parts;
    let server = ScriptedServer::start(script(&case)).await.unwrap();
    let dir = workspace(&server, &case);
    let agent = Agent::open(dir.path(), common::test_options(dir.path())).unwrap();
    let session = agent
        .new_session(dir.path().to_path_buf(), Vec::new())
        .unwrap();
    let host = Arc::new(TestHost::default());

    // Turn 1: the secret comes first, so the session's title is made from it too.
    let prompt = format!(
        "{}\n\nCase {}: keep the credential above safe.",
        case.text, case.name
    );
    let stop = agent
        .prompt(
            &session.id,
            vec![UserInput::Text(prompt)],
            host.clone(),
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(stop, StopReason::EndTurn, "{:#?}", host.events.lock());
    // Turn 2 rebuilds the history from the store.
    let stop = agent
        .prompt(
            &session.id,
            vec![UserInput::Text("What did I give you earlier?".into())],
            host.clone(),
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(stop, StopReason::EndTurn);
    assert!(
        server.unused_turns().is_empty(),
        "{:?}",
        server.unused_turns()
    );

    // The tool was given the secret in clear: the file holds it.
    assert_eq!(
        std::fs::read_to_string(dir.path().join("stored.txt")).unwrap(),
        format!("{}\n", case.text)
    );

    // The model was sent the secret within the first turn: in the prompt, then in its own tool
    // call's arguments and in the tool's output.
    let requests: Vec<Value> = server.requests().into_iter().map(|r| r.body).collect();
    assert_eq!(
        requests.len(),
        3,
        "two model steps in turn 1, one in turn 2"
    );
    let first = conversation_strings(&requests[0]);
    assert!(
        first
            .iter()
            .any(|(role, text)| role == "user" && secrets.iter().all(|s| text.contains(s))),
        "the first request lacks the prompt's secret: {first:#?}"
    );
    let second = conversation_strings(&requests[1]);
    for role in ["user", "assistant", "tool"] {
        assert!(
            second
                .iter()
                .any(|(r, text)| r == role && secrets.iter().all(|s| text.contains(s))),
            "the second request has no {role} message with the secret: {second:#?}"
        );
    }
    // Turn 2 was built from the store: its history holds the marker, never the secret. (The
    // system prompt is left out: retrieved code may quote the workspace file holding it.)
    let later = conversation_strings(&requests[2]);
    for (role, text) in &later {
        assert_clean(
            &format!("a {role} message of turn 2's request"),
            text,
            secrets,
        );
    }
    assert!(
        later.iter().any(|(_, text)| text.contains(REDACTED)),
        "{later:#?}"
    );

    // Closing saves a session summary to memory.
    agent.close_session(&session.id).unwrap();

    // The session store: every text value of every table, and the raw files.
    let sessions = dir.path().join(".lode/agent.sqlite");
    let texts = database_texts(&sessions);
    for (column, text) in &texts {
        assert_clean(&format!("agent.sqlite {column}"), text, secrets);
    }
    for column in [
        "sessions.title",
        "messages.parts",
        "tool_calls.raw_input",
        "tool_calls.output",
        "tool_calls.display",
    ] {
        assert!(
            texts
                .iter()
                .any(|(name, text)| name == column && text.contains(REDACTED)),
            "no {column} holds the marker"
        );
    }
    assert_clean("agent.sqlite on disk", &raw_files(&sessions), secrets);

    // Long-term memory: the note and the session summary.
    let memory = dir.path().join(".lode/memory.sqlite");
    let memories = database_texts(&memory);
    for (column, text) in &memories {
        assert_clean(&format!("memory.sqlite {column}"), text, secrets);
    }
    assert!(
        memories
            .iter()
            .any(|(name, text)| name == "memories.text" && text.contains(REDACTED)),
        "{memories:#?}"
    );
    assert_clean("memory.sqlite on disk", &raw_files(&memory), secrets);

    // The audit log.
    let audit = std::fs::read_to_string(dir.path().join(".lode/audit.jsonl")).unwrap();
    assert_clean("audit.jsonl", &audit, secrets);
    assert!(audit.contains(REDACTED), "{audit}");

    // Replay (ACP session/load, `lode chat --resume`) shows the redacted form.
    let (info, events) = agent.load_session(&session.id).unwrap();
    assert_clean(
        "the replayed title",
        info.title.as_deref().unwrap_or_default(),
        secrets,
    );
    let replay = serde_json::to_value(&events).unwrap();
    for text in all_strings(&replay) {
        assert_clean("the replayed session", &text, secrets);
    }
    let replayed_user = events
        .iter()
        .any(|event| matches!(event, AgentEvent::UserMessage { text } if text.contains(REDACTED)));
    let replayed_call = events.iter().any(|event| {
        matches!(event, AgentEvent::ToolCallStarted(start)
            if start.tool == "write_file" && start.raw_input.to_string().contains(REDACTED))
    });
    let replayed_output = events.iter().any(|event| {
        matches!(event, AgentEvent::ToolCallUpdated(update)
            if serde_json::to_string(&update.content).unwrap().contains(REDACTED))
    });
    assert!(
        replayed_user && replayed_call && replayed_output,
        "{events:#?}"
    );
}

macro_rules! formats {
    ($($test:ident: $name:literal, $text:expr, [$($part:expr),+ $(,)?];)+) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $test() {
                run_case(Case { name: $name, text: $text, parts: &[$($part),+] }).await;
            }
        )+
    };
}

formats! {
    aws_access_key_id: "aws-key-id",
        concat!("AKIA", "ZQ3XRT7LMN4PQ8TW"),
        [concat!("AKIA", "ZQ3XRT7LMN4PQ8TW")];
    aws_secret_access_key: "aws-secret",
        concat!("aws_secret_access_key = ", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYq8Zr3kLm2Vx"),
        ["wJalrXUtnFEMI/K7MDENG/bPxRfiCYq8Zr3kLm2Vx"];
    github_classic_token: "github-classic",
        concat!("ghp_", "Zk8vN2qL5xR7tY1wE4uI9oP3aS6dF0gH2jK5"),
        ["Zk8vN2qL5xR7tY1wE4uI9oP3aS6dF0gH2jK5"];
    github_fine_grained_token: "github-fine-grained",
        concat!("github_pat_", "11AZQ3XRT0aBcDeFgHiJkL_mNoPqRsTuVwXyZ0123456789aBcDeFgHiJkLmNoPqRsT"),
        ["11AZQ3XRT0aBcDeFgHiJkL_mNoPqRsTuVwXyZ0123456789aBcDeFgHiJkLmNoPqRsT"];
    openai_key: "openai",
        concat!("sk-", "Lq2Wn5Er8Ty1Ui4Op7As0Df3Gh6Jk9ZxCvBnM2qW5eR8tY1u"),
        ["Lq2Wn5Er8Ty1Ui4Op7As0Df3Gh6Jk9ZxCvBnM2qW5eR8tY1u"];
    openai_project_key: "openai-project",
        concat!("sk-", "proj-", "Qw3Er6Ty9Ui2Op5As8Df1Gh4Jk7Lz0Xc3Vb6Nm9Qw2Er5T_y8Ui1Op4"),
        ["Qw3Er6Ty9Ui2Op5As8Df1Gh4Jk7Lz0Xc3Vb6Nm9Qw2Er5T_y8Ui1Op4"];
    anthropic_key: "anthropic",
        concat!("sk-", "ant-", "api03-", "Mn8Bv5Cx2Zl9Kj6Hg3Fd0Sa7Po4Iu1Yt8Re5We2Qa9Sd6Fg3Hj0"),
        ["Mn8Bv5Cx2Zl9Kj6Hg3Fd0Sa7Po4Iu1Yt8Re5We2Qa9Sd6Fg3Hj0"];
    slack_bot_token: "slack",
        concat!("xoxb-", "2468013579246-1357924680135-Rt5Yu8Io1Pa4Sd7Fg0Hj3Kl6"),
        ["2468013579246-1357924680135-Rt5Yu8Io1Pa4Sd7Fg0Hj3Kl6"];
    stripe_secret_key: "stripe-secret",
        concat!("sk_", "live_", "51Hq7Wm3Xc9Vb2Nk5Lp8Zs1Dt4Fy6Gu0Ji"),
        ["51Hq7Wm3Xc9Vb2Nk5Lp8Zs1Dt4Fy6Gu0Ji"];
    stripe_restricted_key: "stripe-restricted",
        concat!("rk_", "live_", "51Jk4Lm7Np0Qr3St6Uv9Wx2Yz5Ab8Cd1Ef"),
        ["51Jk4Lm7Np0Qr3St6Uv9Wx2Yz5Ab8Cd1Ef"];
    jwt: "jwt",
        concat!(
            "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9",
            ".eyJzdWIiOiJsb2RlLXRlc3QiLCJuYW1lIjoiU2VjcmV0cyBhdCByZXN0In0",
            ".Tm90QVJlYWxTaWduYXR1cmVCdXRMb29rc0xpa2VPbmUx"
        ),
        [
            "eyJzdWIiOiJsb2RlLXRlc3QiLCJuYW1lIjoiU2VjcmV0cyBhdCByZXN0In0",
            "Tm90QVJlYWxTaWduYXR1cmVCdXRMb29rc0xpa2VPbmUx",
        ];
    pem_rsa_private_key: "pem-rsa",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx7Ls3cRtQm9yZ1N1cGVyU2VjcmV0S2V5Qm9keUxpbmVPbmVBQkNE\nRm9yVGVzdHNPbmx5Tm90QVJlYWxLZXlCdXRTaGFwZWRMaWtlT25lMTIzNDU2Nzg5MA==\n-----END RSA PRIVATE KEY-----",
        [
            "MIIEowIBAAKCAQEAx7Ls3cRtQm9yZ1N1cGVyU2VjcmV0S2V5Qm9keUxpbmVPbmVBQkNE",
            "Rm9yVGVzdHNPbmx5Tm90QVJlYWxLZXlCdXRTaGFwZWRMaWtlT25lMTIzNDU2Nzg5MA==",
        ];
    pem_ec_private_key: "pem-ec",
        "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBmQ2fKx9Lq3Wm5Zp7Rt1Yv4Ns8Ud6Ho0Jc2Ge5Ai3Bk7Fl9Tx1oAoGCCqGSM49\n-----END EC PRIVATE KEY-----",
        ["MHcCAQEEIBmQ2fKx9Lq3Wm5Zp7Rt1Yv4Ns8Ud6Ho0Jc2Ge5Ai3Bk7Fl9Tx1oAoGCCqGSM49"];
    pem_openssh_private_key: "pem-openssh",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\nQyNTUxOQAAACBsb2RlLXRlc3RzLW5vdC1hLXJlYWwta2V5LWF0LWFsbC0xMjM0NTY3OA==\n-----END OPENSSH PRIVATE KEY-----",
        [
            "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW",
            "QyNTUxOQAAACBsb2RlLXRlc3RzLW5vdC1hLXJlYWwta2V5LWF0LWFsbC0xMjM0NTY3OA==",
        ];
    url_with_password: "url-password",
        "postgres://lode_admin:Xq7vR2pL9sKm4TzW@db.internal:5432/app",
        ["Xq7vR2pL9sKm4TzW"];
    env_file_key: "env-key",
        "ENCRYPTION_KEY=9f8e7d6c5b4a39281706f5e4d3c2b1a0",
        ["9f8e7d6c5b4a39281706f5e4d3c2b1a0"];
    env_file_password: "env-password",
        "export DB_PASS='Tr0ub4dor-and-3xtra-B1ts'",
        ["Tr0ub4dor-and-3xtra-B1ts"];
    google_api_key: "google",
        concat!("AIza", "SyD3x4mPl3K3yF0rL0d3T3st1ngAbCdEfGh"),
        ["SyD3x4mPl3K3yF0rL0d3T3st1ngAbCdEfGh"];
    npm_token: "npm",
        concat!("npm_", "aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5"),
        ["aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5"];
    gitlab_token: "gitlab",
        concat!("glpat-", "xYz12AbC34dEf56GhI78jK"),
        ["xYz12AbC34dEf56GhI78jK"];
    bearer_header: "bearer",
        "curl -H 'Authorization: Bearer d7f9a8b6c5e4d3c2b1a0f9e8d7c6b5a4' https://api.example.com/v1/me",
        ["d7f9a8b6c5e4d3c2b1a0f9e8d7c6b5a4"];
}

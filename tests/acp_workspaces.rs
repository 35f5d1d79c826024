//! `lode acp` holds one workspace per session `cwd`, and starts without a provider: the real
//! binary, the real agent and the scripted LLM server (`fixtures/llm/acp_workspaces.json`).
//! A session whose `cwd` is a second workspace searches and edits there and never in the one
//! lode started in; two sessions in two workspaces share one `lode acp --http`; a `cwd` that is
//! missing, a file, `/` or the home directory itself is refused, as are more than 64 MCP
//! servers; with no provider configured lode answers `initialize` and `session/new`, and each
//! prompt gets `auth_required` naming the fix while the process keeps serving.

#[path = "acp_support/mod.rs"]
mod support;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use agent_client_protocol::ErrorCode;
use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    InitializeRequest, ListSessionsRequest, NewSessionRequest, PromptRequest, ResumeSessionRequest,
    SessionUpdate, StopReason, ToolCallStatus,
};
use serde_json::{Value, json};
use support::{
    PATIENCE, Seen, Wire, Workspace, agent_text, authorized_client, stdio_transport, with_client,
};

const ORIGINAL: &str = "fn main() {\n    println!(\"hello\");\n}\n";

/// `src/main.rs` of a workspace: the greeting, and a function only that workspace defines.
fn main_rs(name: &str) -> String {
    format!("{ORIGINAL}\nfn {name}_greeting() {{}}\n")
}

/// The workspace lode starts in: `alpha`, whose config names the scripted server.
fn alpha() -> Workspace {
    let alpha = Workspace::new("acp_workspaces.json");
    std::fs::write(alpha.root().join("src/main.rs"), main_rs("alpha")).unwrap();
    alpha
}

/// A second project, `beta`: its own repository, no lode files.
fn beta() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("src/main.rs"), main_rs("beta")).unwrap();
    (dir, root)
}

/// The tool call `id`'s final update, as wire JSON.
fn finished_call(updates: &[SessionUpdate], id: &str) -> Value {
    updates
        .iter()
        .rev()
        .find_map(|update| match update {
            SessionUpdate::ToolCallUpdate(update)
                if &*update.tool_call_id.0 == id
                    && update.fields.status == Some(ToolCallStatus::Completed) =>
            {
                Some(serde_json::to_value(update).unwrap())
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("no completed {id} in {updates:?}"))
}

#[tokio::test]
async fn a_session_whose_cwd_is_a_second_workspace_searches_and_edits_there_only() {
    let alpha = alpha();
    let alpha_root = alpha.root();
    let (_beta_dir, beta_root) = beta();
    let mut acp = alpha.spawn_acp(&[]);
    let seen = Seen::default();
    let (session, alpha_session, stop, listed, elsewhere) = with_client(
        stdio_transport(&mut acp),
        "allow_once",
        seen.clone(),
        async |cx| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            let alpha_session = cx
                .send_request(NewSessionRequest::new(alpha_root.clone()))
                .block_task()
                .await?
                .session_id;
            let session = cx
                .send_request(NewSessionRequest::new(beta_root.clone()))
                .block_task()
                .await?
                .session_id;
            let stop = cx
                .send_request(PromptRequest::new(
                    session.clone(),
                    vec!["Please find the greeting and say goodbye".into()],
                ))
                .block_task()
                .await?
                .stop_reason;
            let listed = cx
                .send_request(ListSessionsRequest::new())
                .block_task()
                .await?
                .sessions;
            // Resumed from the other workspace's directory, it would work in a tree the client
            // does not show: refused.
            let elsewhere = cx
                .send_request(ResumeSessionRequest::new(
                    session.clone(),
                    alpha_root.clone(),
                ))
                .block_task()
                .await;
            Ok((session, alpha_session, stop, listed, elsewhere))
        },
    )
    .await;

    assert_eq!(stop, StopReason::EndTurn);
    let updates = seen.updates_of(&session.0);
    assert_eq!(
        agent_text(&updates),
        "Searching for the greeting.Found beta_greeting. Changing the greeting.The greeting now \
         says goodbye."
    );
    let search = finished_call(&updates, "call_search_1").to_string();
    assert!(search.contains("beta_greeting"), "{search}");
    assert!(
        !search.contains("alpha_greeting"),
        "the search saw the first workspace: {search}"
    );
    let edit = finished_call(&updates, "call_edit_1");
    let diff = edit["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|content| content["type"] == "diff")
        .unwrap_or_else(|| panic!("a diff: {edit}"));
    assert_eq!(diff["path"], json!(beta_root.join("src/main.rs")), "{edit}");
    assert_eq!(
        std::fs::read_to_string(beta_root.join("src/main.rs")).unwrap(),
        main_rs("beta").replace("hello", "goodbye")
    );
    assert_eq!(
        std::fs::read_to_string(alpha_root.join("src/main.rs")).unwrap(),
        main_rs("alpha"),
        "the first workspace is untouched"
    );
    // Each workspace keeps its own sessions and index.
    assert!(beta_root.join(".lode/agent.sqlite").is_file());
    assert!(beta_root.join(".lode/index").is_dir());
    let cwds: Vec<(String, PathBuf)> = listed
        .iter()
        .map(|info| (info.session_id.0.to_string(), info.cwd.clone()))
        .collect();
    assert!(
        cwds.contains(&(session.0.to_string(), beta_root.clone())),
        "{cwds:?}"
    );
    assert!(
        cwds.contains(&(alpha_session.0.to_string(), alpha_root.clone())),
        "{cwds:?}"
    );
    let elsewhere = elsewhere.expect_err("resuming from another workspace's cwd is refused");
    assert_eq!(elsewhere.code, ErrorCode::INVALID_PARAMS, "{elsewhere:?}");
    assert!(
        elsewhere
            .message
            .contains(&format!("belongs to the workspace {}", beta_root.display())),
        "{elsewhere:?}"
    );
}

#[tokio::test]
async fn two_sessions_in_two_workspaces_run_at_once_on_one_http_server() {
    let alpha = alpha();
    let alpha_root = alpha.root();
    let (_beta_dir, beta_root) = beta();
    let server = alpha.serve_http(&[]).await;
    let client = authorized_client(&format!("http://{}", server.addr), &server.token);
    let seen = Seen::default();
    let (sessions, stops) = with_client(client, "reject_once", seen.clone(), async |cx| {
        cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
            .block_task()
            .await?;
        let mut sessions = Vec::new();
        for root in [&alpha_root, &beta_root] {
            let session = cx
                .send_request(NewSessionRequest::new(root.clone()))
                .block_task()
                .await?;
            sessions.push(session.session_id);
        }
        let ask = |session: &agent_client_protocol::v1::schema::SessionId| {
            cx.send_request(PromptRequest::new(
                session.clone(),
                vec!["Tell me which workspace this is.".into()],
            ))
            .block_task()
        };
        let (in_alpha, in_beta) = tokio::join!(ask(&sessions[0]), ask(&sessions[1]));
        Ok((sessions, [in_alpha?.stop_reason, in_beta?.stop_reason]))
    })
    .await;
    assert_eq!(stops, [StopReason::EndTurn, StopReason::EndTurn]);
    for (session, expected) in sessions
        .iter()
        .zip(["This is workspace alpha.", "This is workspace beta."])
    {
        // Updates travel on each session's SSE stream, the answers on the POSTs.
        seen.wait_for(expected, |_| {
            agent_text(&seen.updates_of(&session.0)) == expected
        })
        .await;
    }
    let opened = server
        .wait_for_stderr("the second workspace opening", |line| {
            line.contains("opened the workspace")
        })
        .await;
    assert!(
        opened.ends_with(&beta_root.display().to_string()),
        "{opened}"
    );
    assert!(beta_root.join(".lode/agent.sqlite").is_file());
}

/// `lode acp` on stdio in `root`, its home directory `home` (its user config and data there),
/// its `$LODE_CONFIG` `config` (empty: none).
fn spawn_acp(root: &Path, home: &Path, config: OsString) -> tokio::process::Child {
    support::acp_command(root, config)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .spawn()
        .expect("lode acp starts")
}

fn error_of(answer: &Value) -> (i64, String) {
    let error = &answer["error"];
    assert!(error.is_object(), "an error: {answer}");
    (
        error["code"].as_i64().unwrap(),
        error["message"].as_str().unwrap().to_owned(),
    )
}

#[tokio::test]
async fn refused_cwds_and_too_many_mcp_servers_get_clear_errors() {
    let alpha = alpha();
    let home_dir = tempfile::tempdir().unwrap();
    let home = std::fs::canonicalize(home_dir.path()).unwrap();
    let project = home.join("code/project");
    std::fs::create_dir_all(project.join(".git")).unwrap();
    let mut wire = Wire::new(spawn_acp(
        &alpha.root(),
        &home,
        support::workspace_config_env(&alpha.root()),
    ));
    wire.initialize(1).await;

    let file = alpha.root().join("src/main.rs");
    let cases: [(&Path, &str); 5] = [
        (&home.join("no/such/dir"), "does not exist"),
        (&file, "is a file, not a directory"),
        (Path::new("/"), "is the root of the file system"),
        (&home, "is your home directory itself"),
        (Path::new("relative/dir"), "must be an absolute path"),
    ];
    for (n, (cwd, why)) in (10..).zip(cases) {
        let answer = wire
            .request(n, "session/new", json!({"cwd": cwd, "mcpServers": []}))
            .await;
        let (code, message) = error_of(&answer);
        assert_eq!(code, -32602, "{cwd:?}: {answer}");
        assert!(message.contains(why), "{cwd:?}: {message}");
        if why.contains("root") || why.contains("home") {
            assert!(
                message.contains("open a project directory")
                    && message.contains(&home.join("code/myproject").display().to_string()),
                "says how to open a project: {message}"
            );
        }
    }
    assert!(!home.join(".lode").exists(), "nothing was opened at home");

    let servers = |count: usize| -> Vec<Value> {
        (0..count)
            .map(|n| json!({"name": format!("mcp{n}"), "command": "/nonexistent/mcp-server", "args": [], "env": []}))
            .collect()
    };
    let too_many = wire
        .request(
            20,
            "session/new",
            json!({"cwd": project, "mcpServers": servers(65)}),
        )
        .await;
    let (code, message) = error_of(&too_many);
    assert_eq!(code, -32602);
    assert_eq!(
        message,
        "65 MCP servers were passed; a session takes at most 64"
    );
    // 64 are taken (they start with the session's first turn), in a project inside the home.
    let at_cap = wire
        .request(
            21,
            "session/new",
            json!({"cwd": project, "mcpServers": servers(64)}),
        )
        .await;
    let session = at_cap["result"]["sessionId"].clone();
    assert!(session.is_string(), "{at_cap}");
    assert!(project.join(".lode/agent.sqlite").is_file());
    let load = wire
        .request(
            22,
            "session/load",
            json!({"sessionId": session, "cwd": "/", "mcpServers": []}),
        )
        .await;
    assert!(
        error_of(&load).1.contains("root of the file system"),
        "{load}"
    );
    let listed = wire.request(23, "session/list", json!({})).await;
    assert_eq!(listed["result"]["sessions"][0]["sessionId"], session);
}

#[tokio::test]
async fn without_a_provider_lode_answers_and_prompts_say_how_to_add_one() {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let (root, home) = (base.join("project"), base.join("home"));
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(root.join("main.rs"), ORIGINAL).unwrap();
    let mut wire = Wire::new(spawn_acp(&root, &home, OsString::new()));

    let init = wire.initialize(1).await;
    assert_eq!(init["result"]["agentInfo"]["name"], "lode");
    let session = wire
        .request(2, "session/new", json!({"cwd": root, "mcpServers": []}))
        .await;
    let id = session["result"]["sessionId"].clone();
    assert!(id.is_string(), "{session}");
    let options = session["result"]["configOptions"].as_array().unwrap();
    assert_eq!(options.len(), 1, "no model to pick: {options:?}");

    for n in [3, 4] {
        let prompt = wire
            .request(
                n,
                "session/prompt",
                json!({"sessionId": id, "prompt": [{"type": "text", "text": "hello"}]}),
            )
            .await;
        let (code, message) = error_of(&prompt);
        assert_eq!(code, -32000, "auth_required: {prompt}");
        for fix in [
            "no LLM provider is configured",
            "[[llm.providers]]",
            "OPENAI_API_KEY",
            &home.join(".config/lode/config.toml").display().to_string(),
        ] {
            assert!(message.contains(fix), "names {fix:?}: {message}");
        }
    }
    // The process keeps serving: lode's own commands need no model.
    let help = wire
        .request(
            5,
            "session/prompt",
            json!({"sessionId": id, "prompt": [{"type": "text", "text": "/help"}]}),
        )
        .await;
    assert_eq!(help["result"]["stopReason"], "end_turn", "{help}");
    let listed = wire.request(6, "session/list", json!({})).await;
    assert_eq!(listed["result"]["sessions"][0]["sessionId"], id);

    drop(wire.stdin);
    let exit = tokio::time::timeout(PATIENCE, wire.child.wait())
        .await
        .expect("lode exits when its client goes")
        .unwrap();
    assert!(exit.success(), "{exit:?}");
}

//! `lode acp` holds one workspace per session `cwd`, and starts without a provider: the real
//! binary, the real agent and the scripted LLM server (`fixtures/llm/acp_workspaces.json`).
//! A session whose `cwd` is a second workspace searches and edits there and never in the one
//! lode started in; two sessions in two workspaces share one `lode acp --http`; a `cwd` that is
//! missing, a file, `/` or the home directory itself is refused, as are more than 64 MCP
//! servers; with no provider configured lode answers `initialize` and `session/new`, and each
//! prompt gets `auth_required` naming the fix while the process keeps serving. Started the way
//! editors start it, in the home directory or at `/` without `--root`, lode opens nothing there
//! (it used to index the whole home, and failed to start at `/`) and each session opens its
//! project; started inside a project, it opens that project at once, as before.

use crate::acp_support as support;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;

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

/// `lode acp` on stdio started as editors start it: in `dir`, without `--root` or
/// `$LODE_CONFIG`, its home `home` (so its user config is `home/.config/lode/config.toml`), its
/// stderr written to `log`.
fn spawn_acp_in(dir: &Path, home: &Path, log: &Path) -> tokio::process::Child {
    tokio::process::Command::new(support::lode())
        .arg("acp")
        .current_dir(dir)
        .env("LODE_CONFIG", "")
        .env_remove("LODE_INDEX_DIR")
        // No provider from the test machine's environment (zero-config models).
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENROUTER_API_KEY")
        .env("OLLAMA_HOST", "127.0.0.1:9")
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(log).unwrap())
        .kill_on_drop(true)
        .spawn()
        .expect("lode acp starts")
}

/// Waits for `lode acp` to exit once its client is gone, and returns what it wrote to stderr.
async fn exited(mut child: tokio::process::Child, log: &Path) -> String {
    drop(child.stdin.take());
    let exit = tokio::time::timeout(PATIENCE, child.wait())
        .await
        .expect("lode exits when its client goes")
        .unwrap();
    let stderr = std::fs::read_to_string(log).unwrap();
    assert!(exit.success(), "{exit:?}; stderr:\n{stderr}");
    stderr
}

/// A home directory (canonical, inside `dir`) holding the project `code/project` (a repository
/// whose `src/main.rs` defines `beta_greeting`).
fn home_with_project(dir: &tempfile::TempDir) -> (PathBuf, PathBuf) {
    let home = std::fs::canonicalize(dir.path()).unwrap().join("home");
    let project = home.join("code/project");
    std::fs::create_dir_all(project.join(".git")).unwrap();
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::write(project.join("src/main.rs"), main_rs("beta")).unwrap();
    (home, project)
}

/// The user's own config file in `home`: `text`.
fn user_config(home: &Path, text: &str) {
    std::fs::create_dir_all(home.join(".config/lode")).unwrap();
    std::fs::write(home.join(".config/lode/config.toml"), text).unwrap();
}

#[tokio::test]
async fn started_in_the_home_directory_lode_opens_only_the_project_a_session_names() {
    let llm = support::llm_server("acp_workspaces.json");
    let dir = tempfile::tempdir().unwrap();
    let (home, project) = home_with_project(&dir);
    // Code in the home outside the project: a search of the whole home would find it.
    std::fs::create_dir_all(home.join("scratch")).unwrap();
    std::fs::write(home.join("scratch/main.rs"), main_rs("alpha")).unwrap();
    // The user's own config is the only one: it must apply before any workspace is open
    // (`initialize` offers images because its model takes them) and in the project's.
    user_config(
        &home,
        &format!(
            "[[llm.providers]]\nname = \"scripted\"\nkind = \"openai\"\nbase_url = \"{}\"\nmodel = \"scripted-1\"\ncontext_window = 32000\nsupports_images = true\n",
            llm.base_url
        ),
    );
    let log = dir.path().join("stderr.log");
    let mut acp = spawn_acp_in(&home, &home, &log);
    let seen = Seen::default();
    let (init, before, session, stop, after) = with_client(
        stdio_transport(&mut acp),
        "allow_once",
        seen.clone(),
        async |cx| {
            let init = cx
                .send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            // Nothing is open yet, so nothing is listed.
            let before = cx
                .send_request(ListSessionsRequest::new())
                .block_task()
                .await?
                .sessions;
            let session = cx
                .send_request(NewSessionRequest::new(project.clone()))
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
            let after = cx
                .send_request(ListSessionsRequest::new())
                .block_task()
                .await?
                .sessions;
            Ok((init, before, session, stop, after))
        },
    )
    .await;
    let stderr = exited(acp, &log).await;

    let init = serde_json::to_value(&init).unwrap();
    assert_eq!(
        init["agentCapabilities"]["promptCapabilities"]["image"], true,
        "the user's model takes images: {init}"
    );
    assert!(before.is_empty(), "{before:?}");
    assert_eq!(stop, StopReason::EndTurn);
    let updates = seen.updates_of(&session.0);
    let search = finished_call(&updates, "call_search_1").to_string();
    assert!(search.contains("beta_greeting"), "{search}");
    assert!(
        !search.contains("alpha_greeting"),
        "the search saw the home outside the project: {search}"
    );
    assert_eq!(
        std::fs::read_to_string(project.join("src/main.rs")).unwrap(),
        main_rs("beta").replace("hello", "goodbye")
    );
    assert_eq!(
        std::fs::read_to_string(home.join("scratch/main.rs")).unwrap(),
        main_rs("alpha")
    );
    let cwds: Vec<(String, PathBuf)> = after
        .iter()
        .map(|info| (info.session_id.0.to_string(), info.cwd.clone()))
        .collect();
    assert_eq!(cwds, [(session.0.to_string(), project.clone())]);
    // The project has its index and sessions; the home has none, and lode said why.
    assert!(project.join(".lode/index").is_dir());
    assert!(project.join(".lode/agent.sqlite").is_file());
    assert!(
        !home.join(".lode").exists(),
        "the home was opened: {stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "{} is your home directory itself, too wide to be one workspace, so no workspace is \
             opened now",
            home.display()
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("opened the workspace {}", project.display())),
        "{stderr}"
    );
}

#[tokio::test]
async fn started_at_the_file_system_root_lode_answers_and_writes_nothing_there() {
    let had_lode_dir = Path::new("/.lode").exists();
    let dir = tempfile::tempdir().unwrap();
    let (home, project) = home_with_project(&dir);
    let log = dir.path().join("stderr.log");
    let mut wire = Wire::new(spawn_acp_in(Path::new("/"), &home, &log));

    let init = wire.initialize(1).await;
    assert_eq!(init["result"]["agentInfo"]["name"], "lode");
    // What needs a workspace but names none: an empty list, a dropped notification.
    let listed = wire.request(2, "session/list", json!({})).await;
    assert_eq!(listed["result"]["sessions"], json!([]), "{listed}");
    wire.send_raw(
        &json!({"jsonrpc": "2.0", "method": "_lode/diagnostics", "params": {
            "uri": "file:///etc/hostname", "diagnostics": []}})
        .to_string(),
    )
    .await;
    let listed = wire.request(3, "session/list", json!({"cwd": "/"})).await;
    assert_eq!(listed["result"]["sessions"], json!([]), "{listed}");
    // `/` is still no session's cwd; a project is.
    let refused = wire
        .request(4, "session/new", json!({"cwd": "/", "mcpServers": []}))
        .await;
    let (code, message) = error_of(&refused);
    assert_eq!(code, -32602);
    assert!(message.contains("root of the file system"), "{message}");
    let created = wire
        .request(5, "session/new", json!({"cwd": project, "mcpServers": []}))
        .await;
    let session = created["result"]["sessionId"].clone();
    assert!(session.is_string(), "{created}");
    let listed = wire.request(6, "session/list", json!({})).await;
    assert_eq!(listed["result"]["sessions"][0]["sessionId"], session);
    assert_eq!(listed["result"]["sessions"][0]["cwd"], json!(project));
    assert!(project.join(".lode/agent.sqlite").is_file());

    drop(wire.stdin);
    let stderr = exited(wire.child, &log).await;
    if !had_lode_dir {
        assert!(!Path::new("/.lode").exists(), "lode wrote into /: {stderr}");
    }
    assert!(!home.join(".lode").exists(), "{stderr}");
    assert!(
        stderr.contains("/ is the root of the file system, too wide to be one workspace"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "ignored _lode/diagnostics for /etc/hostname: not a file in an open workspace"
        ),
        "{stderr}"
    );
}

#[tokio::test]
async fn started_inside_a_project_lode_opens_it_at_once_as_before() {
    let dir = tempfile::tempdir().unwrap();
    let (home, project) = home_with_project(&dir);
    let log = dir.path().join("stderr.log");
    let mut wire = Wire::new(spawn_acp_in(&project.join("src"), &home, &log));
    wire.initialize(1).await;
    // Opened before any session names it: its index and store are there already.
    assert!(project.join(".lode/index").is_dir());
    assert!(project.join(".lode/agent.sqlite").is_file());
    let created = wire
        .request(
            2,
            "session/new",
            json!({"cwd": project.join("src"), "mcpServers": []}),
        )
        .await;
    assert!(created["result"]["sessionId"].is_string(), "{created}");
    drop(wire.stdin);
    let stderr = exited(wire.child, &log).await;
    assert!(!stderr.contains("no workspace is opened"), "{stderr}");
    assert!(
        !stderr.contains("opened the workspace"),
        "the session went to the starting workspace: {stderr}"
    );
}

#[tokio::test]
async fn started_outside_a_project_lode_still_reads_the_acp_settings_of_the_user_config() {
    let dir = tempfile::tempdir().unwrap();
    let (home, _project) = home_with_project(&dir);
    user_config(&home, "[acp]\nidle_session_timeout_secs = \"soon\"\n");
    let output = tokio::process::Command::new(support::lode())
        .arg("acp")
        .current_dir(&home)
        .env("LODE_CONFIG", "")
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(
        stderr.contains("idle_session_timeout_secs must be a whole number"),
        "{stderr}"
    );
    assert!(output.stdout.is_empty());
    assert!(!home.join(".lode").exists());
}

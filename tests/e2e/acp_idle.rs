//! Idle sessions through the real `lode acp`: with `[acp] idle_session_timeout_secs = 1`, a
//! session nobody uses is released from memory — the MCP server the client passed for it (a
//! real process, `fixtures/mcp/probe.sh`) is shut down — while the store keeps it: the next
//! prompt on the same id just works (the MCP server starts again), and `session/load` replays
//! the whole history. Everything is polled; nothing is timed.

use crate::acp_support as support;

use std::path::Path;
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    InitializeRequest, ListSessionsRequest, LoadSessionRequest, McpServer, McpServerStdio,
    NewSessionRequest, PromptRequest, SessionUpdate, StopReason,
};
use support::{PATIENCE, Seen, Workspace, repo_root, stdio_transport, with_client};

/// The pid the probe MCP server wrote, once it has (bounded wait).
async fn probe_pid(pid_file: &Path, not: Option<u32>) -> u32 {
    tokio::time::timeout(PATIENCE, async {
        loop {
            if let Some(pid) = std::fs::read_to_string(pid_file)
                .ok()
                .and_then(|text| text.trim().parse::<u32>().ok())
                .filter(|pid| Some(*pid) != not)
            {
                return pid;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the MCP probe started")
}

/// Whether a process is alive (a zombie is not).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            stat.rsplit_once(") ")
                .map(|(_, rest)| !rest.starts_with('Z') && !rest.starts_with('X'))
        })
        .unwrap_or(false)
}

async fn wait_until_gone(pid: u32) {
    let gone = tokio::time::timeout(PATIENCE, async {
        while running(pid) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(
        gone.is_ok(),
        "the idle session's MCP server {pid} was never shut down"
    );
}

#[tokio::test]
async fn an_idle_session_is_released_and_comes_back_with_its_history() {
    let workspace = Workspace::new("acp_idle.json");
    let root = workspace.root();
    let config = root.join(".lode/config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("\n[acp]\nidle_session_timeout_secs = 1\n");
    std::fs::write(&config, text).unwrap();
    // The MCP server runs confined to the workspace (it reads and writes nothing outside): its
    // script and the file it writes its pid to live in the workspace.
    let script = root.join("probe.sh");
    std::fs::copy(repo_root().join("fixtures/mcp/probe.sh"), &script).unwrap();
    let pid_file = root.join("probe.pid");
    let probe = McpServer::Stdio(McpServerStdio::new("probe", "/bin/sh").args(vec![
        script.display().to_string(),
        pid_file.display().to_string(),
    ]));

    let mut child = workspace.spawn_acp(&[]);
    let seen = Seen::default();
    let replayed = with_client(
        stdio_transport(&mut child),
        "reject_once",
        seen.clone(),
        async |cx| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            let session = cx
                .send_request(NewSessionRequest::new(root.clone()).mcp_servers(vec![probe]))
                .block_task()
                .await?
                .session_id;
            let prompt =
                |text: &str| PromptRequest::new(session.clone(), vec![text.to_string().into()]);
            let first = cx
                .send_request(prompt("first question"))
                .block_task()
                .await?;
            assert_eq!(first.stop_reason, StopReason::EndTurn);

            // The session's MCP server runs after its first turn, then goes once it is idle.
            let pid = probe_pid(&pid_file, None).await;
            assert!(running(pid));
            wait_until_gone(pid).await;

            // The same id goes on working: the session is picked up from the store and its
            // MCP server starts again for the turn.
            let second = cx
                .send_request(prompt("second question"))
                .block_task()
                .await?;
            assert_eq!(second.stop_reason, StopReason::EndTurn);
            let again = probe_pid(&pid_file, Some(pid)).await;
            wait_until_gone(again).await;

            // Still listed, and loading it replays both exchanges.
            let listed = cx
                .send_request(ListSessionsRequest::new())
                .block_task()
                .await?;
            assert!(listed.sessions.iter().any(|s| s.session_id == session));
            seen.clear();
            cx.send_request(LoadSessionRequest::new(session.clone(), root.clone()))
                .block_task()
                .await?;
            Ok(seen.updates())
        },
    )
    .await;

    let user_text: Vec<String> = replayed
        .iter()
        .filter_map(|update| match update {
            SessionUpdate::UserMessageChunk(chunk) => serde_json::to_value(&chunk.content).unwrap()
                ["text"]
                .as_str()
                .map(str::to_string),
            _ => None,
        })
        .collect();
    assert_eq!(user_text, ["first question", "second question"]);
    assert_eq!(
        support::agent_text(&replayed),
        "Still here.Still here.",
        "{replayed:?}"
    );
    drop(child.stdin.take());
    let status = tokio::time::timeout(PATIENCE, child.wait())
        .await
        .expect("lode acp exits when stdin closes")
        .unwrap();
    assert!(status.success(), "{status:?}");
}

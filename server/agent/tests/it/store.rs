//! The session store on real SQLite files: round trips, visibility, ordering, deletion,
//! compaction marking, reopening, concurrent use, and a database shared with other tables.

use std::path::PathBuf;
use std::sync::Arc;

use lode_agent::event::{Location, ToolCallStart, ToolContent, ToolKind, ToolStatus};
use lode_agent::store::{NewSession, SessionStore, StoreError, ToolCallFinish, Visibility};
use lode_llm::{ContentPart, Message, Role, ToolCall, ToolResult};
use serde_json::json;

fn new_session(cwd: &str) -> NewSession {
    NewSession {
        cwd: PathBuf::from(cwd),
        mode: "code".into(),
        model: Some("scripted".into()),
    }
}

fn assistant_call(id: &str, tool: &str, path: &str) -> Message {
    Message {
        role: Role::Assistant,
        content: vec![
            ContentPart::Thinking {
                text: "look first".into(),
                signature: Some("sig".into()),
            },
            ContentPart::ToolCall(ToolCall {
                id: id.into(),
                name: tool.into(),
                arguments: json!({ "path": path }),
            }),
        ],
    }
}

fn tool_result(id: &str, content: &str) -> Message {
    Message {
        role: Role::User,
        content: vec![ContentPart::ToolResult(ToolResult {
            call_id: id.into(),
            content: content.into(),
            is_error: false,
        })],
    }
}

#[test]
fn messages_and_tool_calls_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::open(&dir.path().join("nested/agent.sqlite")).unwrap();
    let session = store.create_session(&new_session("/work/repo")).unwrap();
    assert_eq!(session.id.len(), 36);
    assert_eq!(
        uuid::Uuid::parse_str(&session.id)
            .unwrap()
            .get_version_num(),
        7
    );

    let user = Message::user_text("read src/lib.rs please");
    let call = assistant_call("call_1", "read_file", "src/lib.rs");
    let result = tool_result("call_1", "1\tpub fn main() {}");
    assert_eq!(
        store
            .append_message(&session.id, &user, Visibility::Both)
            .unwrap(),
        1
    );
    let call_seq = store
        .append_message(&session.id, &call, Visibility::Both)
        .unwrap();
    assert_eq!(call_seq, 2);
    store
        .record_tool_call_start(
            &session.id,
            call_seq,
            &ToolCallStart {
                id: "call_1".into(),
                tool: "read_file".into(),
                title: "Read src/lib.rs".into(),
                kind: ToolKind::Read,
                locations: vec![Location {
                    path: "/work/repo/src/lib.rs".into(),
                    line: None,
                }],
                raw_input: json!({ "path": "src/lib.rs" }),
            },
        )
        .unwrap();
    let started = store.load_history(&session.id).unwrap();
    assert_eq!(started.tool_calls["call_1"].status, ToolStatus::InProgress);
    assert_eq!(started.tool_calls["call_1"].finished_at, None);

    store
        .record_tool_call_finish(
            &session.id,
            "call_1",
            &ToolCallFinish {
                status: ToolStatus::Completed,
                output: "1\tpub fn main() {}".into(),
                display: vec![ToolContent::Diff {
                    path: "/work/repo/src/lib.rs".into(),
                    old_text: None,
                    new_text: "pub fn main() {}".into(),
                }],
                locations: vec![Location {
                    path: "/work/repo/src/lib.rs".into(),
                    line: Some(1),
                }],
            },
        )
        .unwrap();
    store
        .append_message(&session.id, &result, Visibility::Both)
        .unwrap();

    let history = store.load_history(&session.id).unwrap();
    assert_eq!(history.session.id, session.id);
    assert_eq!(history.last_seq(), 3);
    assert_eq!(history.model_messages(), vec![user, call, result]);
    let stored_call = &history.tool_calls["call_1"];
    assert_eq!(stored_call.message_seq, 2);
    assert_eq!(stored_call.tool, "read_file");
    assert_eq!(stored_call.raw_input, json!({ "path": "src/lib.rs" }));
    assert_eq!(stored_call.status, ToolStatus::Completed);
    assert_eq!(stored_call.output.as_deref(), Some("1\tpub fn main() {}"));
    assert!(matches!(stored_call.display[0], ToolContent::Diff { .. }));
    assert_eq!(stored_call.locations[0].line, Some(1));
    assert!(stored_call.finished_at.is_some());
    assert!(history.session.updated_at >= session.updated_at);
}

#[test]
fn visibility_separates_the_user_view_from_the_model_view() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::open(&dir.path().join("agent.sqlite")).unwrap();
    let id = store.create_session(&new_session("/r")).unwrap().id;
    store
        .append_message(&id, &Message::user_text("both"), Visibility::Both)
        .unwrap();
    store
        .append_message(
            &id,
            &Message::user_text("only the user"),
            Visibility::UserOnly,
        )
        .unwrap();
    store
        .append_message(
            &id,
            &Message::user_text("only the model"),
            Visibility::ModelOnly,
        )
        .unwrap();
    let history = store.load_history(&id).unwrap();
    let user: Vec<String> = history
        .user_messages()
        .map(|m| m.to_message().text())
        .collect();
    let model: Vec<String> = history.model_messages().iter().map(Message::text).collect();
    assert_eq!(user, vec!["both", "only the user"]);
    assert_eq!(model, vec!["both", "only the model"]);
}

#[test]
fn sessions_list_newest_first_and_filter_by_cwd() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::open(&dir.path().join("agent.sqlite")).unwrap();
    let first = store.create_session(&new_session("/a")).unwrap();
    let second = store.create_session(&new_session("/b")).unwrap();
    let third = store.create_session(&new_session("/a")).unwrap();
    let ids: Vec<String> = store
        .list_sessions(None)
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(
        ids,
        vec![third.id.clone(), second.id.clone(), first.id.clone()]
    );

    // Touching the oldest session moves it to the front.
    store
        .append_message(&first.id, &Message::user_text("again"), Visibility::Both)
        .unwrap();
    store.set_title(&first.id, "Fix the parser").unwrap();
    let listed = store.list_sessions(None).unwrap();
    assert_eq!(listed[0].id, first.id);
    assert_eq!(listed[0].title.as_deref(), Some("Fix the parser"));

    let in_a: Vec<String> = store
        .list_sessions(Some(PathBuf::from("/a").as_path()))
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(in_a, vec![first.id, third.id]);
}

#[test]
fn metadata_updates_close_and_delete() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::open(&dir.path().join("agent.sqlite")).unwrap();
    let id = store.create_session(&new_session("/r")).unwrap().id;
    store.set_mode(&id, "architect").unwrap();
    store.set_model(&id, Some("claude")).unwrap();
    store.close_session(&id).unwrap();
    let info = store.get_session(&id).unwrap().unwrap();
    assert_eq!(info.mode, "architect");
    assert_eq!(info.model.as_deref(), Some("claude"));
    assert!(info.closed);
    store.set_model(&id, None).unwrap();
    assert_eq!(store.get_session(&id).unwrap().unwrap().model, None);

    store
        .append_message(&id, &assistant_call("c", "grep", "x"), Visibility::Both)
        .unwrap();
    store
        .record_tool_call_start(
            &id,
            1,
            &ToolCallStart {
                id: "c".into(),
                tool: "grep".into(),
                title: "grep".into(),
                kind: ToolKind::Search,
                locations: vec![],
                raw_input: json!({}),
            },
        )
        .unwrap();
    assert!(store.delete_session(&id).unwrap());
    assert!(!store.delete_session(&id).unwrap());
    assert_eq!(store.get_session(&id).unwrap(), None);
    assert!(matches!(
        store.load_history(&id),
        Err(StoreError::NoSuchSession(_))
    ));
    assert!(matches!(
        store.append_message(&id, &Message::user_text("x"), Visibility::Both),
        Err(StoreError::NoSuchSession(_))
    ));
    assert!(matches!(
        store.set_title("no-such-id", "t"),
        Err(StoreError::NoSuchSession(_))
    ));
    assert!(matches!(
        store.record_tool_call_finish(
            "no-such-id",
            "c",
            &ToolCallFinish {
                status: ToolStatus::Failed,
                output: String::new(),
                display: vec![],
                locations: vec![],
            }
        ),
        Err(StoreError::NoSuchToolCall { .. })
    ));
}

#[test]
fn compaction_marking_keeps_every_message_for_the_user() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::open(&dir.path().join("agent.sqlite")).unwrap();
    let id = store.create_session(&new_session("/r")).unwrap().id;
    for text in ["one", "two", "three", "four"] {
        store
            .append_message(&id, &Message::user_text(text), Visibility::Both)
            .unwrap();
    }
    let summary_seq = store
        .mark_compacted(&id, 2, &Message::user_text("summary of one and two"))
        .unwrap();
    assert_eq!(summary_seq, 5);
    let history = store.load_history(&id).unwrap();
    let model: Vec<String> = history.model_messages().iter().map(Message::text).collect();
    assert_eq!(model, vec!["summary of one and two", "three", "four"]);
    let user: Vec<String> = history
        .user_messages()
        .map(|m| m.to_message().text())
        .collect();
    assert_eq!(user, vec!["one", "two", "three", "four"]);
    assert_eq!(history.messages[4].summary_of, Some(2));
    assert_eq!(history.messages[4].visibility, Visibility::ModelOnly);

    // Messages after the summary keep their place; a second compaction replaces the first summary.
    store
        .append_message(&id, &Message::user_text("five"), Visibility::Both)
        .unwrap();
    store
        .mark_compacted(&id, 4, &Message::user_text("summary up to four"))
        .unwrap();
    let history = store.load_history(&id).unwrap();
    let model: Vec<String> = history.model_messages().iter().map(Message::text).collect();
    assert_eq!(model, vec!["summary up to four", "five"]);
    assert_eq!(history.messages[4].visibility, Visibility::Archived);
    assert_eq!(history.user_messages().count(), 5);
    assert_eq!(history.messages.len(), 7, "nothing is deleted");

    assert!(matches!(
        store.mark_compacted(&id, 99, &Message::user_text("x")),
        Err(StoreError::NoSuchMessage { seq: 99, .. })
    ));
}

#[test]
fn a_reopened_store_has_everything_and_keeps_other_tables() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.sqlite");
    {
        // Another component's table in the same database.
        let connection = rusqlite::Connection::open(&path).unwrap();
        connection
            .execute_batch(
                "CREATE TABLE permission_decisions (pattern TEXT); INSERT INTO permission_decisions VALUES ('cargo test*');",
            )
            .unwrap();
    }
    let id = {
        let store = SessionStore::open(&path).unwrap();
        let id = store.create_session(&new_session("/r")).unwrap().id;
        store
            .append_message(&id, &Message::user_text("remember me"), Visibility::Both)
            .unwrap();
        store.set_title(&id, "Title").unwrap();
        id
    };
    let store = SessionStore::open(&path).unwrap();
    let history = store.load_history(&id).unwrap();
    assert_eq!(history.session.title.as_deref(), Some("Title"));
    assert_eq!(history.model_messages()[0].text(), "remember me");
    let connection = rusqlite::Connection::open(&path).unwrap();
    let kept: String = connection
        .query_row("SELECT pattern FROM permission_decisions", [], |row| {
            row.get(0)
        })
        .unwrap();
    assert_eq!(kept, "cargo test*");
    let journal: String = connection
        .query_row("PRAGMA journal_mode", [], |row| row.get(0))
        .unwrap();
    assert_eq!(journal, "wal");
}

#[test]
fn a_newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.sqlite");
    drop(SessionStore::open(&path).unwrap());
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute(
            "UPDATE schema_versions SET version = 99 WHERE component = 'agent_sessions'",
            [],
        )
        .unwrap();
    let error = SessionStore::open(&path).unwrap_err();
    assert!(matches!(
        error,
        StoreError::UnsupportedSchema { found: 99, .. }
    ));
    assert!(error.to_string().contains("newer lode"), "{error}");
}

#[test]
fn two_threads_and_two_stores_write_one_database() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.sqlite");
    let shared = Arc::new(SessionStore::open(&path).unwrap());
    let second = Arc::new(SessionStore::open(&path).unwrap());
    let session = shared.create_session(&new_session("/r")).unwrap().id;
    let mut handles = Vec::new();
    for (worker, store) in [
        (0, shared.clone()),
        (1, shared.clone()),
        (2, second.clone()),
    ] {
        let session = session.clone();
        handles.push(std::thread::spawn(move || {
            let own = store.create_session(&new_session("/r")).unwrap().id;
            for n in 0..25 {
                store
                    .append_message(
                        &session,
                        &Message::user_text(format!("w{worker} m{n}")),
                        Visibility::Both,
                    )
                    .unwrap();
                store
                    .append_message(&own, &Message::user_text(format!("{n}")), Visibility::Both)
                    .unwrap();
            }
            own
        }));
    }
    let own: Vec<String> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let history = shared.load_history(&session).unwrap();
    assert_eq!(history.messages.len(), 75);
    let seqs: Vec<u64> = history.messages.iter().map(|m| m.seq).collect();
    assert_eq!(
        seqs,
        (1..=75).collect::<Vec<u64>>(),
        "seqs are dense and unique"
    );
    for worker in 0..3 {
        let mine: Vec<String> = history
            .messages
            .iter()
            .map(|m| m.to_message().text())
            .filter(|text| text.starts_with(&format!("w{worker} ")))
            .collect();
        let expected: Vec<String> = (0..25).map(|n| format!("w{worker} m{n}")).collect();
        assert_eq!(mine, expected, "each writer's messages stay in its order");
    }
    for id in own {
        assert_eq!(second.load_history(&id).unwrap().messages.len(), 25);
    }
    assert_eq!(shared.list_sessions(None).unwrap().len(), 4);
}

#[test]
fn a_damaged_row_is_reported_not_misread() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.sqlite");
    let store = SessionStore::open(&path).unwrap();
    let id = store.create_session(&new_session("/r")).unwrap().id;
    store
        .append_message(&id, &Message::user_text("fine"), Visibility::Both)
        .unwrap();
    let raw = rusqlite::Connection::open(&path).unwrap();
    raw.execute("UPDATE messages SET parts = '{not json' WHERE seq = 1", [])
        .unwrap();
    assert!(matches!(
        store.load_history(&id),
        Err(StoreError::Corrupt(_))
    ));
    raw.execute(
        "UPDATE messages SET parts = '[]', visibility = 'everyone' WHERE seq = 1",
        [],
    )
    .unwrap();
    let error = store.load_history(&id).unwrap_err();
    assert!(error.to_string().contains("everyone"), "{error}");
    // Other sessions stay readable.
    let other = store.create_session(&new_session("/r")).unwrap().id;
    assert!(store.load_history(&other).unwrap().messages.is_empty());
}

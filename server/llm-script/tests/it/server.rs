//! The scripted server over real HTTP: matching, refusals with reasons, faults that apply once,
//! request recording, and the protocol edges (malformed, oversized, unknown paths).

use lode_llm_script::{Script, ScriptedServer, ServerOptions};
use serde_json::{Value, json};

fn script(value: Value) -> Script {
    Script::from_json(&value.to_string()).unwrap()
}

fn openai_request(user: &str) -> Value {
    json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": user}]})
}

async fn post(url: &str, body: &Value) -> (u16, Option<String>, String) {
    let response = reqwest::Client::new()
        .post(url)
        .json(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get("retry-after")
        .map(|value| value.to_str().unwrap().to_string());
    (status, retry_after, response.text().await.unwrap())
}

#[tokio::test]
async fn turns_are_served_in_order_and_once() {
    let server = ScriptedServer::start(script(json!({"turns": [
        {"name": "greet", "match": {"last_user_text_contains": "hello"}, "respond": {"text": "hi there"}},
        {"respond": {"text": "second"}},
    ]})))
    .await
    .unwrap();
    let url = format!("{}/chat/completions", server.openai_base_url());
    let (status, _, body) = post(&url, &openai_request("hello you")).await;
    assert_eq!(status, 200);
    assert!(body.contains("\"content\":\"hi there\""), "{body}");
    assert!(body.trim_end().ends_with("data: [DONE]"), "{body}");
    assert_eq!(server.unused_turns(), vec!["#2".to_string()]);
    let (status, _, body) = post(&url, &openai_request("hello again")).await;
    assert_eq!(status, 200);
    assert!(body.contains("second"), "{body}");
    let (status, _, body) = post(&url, &openai_request("more")).await;
    assert_eq!(status, 400);
    assert!(body.contains("every scripted turn has been used"), "{body}");
    assert_eq!(server.requests().len(), 3);
    assert_eq!(
        server.requests()[0].body["messages"][0]["content"],
        "hello you"
    );
}

#[tokio::test]
async fn unmatched_requests_are_refused_with_reasons() {
    let server = ScriptedServer::start(script(json!({"turns": [
        {"name": "needs-grep", "match": {"last_tool_result_of": "grep"}, "respond": {"text": "x"}},
    ]})))
    .await
    .unwrap();
    let (status, _, body) = post(
        &format!("{}/v1/messages", server.base_url()),
        &json!({
            "model": "m", "stream": true, "max_tokens": 10,
            "messages": [{"role": "user", "content": "what now"}],
        }),
    )
    .await;
    assert_eq!(status, 400);
    let error: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(error["type"], "error");
    let message = error["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("#1 \"needs-grep\" wants last_tool_result_of \"grep\""),
        "{message}"
    );
    assert!(message.contains("what now"), "{message}");
}

#[tokio::test]
async fn a_fault_applies_then_the_turn_is_served() {
    let server = ScriptedServer::start(script(json!({"turns": [
        {"respond": {"text": "after the storm", "chunk_chars": 100}, "fault": {"status": 429, "retry_after": 3, "times": 2}},
    ]})))
    .await
    .unwrap();
    let url = format!("{}/chat/completions", server.openai_base_url());
    for _ in 0..2 {
        let (status, retry_after, body) = post(&url, &openai_request("x")).await;
        assert_eq!(status, 429);
        assert_eq!(retry_after.as_deref(), Some("3"));
        assert!(body.contains("rate_limit_error"), "{body}");
    }
    let (status, _, body) = post(&url, &openai_request("x")).await;
    assert_eq!(status, 200);
    assert!(body.contains("after the storm"), "{body}");
}

#[tokio::test]
async fn anthropic_stream_has_every_block() {
    let server = ScriptedServer::start(script(json!({"turns": [
        {"respond": {"thinking": "ponder", "text": "ok", "tool_calls": [{"name": "grep", "arguments": {"pattern": "fn main"}}], "chunk_chars": 4}},
    ]})))
    .await
    .unwrap();
    let (status, _, body) = post(
        &format!("{}/v1/messages", server.base_url()),
        &json!({
            "model": "claude", "stream": true, "max_tokens": 10,
            "messages": [{"role": "user", "content": [{"type": "text", "text": "go"}]}],
        }),
    )
    .await;
    assert_eq!(status, 200);
    let events: Vec<&str> = body
        .lines()
        .filter_map(|line| line.strip_prefix("event: "))
        .collect();
    assert_eq!(events.first(), Some(&"message_start"));
    assert_eq!(events.last(), Some(&"message_stop"));
    assert!(body.contains("\"type\":\"signature_delta\""), "{body}");
    assert!(body.contains("\"stop_reason\":\"tool_use\""), "{body}");
    let fragments: String = body
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str::<Value>(data).ok())
        .filter_map(|event| event["delta"]["partial_json"].as_str().map(str::to_string))
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&fragments).unwrap(),
        json!({"pattern": "fn main"})
    );
}

#[tokio::test]
async fn malformed_oversized_and_misrouted_requests() {
    let server = ScriptedServer::start_with(
        script(json!({"turns": [{"respond": {"text": "x"}}]})),
        ServerOptions {
            port: 0,
            body_limit: 1024,
        },
    )
    .await
    .unwrap();
    let client = reqwest::Client::new();
    let url = format!("{}/chat/completions", server.openai_base_url());
    let response = client.post(&url).body("{not json").send().await.unwrap();
    assert_eq!(response.status().as_u16(), 400);
    assert!(response.text().await.unwrap().contains("not JSON"));
    let (status, _, body) = post(&url, &json!({"model": "m", "messages": []})).await;
    assert_eq!(status, 400);
    assert!(body.contains("only streaming requests"), "{body}");
    let (status, _, _) = post(&url, &openai_request(&"x".repeat(4096))).await;
    assert_eq!(status, 413);
    let (status, _, body) = post(&format!("{}/v1/embeddings", server.base_url()), &json!({})).await;
    assert_eq!(status, 404);
    assert!(body.contains("/v1/embeddings"), "{body}");
    // None of that used up the turn.
    let (status, _, _) = post(&url, &openai_request("fine")).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn nth_request_and_repeat() {
    let server = ScriptedServer::start(script(json!({"turns": [
        {"match": {"nth_request": 2}, "respond": {"text": "second request", "chunk_chars": 100}},
        {"repeat": true, "respond": {"text": "always"}},
    ]})))
    .await
    .unwrap();
    let url = format!("{}/chat/completions", server.openai_base_url());
    let answers = [
        post(&url, &openai_request("a")).await.2,
        post(&url, &openai_request("b")).await.2,
        post(&url, &openai_request("c")).await.2,
    ];
    assert!(answers[0].contains("always"));
    assert!(answers[1].contains("second request"));
    assert!(answers[2].contains("always"));
    assert!(server.unused_turns().is_empty());
}

#[test]
fn fixture_scripts_load() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/llm");
    let mut loaded = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|ext| ext == "json") {
            Script::load(&path).unwrap_or_else(|error| panic!("{error}"));
            loaded += 1;
        }
    }
    assert!(loaded > 0, "no scripts in {}", dir.display());
}

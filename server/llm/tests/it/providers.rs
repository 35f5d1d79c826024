//! Every provider kind (OpenAI-compatible, Anthropic, Ollama's native API) against the scripted
//! LLM server over real HTTP: streaming of text, thinking and
//! tool calls, usage, every injected fault, retries, cancellation, and API-key hygiene.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use lode_llm::{
    ChatRequest, ContentPart, EventStream, FinishReason, LlmError, Message, Provider,
    ProviderConfig, ProviderKind, RetryNotice, RetryPolicy, Role, StreamEvent, ToolResult,
    ToolSpec, Usage, build_provider_with_env, collect, stream_with_retry,
};
use lode_llm_script::{Script, ScriptedServer, ScriptedServerHandle};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const KEY_VARIABLE: &str = "LODE_TEST_PROVIDER_KEY";
const KEY: &str = "sk-lode-test-4f9a7c";
const KINDS: [ProviderKind; 3] = [
    ProviderKind::OpenAi,
    ProviderKind::Anthropic,
    ProviderKind::Ollama,
];

fn fixture(name: &str) -> Script {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/llm")
        .join(format!("{name}.json"));
    Script::load(&path).unwrap_or_else(|error| panic!("{error}"))
}

async fn serve(script: Script) -> ScriptedServerHandle {
    ScriptedServer::start(script).await.unwrap()
}

fn config_for(kind: ProviderKind, server: &ScriptedServerHandle) -> ProviderConfig {
    let mut config = ProviderConfig::new("scripted", kind, "test-model");
    config.base_url = Some(match kind {
        ProviderKind::OpenAi => server.openai_base_url(),
        ProviderKind::Anthropic | ProviderKind::Ollama => server.base_url(),
    });
    config.api_key_env = Some(KEY_VARIABLE.to_string());
    config.max_tokens = Some(1000);
    config.context_window = Some(32_000);
    config
}

fn build(config: &ProviderConfig) -> Arc<dyn Provider> {
    build_provider_with_env(config, &|name| {
        (name == KEY_VARIABLE).then(|| KEY.to_string())
    })
    .unwrap()
}

fn provider(kind: ProviderKind, server: &ScriptedServerHandle) -> Arc<dyn Provider> {
    build(&config_for(kind, server))
}

fn read_file_tool() -> ToolSpec {
    ToolSpec {
        name: "read_file".to_string(),
        description: "Reads a file".to_string(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    }
}

fn ask(text: &str) -> ChatRequest {
    ChatRequest {
        system: "You are a test.".to_string(),
        messages: vec![Message::user_text(text)],
        tools: vec![read_file_tool()],
        max_tokens: None,
        temperature: None,
        cache_key: None,
    }
}

/// Every event until the end or the first error.
async fn drain(mut stream: EventStream) -> (Vec<StreamEvent>, Option<LlmError>) {
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(event) => events.push(event),
            Err(error) => {
                assert!(
                    stream.next().await.is_none(),
                    "the stream must end after an error"
                );
                return (events, Some(error));
            }
        }
    }
    (events, None)
}

fn text_of(events: &[StreamEvent]) -> String {
    events
        .iter()
        .filter_map(|event| match event {
            StreamEvent::TextDelta(text) => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

fn quick_policy(max_attempts: u32) -> RetryPolicy {
    RetryPolicy {
        max_attempts,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_secs(5),
    }
}

/// A guard against hangs only: every awaited thing below finishes far sooner when it works.
async fn within<T>(future: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), future)
        .await
        .expect("hung for 20 s")
}

#[tokio::test]
async fn text_streams_in_pieces_with_usage_and_the_key_in_the_right_header() {
    for kind in KINDS {
        let server = serve(fixture("hello")).await;
        let stream = provider(kind, &server)
            .stream(&ask("hi"), CancellationToken::new())
            .await
            .unwrap();
        let (events, error) = drain(stream).await;
        assert_eq!(error, None, "{kind:?}");
        let deltas = events
            .iter()
            .filter(|event| matches!(event, StreamEvent::TextDelta(_)))
            .count();
        assert!(deltas > 3, "{kind:?}: {events:?}");
        assert_eq!(
            text_of(&events),
            "Hello from the scripted server. I stream in small pieces."
        );
        let tail = &events[events.len() - 2..];
        assert_eq!(
            tail,
            [
                StreamEvent::Usage(Usage {
                    input_tokens: 12,
                    output_tokens: 11,
                    cache_read_tokens: 0,
                    cache_write_tokens: 0,
                }),
                StreamEvent::Finished(FinishReason::EndTurn)
            ],
            "{kind:?}"
        );

        let requests = server.requests();
        assert_eq!(requests.len(), 1);
        let headers = &requests[0].headers;
        match kind {
            ProviderKind::OpenAi => {
                assert_eq!(requests[0].path, "/v1/chat/completions");
                assert_eq!(headers["authorization"], format!("Bearer {KEY}"));
                assert!(!headers.contains_key("x-api-key"));
                assert_eq!(requests[0].body["stream_options"]["include_usage"], true);
                assert_eq!(requests[0].body["messages"][0]["role"], "system");
            }
            ProviderKind::Anthropic => {
                assert_eq!(requests[0].path, "/v1/messages");
                assert_eq!(headers["x-api-key"], KEY);
                assert_eq!(headers["anthropic-version"], "2023-06-01");
                assert!(!headers.contains_key("authorization"));
                assert_eq!(requests[0].body["system"][0]["text"], "You are a test.");
            }
            ProviderKind::Ollama => {
                assert_eq!(requests[0].path, "/api/chat");
                assert_eq!(headers["authorization"], format!("Bearer {KEY}"));
                assert_eq!(requests[0].body["messages"][0]["role"], "system");
                assert_eq!(requests[0].body["options"]["num_ctx"], 32_000);
                assert_eq!(requests[0].body["options"]["num_predict"], 1000);
            }
        }
        assert_eq!(requests[0].body["model"], "test-model");
        assert_eq!(requests[0].body["stream"], true);
    }
}

#[tokio::test]
async fn thinking_and_a_tool_call_in_fragments_then_the_answer_to_its_result() {
    for kind in KINDS {
        let server = serve(fixture("tool_call")).await;
        let provider = provider(kind, &server);
        let mut request = ask("what does src/main.rs do?");
        let stream = provider
            .stream(&request, CancellationToken::new())
            .await
            .unwrap();
        let (events, error) = drain(stream).await;
        assert_eq!(error, None);
        let fragments = events
            .iter()
            .filter(|event| matches!(event, StreamEvent::ToolCallArgumentsDelta { index: 0, .. }))
            .count();
        // Ollama sends a call whole, with no id: lode gives it one of its own.
        let (least, id) = match kind {
            ProviderKind::Ollama => (1, None),
            _ => (3, Some("call_read_1")),
        };
        assert!(
            fragments >= least,
            "{kind:?}: arguments in {fragments} fragments"
        );
        assert!(events.iter().any(|event| matches!(event,
            StreamEvent::ToolCallStart { index: 0, id: started, name }
                if name == "read_file" && id.is_none_or(|id| id == started))));
        if kind == ProviderKind::Anthropic {
            assert!(events.contains(&StreamEvent::ThinkingSignature(
                "script-signature-1".to_string()
            )));
        }
        let mut collector = lode_llm::ResponseCollector::new();
        events.iter().for_each(|event| collector.push(event));
        let response = collector.finish();
        assert_eq!(response.finish_reason, Some(FinishReason::ToolUse));
        // Ollama reports only the prompt tokens it evaluated (`prompt_eval_count`), not what
        // its cache served.
        let expected = match kind {
            ProviderKind::Ollama => Usage {
                input_tokens: 56,
                output_tokens: 30,
                cache_read_tokens: 0,
                cache_write_tokens: 0,
            },
            _ => Usage {
                input_tokens: 120,
                output_tokens: 30,
                cache_read_tokens: 64,
                cache_write_tokens: 0,
            },
        };
        assert_eq!(response.usage, Some(expected), "{kind:?}");
        let content = &response.message.content;
        assert!(matches!(&content[0], ContentPart::Thinking { text, .. }
            if text == "The user asks about main.rs; I should read it first."));
        assert_eq!(
            content[1],
            ContentPart::Text {
                text: "Let me read it.".to_string()
            }
        );
        let call = response.message.tool_calls().next().unwrap().clone();
        assert_eq!(
            call.arguments,
            json!({"path": "src/main.rs", "offset": 1, "limit": 40})
        );

        request.messages.push(response.message);
        request.messages.push(Message {
            role: Role::User,
            content: vec![ContentPart::ToolResult(ToolResult {
                call_id: call.id.clone(),
                content: "fn main() { println!(\"hi\"); }".to_string(),
                is_error: false,
            })],
        });
        let answer = collect(
            provider
                .stream(&request, CancellationToken::new())
                .await
                .unwrap(),
        )
        .await
        .unwrap();
        assert_eq!(
            answer.message.text(),
            "main.rs defines `main`, which prints a greeting."
        );
        assert_eq!(answer.finish_reason, Some(FinishReason::EndTurn));
        assert!(server.unused_turns().is_empty(), "{kind:?}");
        // The thinking went back to Anthropic with its signature; OpenAI servers get none.
        let second = &server.requests()[1].body;
        match kind {
            ProviderKind::Anthropic => {
                assert_eq!(second["messages"][1]["content"][0]["type"], "thinking");
                assert_eq!(
                    second["messages"][1]["content"][0]["signature"],
                    "script-signature-1"
                );
            }
            ProviderKind::OpenAi => {
                assert_eq!(second["messages"][2]["tool_calls"][0]["id"], "call_read_1");
                assert_eq!(second["messages"][3]["role"], "tool");
            }
            // Ollama's calls have no ids; the result names its tool.
            ProviderKind::Ollama => {
                assert_eq!(
                    second["messages"][2]["tool_calls"][0]["function"]["name"],
                    "read_file"
                );
                assert_eq!(second["messages"][3]["role"], "tool");
                assert_eq!(second["messages"][3]["tool_name"], "read_file");
            }
        }
    }
}

#[tokio::test]
async fn rate_limit_is_retried_after_the_time_the_server_asked_for() {
    for kind in KINDS {
        let server = serve(fixture("rate_limited")).await;
        let error = match provider(kind, &server)
            .stream(&ask("x"), CancellationToken::new())
            .await
        {
            Err(error) => error,
            Ok(_) => panic!("{kind:?}: the first request should be rate limited"),
        };
        assert_eq!(
            error,
            LlmError::RateLimited {
                retry_after: Some(Duration::from_secs(1))
            }
        );

        let server = serve(fixture("rate_limited")).await;
        let provider = provider(kind, &server);
        let mut notices: Vec<RetryNotice> = Vec::new();
        let started = Instant::now();
        let stream = within(stream_with_retry(
            provider.as_ref(),
            &ask("x"),
            &quick_policy(3),
            &CancellationToken::new(),
            |notice| notices.push(notice.clone()),
        ))
        .await
        .unwrap();
        let waited = started.elapsed();
        let response = collect(stream).await.unwrap();
        assert_eq!(response.message.text(), "Served after the rate limit.");
        assert_eq!(notices.len(), 1);
        assert_eq!(notices[0].failed_attempt, 1);
        assert!(
            notices[0].delay >= Duration::from_secs(1),
            "{:?}",
            notices[0]
        );
        assert!(waited >= Duration::from_secs(1), "retried after {waited:?}");
        assert_eq!(server.requests().len(), 2);
    }
}

#[tokio::test]
async fn server_errors_are_retried_until_the_attempts_run_out() {
    for kind in KINDS {
        let server = serve(fixture("server_error")).await;
        let provider = provider(kind, &server);
        let mut notices = 0;
        let error = stream_with_retry(
            provider.as_ref(),
            &ask("x"),
            &quick_policy(2),
            &CancellationToken::new(),
            |_| notices += 1,
        )
        .await
        .err()
        .unwrap();
        assert_eq!(
            error,
            LlmError::Server {
                status: 500,
                message: "upstream exploded".to_string()
            }
        );
        assert_eq!(notices, 1);

        // Two faults served, the third request gets the answer.
        let server = serve(fixture("server_error")).await;
        let provider = build(&config_for(kind, &server));
        let mut notices = 0;
        let stream = stream_with_retry(
            provider.as_ref(),
            &ask("x"),
            &quick_policy(3),
            &CancellationToken::new(),
            |_| notices += 1,
        )
        .await
        .unwrap();
        assert_eq!(
            collect(stream).await.unwrap().message.text(),
            "Recovered from server errors."
        );
        assert_eq!(notices, 2);
    }
}

#[tokio::test]
async fn slow_first_byte_times_out_and_a_retry_gets_through() {
    for kind in KINDS {
        let server = serve(fixture("slow_first_byte")).await;
        let mut config = config_for(kind, &server);
        config.first_byte_timeout_secs = Some(0.3);
        let provider = build(&config);
        let error = within(provider.stream(&ask("x"), CancellationToken::new()))
            .await
            .err()
            .unwrap();
        assert!(matches!(error, LlmError::Timeout(_)), "{kind:?}: {error:?}");
        assert!(error.is_retryable());

        // The fault applied once; the retry is answered at once.
        let stream = within(stream_with_retry(
            provider.as_ref(),
            &ask("x"),
            &quick_policy(2),
            &CancellationToken::new(),
            |_| {},
        ))
        .await
        .unwrap();
        assert_eq!(
            collect(stream).await.unwrap().message.text(),
            "Worth the wait."
        );
    }
}

#[tokio::test]
async fn idle_gap_between_chunks_times_out() {
    for kind in KINDS {
        let server = serve(fixture("slow_stream")).await;
        let mut config = config_for(kind, &server);
        config.idle_timeout_secs = Some(0.3);
        let stream = within(build(&config).stream(&ask("x"), CancellationToken::new()))
            .await
            .unwrap();
        let (_, error) = within(drain(stream)).await;
        assert!(
            matches!(&error, Some(LlmError::Timeout(message)) if message.contains("silent")),
            "{kind:?}: {error:?}"
        );
    }
}

#[tokio::test]
async fn a_truncated_stream_is_an_error_and_is_not_retried_after_output() {
    for kind in KINDS {
        let server = serve(fixture("truncated")).await;
        let provider = provider(kind, &server);
        let stream = stream_with_retry(
            provider.as_ref(),
            &ask("x"),
            &quick_policy(3),
            &CancellationToken::new(),
            |_| panic!("nothing to retry before the first event"),
        )
        .await
        .unwrap();
        let (events, error) = drain(stream).await;
        assert_eq!(error, Some(LlmError::Truncated), "{kind:?}");
        assert!(
            !text_of(&events).is_empty(),
            "{kind:?}: partial text was forwarded"
        );
        assert!(
            !events
                .iter()
                .any(|event| matches!(event, StreamEvent::Finished(_)))
        );
        assert_eq!(
            server.requests().len(),
            1,
            "the loop decides, not the retry"
        );
    }
}

#[tokio::test]
async fn truncation_before_any_event_is_retried() {
    let script = Script::from_json(
        &json!({"turns": [{"respond": {"text": "complete"}, "fault": {"truncate_after_events": 1}}]})
            .to_string(),
    )
    .unwrap();
    for kind in KINDS {
        let server = serve(script.clone()).await;
        let provider = provider(kind, &server);
        let mut notices = Vec::new();
        let stream = stream_with_retry(
            provider.as_ref(),
            &ask("x"),
            &quick_policy(2),
            &CancellationToken::new(),
            |notice| notices.push(notice.error.clone()),
        )
        .await
        .unwrap();
        assert_eq!(collect(stream).await.unwrap().message.text(), "complete");
        assert_eq!(notices, vec![LlmError::Truncated], "{kind:?}");
    }
}

#[tokio::test]
async fn malformed_json_is_reported_and_not_retried() {
    for kind in KINDS {
        let server = serve(fixture("malformed")).await;
        let provider = provider(kind, &server);
        let error = stream_with_retry(
            provider.as_ref(),
            &ask("x"),
            &quick_policy(3),
            &CancellationToken::new(),
            |_| {},
        )
        .await
        .err()
        .unwrap();
        assert!(
            matches!(&error, LlmError::Malformed(message) if message.contains("not JSON")),
            "{kind:?}: {error:?}"
        );
        assert_eq!(server.requests().len(), 1);
    }
}

#[tokio::test]
async fn context_length_errors_are_recognised() {
    for kind in KINDS {
        let server = serve(fixture("context_length")).await;
        let provider = provider(kind, &server);
        let error = stream_with_retry(
            provider.as_ref(),
            &ask("x"),
            &quick_policy(3),
            &CancellationToken::new(),
            |_| {},
        )
        .await
        .err()
        .unwrap();
        assert!(
            matches!(&error, LlmError::ContextLength { message } if message.contains("maximum context length is 8192")),
            "{kind:?}: {error:?}"
        );
        assert_eq!(
            server.requests().len(),
            1,
            "compaction, not a retry, answers this"
        );
    }
}

#[tokio::test]
async fn an_overloaded_error_event_is_retried() {
    for kind in KINDS {
        let server = serve(fixture("overloaded_event")).await;
        let provider = provider(kind, &server);
        let stream = provider
            .stream(&ask("x"), CancellationToken::new())
            .await
            .unwrap();
        let (_, error) = drain(stream).await;
        let error = error.unwrap();
        assert!(
            matches!(error, LlmError::Server { .. }),
            "{kind:?}: {error:?}"
        );
        assert!(error.is_retryable());
        assert!(error.to_string().contains("Overloaded"), "{error}");

        let server = serve(fixture("overloaded_event")).await;
        let provider = build(&config_for(kind, &server));
        let stream = stream_with_retry(
            provider.as_ref(),
            &ask("x"),
            &quick_policy(2),
            &CancellationToken::new(),
            |_| {},
        )
        .await
        .unwrap();
        assert_eq!(
            collect(stream).await.unwrap().message.text(),
            "Capacity is back."
        );
    }
}

#[tokio::test]
async fn cancellation_mid_stream_ends_the_stream_with_cancelled() {
    for kind in KINDS {
        // Each event of this script waits 30 s: only cancellation ends the stream quickly.
        let server = serve(fixture("slow_stream")).await;
        let provider = provider(kind, &server);
        let cancel = CancellationToken::new();
        let mut stream = within(provider.stream(&ask("x"), cancel.clone()))
            .await
            .unwrap();
        let canceller = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            canceller.cancel();
        });
        let mut cancelled = false;
        while let Some(item) = within(stream.next()).await {
            if item == Err(LlmError::Cancelled) {
                cancelled = true;
            }
        }
        assert!(cancelled, "{kind:?}");
        drop(stream);
        // The client closed its connection: the server sees its stream abandoned.
        within(async {
            while server.abandoned_streams() == 0 {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await;
    }
}

#[tokio::test]
async fn cancellation_before_headers_and_during_backoff() {
    for kind in KINDS {
        let server = serve(fixture("slow_first_byte")).await;
        let provider = provider(kind, &server);
        let cancel = CancellationToken::new();
        let canceller = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            canceller.cancel();
        });
        let error = within(provider.stream(&ask("x"), cancel))
            .await
            .err()
            .unwrap();
        assert_eq!(error, LlmError::Cancelled);

        let already = CancellationToken::new();
        already.cancel();
        let error = provider.stream(&ask("x"), already).await.err().unwrap();
        assert_eq!(error, LlmError::Cancelled);

        // Cancel while waiting out the rate limit's Retry-After of a minute.
        let script = Script::from_json(
            &json!({"turns": [{"respond": {"text": "x"}, "fault": {"status": 429, "retry_after": 60}}]})
                .to_string(),
        )
        .unwrap();
        let server = serve(script).await;
        let provider = build(&config_for(kind, &server));
        let cancel = CancellationToken::new();
        let policy = RetryPolicy {
            max_attempts: 3,
            base_delay: Duration::from_millis(10),
            max_delay: Duration::from_secs(120),
        };
        let on_retry_cancel = cancel.clone();
        let error = within(stream_with_retry(
            provider.as_ref(),
            &ask("x"),
            &policy,
            &cancel,
            move |_| on_retry_cancel.cancel(),
        ))
        .await
        .err()
        .unwrap();
        assert_eq!(error, LlmError::Cancelled);
        assert_eq!(server.requests().len(), 1);
    }
}

#[tokio::test]
async fn the_api_key_never_appears_in_errors() {
    let script = Script::from_json(
        &json!({"turns": [{"repeat": true, "respond": {"text": "x"}, "fault": {
            "status": 401,
            "message": format!("Incorrect API key provided: {KEY}"),
            "times": 100,
        }}]})
        .to_string(),
    )
    .unwrap();
    for kind in KINDS {
        let server = serve(script.clone()).await;
        let error = provider(kind, &server)
            .stream(&ask("x"), CancellationToken::new())
            .await
            .err()
            .unwrap();
        assert!(
            matches!(error, LlmError::Auth { status: 401, .. }),
            "{error:?}"
        );
        for text in [error.to_string(), format!("{error:?}")] {
            assert!(!text.contains(KEY), "{text}");
            assert!(text.contains("Incorrect API key provided"), "{text}");
        }
        // A provider's Debug output cannot show it either.
        let config = config_for(kind, &server);
        assert!(!format!("{config:?}").contains(KEY));
    }
}

#[tokio::test]
async fn unmatched_requests_and_unreachable_servers() {
    let script = Script::from_json(
        &json!({"turns": [{"match": {"last_user_text_contains": "magic"}, "respond": {"text": "x"}}]})
            .to_string(),
    )
    .unwrap();
    for kind in KINDS {
        let server = serve(script.clone()).await;
        let error = provider(kind, &server)
            .stream(&ask("something else"), CancellationToken::new())
            .await
            .err()
            .unwrap();
        assert!(
            matches!(&error, LlmError::BadRequest { status: 400, message } if message.contains("last_user_text_contains \"magic\"")),
            "{error:?}"
        );
    }

    let closed_port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let mut config = ProviderConfig::new("gone", ProviderKind::OpenAi, "m");
    config.base_url = Some(format!("http://127.0.0.1:{closed_port}/v1"));
    let error = build(&config)
        .stream(&ask("x"), CancellationToken::new())
        .await
        .err()
        .unwrap();
    assert!(matches!(error, LlmError::Transport(_)), "{error:?}");
    assert!(error.is_retryable());
}

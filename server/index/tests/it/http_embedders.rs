//! The HTTP embedders against a real HTTP server on 127.0.0.1 started inside each test (a small
//! std `TcpListener` server that answers with deterministic vectors, or with scripted faults).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lode_index::{
    EmbedError, Embedder, HttpEmbedderConfig, OllamaEmbedder, OpenAiEmbedder, SearchMode,
    SearchRequest, Workspace, WorkspaceOptions,
};

/// A request as the server saw it.
#[derive(Clone, Debug)]
struct Seen {
    path: String,
    authorization: Option<String>,
    body: serde_json::Value,
}

/// What the server answers.
struct Reply {
    status: u16,
    body: String,
    retry_after: Option<u64>,
    delay: Duration,
}

impl Reply {
    fn ok(body: serde_json::Value) -> Reply {
        Reply {
            status: 200,
            body: body.to_string(),
            retry_after: None,
            delay: Duration::ZERO,
        }
    }
    fn status(status: u16, body: &str) -> Reply {
        Reply {
            status,
            body: body.into(),
            retry_after: None,
            delay: Duration::ZERO,
        }
    }
}

type Responder = dyn Fn(usize, &Seen) -> Reply + Send + Sync;

/// Starts the server; returns its base URL and the requests it receives.
fn serve(responder: Arc<Responder>) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request_line = String::new();
            if reader.read_line(&mut request_line).is_err() {
                continue;
            }
            let path = request_line
                .split_whitespace()
                .nth(1)
                .unwrap_or("")
                .to_string();
            let mut length = 0usize;
            let mut authorization = None;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                let (name, value) = line.split_once(':').unwrap_or((&line, ""));
                match name.to_ascii_lowercase().as_str() {
                    "content-length" => length = value.trim().parse().unwrap_or(0),
                    "authorization" => authorization = Some(value.trim().to_string()),
                    _ => {}
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            let request = Seen {
                path,
                authorization,
                body: serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null),
            };
            let number = {
                let mut log = log.lock().unwrap();
                log.push(request.clone());
                log.len()
            };
            let reply = responder(number, &request);
            std::thread::sleep(reply.delay);
            let retry = reply
                .retry_after
                .map(|s| format!("Retry-After: {s}\r\n"))
                .unwrap_or_default();
            let _ = write!(
                stream,
                "HTTP/1.1 {} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{retry}Connection: close\r\n\r\n{}",
                reply.status,
                reply.body.len(),
                reply.body
            );
        }
    });
    (url, seen)
}

/// A bag-of-words vector: each word adds 1 to a component chosen by its bytes.
fn bag_of_words(text: &str, dims: usize) -> Vec<f32> {
    let mut v = vec![0.0; dims];
    for word in text
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let h = word
            .to_ascii_lowercase()
            .bytes()
            .fold(7u64, |h, b| h.wrapping_mul(31).wrapping_add(b as u64));
        v[(h % dims as u64) as usize] += 1.0;
    }
    v[0] += 0.01; // never all zero
    v
}

fn inputs(request: &Seen) -> Vec<String> {
    request.body["input"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_string())
        .collect()
}

/// OpenAI-style answer, items in reverse order to check that `index` is honoured.
fn openai_reply(request: &Seen, dims: usize) -> Reply {
    let data: Vec<serde_json::Value> = inputs(request)
        .iter()
        .enumerate()
        .rev()
        .map(|(i, t)| serde_json::json!({"object": "embedding", "index": i, "embedding": bag_of_words(t, dims)}))
        .collect();
    Reply::ok(serde_json::json!({"object": "list", "data": data, "model": "m"}))
}

fn ollama_reply(request: &Seen, dims: usize) -> Reply {
    let embeddings: Vec<Vec<f32>> = inputs(request)
        .iter()
        .map(|t| bag_of_words(t, dims))
        .collect();
    Reply::ok(serde_json::json!({"model": "m", "embeddings": embeddings}))
}

fn fast_config(url: &str, model: &str) -> HttpEmbedderConfig {
    let mut config = HttpEmbedderConfig::new(url, model);
    config.initial_backoff = Duration::from_millis(5);
    config.timeout = Duration::from_secs(5);
    config
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[test]
fn openai_batches_orders_authenticates_and_learns_the_dimension() {
    let (url, seen) = serve(Arc::new(|_, r| openai_reply(r, 16)));
    // Any variable that is set will do as the key's source (setting one would race other
    // tests' threads); PATH is set wherever tests run.
    let key = std::env::var("PATH").unwrap();
    let mut config = fast_config(&format!("{url}/v1"), "text-embedding-3-small");
    config.api_key_env = Some("PATH".into());
    config.batch_size = 2;
    let embedder = OpenAiEmbedder::new(config).unwrap();
    assert_eq!(embedder.identity().backend, "openai");
    assert_eq!(
        embedder.identity().dimension,
        16,
        "learned from a probe request"
    );
    let texts = ["alpha beta", "gamma", "alpha beta", "delta epsilon", "zeta"];
    let vectors = embedder.embed_batch(&texts).unwrap();
    assert_eq!(vectors.len(), 5);
    assert!(
        cosine(&vectors[0], &vectors[2]) > 0.999,
        "same text, same vector, in order"
    );
    assert!(cosine(&vectors[0], &vectors[1]) < 0.9);
    assert!(
        (cosine(&vectors[3], &vectors[3]) - 1.0).abs() < 1e-4,
        "normalised"
    );
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1 + 3, "a probe, then batches of 2, 2 and 1");
    assert!(seen.iter().all(|r| r.path == "/v1/embeddings"));
    assert!(
        seen.iter()
            .all(|r| r.authorization == Some(format!("Bearer {key}")))
    );
    assert_eq!(seen[1].body["model"], "text-embedding-3-small");
    assert_eq!(inputs(&seen[3]), ["zeta"]);
}

#[test]
fn a_429_is_retried_after_the_wait_the_server_asks_for() {
    let (url, seen) = serve(Arc::new(|n, r| {
        if n == 2 {
            let mut reply = Reply::status(429, r#"{"error":"slow down"}"#);
            reply.retry_after = Some(0);
            reply
        } else {
            openai_reply(r, 8)
        }
    }));
    let embedder = OpenAiEmbedder::new(fast_config(&url, "m")).unwrap();
    let vectors = embedder.embed_batch(&["one text"]).unwrap();
    assert_eq!(vectors.len(), 1);
    assert_eq!(seen.lock().unwrap().len(), 3, "probe, 429, retry");
}

#[test]
fn persistent_server_errors_give_up_with_the_status_and_body() {
    let (url, seen) = serve(Arc::new(|n, r| {
        if n == 1 {
            openai_reply(r, 8)
        } else {
            Reply::status(500, "model crashed")
        }
    }));
    let mut config = fast_config(&url, "m");
    config.max_retries = 2;
    let embedder = OpenAiEmbedder::new(config).unwrap();
    match embedder.embed_batch(&["text"]) {
        Err(EmbedError::Status { status, body, .. }) => {
            assert_eq!(status, 500);
            assert_eq!(body, "model crashed");
        }
        other => panic!("expected a status error, got {other:?}"),
    }
    assert_eq!(
        seen.lock().unwrap().len(),
        1 + 3,
        "first try and two retries"
    );
}

#[test]
fn client_errors_are_not_retried() {
    let (url, seen) = serve(Arc::new(|_, _| {
        Reply::status(401, r#"{"error":"bad key"}"#)
    }));
    let error = OpenAiEmbedder::new(fast_config(&url, "m")).err().unwrap();
    assert!(
        matches!(error, EmbedError::Status { status: 401, .. }),
        "{error}"
    );
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[test]
fn malformed_and_mismatched_answers_are_clear_errors() {
    let (url, _) = serve(Arc::new(|_, _| Reply::status(200, "{\"data\": [")));
    let error = OpenAiEmbedder::new(fast_config(&url, "m")).err().unwrap();
    assert!(matches!(error, EmbedError::BadResponse { .. }), "{error}");

    let (url, _) = serve(Arc::new(|_, _| {
        Reply::ok(serde_json::json!({"embeddings": [[1.0, 0.0], [0.0, 1.0]]}))
    }));
    let error = OllamaEmbedder::new(fast_config(&url, "m")).err().unwrap();
    assert!(
        error.to_string().contains("2 embeddings for 1 texts"),
        "{error}"
    );

    let (url, _) = serve(Arc::new(|_, r| ollama_reply(r, 8)));
    let mut config = fast_config(&url, "m");
    config.dimensions = Some(4);
    let embedder = OllamaEmbedder::new(config).unwrap();
    let error = embedder.embed_batch(&["x"]).err().unwrap();
    assert!(
        error.to_string().contains("dimension 8, configured 4"),
        "{error}"
    );
}

#[test]
fn timeouts_unreachable_servers_and_missing_keys() {
    let (url, _) = serve(Arc::new(|_, r| {
        let mut reply = ollama_reply(r, 8);
        reply.delay = Duration::from_millis(1500);
        reply
    }));
    let mut config = fast_config(&url, "m");
    config.timeout = Duration::from_millis(200);
    config.max_retries = 1;
    let error = OllamaEmbedder::new(config).err().unwrap();
    assert!(matches!(error, EmbedError::Unreachable { .. }), "{error}");
    assert!(error.to_string().contains("timed out"), "{error}");

    // A port nobody listens on.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut config = fast_config(&format!("http://127.0.0.1:{port}"), "m");
    config.max_retries = 0;
    assert!(matches!(
        OllamaEmbedder::new(config),
        Err(EmbedError::Unreachable { .. })
    ));

    let mut config = fast_config("http://127.0.0.1:9", "m");
    config.api_key_env = Some("LODE_TEST_KEY_THAT_IS_NOT_SET".into());
    let error = OpenAiEmbedder::new(config).err().unwrap();
    assert!(matches!(error, EmbedError::MissingApiKey(_)));
    assert!(error.to_string().contains("LODE_TEST_KEY_THAT_IS_NOT_SET"));

    assert!(matches!(
        OpenAiEmbedder::new(fast_config("ftp://example.com", "m")),
        Err(EmbedError::Config(_))
    ));
}

/// A workspace of two one-function files (`src/net.rs` with `net_source`, `src/paint.rs`)
/// indexed with `embedder`.
fn net_and_paint(net_source: &str, embedder: Arc<dyn Embedder>) -> (tempfile::TempDir, Workspace) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/net.rs"), net_source).unwrap();
    std::fs::write(
        dir.path().join("src/paint.rs"),
        "pub fn draw_circle(canvas: &mut Canvas, radius: f32) { canvas.arc(radius) }\n",
    )
    .unwrap();
    let workspace =
        Workspace::open(WorkspaceOptions::new(dir.path()).with_embedder(embedder)).unwrap();
    (dir, workspace)
}

#[test]
fn an_ollama_embedder_indexes_and_searches_a_workspace() {
    let (url, seen) = serve(Arc::new(|_, r| ollama_reply(r, 64)));
    let embedder = Arc::new(OllamaEmbedder::new(fast_config(&url, "nomic-embed-text")).unwrap());
    let (_dir, workspace) = net_and_paint(
        "pub fn open_socket(port: u16) -> Socket { Socket::bind(port) }\n",
        embedder,
    );
    let stats = workspace.refresh(&|_| {}).unwrap();
    assert_eq!(stats.vectors.embedded, 2);
    assert!(seen.lock().unwrap().iter().all(|r| r.path == "/api/embed"));
    // The chunk texts carry split identifiers for an embedder that does not split them.
    let texts: Vec<String> = seen.lock().unwrap().iter().flat_map(inputs).collect();
    assert!(
        texts.iter().any(|t| t.ends_with("open socket")),
        "{texts:?}"
    );
    let hits = workspace
        .search_with_mode(
            &SearchRequest::new("radius canvas circle"),
            SearchMode::Semantic,
        )
        .unwrap();
    assert_eq!(hits[0].path, "src/paint.rs");
}

#[test]
fn hybrid_search_with_another_embedder_also_asks_the_builtin_table() {
    // The stand-in model puts the query next to the paint chunk; the built-in table, trained
    // on code, knows the query is about sockets. Hybrid search weighs both, and BM25 has no
    // word of the query to go on.
    let vector_for = |text: &str| -> Vec<f32> {
        if text.contains("socket") {
            vec![0.6, 0.8, 0.0, 0.0]
        } else {
            vec![1.0, 0.0, 0.0, 0.0]
        }
    };
    let (url, _seen) = serve(Arc::new(move |_, request| {
        let data: Vec<serde_json::Value> = inputs(request)
            .iter()
            .enumerate()
            .map(|(i, t)| serde_json::json!({"index": i, "embedding": vector_for(t)}))
            .collect();
        Reply::ok(serde_json::json!({"data": data}))
    }));
    let embedder = Arc::new(OpenAiEmbedder::new(fast_config(&url, "stand-in")).unwrap());
    let (_dir, workspace) = net_and_paint(
        "pub fn open_socket(port: u16) -> TcpListener { TcpListener::bind(port) }\n",
        embedder,
    );
    workspace.refresh(&|_| {}).unwrap();
    let query = SearchRequest::new("accept incoming network connections");
    let order = |mode| -> Vec<String> {
        workspace
            .search_with_mode(&query, mode)
            .unwrap()
            .into_iter()
            .map(|hit| hit.path)
            .collect()
    };
    assert!(order(SearchMode::Lexical).is_empty());
    assert_eq!(order(SearchMode::Semantic)[0], "src/paint.rs");
    assert_eq!(order(SearchMode::Hybrid)[0], "src/net.rs");
}

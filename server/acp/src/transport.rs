//! Where ACP connections come from: stdio (newline-delimited JSON-RPC, one connection) and the
//! draft streamable HTTP / WebSocket transport of `agent-client-protocol-http` (many connections,
//! one shared agent). Both refuse messages over [`MAX_MESSAGE_BYTES`].

use std::net::SocketAddr;
use std::sync::Arc;

use agent_client_protocol::{Agent, ConnectTo, Lines};
use agent_client_protocol_http::{AcpHttpServer, ServerOptions};
use axum::extract::ws::{CloseFrame, Message as WsMessage, WebSocket, WebSocketUpgrade};
use axum::extract::{FromRequestParts, Request};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::{Sink, SinkExt, Stream, StreamExt};
use lode_wire::{Frame, Framing};
use tokio::io::{AsyncBufRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::backend::AgentBackend;
use crate::connection::{ConnectionOptions, agent_connection};
use crate::http_guard::Guard;

/// The largest JSON-RPC message lode accepts, in bytes (1 MiB).
pub const MAX_MESSAGE_BYTES: usize = 1024 * 1024;

/// What an oversized line is replaced with: not JSON, so the client gets a JSON-RPC parse error
/// (`-32700`) whose data names the reason, and the connection keeps serving.
const OVERSIZED_MARKER: &str = "message refused: larger than 1 MiB";

#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    #[error("ACP connection failed: {0}")]
    Protocol(#[from] agent_client_protocol::Error),
    #[error("ACP HTTP server failed: {0}")]
    Io(#[from] std::io::Error),
    #[error(
        "refusing to serve ACP on the non-loopback address {0} without a bearer token \
         (pass --token or set LODE_ACP_TOKEN)"
    )]
    TokenRequired(SocketAddr),
    #[error("the ACP HTTP endpoint needs a bearer token, and the one given is empty")]
    EmptyToken,
    #[error("{option} {value:?}: expected {expected}")]
    BadOption {
        option: &'static str,
        value: String,
        expected: &'static str,
    },
}

/// Serves one ACP connection on stdin/stdout until the client closes stdin.
pub async fn serve_stdio(
    backend: Arc<dyn AgentBackend>,
    options: ConnectionOptions,
) -> Result<(), TransportError> {
    serve_lines(
        backend,
        options,
        tokio::io::BufReader::new(tokio::io::stdin()),
        tokio::io::stdout(),
    )
    .await
}

/// Serves one ACP connection over any pair of byte streams (stdio, a socket, a test pipe).
pub async fn serve_lines<R, W>(
    backend: Arc<dyn AgentBackend>,
    options: ConnectionOptions,
    reader: R,
    writer: W,
) -> Result<(), TransportError>
where
    R: AsyncBufRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let transport = Lines::new(line_sink(writer), capped_lines(reader, MAX_MESSAGE_BYTES));
    ConnectTo::<Agent>::connect_to(transport, agent_connection(backend, options)).await?;
    Ok(())
}

/// Writes one message per line. A client that closed its end (a broken pipe) has gone away,
/// which is not a failure of the connection: what is left to say is dropped, and the connection
/// ends as usual when the client's input does.
fn line_sink<W>(writer: W) -> impl Sink<String, Error = std::io::Error> + Send + 'static
where
    W: AsyncWrite + Unpin + Send + 'static,
{
    Box::pin(futures::sink::unfold(
        Some(writer),
        async |writer: Option<W>, line: String| {
            let Some(mut writer) = writer else {
                return Ok(None);
            };
            let written = async {
                writer.write_all(line.as_bytes()).await?;
                writer.write_all(b"\n").await?;
                writer.flush().await
            }
            .await;
            match written {
                Ok(()) => Ok(Some(writer)),
                Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => Ok(None),
                Err(error) => Err(error),
            }
        },
    ))
}

/// Lines of at most `limit` bytes. A longer line is skipped to its end without being held in
/// memory and yields [`OVERSIZED_MARKER`] in its place. Invalid UTF-8 is kept lossily so the
/// client still gets a parse error rather than a dropped connection.
pub fn capped_lines<R>(
    reader: R,
    limit: usize,
) -> impl Stream<Item = std::io::Result<String>> + Send + 'static
where
    R: AsyncBufRead + Unpin + Send + 'static,
{
    Box::pin(futures::stream::unfold(
        reader,
        move |mut reader| async move {
            let text = match Framing::Lines.read(&mut reader, limit).await {
                Err(error) => return Some((Err(error), reader)),
                Ok(None) => return None,
                Ok(Some(Frame::Message(line))) => String::from_utf8_lossy(&line).into_owned(),
                // Lines have no headers, so every other frame is an oversized line.
                Ok(Some(Frame::Oversized { .. } | Frame::BadHeader(_))) => {
                    OVERSIZED_MARKER.to_string()
                }
            };
            Some((Ok(text), reader))
        },
    ))
}

/// Settings of `lode acp --http`.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Every request but `GET /health` must carry `Authorization: Bearer <token>`; never empty.
    pub token: String,
    /// Whether the token was given explicitly (`--token`): a non-loopback address needs one.
    pub token_given: bool,
    /// Browser origins (`scheme://host[:port]`) whose requests are served, with CORS headers;
    /// requests with any other `Origin` get 403.
    pub allow_origins: Vec<String>,
    /// Host names (`name` or `name:port`) accepted in `Host` besides the bound address.
    pub allow_hosts: Vec<String>,
    /// What every connection gets.
    pub connection: ConnectionOptions,
}

impl HttpOptions {
    /// Options with `token`, given explicitly, and nothing else allowed.
    pub fn new(token: impl Into<String>) -> HttpOptions {
        HttpOptions {
            token: token.into(),
            token_given: true,
            allow_origins: Vec::new(),
            allow_hosts: Vec::new(),
            connection: ConnectionOptions::default(),
        }
    }
}

/// Binds `addr` after checking the options: a non-loopback address needs a token given
/// explicitly, and the token, origins and host names must be well formed.
pub async fn bind_http(
    addr: SocketAddr,
    options: &HttpOptions,
) -> Result<TcpListener, TransportError> {
    if !addr.ip().is_loopback() && !options.token_given {
        return Err(TransportError::TokenRequired(addr));
    }
    guard_for(addr, options)?;
    Ok(TcpListener::bind(addr).await?)
}

/// Serves ACP over HTTP + SSE and WebSocket on `POST|GET|DELETE /acp`, with `GET /health`, until
/// the listener fails. Every connection gets its own ACP connection over the shared backend.
pub async fn serve_http(
    backend: Arc<dyn AgentBackend>,
    listener: TcpListener,
    options: HttpOptions,
) -> Result<(), TransportError> {
    let router = http_router(backend, listener.local_addr()?, options)?;
    axum::serve(listener, router).await?;
    Ok(())
}

fn guard_for(bound: SocketAddr, options: &HttpOptions) -> Result<Guard, TransportError> {
    Guard::new(
        bound,
        &options.token,
        &options.allow_origins,
        &options.allow_hosts,
    )
}

/// The HTTP router of a server bound to `bound`: the ACP endpoint behind the size limit and the
/// [`http_guard`](crate::http_guard) checks (Host, Origin, bearer token), which cover every
/// route, the WebSocket upgrade and `/health` included (`/health` needs no token). WebSocket
/// upgrades of the endpoint are served by [`serve_websocket`] (the library's own WebSocket
/// server accepts messages of up to 64 MiB and cannot be told otherwise); HTTP + SSE by
/// `agent-client-protocol-http`.
pub fn http_router(
    backend: Arc<dyn AgentBackend>,
    bound: SocketAddr,
    options: HttpOptions,
) -> Result<axum::Router, TransportError> {
    let guard = Arc::new(guard_for(bound, &options)?);
    let factory = backend.clone();
    let mut options = options;
    // Everything served here comes from the network.
    options.connection.remote = true;
    let connection = options.connection.clone();
    let acp = AcpHttpServer::new(move || agent_connection(factory.clone(), connection.clone()))
        .with_options(ServerOptions::default())
        .into_router();
    Ok(acp
        .layer(axum::middleware::from_fn(limit_body))
        .layer(axum::middleware::from_fn(move |request, next| {
            upgrade_websocket(backend.clone(), options.connection.clone(), request, next)
        }))
        .layer(axum::middleware::from_fn(move |request, next| {
            crate::http_guard::guard(guard.clone(), request, next)
        })))
}

/// The path of the ACP endpoint (`agent-client-protocol-http`'s default).
const ACP_PATH: &str = "/acp";

/// Takes WebSocket upgrades of the ACP endpoint; everything else goes on to the library.
async fn upgrade_websocket(
    backend: Arc<dyn AgentBackend>,
    options: ConnectionOptions,
    request: Request,
    next: Next,
) -> Response {
    let wants_websocket = request.method() == axum::http::Method::GET
        && request.uri().path() == ACP_PATH
        && request
            .headers()
            .get(header::UPGRADE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.eq_ignore_ascii_case("websocket"));
    if !wants_websocket {
        return next.run(request).await;
    }
    let (mut parts, _body) = request.into_parts();
    match WebSocketUpgrade::from_request_parts(&mut parts, &()).await {
        Ok(upgrade) => upgrade
            .max_message_size(MAX_MESSAGE_BYTES)
            .max_frame_size(MAX_MESSAGE_BYTES)
            .on_upgrade(move |socket| serve_websocket(backend, options, socket)),
        Err(rejection) => rejection.into_response(),
    }
}

/// The close code for a message over the limit (RFC 6455 §7.4.1, "Message Too Big").
const CLOSE_TOO_BIG: u16 = 1009;
/// The close code for any other broken frame (RFC 6455 §7.4.1, "Protocol Error").
const CLOSE_PROTOCOL_ERROR: u16 = 1002;

/// One ACP connection over a WebSocket: each text frame is one JSON-RPC message, exactly like a
/// line on stdio. A message over [`MAX_MESSAGE_BYTES`] is never buffered whole: the socket is
/// closed with 1009 and a reason naming the limit (the message's id is unknown, so there is no
/// request to answer), which ends this connection and its turns and nothing else.
async fn serve_websocket(
    backend: Arc<dyn AgentBackend>,
    options: ConnectionOptions,
    socket: WebSocket,
) {
    let (mut to_socket, from_socket) = socket.split();
    let (outgoing, mut queued) = futures::channel::mpsc::unbounded::<WsMessage>();
    let closer = outgoing.clone();
    let incoming = futures::stream::unfold(
        (from_socket, closer),
        |(mut from_socket, closer)| async move {
            loop {
                let text = match from_socket.next().await? {
                    Ok(WsMessage::Text(text)) => text.as_str().to_owned(),
                    // ACP frames are text; binary ones are read the same way (lossily), so
                    // what is not JSON gets the usual parse error.
                    Ok(WsMessage::Binary(bytes)) => String::from_utf8_lossy(&bytes).into_owned(),
                    Ok(WsMessage::Ping(_) | WsMessage::Pong(_)) => continue,
                    Ok(WsMessage::Close(_)) => return None,
                    Err(error) => {
                        let error = error.to_string();
                        let (code, reason) = if error.contains("too long") {
                            (CLOSE_TOO_BIG, OVERSIZED_MARKER.to_owned())
                        } else {
                            (CLOSE_PROTOCOL_ERROR, error)
                        };
                        tracing::warn!(error = %reason, "closing a WebSocket connection");
                        let _ = closer.unbounded_send(WsMessage::Close(Some(CloseFrame {
                            code,
                            reason: reason.into(),
                        })));
                        return None;
                    }
                };
                return Some((Ok(text), (from_socket, closer)));
            }
        },
    );
    let lines = outgoing
        .sink_map_err(|_| std::io::Error::other("the WebSocket is closed"))
        .with(async |line: String| Ok::<_, std::io::Error>(WsMessage::Text(line.into())));
    let connection = ConnectTo::<Agent>::connect_to(
        Lines::new(Box::pin(lines), incoming),
        agent_connection(backend, options),
    );
    let writer = async move {
        while let Some(message) = queued.next().await {
            let closing = matches!(message, WsMessage::Close(_));
            if to_socket.send(message).await.is_err() || closing {
                break;
            }
        }
        let _ = to_socket.close().await;
    };
    let (outcome, ()) = tokio::join!(connection, writer);
    if let Err(error) = outcome {
        tracing::warn!(%error, "a WebSocket connection failed");
    }
}

/// Refuses POST bodies over [`MAX_MESSAGE_BYTES`] with 413, whether declared or streamed.
async fn limit_body(request: Request, next: Next) -> Response {
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<usize>().ok());
    if declared.is_some_and(|length| length > MAX_MESSAGE_BYTES) {
        return too_large();
    }
    if request.method() != axum::http::Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    match axum::body::to_bytes(body, MAX_MESSAGE_BYTES).await {
        Ok(bytes) => {
            next.run(Request::from_parts(parts, axum::body::Body::from(bytes)))
                .await
        }
        Err(_) => too_large(),
    }
}

fn too_large() -> Response {
    (
        StatusCode::PAYLOAD_TOO_LARGE,
        "ACP message larger than 1 MiB refused",
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;

    use super::*;

    async fn lines_of(input: &'static [u8], limit: usize) -> Vec<String> {
        capped_lines(tokio::io::BufReader::with_capacity(4, input), limit)
            .map(|line| line.unwrap())
            .collect()
            .await
    }

    #[tokio::test]
    async fn lines_split_on_newlines_and_keep_a_final_partial_line() {
        assert_eq!(
            lines_of(b"a\r\nbc\n\nlast", 10).await,
            ["a", "bc", "", "last"]
        );
    }

    #[tokio::test]
    async fn an_oversized_line_becomes_the_marker_and_the_next_line_survives() {
        let lines = lines_of(b"0123456789abcdef\nok\n", 8).await;
        assert_eq!(lines, [OVERSIZED_MARKER, "ok"]);
        let exact = lines_of(b"01234567\n", 8).await;
        assert_eq!(exact, ["01234567"]);
    }

    #[tokio::test]
    async fn binding_a_public_address_needs_a_token_given_explicitly() {
        let public: SocketAddr = "0.0.0.0:0".parse().unwrap();
        let generated = HttpOptions {
            token_given: false,
            ..HttpOptions::new("generated")
        };
        let error = bind_http(public, &generated).await.unwrap_err();
        assert!(matches!(error, TransportError::TokenRequired(_)), "{error}");
        let loopback: SocketAddr = "127.0.0.1:0".parse().unwrap();
        assert!(bind_http(loopback, &generated).await.is_ok());
        let empty = bind_http(loopback, &HttpOptions::new(""))
            .await
            .unwrap_err();
        assert!(matches!(empty, TransportError::EmptyToken), "{empty}");
        let origin = HttpOptions {
            allow_origins: vec!["null".to_string()],
            ..HttpOptions::new("t")
        };
        let bad = bind_http(loopback, &origin).await.unwrap_err();
        assert!(bad.to_string().contains("--allow-origin"), "{bad}");
    }
}

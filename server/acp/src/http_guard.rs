//! What every request to `lode acp --http` must get past before anything runs, in this order:
//!
//! 1. **Host.** The `Host` header (and an absolute request target's authority) must name the
//!    address lode is bound to: on loopback `127.0.0.1:PORT`, `[::1]:PORT` or `localhost:PORT`;
//!    on another address that address (any IP literal when bound to all interfaces) and the
//!    names given with `--allow-host`. A web page that rebinds its own domain name to 127.0.0.1
//!    (DNS rebinding) sends its domain here, so it gets 421.
//! 2. **Origin.** Browsers send `Origin` on cross-origin requests and on every WebSocket upgrade;
//!    other clients do not. A request carrying one gets 403 unless the origin is listed with
//!    `--allow-origin`; listed origins get CORS headers (and an answered preflight), still
//!    needing the token.
//! 3. **Token.** `Authorization: Bearer TOKEN`, compared in constant time; everything but
//!    `GET /health` gets 401 without it. A token in the query string does not count.
//!
//! Refusals are answered with a plain-text body naming what was wrong and logged on stderr
//! (never with the token presented).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::Request;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

use crate::transport::TransportError;

/// The body of a 401.
pub const WRONG_TOKEN: &str = "missing or wrong bearer token: send `Authorization: Bearer TOKEN` \
     with the --token lode was started with, or else the token in the acp-token file it named \
     at start";
/// The body of a 403 for a browser origin.
pub const BROWSER_ORIGIN: &str = "requests from browser origins are refused";

/// The request headers an allowed origin may send (CORS preflight answer).
const CORS_ALLOW_HEADERS: &str =
    "authorization, content-type, accept, acp-connection-id, acp-session-id, last-event-id";
/// The response headers an allowed origin's script may read.
const CORS_EXPOSE_HEADERS: &str = "acp-connection-id, acp-session-id";

/// The checks of one server, built from its bound address and options.
#[derive(Debug)]
pub(crate) struct Guard {
    token: Box<[u8]>,
    hosts: AllowedHosts,
    /// Allowed origins, normalised (lowercase, no trailing slash).
    origins: Vec<String>,
}

#[derive(Debug)]
struct AllowedHosts {
    /// The bound port.
    port: u16,
    /// Names accepted with the bound port (or with no port when that is 80): lowercase, IPv6
    /// literals in brackets.
    names: Vec<String>,
    /// Bound to all interfaces: any IP literal with the bound port is lode itself (an IP
    /// literal cannot be rebound).
    any_ip_literal: bool,
    /// `--allow-host` entries: with a port, that port only; without one, any port or none.
    extra: Vec<(String, Option<u16>)>,
}

impl Guard {
    /// Checks the options and builds the guard of a server bound to `bound`.
    pub(crate) fn new(
        bound: SocketAddr,
        token: &str,
        allow_origins: &[String],
        allow_hosts: &[String],
    ) -> Result<Guard, TransportError> {
        if token.is_empty() {
            return Err(TransportError::EmptyToken);
        }
        let origins = allow_origins
            .iter()
            .map(|origin| normalise_origin(origin))
            .collect::<Result<Vec<_>, _>>()?;
        let extra = allow_hosts
            .iter()
            .map(|host| {
                parse_authority(host)
                    .filter(|(name, _)| !name.is_empty())
                    .ok_or_else(|| TransportError::BadOption {
                        option: "--allow-host",
                        value: host.clone(),
                        expected: "a host name, optionally with :PORT",
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let ip = bound.ip();
        let mut names = vec![ip_literal(ip)];
        if ip.is_loopback() || ip.is_unspecified() {
            for name in ["127.0.0.1", "[::1]", "localhost"] {
                if !names.iter().any(|known| known == name) {
                    names.push(name.to_owned());
                }
            }
        }
        Ok(Guard {
            token: token.as_bytes().into(),
            hosts: AllowedHosts {
                port: bound.port(),
                names,
                any_ip_literal: ip.is_unspecified(),
                extra,
            },
            origins,
        })
    }

    /// Whether `authority` (a `Host` header's value) names this server.
    fn host_allowed(&self, authority: &str) -> bool {
        let Some((name, port)) = parse_authority(authority) else {
            return false;
        };
        let hosts = &self.hosts;
        let bound_port = port.unwrap_or(80) == hosts.port;
        if bound_port && hosts.names.contains(&name) {
            return true;
        }
        if bound_port && hosts.any_ip_literal && is_ip_literal(&name) {
            return true;
        }
        hosts.extra.iter().any(|(allowed, allowed_port)| {
            *allowed == name && allowed_port.is_none_or(|p| Some(p) == port)
        })
    }

    /// Whether the request's `Authorization` header carries the token. The scheme is
    /// case-insensitive (RFC 9110 §11.1); the token is compared in constant time.
    fn token_presented(&self, headers: &HeaderMap) -> bool {
        let mut values = headers.get_all(header::AUTHORIZATION).iter();
        let (Some(value), None) = (values.next(), values.next()) else {
            return false;
        };
        let Some((scheme, presented)) = value.as_bytes().split_at_checked(6) else {
            return false;
        };
        if !scheme.eq_ignore_ascii_case(b"bearer") || presented.first() != Some(&b' ') {
            return false;
        }
        let presented = presented.trim_ascii_start();
        // Constant time over the bytes; only a difference in length shows (the length of a
        // generated token is public anyway).
        bool::from(presented.ct_eq(&self.token))
    }
}

/// The middleware: Host, then Origin, then the token; CORS headers for allowed origins.
pub(crate) async fn guard(guard: Arc<Guard>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let mut authorities = headers
        .get_all(header::HOST)
        .iter()
        .map(|value| value.to_str().ok())
        .collect::<Vec<_>>();
    if let Some(authority) = request.uri().authority() {
        authorities.push(Some(authority.as_str()));
    }
    let host_ok = !authorities.is_empty()
        && authorities
            .iter()
            .all(|authority| authority.is_some_and(|authority| guard.host_allowed(authority)));
    if !host_ok {
        let shown = headers
            .get(header::HOST)
            .map_or_else(|| "(none)".to_owned(), show);
        return refuse(
            &request,
            StatusCode::MISDIRECTED_REQUEST,
            format!(
                "unexpected Host header {shown}: this server answers only to its own address \
                 (DNS rebinding protection; --allow-host admits other names)"
            ),
        );
    }

    let mut allowed_origin = None;
    let mut origins = headers.get_all(header::ORIGIN).iter().peekable();
    if origins.peek().is_some() {
        let values: Vec<&HeaderValue> = origins.collect();
        let listed = values.len() == 1
            && values[0].to_str().is_ok_and(|origin| {
                let origin = origin.trim_end_matches('/').to_ascii_lowercase();
                guard.origins.contains(&origin)
            });
        if !listed {
            let shown = values.first().map_or_else(String::new, |value| show(value));
            return refuse(
                &request,
                StatusCode::FORBIDDEN,
                format!(
                    "{BROWSER_ORIGIN} (Origin {shown}): lode's HTTP endpoint is for local \
                     clients; --allow-origin admits a web client's origin"
                ),
            );
        }
        allowed_origin = Some(values[0].clone());
    }

    if let Some(origin) = &allowed_origin
        && request.method() == Method::OPTIONS
        && headers.contains_key(header::ACCESS_CONTROL_REQUEST_METHOD)
    {
        // A preflight never carries credentials; it learns what the real request may send.
        let mut response = StatusCode::NO_CONTENT.into_response();
        let out = response.headers_mut();
        cors_headers(out, origin);
        out.insert(
            header::ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static("GET, POST, DELETE"),
        );
        out.insert(
            header::ACCESS_CONTROL_ALLOW_HEADERS,
            HeaderValue::from_static(CORS_ALLOW_HEADERS),
        );
        out.insert(
            header::ACCESS_CONTROL_MAX_AGE,
            HeaderValue::from_static("600"),
        );
        return response;
    }

    let open = request.method() == Method::GET && request.uri().path() == "/health";
    if !open && !guard.token_presented(headers) {
        let mut response = refuse(&request, StatusCode::UNAUTHORIZED, WRONG_TOKEN.to_owned());
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"lode\""),
        );
        if let Some(origin) = &allowed_origin {
            cors_headers(response.headers_mut(), origin);
        }
        return response;
    }

    let mut response = next.run(request).await;
    if let Some(origin) = &allowed_origin {
        cors_headers(response.headers_mut(), origin);
    }
    response
}

fn cors_headers(headers: &mut HeaderMap, origin: &HeaderValue) {
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
    headers.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static(CORS_EXPOSE_HEADERS),
    );
    headers.append(header::VARY, HeaderValue::from_static("origin"));
}

/// A refusal: the status, `reason` as a plain-text body, and one warning in the log.
fn refuse(request: &Request, status: StatusCode, reason: String) -> Response {
    tracing::warn!(
        error = %reason,
        "refused {} {}",
        request.method(),
        request.uri().path()
    );
    (
        status,
        [(
            HeaderName::from_static("x-content-type-options"),
            HeaderValue::from_static("nosniff"),
        )],
        reason,
    )
        .into_response()
}

/// A header value for a message: quoted, escaped, at most 100 characters.
fn show(value: &HeaderValue) -> String {
    let text = String::from_utf8_lossy(value.as_bytes());
    let short: String = text.chars().take(100).collect();
    format!("{short:?}")
}

/// `scheme://host[:port]`, lowercase, without a trailing slash; `null`, `*` and anything with
/// a path are refused.
fn normalise_origin(origin: &str) -> Result<String, TransportError> {
    let bad = || TransportError::BadOption {
        option: "--allow-origin",
        value: origin.to_owned(),
        expected: "an origin such as http://localhost:5173 (scheme://host[:port], no path; \
                   never `null` or `*`)",
    };
    let normal = origin.trim().trim_end_matches('/').to_ascii_lowercase();
    let (scheme, rest) = normal.split_once("://").ok_or_else(bad)?;
    let scheme_ok = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !scheme_ok || rest.is_empty() || rest.contains(['/', '?', '#', '*', ' ', '@']) {
        return Err(bad());
    }
    HeaderValue::from_str(&normal).map_err(|_| bad())?;
    Ok(normal)
}

/// `name[:port]` or `[v6][:port]`, the name lowercased; `None` when it is not an authority.
fn parse_authority(authority: &str) -> Option<(String, Option<u16>)> {
    let authority = authority.trim();
    let (name, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (inside, after) = rest.split_once(']')?;
        let port = match after {
            "" => None,
            after => Some(after.strip_prefix(':')?),
        };
        (format!("[{inside}]"), port)
    } else {
        match authority.split_once(':') {
            Some((name, port)) => (name.to_owned(), Some(port)),
            None => (authority.to_owned(), None),
        }
    };
    if name.contains(['/', '@', ' ', ':']) && !name.starts_with('[') {
        return None;
    }
    let port = match port {
        None => None,
        Some(port) => Some(port.parse::<u16>().ok()?),
    };
    Some((name.to_ascii_lowercase(), port))
}

fn is_ip_literal(name: &str) -> bool {
    match name
        .strip_prefix('[')
        .and_then(|rest| rest.strip_suffix(']'))
    {
        Some(v6) => v6.parse::<std::net::Ipv6Addr>().is_ok(),
        None => name.parse::<std::net::Ipv4Addr>().is_ok(),
    }
}

/// An IP address as it appears in a `Host` header.
fn ip_literal(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("[{v6}]"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(bound: &str, hosts: &[&str]) -> Guard {
        let hosts: Vec<String> = hosts.iter().map(|h| h.to_string()).collect();
        Guard::new(bound.parse().unwrap(), "t0ken", &[], &hosts).unwrap()
    }

    #[test]
    fn loopback_answers_to_its_own_names_and_port_only() {
        let guard = guard("127.0.0.1:7878", &[]);
        for host in [
            "127.0.0.1:7878",
            "localhost:7878",
            "LOCALHOST:7878",
            "[::1]:7878",
        ] {
            assert!(guard.host_allowed(host), "{host}");
        }
        for host in [
            "127.0.0.1:7879",
            "localhost",
            "evil.example",
            "evil.example:7878",
            "127.0.0.1.nip.io:7878",
            "127.0.0.2:7878",
            "127.0.0.1:7878:7878",
            "user@127.0.0.1:7878",
            "127.0.0.1:",
            "[::1]",
            "",
        ] {
            assert!(!guard.host_allowed(host), "{host}");
        }
    }

    #[test]
    fn port_80_may_be_left_out() {
        let guard = guard("127.0.0.1:80", &[]);
        assert!(guard.host_allowed("localhost"));
        assert!(guard.host_allowed("127.0.0.1:80"));
    }

    #[test]
    fn other_addresses_need_allow_host_for_names() {
        let specific = guard("192.0.2.7:7878", &["lode.example", "proxy.example:443"]);
        assert!(specific.host_allowed("192.0.2.7:7878"));
        assert!(!specific.host_allowed("192.0.2.8:7878"));
        assert!(!specific.host_allowed("localhost:7878"));
        assert!(specific.host_allowed("lode.example"));
        assert!(specific.host_allowed("LODE.example:9999"));
        assert!(specific.host_allowed("proxy.example:443"));
        assert!(!specific.host_allowed("proxy.example"));
        assert!(!specific.host_allowed("evil.example:7878"));

        let everywhere = guard("0.0.0.0:7878", &[]);
        assert!(everywhere.host_allowed("192.0.2.7:7878"));
        assert!(everywhere.host_allowed("[2001:db8::1]:7878"));
        assert!(everywhere.host_allowed("localhost:7878"));
        assert!(!everywhere.host_allowed("192.0.2.7:7879"));
        assert!(!everywhere.host_allowed("lode.example:7878"));
    }

    #[test]
    fn the_token_needs_the_bearer_scheme_and_every_byte() {
        let guard = guard("127.0.0.1:1", &[]);
        let presented = |values: &[&str]| {
            let mut headers = HeaderMap::new();
            for value in values {
                headers.append(header::AUTHORIZATION, HeaderValue::from_str(value).unwrap());
            }
            guard.token_presented(&headers)
        };
        assert!(presented(&["Bearer t0ken"]));
        assert!(presented(&["bearer t0ken"]));
        assert!(presented(&["BEARER  t0ken"]));
        for refused in [
            "Bearer t0ke",
            "Bearer t0ken2",
            "Bearer T0KEN",
            "Bearer",
            "Bearer ",
            "Bearert0ken",
            "Basic dDBrZW4=",
            "t0ken",
        ] {
            assert!(!presented(&[refused]), "{refused}");
        }
        assert!(!presented(&[]));
        assert!(!presented(&["Bearer t0ken", "Bearer t0ken"]));
    }

    #[test]
    fn origins_are_checked_when_given() {
        assert_eq!(
            normalise_origin("HTTP://LocalHost:5173/").unwrap(),
            "http://localhost:5173"
        );
        assert_eq!(
            normalise_origin("vscode-webview://abc").unwrap(),
            "vscode-webview://abc"
        );
        for bad in [
            "null",
            "*",
            "localhost:5173",
            "http://",
            "http://a/b",
            "http://*.example",
        ] {
            assert!(normalise_origin(bad).is_err(), "{bad}");
        }
        assert!(matches!(
            Guard::new("127.0.0.1:1".parse().unwrap(), "", &[], &[]),
            Err(TransportError::EmptyToken)
        ));
    }
}

//! lode-acp's integration tests: the adapter on the raw wire and the HTTP/WebSocket transport.
//! One test binary (`cargo test -p lode-acp --test it`), one module per suite.

// What the suites share.
mod support;

// The suites.
mod http;
mod protocol;

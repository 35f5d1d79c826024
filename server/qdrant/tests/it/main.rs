//! lode-qdrant's integration tests: the backend against a real Qdrant and a stand-in server.
//! One test binary (`cargo test -p lode-qdrant --test it`), one module per suite.

// What the suites share.
mod real_server;
mod scenario;
mod standin;

// The suites.
mod real_qdrant;
mod standin_server;

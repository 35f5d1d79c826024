//! lode over the Agent Client Protocol: maps ACP sessions onto agent sessions and agent events onto
//! `session/update`s, over stdio and over HTTP/WebSocket.
//!
//! An adapter only: no business logic lives here, and it must not reach into the index directly.

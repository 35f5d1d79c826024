//! Type-resolved navigation for the model: what a language server answers for `hover`,
//! `definition` and `references` at a position.
//!
//! A front end plugs a [`NavigationSource`] into [`crate::AgentOptions::navigation`] (the CLI wires
//! the LSP crate's downstream language servers, the same warm servers that produce diagnostics).
//! The tools (`tools::navigate`) ask it first and fall back to lode's own index (tree-sitter
//! definitions and references by name) when there is no source, no server for the language, or
//! the server fails or times out; every answer says which of the two resolved it
//! ([`Resolved::resolved_by`], `"index"` for the fallback).
//!
//! The types are the agent's own plain data, so this crate does not depend on any protocol
//! crate. Positions are 1-based, columns in characters (not UTF-16 code units): the source
//! converts.

use std::path::PathBuf;

/// The `resolved_by` of an answer from lode's own index.
pub const INDEX: &str = "index";

/// A position in a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NavPoint {
    /// Absolute, canonical, inside the workspace.
    pub path: PathBuf,
    /// 1-based.
    pub line: u32,
    /// 1-based, in characters.
    pub column: u32,
}

/// A place an answer points to.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct NavLocation {
    /// Absolute. A server may point outside the workspace (a library's stubs).
    pub path: PathBuf,
    /// 1-based.
    pub line: u32,
    /// 1-based, in characters.
    pub column: u32,
}

/// An answer and who gave it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved<T> {
    pub value: T,
    /// The language server's program name (`pyright`, `rust-analyzer`), or [`INDEX`].
    pub resolved_by: String,
}

/// Why a source could not answer; the tools then answer from the index and say why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NavigationError {
    /// No language server serves this file (none configured, not installed, not confinable).
    #[error("{0}")]
    Unavailable(String),
    /// The server failed, exited or did not answer in time.
    #[error("{0}")]
    Failed(String),
}

/// Something that resolves positions the way the compiler does.
#[async_trait::async_trait]
pub trait NavigationSource: Send + Sync {
    /// The type, signature and docs at `at` (`None`: the server has nothing there).
    async fn hover(&self, at: &NavPoint) -> Result<Resolved<Option<String>>, NavigationError>;

    /// Where what is at `at` is defined.
    async fn definition(
        &self,
        at: &NavPoint,
    ) -> Result<Resolved<Vec<NavLocation>>, NavigationError>;

    /// Every use of what is at `at`, its declaration included.
    async fn references(
        &self,
        at: &NavPoint,
    ) -> Result<Resolved<Vec<NavLocation>>, NavigationError>;
}

//! Type-resolved navigation for the model: what a language server answers for `hover`,
//! `definition`, `references`, the call hierarchy and `rename` at a position.
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

/// Which way a call hierarchy goes from a function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallDirection {
    /// Who calls it.
    Incoming,
    /// What it calls.
    Outgoing,
}

/// One caller (incoming) or callee (outgoing) of a function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallItem {
    /// The function's name as the server gives it (`total`, `area`).
    pub name: String,
    /// What the server adds (its container, its signature); may be empty.
    pub detail: String,
    /// Where the caller or callee is defined (its name's position).
    pub defined_at: NavLocation,
    /// The call sites: inside the caller (incoming), or inside the function asked about
    /// (outgoing).
    pub calls: Vec<NavLocation>,
}

/// A position in a file, without the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct NavPosition {
    /// 1-based.
    pub line: u32,
    /// 1-based, in characters.
    pub column: u32,
}

/// One replacement in a file: `[start, end)` becomes `new_text`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextEdit {
    pub start: NavPosition,
    pub end: NavPosition,
    pub new_text: String,
}

/// The replacements a rename makes in one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileEdit {
    /// Absolute, as the server named it (not yet confined: the tool does that).
    pub path: PathBuf,
    pub edits: Vec<TextEdit>,
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

    /// The callers (incoming) or callees (outgoing) of the function at `at`. A source that has
    /// no call hierarchy says so, and the tool answers from the index.
    async fn call_hierarchy(
        &self,
        at: &NavPoint,
        direction: CallDirection,
    ) -> Result<Resolved<Vec<CallItem>>, NavigationError> {
        let _ = (at, direction);
        Err(NavigationError::Unavailable(
            "this navigation source has no call hierarchy".into(),
        ))
    }

    /// The edits that rename what is at `at` to `new_name` everywhere it is used; an error
    /// when the server refuses (not a renameable symbol, an invalid name). Nothing is written:
    /// the tool checks and applies the edits.
    async fn rename(
        &self,
        at: &NavPoint,
        new_name: &str,
    ) -> Result<Resolved<Vec<FileEdit>>, NavigationError> {
        let _ = (at, new_name);
        Err(NavigationError::Unavailable(
            "this navigation source cannot rename".into(),
        ))
    }
}

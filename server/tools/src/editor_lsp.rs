//! The editor's own language servers as a navigation provider: the third provider of the
//! navigation service, preferred over the downstream servers lode runs itself and over the index.
//!
//! An editor that already runs the project's language servers on the buffers the user sees can
//! answer hover, definition and references for the agent (ACP's `lsp/*` extension, see
//! `docs/acp.md`). A front end offers it per turn through
//! [`crate::host::SessionHost::editor_language_server`]; the tools then ask, in order, the
//! editor, the configured [`NavigationSource`] (lode's downstream servers), and lode's index,
//! moving on when a provider fails, times out or has no answer ([`Preferred`]).
//!
//! This module knows no protocol: the ACP adapter implements [`EditorLanguageServer`] over its
//! connection. Positions are 1-based, columns in characters, as everywhere in the agent.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::diagnostics::Diagnostic;
use crate::navigation::{NavLocation, NavPoint, NavigationError, NavigationSource, Resolved};

/// The `resolved_by` of an answer from the editor when it does not name its server.
pub const EDITOR: &str = "ide";

/// A range in a file, 1-based, columns in characters; `end` is exclusive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NavRange {
    pub start: (u32, u32),
    pub end: (u32, u32),
}

/// A symbol the editor's server reports (`lsp/documentSymbols`, `lsp/workspaceSymbol`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EditorSymbol {
    pub name: String,
    /// LSP's `SymbolKind` in words (`class`, `method`, `function`, …).
    pub kind: String,
    pub path: PathBuf,
    /// The whole definition.
    pub range: NavRange,
    /// The names of the enclosing symbols, outermost first (document symbols only).
    pub container: Vec<String>,
}

/// One text edit of a code action.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EditorTextEdit {
    pub path: PathBuf,
    pub range: NavRange,
    pub new_text: String,
}

/// A quick fix or refactoring the editor's server offers (`lsp/codeActions`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EditorCodeAction {
    pub title: String,
    pub kind: Option<String>,
    pub preferred: bool,
    pub edits: Vec<EditorTextEdit>,
}

/// The editor's language features. Hover, definition and references come from the
/// [`NavigationSource`] supertrait; every answer's `resolved_by` is the server the editor named,
/// or [`EDITOR`].
#[async_trait::async_trait]
pub trait EditorLanguageServer: NavigationSource {
    /// The outline of a file.
    async fn document_symbols(
        &self,
        path: &Path,
    ) -> Result<Resolved<Vec<EditorSymbol>>, NavigationError>;

    /// Symbols of the workspace whose names match `query`.
    async fn workspace_symbol(
        &self,
        query: &str,
    ) -> Result<Resolved<Vec<EditorSymbol>>, NavigationError>;

    /// Code actions with edits for `range` of `path`, given the diagnostics there.
    async fn code_actions(
        &self,
        path: &Path,
        range: &NavRange,
        diagnostics: &[Diagnostic],
    ) -> Result<Resolved<Vec<EditorCodeAction>>, NavigationError>;

    /// The diagnostics the editor has for `path` now.
    async fn diagnostics(&self, path: &Path) -> Result<Resolved<Vec<Diagnostic>>, NavigationError>;
}

/// Providers asked in order: the first non-empty answer wins; a failure, a timeout or an empty
/// answer moves on to the next. When none answers, the result is the last empty answer (so the
/// caller can say who had nothing), else a failure naming every provider's reason.
pub struct Preferred {
    sources: Vec<Arc<dyn NavigationSource>>,
}

impl Preferred {
    pub fn new(sources: Vec<Arc<dyn NavigationSource>>) -> Preferred {
        Preferred { sources }
    }
}

/// The navigation a tool uses in a turn: the editor's servers when the host offers them, then
/// `configured` (lode's downstream servers); `None` when there is neither (the index answers).
pub fn preferred(
    editor: Option<Arc<dyn EditorLanguageServer>>,
    configured: Option<&Arc<dyn NavigationSource>>,
) -> Option<Arc<dyn NavigationSource>> {
    match (editor, configured) {
        (None, configured) => configured.cloned(),
        (Some(editor), None) => Some(editor as Arc<dyn NavigationSource>),
        (Some(editor), Some(configured)) => Some(Arc::new(Preferred::new(vec![
            editor as Arc<dyn NavigationSource>,
            configured.clone(),
        ]))),
    }
}

/// Whether an answer counts as one (something to show).
trait Answered {
    fn answered(&self) -> bool;
}

impl Answered for Option<String> {
    fn answered(&self) -> bool {
        self.as_deref().is_some_and(|text| !text.trim().is_empty())
    }
}

impl Answered for Vec<NavLocation> {
    fn answered(&self) -> bool {
        !self.is_empty()
    }
}

/// What [`Preferred`] has heard so far.
struct Asked<T> {
    empty: Option<Resolved<T>>,
    reasons: Vec<String>,
}

impl<T: Answered> Asked<T> {
    fn new() -> Asked<T> {
        Asked {
            empty: None,
            reasons: Vec::new(),
        }
    }

    /// Takes one provider's result; returns it when it is the answer.
    fn take(&mut self, result: Result<Resolved<T>, NavigationError>) -> Option<Resolved<T>> {
        match result {
            Ok(answer) if answer.value.answered() => Some(answer),
            Ok(answer) => {
                self.empty = Some(answer);
                None
            }
            Err(error) => {
                self.reasons.push(error.to_string());
                None
            }
        }
    }

    fn finish(self) -> Result<Resolved<T>, NavigationError> {
        match self.empty {
            Some(answer) => Ok(answer),
            None => Err(NavigationError::Failed(self.reasons.join("; "))),
        }
    }
}

#[async_trait::async_trait]
impl NavigationSource for Preferred {
    async fn hover(&self, at: &NavPoint) -> Result<Resolved<Option<String>>, NavigationError> {
        let mut asked = Asked::new();
        for source in &self.sources {
            if let Some(answer) = asked.take(source.hover(at).await) {
                return Ok(answer);
            }
        }
        asked.finish()
    }

    async fn definition(
        &self,
        at: &NavPoint,
    ) -> Result<Resolved<Vec<NavLocation>>, NavigationError> {
        let mut asked = Asked::new();
        for source in &self.sources {
            if let Some(answer) = asked.take(source.definition(at).await) {
                return Ok(answer);
            }
        }
        asked.finish()
    }

    async fn references(
        &self,
        at: &NavPoint,
    ) -> Result<Resolved<Vec<NavLocation>>, NavigationError> {
        let mut asked = Asked::new();
        for source in &self.sources {
            if let Some(answer) = asked.take(source.references(at).await) {
                return Ok(answer);
            }
        }
        asked.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// A provider with a fixed behaviour that counts its calls.
    struct Fixed {
        name: &'static str,
        answer: Option<Vec<NavLocation>>,
        calls: Mutex<usize>,
    }

    impl Fixed {
        fn new(name: &'static str, answer: Option<Vec<NavLocation>>) -> Arc<Fixed> {
            Arc::new(Fixed {
                name,
                answer,
                calls: Mutex::new(0),
            })
        }
    }

    #[async_trait::async_trait]
    impl NavigationSource for Fixed {
        async fn hover(&self, _at: &NavPoint) -> Result<Resolved<Option<String>>, NavigationError> {
            *self.calls.lock().unwrap() += 1;
            match &self.answer {
                Some(found) => Ok(Resolved {
                    value: (!found.is_empty()).then(|| format!("hover from {}", self.name)),
                    resolved_by: self.name.into(),
                }),
                None => Err(NavigationError::Failed(format!("{} failed", self.name))),
            }
        }

        async fn definition(
            &self,
            at: &NavPoint,
        ) -> Result<Resolved<Vec<NavLocation>>, NavigationError> {
            self.references(at).await
        }

        async fn references(
            &self,
            _at: &NavPoint,
        ) -> Result<Resolved<Vec<NavLocation>>, NavigationError> {
            *self.calls.lock().unwrap() += 1;
            match &self.answer {
                Some(found) => Ok(Resolved {
                    value: found.clone(),
                    resolved_by: self.name.into(),
                }),
                None => Err(NavigationError::Failed(format!("{} failed", self.name))),
            }
        }
    }

    fn at() -> NavPoint {
        NavPoint {
            path: PathBuf::from("/w/a.py"),
            line: 3,
            column: 5,
        }
    }

    fn one() -> Vec<NavLocation> {
        vec![NavLocation {
            path: PathBuf::from("/w/a.py"),
            line: 1,
            column: 1,
        }]
    }

    #[tokio::test]
    async fn the_first_provider_with_an_answer_wins() {
        let ide = Fixed::new("ide", Some(one()));
        let downstream = Fixed::new("pyright", Some(one()));
        let chain = Preferred::new(vec![ide.clone(), downstream.clone()]);
        let answer = chain.references(&at()).await.unwrap();
        assert_eq!(answer.resolved_by, "ide");
        assert_eq!(*downstream.calls.lock().unwrap(), 0);
    }

    #[tokio::test]
    async fn failures_and_empty_answers_move_on() {
        let ide = Fixed::new("ide", None);
        let downstream = Fixed::new("pyright", Some(one()));
        let chain = Preferred::new(vec![ide.clone(), downstream.clone()]);
        assert_eq!(
            chain.definition(&at()).await.unwrap().resolved_by,
            "pyright"
        );
        let empty = Fixed::new("ide", Some(Vec::new()));
        let chain = Preferred::new(vec![empty, downstream]);
        assert_eq!(chain.hover(&at()).await.unwrap().resolved_by, "pyright");
    }

    #[tokio::test]
    async fn nobody_answering_is_an_empty_answer_or_every_reason() {
        let chain = Preferred::new(vec![
            Fixed::new("ide", None),
            Fixed::new("pyright", Some(Vec::new())),
        ]);
        let answer = chain.references(&at()).await.unwrap();
        assert!(answer.value.is_empty());
        assert_eq!(answer.resolved_by, "pyright");
        let chain = Preferred::new(vec![Fixed::new("ide", None), Fixed::new("pyright", None)]);
        let error = chain.references(&at()).await.unwrap_err().to_string();
        assert!(
            error.contains("ide failed") && error.contains("pyright failed"),
            "{error}"
        );
    }

    #[test]
    fn without_an_editor_the_configured_source_is_used_as_is() {
        assert!(preferred(None, None).is_none());
        let configured: Arc<dyn NavigationSource> = Fixed::new("pyright", None);
        let chosen = preferred(None, Some(&configured)).unwrap();
        assert!(Arc::ptr_eq(&chosen, &configured));
    }
}

//! The downstream diagnostics ([`crate::downstream`]) as the agent's
//! [`lode_tools::diagnostics::DiagnosticsSource`]. `lode chat`, `run` and `acp` check the files as
//! saved; the agent behind `lode lsp`'s code actions never writes the disk, so its source checks
//! the text the agent sees instead ([`UnsavedTexts`]: its captured edits, then the editor's
//! buffers).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use lode_tools::diagnostics::{Diagnostic, DiagnosticsSource, FileDiagnostics, Severity};

use crate::downstream::{self, DiagnosticsProvider};

/// Text that stands in for files on disk.
pub trait UnsavedTexts: Send + Sync {
    /// The current text of `path` (absolute), when it is not what the disk has.
    fn text_of(&self, path: &Path) -> Option<String>;
}

/// The agent's view of a [`DiagnosticsProvider`].
pub struct ProviderSource {
    provider: Arc<DiagnosticsProvider>,
    unsaved: Option<Arc<dyn UnsavedTexts>>,
}

impl ProviderSource {
    /// Checks the files as saved on disk.
    pub fn new(provider: DiagnosticsProvider) -> ProviderSource {
        ProviderSource::shared(Arc::new(provider))
    }

    /// Checks the files as saved on disk, with a provider whose servers others use too (the
    /// navigation of [`crate::agent_navigation`]).
    pub fn shared(provider: Arc<DiagnosticsProvider>) -> ProviderSource {
        ProviderSource {
            provider,
            unsaved: None,
        }
    }

    /// Checks `unsaved`'s text where it has some, the disk elsewhere.
    pub fn with_unsaved(
        provider: impl Into<Arc<DiagnosticsProvider>>,
        unsaved: Arc<dyn UnsavedTexts>,
    ) -> ProviderSource {
        ProviderSource {
            provider: provider.into(),
            unsaved: Some(unsaved),
        }
    }
}

#[async_trait::async_trait]
impl DiagnosticsSource for ProviderSource {
    async fn diagnostics_for(&self, paths: &[PathBuf]) -> Vec<FileDiagnostics> {
        let mut texts = HashMap::new();
        if let Some(unsaved) = &self.unsaved {
            for path in paths {
                let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.clone());
                if let Some(text) = unsaved
                    .text_of(path)
                    .or_else(|| unsaved.text_of(&canonical))
                {
                    texts.insert(canonical, text);
                }
            }
        }
        self.provider
            .diagnostics_for_texts(paths, &texts)
            .await
            .into_iter()
            .map(convert_file)
            .collect()
    }
}

fn convert_file(file: downstream::FileDiagnostics) -> FileDiagnostics {
    FileDiagnostics {
        path: file.path,
        diagnostics: file.diagnostics.into_iter().map(convert).collect(),
        checked_by: match file.source {
            downstream::DiagnosticsSource::Server(command)
            | downstream::DiagnosticsSource::Command(command) => Some(command),
            downstream::DiagnosticsSource::None => None,
        },
        error: file.error,
    }
}

fn convert(diagnostic: downstream::Diagnostic) -> Diagnostic {
    Diagnostic {
        severity: match diagnostic.severity {
            downstream::Severity::Error => Severity::Error,
            downstream::Severity::Warning => Severity::Warning,
            downstream::Severity::Information => Severity::Information,
            downstream::Severity::Hint => Severity::Hint,
        },
        line: diagnostic.line,
        column: diagnostic.column,
        message: diagnostic.message,
        code: diagnostic.code,
        source: diagnostic.source,
    }
}

//! The errors the syntax library returns.

/// A grammar or a query that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SyntaxError {
    #[error("the {language} tags query does not compile: {message}")]
    Query {
        language: &'static str,
        message: String,
    },
    #[error("tree-sitter could not load the {language} grammar: {message}")]
    Grammar {
        language: &'static str,
        message: String,
    },
}

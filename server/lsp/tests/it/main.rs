//! lode-lsp's integration tests: downstream language servers, navigation, the call hierarchy
//! and rename.
//! One test binary (`cargo test -p lode-lsp --test it`), one module per suite.

mod call_hierarchy_rename;
mod downstream;
mod navigation;
mod support;

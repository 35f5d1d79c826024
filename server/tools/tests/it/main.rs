//! lode-tools' integration tests: the built-in tools on a real index, real files and real
//! processes, the symbol edits, and navigation from the index.
//! One test binary (`cargo test -p lode-tools --test it`), one module per suite.

mod navigation;
mod symbol_edit;
mod tools;

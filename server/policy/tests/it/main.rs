//! lode-policy's integration tests: every must-ask source.
//! One test binary (`cargo test -p lode-policy --test it`), one module per suite.

mod must_ask;
mod wrappers;

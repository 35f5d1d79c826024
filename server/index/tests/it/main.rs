//! lode-index's integration tests: the library on real files.
//! One test binary (`cargo test -p lode-index --test it`), one module per suite.

mod demotions;
mod http_embedders;
mod languages;
mod minilm;
mod semantic;
mod watch;
mod workspace;

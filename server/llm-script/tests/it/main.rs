//! lode-llm-script's integration tests: the scripted provider over real HTTP.
//! One test binary (`cargo test -p lode-llm-script --test it`), one module per suite.

mod server;

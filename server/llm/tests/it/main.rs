//! lode-llm's integration tests: the OpenAI-compatible and Anthropic clients against the
//! scripted LLM server (`lode-llm-script`).
//! One test binary (`cargo test -p lode-llm --test it`), one module per suite.

mod providers;

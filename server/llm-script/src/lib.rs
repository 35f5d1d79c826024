//! A scripted LLM server for tests and demos: a real HTTP server on 127.0.0.1 that speaks the
//! OpenAI chat-completions and Anthropic Messages streaming APIs and answers from scripts in
//! `fixtures/llm/*.json`, with faults injected on demand.
//!
//! It must not depend on lode's agent: it is a stand-in for a provider, nothing more.

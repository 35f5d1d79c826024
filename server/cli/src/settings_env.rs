//! The environment variables that change what a query command asks for: where the index is,
//! the embedder and the vector store (the settings a lease holder must share to answer), and
//! the config file. The `lode` front end leaves an invocation to `lode-full` when any is set;
//! `lode-full`'s tests check that every variable its options read is listed here.

/// Variables read by the global options (clap `env`) or beside them.
pub const SETTINGS_VARIABLES: &[&str] = &[
    "LODE_INDEX_DIR",
    "LODE_CONFIG",
    "LODE_EMBEDDER",
    "LODE_EMBED_URL",
    "LODE_EMBED_MODEL",
    "LODE_EMBED_DIMENSIONS",
    "LODE_EMBED_API_KEY_ENV",
    "LODE_MINILM_DIR",
    "LODE_STATIC_TABLE",
    "LODE_VECTORS",
    "LODE_QDRANT_URL",
    "LODE_QDRANT_API_KEY_ENV",
];

//! The vector-store flags shared by every workspace command: keep vectors in the embedded
//! store inside the index (the default) or in a Qdrant server.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, bail};
use clap::Args;
use lode_index::{Embedder, VectorStore};
use lode_qdrant::{QdrantConfig, QdrantStore};

/// Where semantic-search vectors live.
#[derive(Debug, Args)]
#[command(next_help_heading = "Vector store options (every command)")]
pub struct VectorStoreArgs {
    /// Vector store: embedded (inside the index, the default) or qdrant (a Qdrant server, see
    /// --qdrant-url). Also $LODE_VECTORS.
    #[arg(
        long,
        global = true,
        value_name = "STORE",
        env = "LODE_VECTORS",
        default_value = "embedded"
    )]
    pub vectors: String,
    /// Qdrant's gRPC endpoint (port 6334, not the REST port 6333). Also $LODE_QDRANT_URL.
    #[arg(
        long,
        global = true,
        value_name = "URL",
        env = "LODE_QDRANT_URL",
        default_value = "http://localhost:6334"
    )]
    pub qdrant_url: String,
    /// Environment variable holding the Qdrant API key (unset or empty: no key).
    /// Also $LODE_QDRANT_API_KEY_ENV.
    #[arg(
        long,
        global = true,
        value_name = "VAR",
        env = "LODE_QDRANT_API_KEY_ENV",
        default_value = "QDRANT_API_KEY"
    )]
    pub qdrant_api_key_env: String,
}

/// The [`VectorStore::location`] of the store the flags select, without connecting to it: what
/// a query compares with the lease holder's store.
pub fn store_location(args: &VectorStoreArgs) -> String {
    match args.vectors.as_str() {
        "qdrant" => {
            let config = QdrantConfig::new(&args.qdrant_url);
            lode_qdrant::store_location(&config.url, &config.collection_prefix)
        }
        _ => lode_index::EMBEDDED_STORE.to_owned(),
    }
}

/// The store the flags select: `None` for the embedded store (lode-index opens it itself) or
/// when there is no embedder to make vectors with.
pub fn vector_store(
    args: &VectorStoreArgs,
    root: &Path,
    embedder: Option<&Arc<dyn Embedder>>,
) -> anyhow::Result<Option<Arc<dyn VectorStore>>> {
    match args.vectors.as_str() {
        "embedded" => Ok(None),
        "qdrant" => {
            let Some(embedder) = embedder else {
                return Ok(None);
            };
            let api_key = std::env::var(&args.qdrant_api_key_env)
                .ok()
                .filter(|key| !key.is_empty());
            let config = QdrantConfig::new(&args.qdrant_url).with_api_key(api_key);
            let store = QdrantStore::connect(&config, root, Some(embedder.identity()))
                .with_context(|| {
                    format!("cannot use the Qdrant vector store at {}", args.qdrant_url)
                })?;
            Ok(Some(Arc::new(store)))
        }
        other => bail!("unknown vector store {other:?} (embedded, qdrant)"),
    }
}

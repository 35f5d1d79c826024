//! The Qdrant endpoint, when the vectors live there (`--vectors qdrant` / `$LODE_VECTORS`):
//! reachable and accepting the key. The key is read from the environment and never shown.

use std::path::Path;
use std::time::{Duration, Instant};

use lode_qdrant::{QdrantConfig, QdrantStore};

use super::Check;
use crate::commands::WorkspaceArgs;

pub fn check(workspace: &WorkspaceArgs, root: &Path) -> Vec<Check> {
    let args = &workspace.vector_store;
    if args.vectors != "qdrant" {
        return Vec::new();
    }
    // The store is asked about the collection of this workspace's embedder: a real request.
    let embedder = match crate::semantic_cli::embedder(&workspace.embedding) {
        Ok(Some(embedder)) => embedder,
        Ok(None) => {
            return vec![Check::warn(
                "qdrant",
                "the vectors are configured to live in Qdrant, but no embedder makes any",
                "choose an embedder (`--embedder`, docs/semantic.md) or drop --vectors qdrant",
            )];
        }
        Err(error) => {
            return vec![Check::fail(
                "qdrant",
                format!("the embedder for Qdrant's vectors cannot be used: {error:#}"),
                "correct the --embedder options (docs/semantic.md)",
            )];
        }
    };
    let key = std::env::var(&args.qdrant_api_key_env)
        .ok()
        .filter(|key| !key.trim().is_empty());
    let mut config = QdrantConfig::new(&args.qdrant_url).with_api_key(key.clone());
    config.timeout = Duration::from_secs(5);
    let started = Instant::now();
    match QdrantStore::connect(&config, root, Some(embedder.identity())) {
        Ok(store) => vec![Check::ok(
            "qdrant",
            format!(
                "{} answered in {} ms; this workspace's collection is {}{}",
                args.qdrant_url,
                started.elapsed().as_millis(),
                store
                    .collection()
                    .unwrap_or_else(|| "not created yet".to_owned()),
                if key.is_some() {
                    format!(" (key from ${}, not shown)", args.qdrant_api_key_env)
                } else {
                    String::new()
                }
            ),
        )],
        Err(error) => vec![Check::fail(
            "qdrant",
            format!("the vectors are configured to live in Qdrant, but {error}"),
            format!(
                "start Qdrant (gRPC port 6334) at {} or correct --qdrant-url / $LODE_QDRANT_URL; \
                 set ${} when it wants a key",
                args.qdrant_url, args.qdrant_api_key_env
            ),
        )],
    }
}

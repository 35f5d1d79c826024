//! The Qdrant endpoint, when the vectors live there (`--vectors qdrant` / `$LODE_VECTORS`):
//! reachable and accepting the key. The key is read from the environment and never shown.

use std::path::Path;
use std::time::{Duration, Instant};

use lode_qdrant::{QdrantConfig, QdrantStore};

use super::Check;
use crate::qdrant_cli::VectorStoreArgs;

pub fn check(args: &VectorStoreArgs, root: &Path) -> Vec<Check> {
    if args.vectors != "qdrant" {
        return Vec::new();
    }
    let key = std::env::var(&args.qdrant_api_key_env)
        .ok()
        .filter(|key| !key.trim().is_empty());
    let mut config = QdrantConfig::new(&args.qdrant_url).with_api_key(key.clone());
    config.timeout = Duration::from_secs(5);
    let started = Instant::now();
    match QdrantStore::connect(&config, root, None) {
        Ok(_) => vec![Check::ok(
            "qdrant",
            format!(
                "{} answered in {} ms{}",
                args.qdrant_url,
                started.elapsed().as_millis(),
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

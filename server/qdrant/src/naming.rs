//! Collection names: one Qdrant collection per workspace and embedder.
//!
//! `<prefix>-<workspace key>-<embedder key>`, each key the first 16 hex digits of an xxh3 hash:
//! the workspace key hashes the canonical root path, the embedder key hashes the embedder's
//! backend, model and dimension. Two checkouts of one repository get two collections; a change
//! of embedder writes into a fresh collection and leaves the old one to be dropped by hand.

use std::path::Path;

use lode_index::EmbedderIdentity;
use xxhash_rust::xxh3::xxh3_64;

/// The hash key of a workspace root (canonicalized when it exists).
pub fn workspace_key(root: &Path) -> String {
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    format!("{:016x}", xxh3_64(root.to_string_lossy().as_bytes()))
}

/// The collection that holds `identity`'s vectors for the workspace with key `workspace_key`.
pub fn collection_name(prefix: &str, workspace_key: &str, identity: &EmbedderIdentity) -> String {
    let embedder = format!(
        "{}\u{0}{}\u{0}{}",
        identity.backend, identity.model, identity.dimension
    );
    format!(
        "{prefix}-{workspace_key}-{:016x}",
        xxh3_64(embedder.as_bytes())
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity(model: &str, dimension: usize) -> EmbedderIdentity {
        EmbedderIdentity {
            backend: "static".into(),
            model: model.into(),
            dimension,
        }
    }

    #[test]
    fn names_differ_by_workspace_and_embedder() {
        let a = collection_name("lode", "k1", &identity("m", 8));
        assert_eq!(a, collection_name("lode", "k1", &identity("m", 8)));
        assert_ne!(a, collection_name("lode", "k2", &identity("m", 8)));
        assert_ne!(a, collection_name("lode", "k1", &identity("m", 16)));
        assert_ne!(a, collection_name("lode", "k1", &identity("n", 8)));
        assert!(a.starts_with("lode-k1-"));
    }

    #[test]
    fn workspace_key_follows_the_canonical_root() {
        let dir = tempfile::tempdir().unwrap();
        let plain = workspace_key(dir.path());
        let dotted = workspace_key(&dir.path().join("."));
        assert_eq!(plain, dotted);
        assert_eq!(plain.len(), 16);
    }
}

//! lode's Qdrant vector store: the semantic index's chunk vectors kept in a Qdrant server
//! instead of the embedded store inside the index directory.
//!
//! [`QdrantStore`] implements lode-index's [`lode_index::VectorStore`] over the
//! official `qdrant-client` (gRPC). One collection per workspace and embedder
//! ([`collection_name`]), keyword payload indexes on `path`, `language` and `dirs`, batched
//! upserts, deletes by chunk id, filtered search, and the published catalog generation kept in
//! a metadata point so a crash between commits is detected like with the embedded store.
//!
//! The trait is synchronous and `qdrant-client` is async: the store owns a private tokio
//! runtime ([`bridge`]) so it can be called from plain threads and from inside another
//! runtime alike.

mod bridge;
mod naming;
mod store;

pub use naming::{collection_name, workspace_key};

/// A Qdrant store's [`lode_index::VectorStore::location`], known before connecting:
/// what a query compares with the lease holder's.
pub fn store_location(url: &str, collection_prefix: &str) -> String {
    format!("qdrant:{url}:{collection_prefix}")
}
pub use store::{QdrantConfig, QdrantStore, UPSERT_BATCH};

//! [`QdrantStore`]: the `VectorStore` trait over a Qdrant server.
//!
//! Layout of a collection (cosine distance, one unnamed dense vector per point):
//! - one point per chunk: id = the catalog's chunk id, payload `path` (keyword), `language`
//!   (keyword), `dirs` (keyword list: every ancestor directory of the path, so a directory glob
//!   is an exact server-side filter) and `content_hash` (the embedded text's hash as i64 bits);
//! - one metadata point ([`META_POINT`], a UUID id no chunk can have) whose payload records the
//!   embedder identity and the published catalog generation. Searches, scrolls and counts
//!   exclude it.
//!
//! Qdrant has no transactions: upserts and deletes are applied (with `wait=true`) as they are
//! made, so a search may see a sync in progress. `commit` records the generation; after a crash
//! the recorded generation lags the catalog and lode-index's sync repairs the difference from
//! [`VectorStore::entries`], exactly as with the embedded store.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use lode_index::{
    EmbedderIdentity, StoreState, VectorError, VectorFilter, VectorHit, VectorRecord, VectorStore,
};
use parking_lot::Mutex;
use qdrant_client::qdrant::{
    Condition, CountPointsBuilder, CreateCollectionBuilder, CreateFieldIndexCollectionBuilder,
    DeletePointsBuilder, Distance, FieldType, Filter, GetPointsBuilder, PointId, PointStruct,
    PointsIdsList, Query, QueryPointsBuilder, RetrievedPoint, ScrollPointsBuilder,
    UpsertPointsBuilder, Value, VectorParamsBuilder, Vectors, point_id, value, vectors_output,
};
use qdrant_client::{Qdrant, QdrantError};

use crate::bridge::Bridge;
use crate::naming::{collection_name, workspace_key};

/// Points per upsert request.
pub const UPSERT_BATCH: usize = 256;
/// Ids per delete or get request.
const ID_BATCH: usize = 1024;
/// Points per scroll page.
const SCROLL_PAGE: u32 = 1024;
/// The metadata point's id (a UUID: chunk ids are numbers, so it cannot collide).
const META_POINT: &str = "6c6f6465-6d65-4000-8000-000000000000";
/// Payload fields with keyword indexes.
const INDEXED_FIELDS: [&str; 3] = ["path", "language", "dirs"];

/// Where the Qdrant server is and how to talk to it.
#[derive(Clone, Debug)]
pub struct QdrantConfig {
    /// The gRPC endpoint, e.g. `http://localhost:6334`.
    pub url: String,
    /// Sent as the `api-key` header when set.
    pub api_key: Option<String>,
    /// First part of every collection name (`lode` by default).
    pub collection_prefix: String,
    /// Per-request timeout.
    pub timeout: Duration,
}

impl QdrantConfig {
    pub fn new(url: impl Into<String>) -> QdrantConfig {
        QdrantConfig {
            url: url.into(),
            api_key: None,
            collection_prefix: "lode".into(),
            timeout: Duration::from_secs(30),
        }
    }

    pub fn with_api_key(mut self, api_key: Option<String>) -> QdrantConfig {
        self.api_key = api_key;
        self
    }
}

/// Which collection the store writes and what it last published there.
#[derive(Debug)]
struct Current {
    collection: Option<String>,
    state: StoreState,
}

/// Chunk vectors in a Qdrant collection. See the module documentation for the layout.
pub struct QdrantStore {
    bridge: Bridge,
    client: Qdrant,
    url: String,
    prefix: String,
    workspace_key: String,
    current: Mutex<Current>,
}

impl QdrantStore {
    /// Connects to the server and opens the collection of `root` and `identity` (the embedder
    /// the caller will sync with) if it exists. A missing collection is not an error: the store
    /// reports no identity and the first sync creates it. Fails with a clear message when the
    /// server cannot be reached or refuses the API key.
    pub fn connect(
        config: &QdrantConfig,
        root: &Path,
        identity: Option<&EmbedderIdentity>,
    ) -> Result<QdrantStore, VectorError> {
        let bridge = Bridge::new()
            .map_err(|e| VectorError::Backend(format!("cannot start the Qdrant runtime: {e}")))?;
        // The version check prints to stdout, which is the protocol in `lode acp`/`lode lsp`.
        let client = Qdrant::from_url(&config.url)
            .api_key(config.api_key.clone())
            .timeout(config.timeout)
            .connect_timeout(Duration::from_secs(5))
            .skip_compatibility_check()
            .build()
            .map_err(|e| VectorError::Backend(format!("Qdrant URL {:?}: {e}", config.url)))?;
        let store = QdrantStore {
            bridge,
            client,
            url: config.url.clone(),
            prefix: config.collection_prefix.clone(),
            workspace_key: workspace_key(root),
            current: Mutex::new(Current {
                collection: None,
                state: StoreState::default(),
            }),
        };
        if let Some(identity) = identity {
            store.current.lock().collection = Some(store.collection_for(identity));
        }
        store.reload()?;
        Ok(store)
    }

    /// The collection the store reads and writes (`None` before an identity is known).
    pub fn collection(&self) -> Option<String> {
        self.current.lock().collection.clone()
    }

    fn collection_for(&self, identity: &EmbedderIdentity) -> String {
        collection_name(&self.prefix, &self.workspace_key, identity)
    }

    /// Runs one client call on the private runtime, turning its error into a clear message.
    fn call<T, F, Fut>(&self, what: &str, make: F) -> Result<T, VectorError>
    where
        F: FnOnce(Qdrant) -> Fut,
        Fut: Future<Output = Result<T, QdrantError>> + Send + 'static,
        T: Send + 'static,
    {
        let future = make(self.client.clone());
        match self.bridge.run(future) {
            Some(Ok(value)) => Ok(value),
            Some(Err(error)) => Err(describe(&self.url, what, error)),
            None => Err(VectorError::Backend(format!(
                "Qdrant {what}: the request task failed"
            ))),
        }
    }

    /// The collection and identity writes go to, or [`VectorError::NoIdentity`].
    fn target(&self) -> Result<(String, EmbedderIdentity), VectorError> {
        let current = self.current.lock();
        match (&current.collection, &current.state.identity) {
            (Some(collection), Some(identity)) => Ok((collection.clone(), identity.clone())),
            _ => Err(VectorError::NoIdentity),
        }
    }

    fn collection_exists(&self, collection: &str) -> Result<bool, VectorError> {
        let name = collection.to_string();
        self.call("collection check", move |client| async move {
            client.collection_exists(name).await
        })
    }

    /// Live chunk points in `collection` (the metadata point excluded).
    fn count(&self, collection: &str) -> Result<usize, VectorError> {
        let request = CountPointsBuilder::new(collection)
            .filter(chunks_only(Vec::new()))
            .exact(true);
        let response = self.call(
            "count",
            move |client| async move { client.count(request).await },
        )?;
        Ok(response.result.map_or(0, |r| r.count as usize))
    }

    /// Writes the metadata point: identity and generation.
    fn write_meta(
        &self,
        collection: &str,
        identity: &EmbedderIdentity,
        generation: u64,
    ) -> Result<(), VectorError> {
        let mut payload = HashMap::new();
        payload.insert("lode_meta".to_string(), Value::from(true));
        payload.insert("backend".to_string(), Value::from(identity.backend.clone()));
        payload.insert("model".to_string(), Value::from(identity.model.clone()));
        payload.insert(
            "dimension".to_string(),
            Value::from(identity.dimension as i64),
        );
        payload.insert("generation".to_string(), Value::from(generation as i64));
        // Cosine distance normalizes vectors, so the metadata point needs a non-zero one.
        let mut vector = vec![0.0; identity.dimension.max(1)];
        vector[0] = 1.0;
        let point = PointStruct {
            id: Some(PointId::from(META_POINT.to_string())),
            payload,
            vectors: Some(Vectors::from(vector)),
        };
        let request = UpsertPointsBuilder::new(collection, vec![point]).wait(true);
        self.call("metadata write", move |client| async move {
            client.upsert_points(request).await
        })?;
        Ok(())
    }

    /// Reads the metadata point: `(identity, generation)` if the collection has one.
    fn read_meta(&self, collection: &str) -> Result<Option<(EmbedderIdentity, u64)>, VectorError> {
        let request =
            GetPointsBuilder::new(collection, vec![PointId::from(META_POINT.to_string())])
                .with_payload(true)
                .with_vectors(false);
        let response = self.call("metadata read", move |client| async move {
            client.get_points(request).await
        })?;
        let Some(point) = response.result.into_iter().next() else {
            return Ok(None);
        };
        let text = |key: &str| string_field(&point, key);
        let number = |key: &str| integer_field(&point, key);
        match (
            text("backend"),
            text("model"),
            number("dimension"),
            number("generation"),
        ) {
            (Some(backend), Some(model), Some(dimension), Some(generation)) => Ok(Some((
                EmbedderIdentity {
                    backend,
                    model,
                    dimension: dimension as usize,
                },
                generation as u64,
            ))),
            // Damaged or not lode's: report no identity, so the next sync recreates it.
            _ => Ok(None),
        }
    }

    /// Runs one filtered nearest-neighbour query page.
    fn query_page(
        &self,
        collection: &str,
        query: &[f32],
        filter: Filter,
        limit: usize,
        offset: usize,
        with_payload: bool,
    ) -> Result<Vec<(i64, f32, Option<String>)>, VectorError> {
        let request = QueryPointsBuilder::new(collection)
            .query(Query::new_nearest(query.to_vec()))
            .filter(filter)
            .limit(limit as u64)
            .offset(offset as u64)
            .with_payload(with_payload)
            .with_vectors(false);
        let response = self.call("search", move |client| async move {
            client.query(request).await
        })?;
        Ok(response
            .result
            .into_iter()
            .filter_map(|point| {
                let id = chunk_id(point.id.as_ref()?)?;
                let path = point.payload.get("path").and_then(as_string);
                Some((id, point.score, path))
            })
            .collect())
    }
}

impl VectorStore for QdrantStore {
    fn backend(&self) -> &'static str {
        "qdrant"
    }

    fn location(&self) -> String {
        crate::store_location(&self.url, &self.prefix)
    }

    fn state(&self) -> StoreState {
        self.current.lock().state.clone()
    }

    fn entries(&self) -> Result<Vec<(i64, u64)>, VectorError> {
        let Some(collection) = self.current.lock().collection.clone() else {
            return Ok(Vec::new());
        };
        if !self.collection_exists(&collection)? {
            return Ok(Vec::new());
        }
        let mut entries = Vec::new();
        let mut offset: Option<PointId> = None;
        loop {
            let mut request = ScrollPointsBuilder::new(&collection)
                .filter(chunks_only(Vec::new()))
                .limit(SCROLL_PAGE)
                .with_payload(true)
                .with_vectors(false);
            if let Some(offset) = offset.take() {
                request = request.offset(offset);
            }
            let page = self.call("scroll", move |client| async move {
                client.scroll(request).await
            })?;
            for point in &page.result {
                if let Some(id) = point.id.as_ref().and_then(chunk_id) {
                    let hash = integer_field(point, "content_hash").unwrap_or(0) as u64;
                    entries.push((id, hash));
                }
            }
            match page.next_page_offset {
                Some(next) if !page.result.is_empty() => offset = Some(next),
                _ => break,
            }
        }
        Ok(entries)
    }

    fn vectors(&self, ids: &[i64]) -> Result<Vec<(i64, Vec<f32>)>, VectorError> {
        let Some(collection) = self.current.lock().collection.clone() else {
            return Ok(Vec::new());
        };
        let mut found = Vec::with_capacity(ids.len());
        for batch in ids.chunks(ID_BATCH) {
            let point_ids: Vec<PointId> = batch.iter().map(|&id| point_id(id)).collect();
            let request = GetPointsBuilder::new(&collection, point_ids)
                .with_payload(false)
                .with_vectors(true);
            let response = self.call("vector read", move |client| async move {
                client.get_points(request).await
            })?;
            for point in response.result {
                let Some(id) = point.id.as_ref().and_then(chunk_id) else {
                    continue;
                };
                if let Some(vector) = dense_vector(point) {
                    found.push((id, vector));
                }
            }
        }
        Ok(found)
    }

    fn reset(&self, identity: &EmbedderIdentity) -> Result<(), VectorError> {
        if identity.dimension == 0 {
            return Err(VectorError::Backend(
                "an embedder of dimension 0 cannot be stored in Qdrant".into(),
            ));
        }
        let collection = self.collection_for(identity);
        if self.collection_exists(&collection)? {
            let name = collection.clone();
            self.call("collection delete", move |client| async move {
                client.delete_collection(name).await
            })?;
        }
        let create = CreateCollectionBuilder::new(&collection).vectors_config(
            VectorParamsBuilder::new(identity.dimension as u64, Distance::Cosine),
        );
        self.call("collection create", move |client| async move {
            client.create_collection(create).await
        })?;
        for field in INDEXED_FIELDS {
            let request =
                CreateFieldIndexCollectionBuilder::new(&collection, field, FieldType::Keyword)
                    .wait(true);
            self.call("payload index create", move |client| async move {
                client.create_field_index(request).await
            })?;
        }
        self.write_meta(&collection, identity, 0)?;
        let mut current = self.current.lock();
        current.collection = Some(collection);
        current.state = StoreState {
            identity: Some(identity.clone()),
            generation: 0,
            count: 0,
        };
        Ok(())
    }

    fn upsert(&self, records: Vec<VectorRecord>) -> Result<(), VectorError> {
        if records.is_empty() {
            return Ok(());
        }
        let (collection, identity) = self.target()?;
        if let Some(bad) = records
            .iter()
            .find(|r| r.vector.len() != identity.dimension)
        {
            return Err(VectorError::Dimension {
                expected: identity.dimension,
                found: bad.vector.len(),
            });
        }
        if let Some(bad) = records.iter().find(|r| r.id < 0) {
            return Err(VectorError::Backend(format!(
                "chunk id {} is negative; Qdrant point ids are unsigned",
                bad.id
            )));
        }
        let mut records = records.into_iter().peekable();
        while records.peek().is_some() {
            let points: Vec<PointStruct> =
                records.by_ref().take(UPSERT_BATCH).map(to_point).collect();
            let request = UpsertPointsBuilder::new(&collection, points).wait(true);
            self.call("upsert", move |client| async move {
                client.upsert_points(request).await
            })?;
        }
        Ok(())
    }

    fn delete(&self, ids: &[i64]) -> Result<(), VectorError> {
        let Ok((collection, _)) = self.target() else {
            // Nothing was ever written: nothing to delete.
            return Ok(());
        };
        for batch in ids.chunks(ID_BATCH) {
            let list = PointsIdsList {
                ids: batch
                    .iter()
                    .filter(|&&id| id >= 0)
                    .map(|&id| point_id(id))
                    .collect(),
            };
            let request = DeletePointsBuilder::new(&collection)
                .points(list)
                .wait(true);
            self.call("delete", move |client| async move {
                client.delete_points(request).await
            })?;
        }
        Ok(())
    }

    fn commit(&self, generation: u64) -> Result<(), VectorError> {
        let (collection, identity) = self.target()?;
        self.write_meta(&collection, &identity, generation)?;
        let count = self.count(&collection)?;
        let mut current = self.current.lock();
        current.state = StoreState {
            identity: Some(identity),
            generation,
            count,
        };
        Ok(())
    }

    fn search(
        &self,
        query: &[f32],
        k: usize,
        filter: &VectorFilter,
    ) -> Result<Vec<VectorHit>, VectorError> {
        let (collection, identity) = match self.target() {
            Ok(target) => target,
            Err(_) => return Ok(Vec::new()),
        };
        if query.len() != identity.dimension {
            return Err(VectorError::Dimension {
                expected: identity.dimension,
                found: query.len(),
            });
        }
        if k == 0 {
            return Ok(Vec::new());
        }
        let mut must = Vec::new();
        if let Some(language) = &filter.language {
            must.push(Condition::matches("language", language.clone()));
        }
        let glob = match filter.path_glob.as_deref() {
            None => None,
            Some(glob) => match directory_of_glob(glob) {
                Some(directory) => {
                    must.push(Condition::matches("dirs", directory));
                    None
                }
                None => Some(
                    lode_index::path_matcher(glob).map_err(|e| VectorError::Glob {
                        glob: glob.to_string(),
                        message: e.to_string(),
                    })?,
                ),
            },
        };
        let filter = chunks_only(must);
        let Some(glob) = glob else {
            let hits = self.query_page(&collection, query, filter, k, 0, false)?;
            return Ok(hits
                .into_iter()
                .map(|(id, score, _)| VectorHit { id, score })
                .collect());
        };
        // Qdrant cannot match globs: page through the nearest points (oversampled) and keep
        // those whose path matches, until k are found or the collection is exhausted.
        let page = (k * 8).max(64);
        let mut offset = 0;
        let mut hits = Vec::with_capacity(k);
        loop {
            let results =
                self.query_page(&collection, query, filter.clone(), page, offset, true)?;
            let fetched = results.len();
            for (id, score, path) in results {
                if path.is_some_and(|path| glob.is_match(path)) {
                    hits.push(VectorHit { id, score });
                    if hits.len() == k {
                        return Ok(hits);
                    }
                }
            }
            if fetched < page {
                return Ok(hits);
            }
            offset += page;
        }
    }

    fn reload(&self) -> Result<(), VectorError> {
        let Some(collection) = self.current.lock().collection.clone() else {
            return Ok(());
        };
        let state = if self.collection_exists(&collection)? {
            match self.read_meta(&collection)? {
                Some((identity, generation)) => StoreState {
                    identity: Some(identity),
                    generation,
                    count: self.count(&collection)?,
                },
                // Not made by lode (or interrupted before its first write): the next sync resets it.
                None => StoreState::default(),
            }
        } else {
            StoreState::default()
        };
        self.current.lock().state = state;
        Ok(())
    }
}

/// A filter that keeps chunk points (not the metadata point) and passes `must`.
fn chunks_only(must: Vec<Condition>) -> Filter {
    Filter {
        must,
        must_not: vec![Condition::has_id([PointId::from(META_POINT.to_string())])],
        ..Filter::default()
    }
}

/// The directory a glob selects whole (`src/`, `src/index/**`), if it is that simple: such a
/// glob becomes an exact server-side match on the `dirs` payload.
fn directory_of_glob(glob: &str) -> Option<String> {
    let glob = glob.trim_start_matches("./").trim_start_matches('/');
    let directory = glob
        .strip_suffix("/**")
        .or_else(|| glob.strip_suffix('/'))?;
    let plain = !directory.is_empty()
        && !directory
            .chars()
            .any(|c| matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | '\\'));
    plain.then(|| directory.trim_end_matches('/').to_string())
}

/// Every ancestor directory of a workspace-relative path: `a/b/c.rs` -> `a`, `a/b`.
fn ancestor_dirs(path: &str) -> Vec<String> {
    path.match_indices('/')
        .map(|(at, _)| path[..at].to_string())
        .collect()
}

fn point_id(id: i64) -> PointId {
    // Callers only pass non-negative ids (checked in upsert; filtered in delete).
    PointId::from(id as u64)
}

fn chunk_id(id: &PointId) -> Option<i64> {
    match id.point_id_options.as_ref()? {
        point_id::PointIdOptions::Num(n) => i64::try_from(*n).ok(),
        point_id::PointIdOptions::Uuid(_) => None,
    }
}

fn to_point(record: VectorRecord) -> PointStruct {
    let mut payload = HashMap::new();
    let dirs = ancestor_dirs(&record.path);
    payload.insert("path".to_string(), Value::from(record.path));
    payload.insert("language".to_string(), Value::from(record.language));
    payload.insert(
        "dirs".to_string(),
        Value {
            kind: Some(value::Kind::ListValue(qdrant_client::qdrant::ListValue {
                values: dirs.into_iter().map(Value::from).collect(),
            })),
        },
    );
    // Payload integers are i64: keep the hash's bits.
    payload.insert(
        "content_hash".to_string(),
        Value::from(record.content_hash as i64),
    );
    PointStruct {
        id: Some(point_id(record.id)),
        payload,
        vectors: Some(Vectors::from(record.vector)),
    }
}

fn as_string(value: &Value) -> Option<String> {
    match value.kind.as_ref()? {
        value::Kind::StringValue(s) => Some(s.clone()),
        _ => None,
    }
}

fn string_field(point: &RetrievedPoint, key: &str) -> Option<String> {
    point.payload.get(key).and_then(as_string)
}

fn integer_field(point: &RetrievedPoint, key: &str) -> Option<i64> {
    match point.payload.get(key)?.kind.as_ref()? {
        value::Kind::IntegerValue(n) => Some(*n),
        _ => None,
    }
}

fn dense_vector(point: RetrievedPoint) -> Option<Vec<f32>> {
    match point.vectors?.vectors_options? {
        vectors_output::VectorsOptions::Vector(output) => match output.vector? {
            qdrant_client::qdrant::vector_output::Vector::Dense(dense) => Some(dense.data),
            _ => None,
        },
        vectors_output::VectorsOptions::Vectors(_) => None,
    }
}

/// A client error as a message that says what to check.
fn describe(url: &str, what: &str, error: QdrantError) -> VectorError {
    let status = match &error {
        QdrantError::ResponseError { status }
        | QdrantError::ResourceExhaustedError { status, .. } => status,
        other => return VectorError::Backend(format!("Qdrant {what} at {url}: {other}")),
    };
    // qdrant-client reports a failed connection as `Internal: Failed to connect ...`.
    let unreachable = matches!(
        status.code(),
        tonic_code::Unavailable | tonic_code::DeadlineExceeded
    ) || status.message().starts_with("Failed to connect");
    let message = match status.code() {
        _ if unreachable => format!(
            "cannot reach Qdrant at {url} ({what}): {}; is the server running and is this its gRPC port (6334)?",
            status.message()
        ),
        tonic_code::Unauthenticated | tonic_code::PermissionDenied => format!(
            "Qdrant at {url} refused the request ({what}): {}; check the API key",
            status.message()
        ),
        code => format!(
            "Qdrant {what} at {url} failed: {code:?}: {}",
            status.message()
        ),
    };
    VectorError::Backend(message)
}

/// tonic's status codes (qdrant-client's errors carry a `tonic::Status`).
mod tonic_code {
    pub(super) use tonic::Code::*;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directory_globs_become_server_filters() {
        assert_eq!(directory_of_glob("src/"), Some("src".into()));
        assert_eq!(
            directory_of_glob("./src/index/**"),
            Some("src/index".into())
        );
        assert_eq!(directory_of_glob("src/**/*.rs"), None);
        assert_eq!(directory_of_glob("*.rs"), None);
        assert_eq!(directory_of_glob("sr?/"), None);
        assert_eq!(directory_of_glob("/"), None);
    }

    #[test]
    fn ancestors_of_a_path() {
        assert_eq!(ancestor_dirs("a/b/c.rs"), vec!["a", "a/b"]);
        assert!(ancestor_dirs("top.rs").is_empty());
    }
}

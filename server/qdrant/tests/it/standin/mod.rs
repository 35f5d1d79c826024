//! A STAND-IN for a Qdrant server, kept for FAULT INJECTION and request inspection only: what
//! a real server cannot be made to do on demand (answer a chosen error status from the N-th
//! request on, in the middle of a multi-batch upsert) or does not show (the size of each
//! upsert request, the `api-key` header of every call). Everything else runs against the real
//! Qdrant binary (`real_qdrant.rs`, `../real_server/mod.rs`).
//!
//! It is a real gRPC server on 127.0.0.1 built from the server traits that `qdrant-client`
//! itself exports (`collections_server::Collections`, `points_server::Points`), so the real
//! client speaks its real protocol to it. Behind those traits sits an in-memory, exact (brute
//! force) implementation of only the calls lode's store makes: collection create / delete /
//! exists, keyword payload indexes, upsert, delete by ids, get, scroll, count and nearest
//! `query` with `must` / `must_not` filters of keyword matches and id lists, cosine distance.
//! Every other call answers `UNIMPLEMENTED`, so a store that started using one would fail here
//! rather than pass against something it does not exercise.

#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use ::qdrant_client::qdrant::collections_server::{Collections, CollectionsServer};
use ::qdrant_client::qdrant::points_server::{Points, PointsServer};
use ::qdrant_client::qdrant::*;
use tokio::runtime::Runtime;
use tonic::{Request, Response, Status};

/// A point id the way the stand-in orders them: numbers first, then UUIDs (as Qdrant does).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Key {
    Num(u64),
    Uuid(String),
}

impl Key {
    fn from_id(id: &PointId) -> Result<Key, Status> {
        match &id.point_id_options {
            Some(point_id::PointIdOptions::Num(n)) => Ok(Key::Num(*n)),
            Some(point_id::PointIdOptions::Uuid(u)) => Ok(Key::Uuid(u.clone())),
            None => Err(Status::invalid_argument("empty point id")),
        }
    }

    fn to_id(&self) -> PointId {
        match self {
            Key::Num(n) => PointId::from(*n),
            Key::Uuid(u) => PointId::from(u.clone()),
        }
    }
}

#[derive(Clone, Debug)]
struct StoredPoint {
    /// Normalized (cosine distance), as Qdrant stores it.
    vector: Vec<f32>,
    payload: HashMap<String, Value>,
}

#[derive(Debug, Default)]
pub struct Collection {
    pub dimension: usize,
    pub distance: i32,
    /// (field, field type) of every payload index created.
    pub indexes: Vec<(String, i32)>,
    points: BTreeMap<Key, StoredPoint>,
}

impl Collection {
    /// An empty collection, as if made by someone else.
    pub fn empty(dimension: usize) -> Collection {
        Collection {
            dimension,
            distance: Distance::Cosine as i32,
            ..Collection::default()
        }
    }
}

/// Everything the stand-in holds, shared with the test for inspection.
#[derive(Debug, Default)]
pub struct Db {
    pub collections: HashMap<String, Collection>,
    /// Number of points in each upsert request, in order.
    pub upsert_sizes: Vec<usize>,
    /// The `api-key` header of every request (`None` when absent).
    pub api_keys: Vec<Option<String>>,
    /// An injected fault: every request after the first `after` ones (counted over the
    /// server's life, see `api_keys.len()`) answers `code` with `message`.
    pub fault: Option<Fault>,
}

/// A fault the stand-in injects (set `Db::fault`; clear it to heal the server).
#[derive(Clone, Debug)]
pub struct Fault {
    pub after: usize,
    pub code: tonic::Code,
    pub message: String,
}

/// A running stand-in server.
pub struct StandIn {
    pub url: String,
    pub db: Arc<Mutex<Db>>,
    runtime: Option<Runtime>,
}

impl StandIn {
    /// Starts a stand-in on 127.0.0.1 (a free port); `required_api_key` makes it refuse
    /// requests without that key, as Qdrant does with `QDRANT__SERVICE__API_KEY`.
    pub fn start(required_api_key: Option<&str>) -> StandIn {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let db = Arc::new(Mutex::new(Db::default()));
        // Bound with std so starting works inside a test's own runtime too.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let address: SocketAddr = listener.local_addr().unwrap();
        let service = Service {
            db: Arc::clone(&db),
        };
        let key = required_api_key.map(str::to_string);
        let record = Arc::clone(&db);
        let check = move |request: Request<()>| -> Result<Request<()>, Status> {
            let sent = request
                .metadata()
                .get("api-key")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            let mut db = record.lock().unwrap();
            db.api_keys.push(sent.clone());
            if let Some(fault) = &db.fault
                && db.api_keys.len() > fault.after
            {
                return Err(Status::new(fault.code, fault.message.clone()));
            }
            drop(db);
            match (&key, sent) {
                (None, _) => Ok(request),
                (Some(key), Some(sent)) if *key == sent => Ok(request),
                _ => Err(Status::permission_denied("Invalid API key or JWT")),
            }
        };
        let collections = CollectionsServer::with_interceptor(service.clone(), check.clone());
        let points = PointsServer::with_interceptor(service, check);
        runtime.spawn(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            tonic::transport::Server::builder()
                .add_service(collections)
                .add_service(points)
                .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener))
                .await
                .unwrap();
        });
        StandIn {
            url: format!("http://{address}"),
            db,
            runtime: Some(runtime),
        }
    }

    /// Number of points in a collection (metadata point included), `None` if it does not exist.
    pub fn point_count(&self, collection: &str) -> Option<usize> {
        let db = self.db.lock().unwrap();
        db.collections.get(collection).map(|c| c.points.len())
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

#[derive(Clone)]
struct Service {
    db: Arc<Mutex<Db>>,
}

fn normalized(mut vector: Vec<f32>) -> Vec<f32> {
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        vector.iter_mut().for_each(|x| *x /= norm);
    }
    vector
}

fn dense_of_vectors(vectors: Option<Vectors>) -> Result<Vec<f32>, Status> {
    match vectors.and_then(|v| v.vectors_options) {
        Some(vectors::VectorsOptions::Vector(vector)) => match vector.vector {
            Some(vector::Vector::Dense(dense)) => Ok(dense.data),
            _ => Err(Status::unimplemented("stand-in: only dense vectors")),
        },
        _ => Err(Status::unimplemented("stand-in: only one unnamed vector")),
    }
}

fn keyword_matches(value: Option<&Value>, wanted: &str) -> bool {
    match value.and_then(|v| v.kind.as_ref()) {
        Some(value::Kind::StringValue(s)) => s == wanted,
        Some(value::Kind::ListValue(list)) => list
            .values
            .iter()
            .any(|v| matches!(&v.kind, Some(value::Kind::StringValue(s)) if s == wanted)),
        _ => false,
    }
}

fn condition_holds(condition: &Condition, key: &Key, point: &StoredPoint) -> Result<bool, Status> {
    match &condition.condition_one_of {
        Some(condition::ConditionOneOf::HasId(has)) => {
            for id in &has.has_id {
                if Key::from_id(id)? == *key {
                    return Ok(true);
                }
            }
            Ok(false)
        }
        Some(condition::ConditionOneOf::Field(field)) => {
            match field.r#match.as_ref().and_then(|m| m.match_value.as_ref()) {
                Some(r#match::MatchValue::Keyword(wanted)) => {
                    Ok(keyword_matches(point.payload.get(&field.key), wanted))
                }
                _ => Err(Status::unimplemented("stand-in: only keyword matches")),
            }
        }
        _ => Err(Status::unimplemented(
            "stand-in: only field and has_id conditions",
        )),
    }
}

fn passes(filter: Option<&Filter>, key: &Key, point: &StoredPoint) -> Result<bool, Status> {
    let Some(filter) = filter else {
        return Ok(true);
    };
    if !filter.should.is_empty() || filter.min_should.is_some() {
        return Err(Status::unimplemented("stand-in: no `should` filters"));
    }
    for condition in &filter.must {
        if !condition_holds(condition, key, point)? {
            return Ok(false);
        }
    }
    for condition in &filter.must_not {
        if condition_holds(condition, key, point)? {
            return Ok(false);
        }
    }
    Ok(true)
}

fn payload_wanted(selector: Option<&WithPayloadSelector>) -> Result<bool, Status> {
    match selector.and_then(|s| s.selector_options.as_ref()) {
        None => Ok(false),
        Some(with_payload_selector::SelectorOptions::Enable(on)) => Ok(*on),
        Some(_) => Err(Status::unimplemented("stand-in: payload on or off only")),
    }
}

fn vectors_wanted(selector: Option<&WithVectorsSelector>) -> Result<bool, Status> {
    match selector.and_then(|s| s.selector_options.as_ref()) {
        None => Ok(false),
        Some(with_vectors_selector::SelectorOptions::Enable(on)) => Ok(*on),
        Some(_) => Err(Status::unimplemented("stand-in: vectors on or off only")),
    }
}

#[allow(deprecated)]
fn vectors_output(vector: &[f32]) -> VectorsOutput {
    VectorsOutput {
        vectors_options: Some(vectors_output::VectorsOptions::Vector(VectorOutput {
            vector: Some(vector_output::Vector::Dense(DenseVector {
                data: vector.to_vec(),
            })),
            ..Default::default()
        })),
    }
}

fn retrieved(key: &Key, point: &StoredPoint, payload: bool, vectors: bool) -> RetrievedPoint {
    RetrievedPoint {
        id: Some(key.to_id()),
        payload: if payload {
            point.payload.clone()
        } else {
            HashMap::new()
        },
        vectors: vectors.then(|| vectors_output(&point.vector)),
        shard_key: None,
        order_value: None,
    }
}

fn acknowledged() -> Response<PointsOperationResponse> {
    Response::new(PointsOperationResponse {
        result: Some(UpdateResult {
            operation_id: Some(0),
            status: UpdateStatus::Completed as i32,
        }),
        time: 0.0,
        usage: None,
    })
}

fn collection_done(result: bool) -> Response<CollectionOperationResponse> {
    Response::new(CollectionOperationResponse { result, time: 0.0 })
}

impl Service {
    fn with_collection<T>(
        &self,
        name: &str,
        f: impl FnOnce(&mut Collection) -> Result<T, Status>,
    ) -> Result<T, Status> {
        let mut db = self.db.lock().unwrap();
        let collection = db
            .collections
            .get_mut(name)
            .ok_or_else(|| Status::not_found(format!("Collection `{name}` doesn't exist!")))?;
        f(collection)
    }
}

/// Methods the store does not use: answered `UNIMPLEMENTED`. Written in the shape
/// `async_trait` gives the trait's methods, since it does not see into macro output.
macro_rules! unimplemented_calls {
    ($($name:ident($request:ty) -> $response:ty;)*) => {
        $(
            fn $name<'life0, 'async_trait>(
                &'life0 self,
                _request: Request<$request>,
            ) -> Pin<Box<dyn Future<Output = Result<Response<$response>, Status>> + Send + 'async_trait>>
            where
                'life0: 'async_trait,
                Self: 'async_trait,
            {
                Box::pin(async {
                    Err(Status::unimplemented(concat!("stand-in does not implement ", stringify!($name))))
                })
            }
        )*
    };
}

#[tonic::async_trait]
impl Collections for Service {
    async fn create(
        &self,
        request: Request<CreateCollection>,
    ) -> Result<Response<CollectionOperationResponse>, Status> {
        let request = request.into_inner();
        let params = match request.vectors_config.and_then(|c| c.config) {
            Some(vectors_config::Config::Params(params)) => params,
            _ => return Err(Status::unimplemented("stand-in: one unnamed vector only")),
        };
        let mut db = self.db.lock().unwrap();
        if db.collections.contains_key(&request.collection_name) {
            return Err(Status::already_exists(format!(
                "Collection `{}` already exists!",
                request.collection_name
            )));
        }
        db.collections.insert(
            request.collection_name,
            Collection {
                dimension: params.size as usize,
                distance: params.distance,
                ..Collection::default()
            },
        );
        Ok(collection_done(true))
    }

    async fn delete(
        &self,
        request: Request<DeleteCollection>,
    ) -> Result<Response<CollectionOperationResponse>, Status> {
        let name = request.into_inner().collection_name;
        let removed = self.db.lock().unwrap().collections.remove(&name).is_some();
        Ok(collection_done(removed))
    }

    async fn collection_exists(
        &self,
        request: Request<CollectionExistsRequest>,
    ) -> Result<Response<CollectionExistsResponse>, Status> {
        let name = request.into_inner().collection_name;
        let exists = self.db.lock().unwrap().collections.contains_key(&name);
        Ok(Response::new(CollectionExistsResponse {
            result: Some(CollectionExists { exists }),
            time: 0.0,
        }))
    }

    unimplemented_calls! {
        get(GetCollectionInfoRequest) -> GetCollectionInfoResponse;
        list(ListCollectionsRequest) -> ListCollectionsResponse;
        update(UpdateCollection) -> CollectionOperationResponse;
        update_aliases(ChangeAliases) -> CollectionOperationResponse;
        list_collection_aliases(ListCollectionAliasesRequest) -> ListAliasesResponse;
        list_aliases(ListAliasesRequest) -> ListAliasesResponse;
        collection_cluster_info(CollectionClusterInfoRequest) -> CollectionClusterInfoResponse;
        update_collection_cluster_setup(UpdateCollectionClusterSetupRequest) -> UpdateCollectionClusterSetupResponse;
        create_shard_key(CreateShardKeyRequest) -> CreateShardKeyResponse;
        delete_shard_key(DeleteShardKeyRequest) -> DeleteShardKeyResponse;
        list_shard_keys(ListShardKeysRequest) -> ListShardKeysResponse;
    }
}

#[tonic::async_trait]
impl Points for Service {
    async fn upsert(
        &self,
        request: Request<UpsertPoints>,
    ) -> Result<Response<PointsOperationResponse>, Status> {
        let request = request.into_inner();
        let count = request.points.len();
        self.with_collection(&request.collection_name, |collection| {
            let mut staged = Vec::with_capacity(count);
            for point in request.points {
                let key = Key::from_id(
                    point
                        .id
                        .as_ref()
                        .ok_or_else(|| Status::invalid_argument("point without id"))?,
                )?;
                let vector = dense_of_vectors(point.vectors)?;
                if vector.len() != collection.dimension {
                    return Err(Status::invalid_argument(format!(
                        "Wrong input: Vector dimension error: expected dim: {}, got {}",
                        collection.dimension,
                        vector.len()
                    )));
                }
                staged.push((
                    key,
                    StoredPoint {
                        vector: normalized(vector),
                        payload: point.payload,
                    },
                ));
            }
            collection.points.extend(staged);
            Ok(())
        })?;
        self.db.lock().unwrap().upsert_sizes.push(count);
        Ok(acknowledged())
    }

    async fn delete(
        &self,
        request: Request<DeletePoints>,
    ) -> Result<Response<PointsOperationResponse>, Status> {
        let request = request.into_inner();
        let ids = match request.points.and_then(|p| p.points_selector_one_of) {
            Some(points_selector::PointsSelectorOneOf::Points(list)) => list.ids,
            _ => return Err(Status::unimplemented("stand-in: delete by ids only")),
        };
        self.with_collection(&request.collection_name, |collection| {
            for id in &ids {
                collection.points.remove(&Key::from_id(id)?);
            }
            Ok(())
        })?;
        Ok(acknowledged())
    }

    async fn get(&self, request: Request<GetPoints>) -> Result<Response<GetResponse>, Status> {
        let request = request.into_inner();
        let payload = payload_wanted(request.with_payload.as_ref())?;
        let vectors = vectors_wanted(request.with_vectors.as_ref())?;
        let result = self.with_collection(&request.collection_name, |collection| {
            let mut found = Vec::new();
            for id in &request.ids {
                let key = Key::from_id(id)?;
                if let Some(point) = collection.points.get(&key) {
                    found.push(retrieved(&key, point, payload, vectors));
                }
            }
            Ok(found)
        })?;
        Ok(Response::new(GetResponse {
            result,
            time: 0.0,
            usage: None,
        }))
    }

    async fn create_field_index(
        &self,
        request: Request<CreateFieldIndexCollection>,
    ) -> Result<Response<PointsOperationResponse>, Status> {
        let request = request.into_inner();
        self.with_collection(&request.collection_name, |collection| {
            collection
                .indexes
                .push((request.field_name, request.field_type.unwrap_or(-1)));
            Ok(())
        })?;
        Ok(acknowledged())
    }

    async fn scroll(
        &self,
        request: Request<ScrollPoints>,
    ) -> Result<Response<ScrollResponse>, Status> {
        let request = request.into_inner();
        let payload = payload_wanted(request.with_payload.as_ref())?;
        let vectors = vectors_wanted(request.with_vectors.as_ref())?;
        let limit = request.limit.unwrap_or(10) as usize;
        let start = request.offset.as_ref().map(Key::from_id).transpose()?;
        let (result, next_page_offset) =
            self.with_collection(&request.collection_name, |collection| {
                let mut page = Vec::new();
                let mut next = None;
                let from = match &start {
                    Some(key) => collection.points.range(key.clone()..),
                    None => collection.points.range(..),
                };
                for (key, point) in from {
                    if !passes(request.filter.as_ref(), key, point)? {
                        continue;
                    }
                    if page.len() == limit {
                        next = Some(key.to_id());
                        break;
                    }
                    page.push(retrieved(key, point, payload, vectors));
                }
                Ok((page, next))
            })?;
        Ok(Response::new(ScrollResponse {
            next_page_offset,
            result,
            time: 0.0,
            usage: None,
        }))
    }

    async fn count(
        &self,
        request: Request<CountPoints>,
    ) -> Result<Response<CountResponse>, Status> {
        let request = request.into_inner();
        let count = self.with_collection(&request.collection_name, |collection| {
            let mut count = 0;
            for (key, point) in &collection.points {
                if passes(request.filter.as_ref(), key, point)? {
                    count += 1;
                }
            }
            Ok(count)
        })?;
        Ok(Response::new(CountResponse {
            result: Some(CountResult { count }),
            time: 0.0,
            usage: None,
        }))
    }

    async fn query(
        &self,
        request: Request<QueryPoints>,
    ) -> Result<Response<QueryResponse>, Status> {
        let request = request.into_inner();
        if !request.prefetch.is_empty() || request.using.is_some() {
            return Err(Status::unimplemented(
                "stand-in: plain nearest queries only",
            ));
        }
        let query = match request.query.and_then(|q| q.variant) {
            Some(query::Variant::Nearest(VectorInput {
                variant: Some(vector_input::Variant::Dense(dense)),
            })) => normalized(dense.data),
            _ => {
                return Err(Status::unimplemented(
                    "stand-in: dense nearest queries only",
                ));
            }
        };
        let payload = payload_wanted(request.with_payload.as_ref())?;
        let limit = request.limit.unwrap_or(10) as usize;
        let offset = request.offset.unwrap_or(0) as usize;
        let result = self.with_collection(&request.collection_name, |collection| {
            if query.len() != collection.dimension {
                return Err(Status::invalid_argument(
                    "Wrong input: Vector dimension error",
                ));
            }
            let mut scored = Vec::new();
            for (key, point) in &collection.points {
                if passes(request.filter.as_ref(), key, point)? {
                    let score: f32 = query.iter().zip(&point.vector).map(|(a, b)| a * b).sum();
                    scored.push((score, key, point));
                }
            }
            scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
            Ok(scored
                .into_iter()
                .skip(offset)
                .take(limit)
                .map(|(score, key, point)| ScoredPoint {
                    id: Some(key.to_id()),
                    payload: if payload {
                        point.payload.clone()
                    } else {
                        HashMap::new()
                    },
                    score,
                    version: 0,
                    vectors: None,
                    shard_key: None,
                    order_value: None,
                })
                .collect())
        })?;
        Ok(Response::new(QueryResponse {
            result,
            time: 0.0,
            usage: None,
        }))
    }

    unimplemented_calls! {
        update_vectors(UpdatePointVectors) -> PointsOperationResponse;
        delete_vectors(DeletePointVectors) -> PointsOperationResponse;
        set_payload(SetPayloadPoints) -> PointsOperationResponse;
        overwrite_payload(SetPayloadPoints) -> PointsOperationResponse;
        delete_payload(DeletePayloadPoints) -> PointsOperationResponse;
        clear_payload(ClearPayloadPoints) -> PointsOperationResponse;
        delete_field_index(DeleteFieldIndexCollection) -> PointsOperationResponse;
        create_vector_name(CreateVectorNameRequest) -> PointsOperationResponse;
        delete_vector_name(DeleteVectorNameRequest) -> PointsOperationResponse;
        search(SearchPoints) -> SearchResponse;
        search_batch(SearchBatchPoints) -> SearchBatchResponse;
        search_groups(SearchPointGroups) -> SearchGroupsResponse;
        recommend(RecommendPoints) -> RecommendResponse;
        recommend_batch(RecommendBatchPoints) -> RecommendBatchResponse;
        recommend_groups(RecommendPointGroups) -> RecommendGroupsResponse;
        discover(DiscoverPoints) -> DiscoverResponse;
        discover_batch(DiscoverBatchPoints) -> DiscoverBatchResponse;
        update_batch(UpdateBatchPoints) -> UpdateBatchResponse;
        query_batch(QueryBatchPoints) -> QueryBatchResponse;
        query_groups(QueryPointGroups) -> QueryGroupsResponse;
        facet(FacetCounts) -> FacetResponse;
        search_matrix_pairs(SearchMatrixPoints) -> SearchMatrixPairsResponse;
        search_matrix_offsets(SearchMatrixPoints) -> SearchMatrixOffsetsResponse;
    }
}

//! The store scenario against a real Qdrant server: runs when `QDRANT_URL` (the gRPC endpoint,
//! e.g. `http://localhost:6334`) is set, with `QDRANT_API_KEY` if the server needs one; skips
//! with a message otherwise. Start one with
//! `docker run -p 6333:6333 -p 6334:6334 qdrant/qdrant`.

mod scenario;

use lode_qdrant::QdrantConfig;

#[test]
fn full_scenario_against_a_real_qdrant() {
    let Ok(url) = std::env::var("QDRANT_URL") else {
        eprintln!(
            "skipped: set QDRANT_URL (e.g. http://localhost:6334) to run against a real Qdrant"
        );
        return;
    };
    let config = QdrantConfig::new(url).with_api_key(std::env::var("QDRANT_API_KEY").ok());
    // A fresh root gives fresh collection names, so earlier runs do not interfere.
    let root = tempfile::tempdir().unwrap();
    scenario::run(&config, root.path());
}

//! Hashes the built-in static embedding table at build time. The hash is the table's identity
//! (vectors made with another table are re-embedded), and computing it when lode starts would
//! read all 9 MB of the table in every process, including those that never embed.

use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let table = manifest.join("../../assets/embeddings/static-minilm.bin");
    println!("cargo:rerun-if-changed={}", table.display());
    // A build script reports failure by panicking: cargo prints the message and stops.
    let bytes = std::fs::read(&table)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", table.display()));
    let hash = xxhash_rust::xxh3::xxh3_64(&bytes);
    // The vector length, from the header (bytes 12..16, little endian); the embedder checks the
    // whole header again when it opens the table.
    let dims = bytes
        .get(12..16)
        .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default());
    std::fs::write(
        out.join("builtin_table_hash.rs"),
        format!(
            "/// xxh3-64 of the built-in table, computed by build.rs.\npub(crate) const BUILTIN_TABLE_HASH: u64 = {hash:#018x};\n\
             /// The built-in table's vector length, read from its header by build.rs.\npub(crate) const BUILTIN_TABLE_DIMS: usize = {dims};\n"
        ),
    )
    .unwrap_or_else(|error| panic!("cannot write to OUT_DIR: {error}"));
}

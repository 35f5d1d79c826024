//! The chunk catalog the benchmarks read their texts from.

use std::path::PathBuf;

/// Opens, read-only, the catalog named by the first argument that is not a flag, or the
/// benchmark corpus's (`bench/corpus/rust-vendor`); `None` (after saying why) when there is none.
pub fn open_catalog() -> Option<rusqlite::Connection> {
    let catalog = std::env::args()
        .skip(1)
        .find(|arg| !arg.starts_with('-'))
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../bench/corpus/rust-vendor/.lode/index/catalog.sqlite")
        });
    match rusqlite::Connection::open_with_flags(
        &catalog,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    ) {
        Ok(conn) => Some(conn),
        Err(_) => {
            eprintln!(
                "no catalog at {}: run `lode index bench/corpus/rust-vendor` first",
                catalog.display()
            );
            None
        }
    }
}

// Never built: the package exists only to pin the crates `cargo vendor` fetches.

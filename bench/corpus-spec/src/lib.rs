//! Intentionally empty: this crate only exists so `cargo vendor` has a dependency graph.

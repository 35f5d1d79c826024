//! Link options for the `lode` binary.
//!
//! Relative relocations are packed (`DT_RELR`, glibc 2.36+, binutils 2.38+): the binary has
//! ~73,000 of them, and applying a 1.7 MB table of `RELA` entries at every start took about a
//! tenth of a `lode search`. Only the binary is linked this way; libraries are unaffected.

fn main() {
    let linux_gnu = std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux")
        && std::env::var("CARGO_CFG_TARGET_ENV").as_deref() == Ok("gnu");
    if linux_gnu {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

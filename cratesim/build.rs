//! Export `getrandom` from the executable's dynamic symbol table, so that the `dlsym` lookups
//! of the `getrandom` crate and of std find `src/determinism.rs`'s definition before libc's.
fn main() {
    println!("cargo:rustc-link-arg=-Wl,--export-dynamic-symbol=getrandom");
}

//! Link settings of the `oncebox` executable.
//!
//! Lua C modules (`require` through `package.cpath`, e.g. the `http` rock's
//! `http.lib`) are shared objects that leave the Lua C API unresolved and take
//! it from the executable that loads them, as they take it from `tarantool`.
//! The executable therefore exports LuaJIT's API (and only that) in its
//! dynamic symbol table; an exported symbol is also kept by `--gc-sections`.

fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("linux") {
        return;
    }
    for pattern in ["lua_*", "luaL_*", "luaJIT_*", "luaopen_*"] {
        println!("cargo:rustc-link-arg-bin=oncebox=-Wl,--export-dynamic-symbol={pattern}");
    }
    println!("cargo:rerun-if-changed=build.rs");
}

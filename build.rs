//! Build settings of the `oncebox` executable.
//!
//! - LuaJIT is built here, from the `luajit-src` crate's sources, so that Lua tables
//!   iterate in Tarantool 2.6's order (see [`build_luajit`]). `mlua-sys` links the
//!   library by the name `.cargo/config.toml` gives it (`LUA_LIB_NAME`).
//! - Lua C modules (`require` through `package.cpath`, e.g. the `http` rock's
//!   `http.lib`) are shared objects that leave the Lua C API unresolved and take
//!   it from the executable that loads them, as they take it from `tarantool`.
//!   The executable therefore exports LuaJIT's API (and only that) in its
//!   dynamic symbol table; an exported symbol is also kept by `--gc-sections`.
//! - LuaJIT's own `jit.*` Lua modules (the profiler `jit.p`, `jit.v`, `jit.dump`,
//!   ...) of that build, with the `jit.vmdef` its VM generates, are listed in
//!   `$OUT_DIR/jit_modules.rs` for the executable to embed, as Tarantool embeds
//!   them (see [`list_jit_modules`]).

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The library's file name stem, as `.cargo/config.toml`'s `LUA_LIB_NAME` says.
const LIBRARY_NAME: &str = "oncebox_luajit";

/// The `jit.*` modules Tarantool 2.6 loads at start (`src/lua/init.c`), in its
/// order, by their file names in LuaJIT's `src/jit`.
const JIT_MODULES: [&str; 9] = ["vmdef", "bc", "bcsave", "dis_x86", "dis_x64", "dump", "v", "p", "zone"];

/// Source changes, each `(file, text, replacement)`; each text occurs exactly once.
///
/// Upstream LuaJIT places a string key in a table by the string's id, a counter
/// started from a random seed in every process, so a table's `pairs()` order (and
/// with it every YAML, JSON and msgpack map Lua prints or sends) changes from one
/// run to the next. Tarantool 2.6's LuaJIT places it by a hash of its bytes, with
/// no seed. With these changes a string's id is that hash (sign-extending the bytes
/// of strings shorter than 4, as 2.6's does with `char`), and `LUAJIT_SECURITY_STRHASH=0`
/// keeps it from being replaced by a second hash on long collision chains: the same
/// keys inserted the same way iterate as in 2.6. As in 2.6, a client that chooses
/// many keys of one hash can make a table slow (hash flooding).
///
/// Upstream LuaJIT also rounds a number it formats (`tostring`, `string.format`
/// `%g`/`%e`/`%f`) to even where the digits cut off are exactly half a unit;
/// 2.6's rounds those half away from zero, as LuaJIT did before (`%.0f` of 0.5 is
/// `1`, `tostring(123456789012345)` is `1.2345678901235e+14`). The last three
/// changes put that rounding back.
const PATCHES: &[(&str, &str, &str)] = &[
    (
        "lj_str.c",
        "#ifndef STRID_RESEED_INTERVAL\n  s->sid = g->str.id++;",
        "#ifndef STRID_RESEED_INTERVAL\n  s->sid = hash;",
    ),
    ("lj_str.c", "g->str.seed = lj_prng_u64(&g->prng);", "g->str.seed = 0;"),
    (
        "lj_str.c",
        "    a = *(const uint8_t *)str;\n    h ^= *(const uint8_t *)(str+len-1);\n    b = *(const uint8_t *)(str+(len>>1));",
        "    a = *(const int8_t *)str;\n    h ^= *(const int8_t *)(str+len-1);\n    b = *(const int8_t *)(str+(len>>1));",
    ),
    (
        "lj_strfmt_num.c",
        "      /* Must not limit precision here or nd_round cannot round to even.\n      ** stop1 = 63 - (int32_t)STRFMT_PREC(sf) / 9;\n      */",
        "      stop1 = 63 - (int32_t)STRFMT_PREC(sf) / 9;",
    ),
    ("lj_strfmt_num.c", "ndhi = nd_round(nd, ndlo, ndhi, nde - prec - 1);", "ndhi = nd_add_m10e(nd, ndhi, 5, nde - prec - 1);"),
    ("lj_strfmt_num.c", "ndhi = nd_round(nd, ndlo, ndhi, 0 - prec - 1);", "ndhi = nd_add_m10e(nd, ndhi, 5, 0 - prec - 1);"),
];

/// Compile-time settings: string ids without reseeding (`STRID=0`), as the patch
/// above assumes, and no dense rehash of colliding strings (`STRHASH=0`).
const DEFINES: &str = "-DLUAJIT_SECURITY_STRID=0 -DLUAJIT_SECURITY_STRHASH=0";

fn main() {
    build_luajit();
    if env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        for pattern in ["lua_*", "luaL_*", "luaJIT_*", "luaopen_*"] {
            println!("cargo:rustc-link-arg-bin=oncebox=-Wl,--export-dynamic-symbol={pattern}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}

/// Builds the static LuaJIT library with [`PATCHES`] and [`DEFINES`] into
/// `$OUT_DIR/lib` and tells Cargo to search there.
///
/// `luajit-src` first builds its sources unchanged in a copy of their own (it has no
/// way to change them); that copy is patched and built again with `make`.
fn build_luajit() {
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let target = env::var("TARGET").expect("cargo sets TARGET");
    let host = env::var("HOST").expect("cargo sets HOST");
    let stage = out_dir.join("luajit-stage");
    luajit_src::Build::new().out_dir(&stage).target(&target).host(&host).debug(false).build();
    let source = stage.join("luajit-build").join("src");
    for (file, text, replacement) in PATCHES {
        patch(&source.join(file), text, replacement);
    }
    run_make(&source, &["clean"]);
    let jobs = env::var("NUM_JOBS").unwrap_or_else(|_| "1".to_owned());
    run_make(&source, &["-j", &jobs, "libluajit.a", "jit/vmdef.lua"]);
    list_jit_modules(&source.join("jit"), &out_dir.join("jit_modules.rs"));
    let lib_dir = out_dir.join("lib");
    fs::create_dir_all(&lib_dir).expect("create the library directory");
    fs::copy(source.join("libluajit.a"), lib_dir.join(format!("lib{LIBRARY_NAME}.a"))).expect("copy libluajit.a");
    println!("cargo:rustc-link-search=native={}", lib_dir.display());
    println!("cargo:rerun-if-env-changed=CC");
}

/// Writes `list`: the constant `JIT_MODULES`, each of [`JIT_MODULES`] as its
/// module name and its text (`include_str!` of the file in `jit_dir`).
fn list_jit_modules(jit_dir: &Path, list: &Path) {
    let mut text = String::from(
        "/// LuaJIT's `jit.*` Lua modules of the linked build: (module name, source).\n\
         pub const JIT_MODULES: [(&str, &str); 9] = [\n",
    );
    for name in JIT_MODULES {
        let file = jit_dir.join(format!("{name}.lua"));
        assert!(file.exists(), "LuaJIT's build has no {}", file.display());
        text.push_str(&format!("    (\"jit.{name}\", include_str!({:?})),\n", file.display().to_string()));
    }
    text.push_str("];\n");
    fs::write(list, text).expect("write the list of jit modules");
}

/// Replaces `text`, which must occur exactly once in `file`, with `replacement`.
fn patch(file: &Path, text: &str, replacement: &str) {
    let source = fs::read_to_string(file).unwrap_or_else(|e| panic!("read {}: {e}", file.display()));
    let found = source.matches(text).count();
    assert!(
        found == 1,
        "{}: expected the text to patch once, found it {found} times (another luajit-src version?):\n{text}",
        file.display()
    );
    fs::write(file, source.replacen(text, replacement, 1)).unwrap_or_else(|e| panic!("write {}: {e}", file.display()));
}

/// Runs LuaJIT's makefile in `dir` for a static, position-independent library.
fn run_make(dir: &Path, args: &[&str]) {
    let cc = env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    let status = Command::new("make")
        .current_dir(dir)
        .args(args)
        .arg(format!("CC={cc}"))
        .arg("BUILDMODE=static")
        .arg(format!("XCFLAGS=-fPIC {DEFINES}"))
        .status()
        .expect("run make (LuaJIT's build needs make and a C compiler)");
    assert!(status.success(), "make {args:?} in {} failed: {status}", dir.display());
}

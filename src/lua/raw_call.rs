//! Raw access to the Lua stack inside a protected call, without a new closure
//! per call.
//!
//! mlua's `Lua::exec_raw` pushes two fresh C closures for every call under
//! LuaJIT (its protected-call wrapper and error handler): garbage the walks of
//! [`super::plain_encode`], [`super::plain_decode`] and [`super::plain_json`]
//! made on every value they wrote or read (a quarter of a three-field
//! `space:replace` from Lua in perf). Here one C function is made per Lua
//! state, once; each call hands it the work through a thread-local slot and
//! runs it with mlua's `Function::call` (a cached error handler, no allocation).

#![allow(unsafe_code, reason = "a closure handed to a C function through a raw pointer; see the SAFETY notes")]

use std::cell::Cell;
use std::ffi::c_int;

use mlua::{ffi, FromLuaMulti, Function, IntoLuaMulti, Lua};

/// The work of the call in progress (its closure, type-erased).
type Job = *mut (dyn FnMut(*mut ffi::lua_State) + 'static);

thread_local! {
    /// The job the entry function runs next.
    static JOB: Cell<Option<Job>> = const { Cell::new(None) };
}

/// The entry function of a Lua state (its app data).
struct Entry(Function);

/// Runs `f` on `lua`'s stack in a protected call, `args` on the stack (from
/// index 1), as `Lua::exec_raw` does: what is on the stack when `f` returns is
/// the result. A Lua error raised in `f` is the error returned.
///
/// # Safety
/// As `Lua::exec_raw`: `f` uses the Lua C API correctly and does not panic.
///
/// # Errors
/// Lua's (what `f` raised, out of memory).
pub unsafe fn exec<R: FromLuaMulti>(
    lua: &Lua,
    args: impl IntoLuaMulti,
    f: impl FnOnce(*mut ffi::lua_State),
) -> mlua::Result<R> {
    let entry = match lua.app_data_ref::<Entry>() {
        Some(e) => e.0.clone(),
        None => {
            // SAFETY: `entry` follows the lua_CFunction contract.
            let made = unsafe { lua.create_c_function(entry)? };
            lua.set_app_data(Entry(made.clone()));
            made
        }
    };
    let mut f = Some(f);
    let mut job = move |state: *mut ffi::lua_State| {
        if let Some(f) = f.take() {
            f(state);
        }
    };
    let job: &mut dyn FnMut(*mut ffi::lua_State) = &mut job;
    // SAFETY: the pointer is used only by `entry` during the call below, while
    // `job` lives; the slot is put back as it was before returning (a job may
    // run another).
    let job: Job = unsafe { std::mem::transmute::<&mut dyn FnMut(*mut ffi::lua_State), Job>(job) };
    let previous = JOB.with(|slot| slot.replace(Some(job)));
    let result = entry.call::<R>(args);
    JOB.with(|slot| slot.set(previous));
    result
}

/// The C function every call goes through: runs the job in the slot, and gives
/// back everything on its stack.
unsafe extern "C-unwind" fn entry(state: *mut ffi::lua_State) -> c_int {
    if let Some(job) = JOB.with(Cell::take) {
        // SAFETY: set by `exec`, which waits for this call; taken, so a job that
        // runs another does not run itself again.
        unsafe { (*job)(state) };
    }
    // SAFETY: a valid state, inside its call.
    unsafe { ffi::lua_gettop(state) }
}

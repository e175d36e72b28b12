//! The server's global allocator: mimalloc, called so that it stays on its fast path.
//!
//! The `mimalloc` crate's allocator passes every request through mimalloc's
//! aligned entry points. For 16-byte alignment (every allocation LuaJIT makes
//! through mlua asks for it) mimalloc v3 takes its fast path only while the next
//! free block happens to be aligned, and otherwise falls back to over-allocating
//! unless the size is a power of two: about six slow allocations per Lua CALL.
//! Here a request aligned to 16 bytes or less goes to plain `mi_malloc`, its size
//! rounded up to a multiple of 16 when it asks for 16: mimalloc's size classes
//! that are multiples of 16 bytes hold only 16-byte-aligned blocks (checked, with
//! the aligned entry point as a fallback), and every block is 8-byte aligned.

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys::{
    mi_free, mi_malloc, mi_malloc_aligned, mi_realloc, mi_realloc_aligned, mi_zalloc, mi_zalloc_aligned,
};

/// The largest alignment served by plain `mi_malloc` (with sizes rounded to it).
const PLAIN_ALIGN: usize = 16;

/// mimalloc, with requests aligned to at most 16 bytes served by its plain entry points.
#[derive(Debug, Default)]
pub struct Allocator;

/// The size asked of mimalloc for `size` bytes aligned to `align` (at most [`PLAIN_ALIGN`]).
fn plain_size(size: usize, align: usize) -> usize {
    if align == PLAIN_ALIGN {
        size.next_multiple_of(PLAIN_ALIGN)
    } else {
        size
    }
}

fn is_aligned(p: *mut c_void, align: usize) -> bool {
    (p as usize) & (align - 1) == 0
}

/// A mimalloc entry point that allocates `size` bytes (`mi_malloc`, `mi_zalloc`).
type Plain = unsafe extern "C" fn(usize) -> *mut c_void;
/// A mimalloc entry point that allocates `size` bytes aligned to `alignment`.
type Aligned = unsafe extern "C" fn(usize, usize) -> *mut c_void;

/// Allocates for `layout` with `plain` when its alignment allows, checking the
/// block's alignment, and with `aligned` otherwise.
///
/// # Safety
/// As [`GlobalAlloc::alloc`]; `plain` and `aligned` are mimalloc's.
unsafe fn allocate(layout: Layout, plain: Plain, aligned: Aligned) -> *mut u8 {
    let align = layout.align();
    if align > PLAIN_ALIGN {
        // SAFETY: mimalloc's own aligned allocation.
        return unsafe { aligned(layout.size(), align) }.cast();
    }
    let size = plain_size(layout.size(), align);
    // SAFETY: a plain allocation; freed below if it is not aligned enough.
    let p = unsafe { plain(size) };
    if is_aligned(p, align) {
        return p.cast();
    }
    // SAFETY: `p` is mimalloc's and unused.
    unsafe {
        mi_free(p);
        aligned(size, align).cast()
    }
}

// SAFETY: every block handed out is at least the layout's size and aligned to its
// alignment (checked where mimalloc does not guarantee it), and every block is
// mimalloc's, which frees and resizes a block whatever layout it is handed.
unsafe impl GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as the caller promises; mimalloc's allocating entry points.
        unsafe { allocate(layout, mi_malloc, mi_malloc_aligned) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as the caller promises; mimalloc's zeroing entry points.
        unsafe { allocate(layout, mi_zalloc, mi_zalloc_aligned) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` came from mimalloc through this allocator.
        unsafe { mi_free(ptr.cast()) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let align = layout.align();
        if align > PLAIN_ALIGN {
            // SAFETY: `ptr` is mimalloc's, allocated with this alignment.
            return unsafe { mi_realloc_aligned(ptr.cast(), new_size, align) }.cast();
        }
        let size = plain_size(new_size, align);
        // SAFETY: `ptr` is mimalloc's; on failure it is left as it was.
        let p = unsafe { mi_realloc(ptr.cast(), size) };
        if is_aligned(p, align) {
            return p.cast();
        }
        // SAFETY: `p` holds the block's contents (at least `new_size` bytes); they
        // move to an aligned block and `p` is freed.
        unsafe {
            let q = mi_malloc_aligned(size, align);
            if !q.is_null() {
                std::ptr::copy_nonoverlapping(p.cast::<u8>(), q.cast::<u8>(), new_size);
                mi_free(p);
            }
            q.cast()
        }
    }
}

extern "C" {
    /// mimalloc's `mi_collect`: frees what the calling thread's heap holds unused;
    /// with `force`, its free pages go back to the system at once.
    fn mi_collect(force: bool);
}

/// Gives the memory the calling thread freed back to the system now, not after
/// mimalloc's purge delay (a second in v3, counted only while the thread keeps
/// allocating): for a thread about to end, or to idle after a burst of work.
pub fn release_free_memory() {
    // SAFETY: mimalloc's own entry point, on the calling thread's heap.
    unsafe { mi_collect(true) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_aligned_and_keep_their_contents() {
        let a = Allocator;
        for align in [1, 8, 16, 64] {
            for size in [1, 8, 24, 40, 56, 200, 4000] {
                let layout = Layout::from_size_align(size, align).expect("a valid layout");
                // SAFETY: non-zero sizes, each block freed once with its current layout.
                unsafe {
                    let p = a.alloc(layout);
                    assert!(!p.is_null());
                    assert_eq!(p as usize % align, 0, "size {size}, align {align}");
                    p.write_bytes(0xa5, size);
                    let q = a.realloc(p, layout, size * 3);
                    assert_eq!(q as usize % align, 0, "size {size}, align {align}, grown");
                    assert!(std::slice::from_raw_parts(q, size).iter().all(|b| *b == 0xa5));
                    a.dealloc(q, Layout::from_size_align(size * 3, align).expect("a valid layout"));
                    let z = a.alloc_zeroed(layout);
                    assert_eq!(z as usize % align, 0);
                    assert!(std::slice::from_raw_parts(z, size).iter().all(|b| *b == 0));
                    a.dealloc(z, layout);
                }
            }
        }
    }
}

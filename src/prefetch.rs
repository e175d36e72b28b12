//! A hint to the CPU to start reading memory the program will soon need.
//!
//! Where a batch of lookups each miss the cache, asking for every line first lets
//! the misses overlap. A prefetch reads nothing into the program and never
//! faults, whatever the address; on targets without one it does nothing.

/// Asks for the cache line holding `p` to be read into the cache, without waiting.
#[inline]
pub fn read<T: ?Sized>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 only hints the cache; it does not dereference `p` in the
    // program's sense and cannot fault, even for an invalid address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

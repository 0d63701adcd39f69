//! Giving freed memory back to the system. glibc's allocator keeps what a burst of work freed
//! (per-thread arenas, fragments below the top of the heap) as part of the process's resident
//! size; a long-lived process that built a large catalog or answered a large list asks it to
//! return those pages. Elsewhere (other C libraries, other systems) this does nothing.

/// Returns freed heap pages to the system (glibc's `malloc_trim`).
pub fn release_freed() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` only walks the allocator's own free lists; it takes no pointers.
    unsafe {
        nix::libc::malloc_trim(0);
    }
}

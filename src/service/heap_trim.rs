//! Freed heap goes back to the system: every [`TRIM_EVERY`] the service asks its
//! allocators to return their free pages (`mi_collect` for mimalloc, the `rollboard`
//! binary's; `malloc_trim` for glibc's, a library user's service's). Either keeps what a
//! burst freed (the retirer's pass over every board, a big batch), so the process's
//! resident memory would stay at its highest point: with 30,000 boards that was
//! ~3–5 KB a board, against ~0.7 KB of live heap. mimalloc returns pages by itself
//! only while it is called, after a delay; an idle service would keep them.

use std::time::Duration;

use tokio::task::JoinHandle;

/// How often freed heap is returned.
pub const TRIM_EVERY: Duration = Duration::from_secs(10);

/// Returns freed heap every [`TRIM_EVERY`], until the task is aborted (a no-op where the
/// allocator is not glibc's).
pub fn spawn() -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut every = tokio::time::interval(TRIM_EVERY);
        loop {
            every.tick().await;
            // It walks the arenas (about a millisecond for a few hundred MB): off the
            // runtime's workers.
            let _ = tokio::task::spawn_blocking(trim).await;
        }
    })
}

/// Returns freed heap to the system now: mimalloc's (the binary's allocator) and glibc's.
pub fn trim() {
    // SAFETY: mi_collect frees and returns only mimalloc's own unused memory, and may be
    // called from any thread at any time (a no-op where mimalloc holds nothing).
    unsafe {
        libmimalloc_sys::mi_collect(true);
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory of the allocator's own arenas; it
    // takes the arenas' locks, so it is safe to call while other threads allocate.
    unsafe {
        libc::malloc_trim(0);
    }
}

//! The `rollboard` binary's allocator (and the benchmark's, which measures that binary's
//! service): mimalloc, made for many small short-lived objects (a request's allocations
//! cost about a third of glibc's, `docs/performance.md`), called the way std's own
//! allocator calls the C library. An allocation whose alignment every mimalloc block
//! already has (8: blocks are word multiples from a 16-aligned page start) goes through
//! `mi_malloc`, only a larger alignment through `mi_malloc_aligned`. The `mimalloc`
//! crate sends every allocation through `mi_malloc_aligned`, whose fallback, taken
//! whenever a page's free list runs empty, over-allocates a block of any size that is
//! not a power of two (about 11 times a like).

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys::{
    mi_free, mi_malloc, mi_malloc_aligned, mi_realloc, mi_realloc_aligned, mi_zalloc,
    mi_zalloc_aligned,
};

/// The alignment every mimalloc block has.
const BLOCK_ALIGN: usize = 8;

/// mimalloc, plain where the alignment allows (see the module header): the binary's
/// `#[global_allocator]`, and an embedding service's if it likes.
pub struct Mimalloc;

// SAFETY: each function hands the layout's size (and alignment, when larger than every
// block's) to mimalloc, which returns memory of that size and alignment or null, and
// frees or grows only blocks it returned.
unsafe impl GlobalAlloc for Mimalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: see the impl.
        unsafe { allocate(layout, mi_malloc, mi_malloc_aligned) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: see the impl.
        unsafe { allocate(layout, mi_zalloc, mi_zalloc_aligned) }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: see the impl.
        unsafe { mi_free(ptr.cast::<c_void>()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let ptr = ptr.cast::<c_void>();
        // SAFETY: see the impl.
        unsafe {
            match layout.align() <= BLOCK_ALIGN {
                true => mi_realloc(ptr, new_size),
                false => mi_realloc_aligned(ptr, new_size, layout.align()),
            }
        }
        .cast()
    }
}

/// A block of `layout` from `plain` (size) when every block has its alignment, else from
/// `aligned` (size, alignment).
///
/// # Safety
/// As [`GlobalAlloc::alloc`].
#[inline]
unsafe fn allocate(
    layout: Layout,
    plain: unsafe extern "C" fn(usize) -> *mut c_void,
    aligned: unsafe extern "C" fn(usize, usize) -> *mut c_void,
) -> *mut u8 {
    // SAFETY: both return a block of at least the size asked, aligned as asked, or null.
    unsafe {
        match layout.align() <= BLOCK_ALIGN {
            true => plain(layout.size()),
            false => aligned(layout.size(), layout.align()),
        }
    }
    .cast()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every alignment a layout may ask, from 1 to 4096, at sizes that are and are not
    /// multiples of it, eight blocks at a time (neighbours in one page, where a block
    /// aligned by chance would hide a misaligned one): each block is aligned, zeroed
    /// when asked, and keeps its bytes when grown.
    #[test]
    fn blocks_have_the_alignment_asked_and_keep_their_bytes() {
        for shift in 0..=12 {
            let align = 1usize << shift;
            for size in [1, 3, 8, 24, 40, 100, 1000, 5000] {
                let layout = Layout::from_size_align(size, align).unwrap();
                let grown_layout = Layout::from_size_align(size * 3, align).unwrap();
                // SAFETY: layouts of non-zero size; each block is freed once, by the
                // allocator that made it, with its layout.
                unsafe {
                    let zeroed: Vec<*mut u8> =
                        (0..8).map(|_| Mimalloc.alloc_zeroed(layout)).collect();
                    for &block in &zeroed {
                        assert_eq!(block as usize % align, 0, "zeroed {size} at {align}");
                        assert!((0..size).all(|i| *block.add(i) == 0));
                    }
                    let blocks: Vec<*mut u8> = (0..8).map(|_| Mimalloc.alloc(layout)).collect();
                    for (&block, &old) in blocks.iter().zip(&zeroed) {
                        Mimalloc.dealloc(old, layout);
                        assert_eq!(block as usize % align, 0, "{size} at {align}");
                        for i in 0..size {
                            *block.add(i) = i as u8;
                        }
                        let grown = Mimalloc.realloc(block, layout, size * 3);
                        assert_eq!(grown as usize % align, 0, "grown {size} at {align}");
                        assert!((0..size).all(|i| *grown.add(i) == i as u8));
                        Mimalloc.dealloc(grown, grown_layout);
                    }
                }
            }
        }
    }
}

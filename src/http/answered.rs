//! The bodies of the last pages answered on this thread, so that a page equal to one of
//! them is answered with the same bytes instead of being written again.
//!
//! Reads of one key answer equal pages in bursts: exact reads that share a store fetch
//! (`rollboard/coalesce.rs`: under load, every read of a top-10 that arrived during the
//! previous fetch) and cached reads within the same millisecond (`max_staleness_ms`).
//! Writing a top-10 page cost ~4,000 instructions a read; comparing it with a kept one
//! costs ~300 (the page's own `==`: every field, so only an equal page, whose bytes are
//! the same, takes a kept body). Only windowed pages are kept: a trending page's scores
//! are floats, and 0.0 equals -0.0 but is written otherwise.

use std::cell::RefCell;

use axum::body::Bytes;

use crate::BoardPage;

/// Pages kept per thread: the hot reads of a few windows or boards.
const KEPT: usize = 4;

/// A thread's kept pages, each with its body, replaced in turn.
#[derive(Default)]
struct Kept {
    pages: [Option<(BoardPage, Bytes)>; KEPT],
    /// The one the next page written replaces.
    next: usize,
}

thread_local! {
    static KEPT_PAGES: RefCell<Kept> = RefCell::default();
}

/// The body of `page`: that of an equal page kept on this thread, else `write`'s, and
/// `page` then kept with it (a windowed page, see the module docs).
pub(super) fn body(page: BoardPage, write: impl FnOnce(&BoardPage) -> Vec<u8>) -> Bytes {
    if let BoardPage::Trending(_) = page {
        return write(&page).into();
    }
    KEPT_PAGES.with_borrow_mut(|kept| {
        let found = kept.pages.iter().flatten().find(|(p, _)| *p == page);
        if let Some((_, body)) = found {
            return body.clone();
        }
        let body = Bytes::from(write(&page));
        kept.pages[kept.next] = Some((page, body.clone()));
        kept.next = (kept.next + 1) % KEPT;
        body
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::read_json::tests::trending;
    use crate::{BoardName, Entry, Span, TopPage};
    use std::cell::Cell;

    fn page(window: u64, age_ms: u64) -> BoardPage {
        BoardPage::Windowed(TopPage {
            board: BoardName::parse("hot-posts").unwrap(),
            window: Span::from_seconds(window).unwrap(),
            from: 1_795_647_600,
            to: 1_795_734_000,
            behind: false,
            lag_ms: 0,
            age_ms,
            entries: vec![Entry {
                rank: 1,
                member: "post:7".into(),
                score: 12,
                data: None,
                pinned: false,
                movement: None,
            }],
            next_offset: None,
        })
    }

    /// How many times `body` wrote a page of those given, each written as its `Debug`.
    fn writes(pages: impl IntoIterator<Item = BoardPage>) -> usize {
        let written = Cell::new(0);
        for page in pages {
            let expected = format!("{page:?}");
            let body = body(page, |p| {
                written.set(written.get() + 1);
                format!("{p:?}").into_bytes()
            });
            assert_eq!(body, expected.as_bytes());
        }
        written.get()
    }

    #[test]
    fn an_equal_page_is_answered_with_the_kept_body() {
        // Each test runs on its own thread, with its own kept pages.
        assert_eq!(writes([page(3_600, 0), page(3_600, 0)]), 1);
        // Any field that differs (here the age of a cached answer) is a page of its own.
        assert_eq!(writes([page(3_600, 1), page(3_600, 1)]), 1);
        assert_eq!(writes([page(3_600, 0), page(3_600, 1)]), 0);
    }

    #[test]
    fn the_last_four_pages_are_kept() {
        let pages = || (1..=5).map(|h| page(3_600 * h, 0));
        assert_eq!(writes(pages()), 5);
        // The first was replaced by the fifth; the other three are kept.
        assert_eq!(writes(pages().skip(2).take(3)), 0);
        assert_eq!(writes(pages().take(1)), 1);
    }

    #[test]
    fn trending_pages_are_not_kept() {
        assert_eq!(writes([trending(0.0), trending(0.0)]), 2);
    }
}

//! [`ReadJson`]: the answers of the hot reads (a page of a ranking, a member's
//! standing) as JSON, written by hand.
//!
//! serde's derived `Serialize` spent a quarter of a cached top-10 read's instructions on
//! its page (`docs/performance.md`): each field's key escaped byte by byte, each entry a
//! map through the tagged enum's serializer, the window formatted through `fmt`. A
//! windowed board's page and standing are written here with their keys as constants and
//! only member names escaped; the bytes are serde's (the tests compare them), and
//! anything less common (a trending board's answer, with data, a pin, movement or a
//! hidden member) is left to serde. A page equal to one this thread answered lately is
//! answered with that one's bytes ([`answered`]).

use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::answered;
use super::json::{CAPACITY, answer};
use crate::{BoardPage, Entry, MemberStanding, Span, Standing, TopPage};

/// A read's answer, as `application/json`.
#[derive(Debug)]
pub struct ReadJson<T>(pub T);

impl IntoResponse for ReadJson<BoardPage> {
    fn into_response(self) -> Response {
        answer(answered::body(self.0, |page| {
            let mut body = Vec::with_capacity(CAPACITY);
            match page {
                BoardPage::Windowed(page) => write_page(&mut body, page),
                trending => serialize(&mut body, trending),
            }
            body
        }))
    }
}

impl IntoResponse for ReadJson<MemberStanding> {
    fn into_response(self) -> Response {
        let mut body = Vec::with_capacity(CAPACITY);
        match &self.0 {
            MemberStanding::Windowed(s) if s.data.is_none() && !s.hidden => {
                write_standing(&mut body, s)
            }
            other => serialize(&mut body, other),
        }
        answer(body)
    }
}

/// A windowed page, as `BoardPage::Windowed(page)` serializes.
fn write_page(out: &mut Vec<u8>, page: &TopPage) {
    out.extend_from_slice(br#"{"kind":"windowed","board":"#);
    serialize(out, page.board.as_str());
    write_coverage(
        out,
        page.window,
        page.from,
        page.to,
        page.behind,
        page.lag_ms,
    );
    out.extend_from_slice(br#","age_ms":"#);
    write_int(out, page.age_ms);
    out.extend_from_slice(br#","entries":["#);
    for (i, entry) in page.entries.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_entry(out, entry);
    }
    out.push(b']');
    if let Some(next) = page.next_offset {
        out.extend_from_slice(br#","next_offset":"#);
        write_int(out, next);
    }
    out.push(b'}');
}

/// A standing without data and not hidden, as `MemberStanding::Windowed(s)` serializes.
fn write_standing(out: &mut Vec<u8>, s: &Standing) {
    out.extend_from_slice(br#"{"kind":"windowed","member":"#);
    serialize(out, s.member.as_str());
    out.extend_from_slice(br#","score":"#);
    write_int(out, s.score);
    out.extend_from_slice(br#","rank":"#);
    match s.rank {
        Some(rank) => write_int(out, rank),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(br#","percentile":"#);
    serialize(out, &s.percentile);
    write_coverage(out, s.window, s.from, s.to, s.behind, s.lag_ms);
    out.extend_from_slice(br#","age_ms":"#);
    write_int(out, s.age_ms);
    out.push(b'}');
}

/// `,"window":…,"from":…,"to":…,"behind":…,"lag_ms":…`: what a read's totals cover.
fn write_coverage(out: &mut Vec<u8>, window: Span, from: i64, to: i64, behind: bool, lag: u64) {
    out.extend_from_slice(br#","window":""#);
    let (count, unit) = window.canonical();
    write_int(out, count);
    out.push(unit as u8);
    out.extend_from_slice(br#"","from":"#);
    write_int(out, from);
    out.extend_from_slice(br#","to":"#);
    write_int(out, to);
    out.extend_from_slice(if behind {
        br#","behind":true,"lag_ms":"#
    } else {
        br#","behind":false,"lag_ms":"#
    });
    write_int(out, lag);
}

/// An entry: its three fields by hand, one with anything more through serde.
fn write_entry(out: &mut Vec<u8>, entry: &Entry) {
    if entry.data.is_some() || entry.pinned || entry.movement.is_some() {
        return serialize(out, entry);
    }
    out.extend_from_slice(br#"{"rank":"#);
    write_int(out, entry.rank);
    out.extend_from_slice(br#","member":"#);
    serialize(out, entry.member.as_str());
    out.extend_from_slice(br#","score":"#);
    write_int(out, entry.score);
    out.push(b'}');
}

fn write_int(out: &mut Vec<u8>, n: impl itoa::Integer) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

/// Through serde_json: a string escaped as it escapes strings, or a whole value.
fn serialize(out: &mut Vec<u8>, value: &(impl Serialize + ?Sized)) {
    // Writing into a `Vec` fails only for a map whose keys are not strings: none here.
    serde_json::to_writer(out, value).expect("a page serializes");
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::{BoardName, Movement, TrendEntry, TrendPage};

    fn entry(rank: u64, member: &str, score: i64) -> Entry {
        Entry {
            rank,
            member: member.into(),
            score,
            data: None,
            pinned: false,
            movement: None,
        }
    }

    fn page(entries: Vec<Entry>) -> TopPage {
        TopPage {
            board: BoardName::parse("hot-posts.v2").unwrap(),
            window: Span::from_seconds(86_400).unwrap(),
            from: 1_795_647_600,
            to: 1_795_734_000,
            behind: false,
            lag_ms: 0,
            age_ms: 17,
            entries,
            next_offset: None,
        }
    }

    fn rendered(page: BoardPage) -> String {
        body(ReadJson(page))
    }

    fn body(answer: impl IntoResponse) -> String {
        let response = answer.into_response();
        let body = futures_util::FutureExt::now_or_never(axum::body::to_bytes(
            response.into_body(),
            usize::MAX,
        ));
        String::from_utf8(body.unwrap().unwrap().to_vec()).unwrap()
    }

    /// The hand-written bytes equal serde's for the page.
    fn assert_as_serde(page: BoardPage) {
        let serde = serde_json::to_string(&page).unwrap();
        assert_eq!(rendered(page), serde);
    }

    #[test]
    fn a_windowed_page_is_written_as_serde_writes_it() {
        let members = ["post:7", "naïve \"quoted\" \\ back\nline\u{1}", "😀", "a/b"];
        let entries = members.iter().enumerate();
        let entries = entries.map(|(i, m)| entry(i as u64 + 1, m, 9 - 3 * i as i64));
        let mut full = page(entries.collect());
        assert_as_serde(BoardPage::Windowed(full.clone()));
        full.behind = true;
        full.lag_ms = 3_600_123;
        full.from = -5;
        full.next_offset = Some(12);
        full.window = Span::from_seconds(90).unwrap();
        full.entries[1].data = Some(None);
        full.entries[2].pinned = true;
        full.entries[3].movement = Some(Movement { was: Some(2) });
        full.entries[0].score = i64::MIN;
        full.entries[0].rank = u64::MAX;
        assert_as_serde(BoardPage::Windowed(full));
        assert_as_serde(BoardPage::Windowed(page(Vec::new())));
    }

    #[test]
    fn a_page_starts_with_its_kind_and_lists_entries_in_order() {
        let text = rendered(BoardPage::Windowed(page(vec![
            entry(1, "b", 5),
            entry(2, "a", 4),
        ])));
        assert_eq!(
            text,
            r#"{"kind":"windowed","board":"hot-posts.v2","window":"1d","from":1795647600,"to":1795734000,"behind":false,"lag_ms":0,"age_ms":17,"entries":[{"rank":1,"member":"b","score":5},{"rank":2,"member":"a","score":4}]}"#
        );
    }

    #[test]
    fn a_standing_is_written_as_serde_writes_it() {
        let mut s = Standing {
            member: "post:\"7\"".into(),
            score: -3,
            rank: None,
            percentile: 0.0,
            window: Span::from_seconds(3_600).unwrap(),
            from: 1_795_647_600,
            to: 1_795_734_000,
            behind: true,
            lag_ms: 250,
            age_ms: 0,
            data: None,
            hidden: false,
        };
        let rendered = |s: &Standing| body(ReadJson(MemberStanding::Windowed(s.clone())));
        let serde = |s: &Standing| serde_json::to_string(&MemberStanding::Windowed(s.clone()));
        assert_eq!(rendered(&s), serde(&s).unwrap());
        assert!(rendered(&s).contains(r#""rank":null,"percentile":0.0,"window":"1h""#));
        (s.score, s.rank, s.percentile, s.behind) = (12, Some(2), 2.0 / 3.0, false);
        assert_eq!(rendered(&s), serde(&s).unwrap());
        s.hidden = true;
        assert_eq!(rendered(&s), serde(&s).unwrap());
        (s.hidden, s.data) = (false, Some(None));
        assert_eq!(rendered(&s), serde(&s).unwrap());
    }

    /// A trending board's page of one entry of `score`.
    pub(in crate::http) fn trending(score: f64) -> BoardPage {
        BoardPage::Trending(TrendPage {
            board: BoardName::parse("t").unwrap(),
            at: 1.5,
            age_ms: 0,
            entries: vec![TrendEntry {
                rank: 1,
                member: "m".into(),
                score,
            }],
        })
    }

    #[test]
    fn a_trending_page_is_left_to_serde() {
        assert_as_serde(trending(0.25));
    }
}

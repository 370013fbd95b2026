//! Member data (a small JSON value beside a member of a windowed board), on every store
//! and a cluster: set by writes (one event, a batch, several boards) and on its own, read
//! with pages, a member's standing and the page around it; kept only for members holding
//! a total in the largest window, and gone, in the same step, whenever that total goes
//! (retirement by each path, a write back to 0, removal, bulk removal, trim, a drop).

use std::sync::Arc;

use rollboard::{BoardConfig, Event, MemberData, Rollboard, TopPage};
use serde_json::json;

use crate::support::{Harness, START, ts};

on_every_store!(
    data_set_by_writes_and_on_its_own_is_read_beside_entries,
    data_is_bounded_and_kept_only_for_members_with_a_total,
    data_goes_with_the_largest_windows_total_on_retirement,
    data_goes_when_many_small_boards_retire_together,
    data_goes_when_a_one_window_board_retires_by_swap,
    data_goes_when_a_one_window_board_retires_among_many,
    data_goes_with_removal_bulk_removal_trim_and_a_drop,
);

const HOUR: i64 = 3600;

fn data(text: &str) -> MemberData {
    MemberData::parse(text).unwrap()
}

/// Each entry as (member, data text: `-` for none), asserting the page was read with data.
fn with_data(page: &TopPage) -> Vec<(String, String)> {
    page.entries
        .iter()
        .map(|e| {
            let d = e.data.as_ref().expect("read with data");
            (
                e.member.clone(),
                d.as_ref().map_or("-".to_owned(), |d| d.as_str().to_owned()),
            )
        })
        .collect()
}

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(m, d)| (m.to_string(), d.to_string()))
        .collect()
}

async fn data_of(rb: &Rollboard, board: &str, member: &str) -> Option<String> {
    rb.windowed(board)
        .member_data(member)
        .await
        .unwrap()
        .map(|d| d.as_str().to_owned())
}

async fn data_set_by_writes_and_on_its_own_is_read_beside_entries(h: Harness) {
    let rb = &h.boards;
    let board = h.board("1h", &["1h", "1d"]).await;
    rb.write_event(
        &board,
        &Event::new("a", 5).with_data(data(r#"{ "title": "A" }"#)),
    )
    .await
    .unwrap();
    let outcome = rb
        .windowed(&board)
        .incr_batch(&[
            Event::new("b", 3),
            Event::new("c", 2).with_data(data(r#""C1""#)),
            Event::new("c", 1).with_data(data(r#""C2""#)),
            Event::new("d", 0).with_data(data("1")),
        ])
        .await
        .unwrap();
    assert_eq!(outcome.accepted, 3);
    assert_eq!(outcome.rejected[0].index, 3);

    // Without asking: no data field at all.
    let page = rb.windowed(&board).top(None, 0, 10).await.unwrap();
    assert!(page.entries.iter().all(|e| e.data.is_none()));
    assert_eq!(
        serde_json::to_value(&page.entries[0]).unwrap(),
        json!({"rank": 1, "member": "a", "score": 5})
    );
    let page = rb
        .windowed(&board)
        .with_data(rb.windowed(&board).top(None, 0, 10).await.unwrap())
        .await
        .unwrap();
    // The later of c's events wins; b has none; data is stored compact.
    assert_eq!(
        with_data(&page),
        pairs(&[("a", r#"{"title":"A"}"#), ("b", "-"), ("c", r#""C2""#)])
    );
    assert_eq!(
        serde_json::to_value(&page.entries[1]).unwrap(),
        json!({"rank": 2, "member": "b", "score": 3, "data": null})
    );

    // On its own: set, overwrite, read, delete.
    rb.windowed(&board)
        .set_member_data("b", data(r#"{"n":[1,2]}"#))
        .await
        .unwrap();
    rb.windowed(&board)
        .set_member_data("a", data(r#"{"title":"A2"}"#))
        .await
        .unwrap();
    assert_eq!(
        data_of(rb, &board, "b").await.as_deref(),
        Some(r#"{"n":[1,2]}"#)
    );
    assert_eq!(
        data_of(rb, &board, "a").await.as_deref(),
        Some(r#"{"title":"A2"}"#)
    );
    assert!(rb.windowed(&board).delete_member_data("c").await.unwrap());
    assert!(!rb.windowed(&board).delete_member_data("c").await.unwrap());
    assert_eq!(data_of(rb, &board, "c").await, None);

    // Bottom pages, the member's standing and the page around it.
    let bottom = rb
        .windowed(&board)
        .with_data(rb.windowed(&board).bottom(None, 0, 2).await.unwrap())
        .await
        .unwrap();
    assert_eq!(
        with_data(&bottom),
        pairs(&[("c", "-"), ("b", r#"{"n":[1,2]}"#)])
    );
    let standing = rb.windowed(&board).score("a", None).await.unwrap().unwrap();
    assert_eq!(standing.data, None);
    let standing = rb
        .windowed(&board)
        .standing_with_data(standing)
        .await
        .unwrap();
    assert_eq!(standing.data, Some(Some(data(r#"{"title":"A2"}"#))));
    let around = rb
        .windowed(&board)
        .around("b", None, 1, Default::default())
        .await
        .unwrap()
        .unwrap();
    let around = rb.windowed(&board).with_data(around).await.unwrap();
    assert_eq!(
        with_data(&around),
        pairs(&[
            ("a", r#"{"title":"A2"}"#),
            ("b", r#"{"n":[1,2]}"#),
            ("c", "-")
        ])
    );

    // Several boards at once: the data is set on each board the event applied to.
    let other = h.board("1h", &["1h"]).await;
    let written = rb
        .write_event_to_boards(
            &[board.as_str(), other.as_str()],
            &Event::new("e", 1).with_data(data(r#"{"on":"both"}"#)),
            None,
        )
        .await
        .unwrap();
    assert!(written.iter().all(|w| w.result.is_ok()));
    assert_eq!(
        data_of(rb, &board, "e").await.as_deref(),
        Some(r#"{"on":"both"}"#)
    );
    assert_eq!(
        data_of(rb, &other, "e").await.as_deref(),
        Some(r#"{"on":"both"}"#)
    );
}

async fn data_is_bounded_and_kept_only_for_members_with_a_total(h: Harness) {
    let rb = &h.boards;
    let board = h.board("1h", &["1h"]).await;
    // 1,024 bytes of JSON text (a string of 1,022 characters and its quotes) is kept.
    let fits = MemberData::from_value(&json!("x".repeat(1022))).unwrap();
    rb.write_event(&board, &Event::new("a", 1).with_data(fits))
        .await
        .unwrap();
    assert_eq!(data_of(rb, &board, "a").await.map(|d| d.len()), Some(1024));
    let over = MemberData::from_value(&json!("x".repeat(1023))).unwrap_err();
    assert_eq!(over.code(), "invalid_member_data");

    // A member without a total: nothing kept, by PUT (member_not_found) or by a write.
    let error = rb
        .windowed(&board)
        .set_member_data("nobody", data("1"))
        .await
        .unwrap_err();
    assert_eq!(error.code(), "member_not_found");
    assert_eq!(
        error.to_string(),
        format!(
            "member \"nobody\" has no total in the board's largest window (member data is \
             kept only for members holding one) on board \"{board}\""
        )
    );
    rb.windowed(&board)
        .incr_batch(&[
            Event::new("n", 2),
            Event::new("n", -2).with_data(data(r#""gone""#)),
        ])
        .await
        .unwrap();
    assert_eq!(data_of(rb, &board, "n").await, None);

    // A write that takes the total back to exactly 0 takes the data with it.
    rb.write_event(&board, &Event::new("a", -1)).await.unwrap();
    assert_eq!(data_of(rb, &board, "a").await, None);
    rb.write_event(&board, &Event::new("a", 1)).await.unwrap();
    assert_eq!(data_of(rb, &board, "a").await, None);
}

/// Writes `a` (2) and `b` (1) with data in the slot at START, `c` (1) with data in the
/// next slot.
async fn written(rb: &Rollboard, board: &str) {
    rb.windowed(board)
        .incr_batch(&[
            Event::new("a", 2).at(ts(START)).with_data(data(r#""A""#)),
            Event::new("b", 1).at(ts(START)).with_data(data(r#""B""#)),
        ])
        .await
        .unwrap();
    rb.write_event(
        board,
        &Event::new("c", 1)
            .at(ts(START + HOUR))
            .with_data(data(r#""C""#)),
    )
    .await
    .unwrap();
}

async fn data_goes_with_the_largest_windows_total_on_retirement(h: Harness) {
    let rb = &h.boards;
    let board = h.board("1h", &["1h", "3h"]).await;
    h.at(HOUR);
    written(rb, &board).await;
    // The slot at START left the 1h window: a and b stay in the 3h window, data kept.
    h.at(2 * HOUR);
    rb.windowed(&board).retire(None).await.unwrap();
    let hour = rb.windowed(&board).top(None, 0, 10).await.unwrap();
    assert_eq!(hour.entries.len(), 0);
    let three = rb
        .windowed(&board)
        .with_data(
            rb.windowed(&board)
                .top(Some("3h".parse().unwrap()), 0, 10)
                .await
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(
        with_data(&three),
        pairs(&[("a", r#""A""#), ("b", r#""B""#), ("c", r#""C""#)])
    );
    // The slot at START left the 3h window: a and b lose their totals and their data.
    h.at(3 * HOUR);
    rb.windowed(&board).retire(None).await.unwrap();
    assert_eq!(data_of(rb, &board, "a").await, None);
    assert_eq!(data_of(rb, &board, "b").await, None);
    assert_eq!(data_of(rb, &board, "c").await.as_deref(), Some(r#""C""#));
    // c's slot leaves too.
    h.at(4 * HOUR);
    rb.windowed(&board).retire(None).await.unwrap();
    assert_eq!(data_of(rb, &board, "c").await, None);
    let error = rb
        .windowed(&board)
        .set_member_data("c", data("1"))
        .await
        .unwrap_err();
    assert_eq!(error.code(), "member_not_found");
}

async fn data_goes_when_many_small_boards_retire_together(h: Harness) {
    let rb = &h.boards;
    let board = h.board("1h", &["1h", "2h"]).await;
    h.at(HOUR);
    written(rb, &board).await;
    let loaded = Arc::new(rb.board(&board).await.unwrap());
    h.at(2 * HOUR);
    for result in rb.retire_many(std::slice::from_ref(&loaded)).await {
        result.unwrap();
    }
    assert_eq!(data_of(rb, &board, "a").await, None);
    assert_eq!(data_of(rb, &board, "b").await, None);
    assert_eq!(data_of(rb, &board, "c").await.as_deref(), Some(r#""C""#));
}

/// A board of one window (`1h`) with `a` (2) and `b` (1) written now, with data.
async fn one_window_written(h: &Harness) -> String {
    let board = h.board("1h", &["1h"]).await;
    h.boards
        .windowed(&board)
        .incr_batch(&[
            Event::new("a", 2).with_data(data(r#""A""#)),
            Event::new("b", 1).with_data(data(r#""B""#)),
        ])
        .await
        .unwrap();
    board
}

/// A board whose only window is its largest, quiet since the boundary: the many-boards
/// path (on Redis one `retire_small.lua` call) takes each member's total to 0 there, and
/// its data with it.
async fn data_goes_when_a_one_window_board_retires_among_many(h: Harness) {
    let rb = &h.boards;
    let board = one_window_written(&h).await;
    let loaded = Arc::new(rb.board(&board).await.unwrap());
    h.at(HOUR);
    for result in rb.retire_many(std::slice::from_ref(&loaded)).await {
        assert_eq!(result.unwrap().members_zeroed, 2);
    }
    assert_eq!(data_of(rb, &board, "a").await, None);
    assert_eq!(data_of(rb, &board, "b").await, None);
    let page = rb.windowed(&board).top(None, 0, 10).await.unwrap();
    assert_eq!(page.entries.len(), 0);
}

async fn data_goes_when_a_one_window_board_retires_by_swap(h: Harness) {
    let rb = &h.boards;
    let board = one_window_written(&h).await;
    h.at(HOUR);
    rb.write_event(&board, &Event::new("c", 1).with_data(data(r#""C""#)))
        .await
        .unwrap();
    rb.windowed(&board).retire(None).await.unwrap();
    assert_eq!(data_of(rb, &board, "a").await, None);
    assert_eq!(data_of(rb, &board, "b").await, None);
    assert_eq!(data_of(rb, &board, "c").await.as_deref(), Some(r#""C""#));
    let page = rb
        .windowed(&board)
        .with_data(rb.windowed(&board).top(None, 0, 10).await.unwrap())
        .await
        .unwrap();
    assert_eq!(with_data(&page), pairs(&[("c", r#""C""#)]));
}

async fn data_goes_with_removal_bulk_removal_trim_and_a_drop(h: Harness) {
    let rb = &h.boards;
    let board = h.board("1h", &["1h", "1d"]).await;
    let events: Vec<Event> = ["a", "b", "c", "d", "e"]
        .iter()
        .enumerate()
        .map(|(i, m)| Event::new(*m, 10 - i as i64).with_data(data(&format!("{i}"))))
        .collect();
    rb.windowed(&board).incr_batch(&events).await.unwrap();
    rb.windowed(&board).remove_member("a").await.unwrap();
    assert_eq!(data_of(rb, &board, "a").await, None);
    rb.windowed(&board).remove_members(&["b"]).await.unwrap();
    assert_eq!(data_of(rb, &board, "b").await, None);
    // Trim the 1h window to its top 1: d and e go (from every window).
    let trimmed = rb.windowed(&board).trim(None, 1).await.unwrap();
    assert_eq!(trimmed.members, vec!["d".to_owned(), "e".to_owned()]);
    assert_eq!(data_of(rb, &board, "d").await, None);
    assert_eq!(data_of(rb, &board, "e").await, None);
    assert_eq!(data_of(rb, &board, "c").await.as_deref(), Some("2"));
    // A drop takes it all; the board made again under the name has none.
    rb.drop_board(&board).await.unwrap();
    rb.create(&board, BoardConfig::parse("1h", &["1h", "1d"]).unwrap())
        .await
        .unwrap();
    rb.write_event(&board, &Event::new("c", 1)).await.unwrap();
    assert_eq!(data_of(rb, &board, "c").await, None);
}

//! The webhooks' feeds (see `webhook.rs`): every period snapshot of the boards that take
//! them, one stream per window; every member a board's review gate holds, one stream per
//! gated board; and every change of a board's watched tops, one stream per watched board.

use serde::Serialize;

use super::webhook::{BATCH, Feed};
use crate::{Board, BoardName, Change, Error, HeldEvent, Rollboard, Snapshot, SnapshotRange, Span};

/// The snapshot webhook's: a snapshot with its board, `{"board","window","boundary",
/// "taken_ms","entries":[{"rank","member","score"}…]}`; its `Idempotency-Key` is
/// `<board>:<window seconds>:<boundary>` (read from the right: board names may hold `:`).
pub(super) struct Snapshots;

/// What is POSTed: the snapshot and its board.
#[derive(Serialize)]
struct Delivery<'a> {
    board: &'a BoardName,
    #[serde(flatten)]
    snapshot: &'a Snapshot,
}

/// The `Idempotency-Key` of a snapshot: the same on every attempt of every replica.
pub fn idempotency_key(board: &BoardName, snapshot: &Snapshot) -> String {
    format!(
        "{board}:{}:{}",
        snapshot.window.seconds(),
        snapshot.boundary
    )
}

impl Feed for Snapshots {
    type Event = Snapshot;
    const NAME: &'static str = "snapshot webhook";

    fn streams(board: &Board) -> Vec<Option<Span>> {
        match board.config.snapshots() {
            Some(_) => board.config.windows().iter().copied().map(Some).collect(),
            None => Vec::new(),
        }
    }

    async fn due(
        rb: &Rollboard,
        board: &BoardName,
        window: Option<Span>,
    ) -> crate::Result<Vec<Snapshot>> {
        let board = rb.windowed(board.as_str());
        let cursor = board.snapshot_cursor(window, None).await?;
        let range = SnapshotRange::new(cursor.map(|c| c + 1), None, Some(BATCH as u64))?;
        let snapshots = board.snapshots(window, range.oldest_first()).await?;
        Ok(snapshots.snapshots)
    }

    async fn delivered(
        rb: &Rollboard,
        board: &BoardName,
        window: Option<Span>,
        snapshot: &Snapshot,
    ) -> crate::Result<()> {
        let board = rb.windowed(board.as_str());
        board
            .snapshot_cursor(window, Some(snapshot.boundary))
            .await?;
        Ok(())
    }

    fn idempotency_key(board: &BoardName, snapshot: &Snapshot) -> String {
        idempotency_key(board, snapshot)
    }

    fn body(board: &BoardName, snapshot: &Snapshot) -> serde_json::Result<Vec<u8>> {
        serde_json::to_vec(&Delivery { board, snapshot })
    }

    fn count(outcome: &'static str) {
        crate::metrics::snapshot_webhook(outcome);
    }
}

/// The review webhook's: a member a board's review gate held (it joined the review
/// queue), `{"board","id","member","held_ms"}`; its `Idempotency-Key` is `<board>:<id>`.
pub(super) struct Held;

impl Feed for Held {
    type Event = HeldEvent;
    const NAME: &'static str = "review webhook";

    fn streams(board: &Board) -> Vec<Option<Span>> {
        match board.config.review() {
            Some(_) => vec![None],
            None => Vec::new(),
        }
    }

    async fn due(
        rb: &Rollboard,
        board: &BoardName,
        _: Option<Span>,
    ) -> crate::Result<Vec<HeldEvent>> {
        let board = rb.windowed(board.as_str());
        let cursor = board.held_cursor(None).await?;
        board.held_events(cursor.as_deref(), BATCH).await
    }

    async fn delivered(
        rb: &Rollboard,
        board: &BoardName,
        _: Option<Span>,
        event: &HeldEvent,
    ) -> crate::Result<()> {
        let board = rb.windowed(board.as_str());
        board.held_cursor(Some(&event.id)).await?;
        Ok(())
    }

    fn idempotency_key(board: &BoardName, event: &HeldEvent) -> String {
        format!("{board}:{}", event.id)
    }

    fn body(_: &BoardName, event: &HeldEvent) -> serde_json::Result<Vec<u8>> {
        serde_json::to_vec(event)
    }

    fn count(outcome: &'static str) {
        crate::metrics::review_webhook(outcome);
    }
}

/// The changes webhook's: a change of a board's watched tops with its board,
/// `{"board","id","type","member","window","rank","score",…}` (as `GET …/changes` lists
/// it); its `Idempotency-Key` is `<board>:<id>`.
pub(super) struct Changes;

/// What is POSTed: the change and its board.
#[derive(Serialize)]
struct ChangeDelivery<'a> {
    board: &'a BoardName,
    #[serde(flatten)]
    change: &'a Change,
}

impl Feed for Changes {
    type Event = Change;
    const NAME: &'static str = "changes webhook";

    fn streams(board: &Board) -> Vec<Option<Span>> {
        match board.config.watch() {
            [] => Vec::new(),
            _ => vec![None],
        }
    }

    async fn due(rb: &Rollboard, board: &BoardName, _: Option<Span>) -> crate::Result<Vec<Change>> {
        let board = rb.windowed(board.as_str());
        let cursor = board.changes_cursor(None).await?;
        match board.changes(cursor.as_deref(), BATCH).await {
            Ok(page) => Ok(page.changes),
            // Trimmed before they were delivered: lost to the webhook; on from the oldest
            // kept.
            Err(Error::ChangesTrimmed { .. }) => Ok(board.changes(None, BATCH).await?.changes),
            Err(e) => Err(e),
        }
    }

    async fn delivered(
        rb: &Rollboard,
        board: &BoardName,
        _: Option<Span>,
        change: &Change,
    ) -> crate::Result<()> {
        let board = rb.windowed(board.as_str());
        board.changes_cursor(Some(&change.id)).await?;
        Ok(())
    }

    fn idempotency_key(board: &BoardName, change: &Change) -> String {
        format!("{board}:{}", change.id)
    }

    fn body(board: &BoardName, change: &Change) -> serde_json::Result<Vec<u8>> {
        serde_json::to_vec(&ChangeDelivery { board, change })
    }

    fn count(outcome: &'static str) {
        crate::metrics::changes_webhook(outcome);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Entry;

    #[test]
    fn a_snapshots_body_and_key_name_the_board_window_and_boundary() {
        let board = BoardName::parse("a:b").unwrap();
        let snapshot = Snapshot {
            window: Span::parse("1h").unwrap(),
            boundary: 7200,
            taken_ms: 7_200_005,
            entries: vec![Entry {
                rank: 1,
                member: "m".into(),
                score: 3,
                data: None,
                pinned: false,
                movement: None,
            }],
        };
        assert_eq!(
            Snapshots::idempotency_key(&board, &snapshot),
            "a:b:3600:7200"
        );
        let body: serde_json::Value =
            serde_json::from_slice(&Snapshots::body(&board, &snapshot).unwrap()).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"board": "a:b", "window": "1h", "boundary": 7200,
                "taken_ms": 7_200_005, "entries": [{"rank": 1, "member": "m", "score": 3}]})
        );
    }

    #[test]
    fn a_held_events_body_and_key_name_the_board_and_the_event() {
        let board = BoardName::parse("hot").unwrap();
        let event = HeldEvent::new("hot".into(), "1700000000123-4".into(), "post:9".into());
        let event = event.unwrap();
        assert_eq!(Held::idempotency_key(&board, &event), "hot:1700000000123-4");
        let body: serde_json::Value =
            serde_json::from_slice(&Held::body(&board, &event).unwrap()).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"board": "hot", "id": "1700000000123-4", "member": "post:9",
                "held_ms": 1_700_000_000_123_i64})
        );
    }
}

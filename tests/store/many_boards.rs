//! Many small boards retired at one boundary (`Rollboard::retire_many`, the retirer) on
//! a real Redis: `retire_small.lua` calls of several boards each, pipelined; exact, the
//! same as the window-by-window path; falling back to it for big or late boards; safe
//! with two retirers at once, after a crash between calls, after a lost reply and after a
//! `SCRIPT FLUSH`; and on Redis Cluster. Boards: slot `1m`, windows `1m` and `2m` (beside
//! the window-by-window path, `2m`/`3m` and `1m`/`3m` ones too, in the same calls).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use rollboard::{
    Board, BoardConfig, Event, Layout, RetireOptions, RetireReport, Rollboard, Settings, Span,
};

use crate::proxy::{Fault, FaultProxy};
use crate::support::{Harness, START, TestRedis, clock, pairs, ranking, ts, unique, with_clock};

/// `INFO commandstats` calls per command (lower case, e.g. `evalsha`), on a server of the
/// test's own.
async fn command_calls(redis: &TestRedis) -> HashMap<String, u64> {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(&mut redis.raw().await)
        .await
        .unwrap();
    info.lines()
        .filter_map(|l| {
            let (name, rest) = l.strip_prefix("cmdstat_")?.split_once(':')?;
            let calls = rest.split("calls=").nth(1)?.split(',').next()?;
            Some((name.to_owned(), calls.parse().ok()?))
        })
        .collect()
}

/// A store on `redis`, a server of the test's own, whose boards that name no layout get
/// `layout`; for compact, listpacks of at most 2 entries (a bucket fill of 1), so the
/// slots of these few-member boards split into several buckets.
async fn store(redis: &TestRedis, layout: Layout) -> Arc<rollboard::RedisStore> {
    store_retiring(redis, layout, RetireOptions::default()).await
}

/// [`store`], retiring as `retire` says.
async fn store_retiring(
    redis: &TestRedis,
    layout: Layout,
    retire: RetireOptions,
) -> Arc<rollboard::RedisStore> {
    if layout == Layout::Compact {
        redis.config_set("hash-max-listpack-entries", "2").await;
    }
    let options = rollboard::RedisOptions {
        default_layout: layout,
        retire,
        ..rollboard::RedisOptions::default()
    };
    redis.store_with(options).await
}

/// A [`Rollboard`] on [`store_retiring`] whose clock is `clock`.
async fn retiring(
    redis: &TestRedis,
    layout: Layout,
    retire: RetireOptions,
    clock: &rollboard::ManualClock,
) -> Rollboard {
    let store = store_retiring(redis, layout, retire).await;
    Rollboard::with(store, Arc::new(clock.clone()), Settings::default())
}

/// Asserts that `board`, as [`written`] left it, holds nothing in `1m` and its slot in
/// `2m` (window 1m retired the slot; 2m has it).
async fn assert_retired_from_1m(rb: &Rollboard, board: &Board) {
    assert_eq!(top(rb, board, "1m").await, Vec::<(String, i64)>::new());
    assert_eq!(top(rb, board, "2m").await, pairs(&[("b", 3), ("a", 2)]));
}

async fn reset_stats(redis: &TestRedis) {
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query_async(&mut redis.raw().await)
        .await
        .unwrap();
}

/// Creates a board of slot 1m and `windows`, and loads it.
async fn board(rb: &Rollboard, windows: &[&str]) -> Arc<Board> {
    let name = unique("many");
    rb.create(&name, BoardConfig::parse("1m", windows).unwrap())
        .await
        .unwrap();
    Arc::new(rb.board(&name).await.unwrap())
}

/// Creates `n` boards (slot 1m, windows 1m and 2m) and loads them.
async fn boards(rb: &Rollboard, n: usize) -> Vec<Arc<Board>> {
    let mut out = Vec::new();
    for _ in 0..n {
        out.push(board(rb, &["1m", "2m"]).await);
    }
    out
}

async fn write(rb: &Rollboard, board: &Board, events: &[(&str, i64)]) {
    let events: Vec<Event> = events.iter().map(|(m, d)| Event::new(*m, *d)).collect();
    rb.windowed(board.name.as_str())
        .incr_batch(&events)
        .await
        .unwrap();
}

async fn top(rb: &Rollboard, board: &Board, window: &str) -> Vec<(String, i64)> {
    let window = Some(Span::parse(window).unwrap());
    ranking(
        &rb.windowed(board.name.as_str())
            .top(window, 0, 100)
            .await
            .unwrap(),
    )
}

fn report(slots_retired: u64, fields: u64, zeroed: u64) -> RetireReport {
    RetireReport {
        slots_retired,
        fields_subtracted: fields,
        members_zeroed: zeroed,
        chunks: 1,
        complete: true,
        slots_compacted: 0,
        fields_compacted: 0,
        slots_swapped: 0,
    }
}

/// Every board has "a" 2 and "b" 3 in slot START; the clock is then at START + 90.
async fn written(rb: &Rollboard, clock: &rollboard::ManualClock, n: usize) -> Vec<Arc<Board>> {
    clock.set(ts(START + 30));
    let boards = boards(rb, n).await;
    for b in &boards {
        write(rb, b, &[("a", 2), ("b", 3)]).await;
    }
    // Nothing is due yet: this loads the script.
    for result in rb.retire_many(&boards).await {
        assert_eq!(result.unwrap(), report(0, 0, 0));
    }
    clock.set(ts(START + 90));
    boards
}

#[tokio::test]
async fn small_boards_are_retired_in_one_script_call() {
    one_call(Layout::Plain).await;
}

#[tokio::test]
async fn small_boards_are_retired_in_one_script_call_on_compact_slots() {
    one_call(Layout::Compact).await;
}

async fn one_call(layout: Layout) {
    let redis = TestRedis::spawn().await;
    let clock = clock();
    // Retirement alone: the compaction of the closed slot that follows on a compact
    // board (only for a board that needs it, `open_slot.rs`) makes calls of its own.
    let retire = RetireOptions {
        compact: false,
        ..RetireOptions::default()
    };
    let rb = retiring(&redis, layout, retire, &clock).await;
    let boards = written(&rb, &clock, 3).await;

    reset_stats(&redis).await;
    let results = rb.retire_many(&boards).await;
    let calls = command_calls(&redis).await;
    // One script call for the three boards (the window-by-window path makes at least
    // four a board: each window's begin and its chunks); nothing else but the commands
    // the script runs.
    assert_eq!(calls.get("evalsha"), Some(&1), "{calls:?}");
    assert_eq!(calls.get("script|load"), None, "{calls:?}");
    for (board, result) in boards.iter().zip(results) {
        // Window 1m retired slot START (2 fields, both members gone); 2m has nothing due.
        assert_eq!(result.unwrap(), report(1, 2, 2));
        assert_retired_from_1m(&rb, board).await;
    }

    clock.set(ts(START + 150));
    reset_stats(&redis).await;
    let results = rb.retire_many(&boards).await;
    assert_eq!(command_calls(&redis).await.get("evalsha"), Some(&1));
    for (board, result) in boards.iter().zip(results) {
        // Window 2m retired slot START, moved there by 1m: the slot is gone.
        assert_eq!(result.unwrap(), report(1, 2, 2));
        assert_eq!(top(&rb, board, "2m").await, Vec::<(String, i64)>::new());
        let status = rb.describe_board(board.name.as_str()).await.unwrap();
        assert_eq!(status.windows[0].retired_through, START + 60);
        assert_eq!(status.windows[1].retired_through, START);
        assert_eq!(status.windows[1].members, 0);
    }
}

#[tokio::test]
async fn a_calls_bound_leaves_the_boards_after_it_for_the_next_call() {
    let redis = TestRedis::spawn().await;
    let clock = clock();
    // Each board's retirement handles 2 fields: the first two boards of a call reach the
    // bound of 2, so the third waits for a call of its own.
    let retire = RetireOptions {
        chunk_size: 2,
        compact: false,
        ..RetireOptions::default()
    };
    let rb = retiring(&redis, Layout::Plain, retire, &clock).await;
    let boards = written(&rb, &clock, 5).await;
    reset_stats(&redis).await;
    let results = rb.retire_many(&boards).await;
    let calls = command_calls(&redis).await;
    // Boards 1 and 2, then 3 and 4, then 5: no board went the window-by-window way.
    assert_eq!(calls.get("evalsha"), Some(&3), "{calls:?}");
    for (board, result) in boards.iter().zip(results) {
        assert_eq!(result.unwrap(), report(1, 2, 2));
        assert_retired_from_1m(&rb, board).await;
    }
}

#[tokio::test]
async fn the_batch_path_leaves_what_the_window_by_window_path_leaves() {
    same_as_window_by_window(Layout::Plain).await;
}

#[tokio::test]
async fn the_batch_path_leaves_what_the_window_by_window_path_leaves_on_compact_slots() {
    same_as_window_by_window(Layout::Compact).await;
}

/// Boards of four configurations in one call, interleaved (a board sends its version
/// only when the board before it has its other arguments; the closed slot is a candidate
/// of `1m`/`2m` and `1m`/`3m` boards, not of `2m`/`3m` ones), each beside a twin retired
/// window by window: every window the same after each minute's boundary, each minute
/// some members gaining or losing. In odd minutes the slot just opened is written before
/// the boundary's retirement, so window 1 of a `1m` board keeps those events; in even
/// minutes nothing newer than the closed slot is live, and the call empties window 1 of
/// each of the six `1m` boards whole (one `ZREMRANGEBYRANK` each). A `1m`/`5m` board
/// holds more live slots than the script's first index read lists, so its window 1
/// reads its own.
async fn same_as_window_by_window(layout: Layout) {
    let redis = TestRedis::spawn().await;
    let clock = clock();
    let rb = with_clock(store(&redis, layout).await, &clock);
    clock.set(ts(START + 5));
    let configs = [
        ["1m", "2m"],
        ["1m", "2m"],
        ["2m", "3m"],
        ["1m", "2m"],
        ["1m", "3m"],
        ["1m", "3m"],
        ["1m", "5m"],
    ];
    let (mut batched, mut twins) = (Vec::new(), Vec::new());
    for windows in configs {
        batched.push(board(&rb, &windows).await);
        twins.push(board(&rb, &windows).await);
    }
    // Nothing is due yet: this loads the script.
    for result in rb.retire_many(&batched).await {
        assert_eq!(result.unwrap(), report(0, 0, 0));
    }
    for minute in 0..8i64 {
        clock.set(ts(START + 60 * minute + 10));
        let events: Vec<(String, i64)> = (0..4)
            .map(|k| (format!("m{}", (minute + k) % 5), (minute * 3 + k) % 7 - 2))
            .filter(|(_, d)| *d != 0)
            .collect();
        let events: Vec<(&str, i64)> = events.iter().map(|(m, d)| (m.as_str(), *d)).collect();
        for board in batched.iter().chain(&twins) {
            write(&rb, board, &events).await;
        }
        let early = minute % 2 == 1;
        if early {
            clock.set(ts(START + 60 * minute + 65));
            for board in batched.iter().chain(&twins) {
                write(&rb, board, &[("m0", 1), ("late", 2)]).await;
            }
        }
        clock.set(ts(START + 60 * minute + 70));
        reset_stats(&redis).await;
        for result in rb.retire_many(&batched).await {
            assert_eq!(result.unwrap().chunks, 1, "one call at minute {minute}");
        }
        // On compact slots, compacting the slots that closed takes calls of its own.
        if layout == Layout::Plain {
            let calls = command_calls(&redis).await;
            assert_eq!(calls.get("evalsha"), Some(&1), "minute {minute}: {calls:?}");
            let emptied = calls.get("zremrangebyrank").copied().unwrap_or(0);
            assert_eq!(emptied, if early { 0 } else { 6 }, "minute {minute}");
        }
        for (board, twin) in batched.iter().zip(&twins) {
            rb.windowed(twin.name.as_str()).retire(None).await.unwrap();
            for w in board.config.windows() {
                let w = w.to_string();
                assert_eq!(top(&rb, board, &w).await, top(&rb, twin, &w).await);
            }
            let a = rb.describe_board(board.name.as_str()).await.unwrap();
            let b = rb.describe_board(twin.name.as_str()).await.unwrap();
            for (x, y) in a.windows.iter().zip(&b.windows) {
                assert_eq!(
                    (x.members, x.retired_through, x.lag_seconds),
                    (y.members, y.retired_through, y.lag_seconds)
                );
            }
        }
    }
    // Window 1m holds only the events written after the last boundary.
    assert_eq!(
        top(&rb, &batched[0], "1m").await,
        pairs(&[("late", 2), ("m0", 1)])
    );
}

/// A late event for the slot that closed, written after window 1 froze it, waits in the
/// slot's second stage: when window 1 is emptied whole, its first stage is merged into
/// that one (no rename), and window 2 counts both.
#[tokio::test]
async fn an_emptied_window_merges_its_slot_into_a_late_write_of_the_next_stage() {
    let redis = TestRedis::spawn().await;
    let clock = clock();
    let rb = with_clock(store(&redis, Layout::Plain).await, &clock);
    let boards = written(&rb, &clock, 2).await;
    // At START + 90 window 1 freezes slot START; the late events go to its stage 2 only.
    let late = [
        Event::new("a", 5).at(ts(START + 40)),
        Event::new("c", 1).at(ts(START + 50)),
    ];
    for board in &boards {
        rb.windowed(board.name.as_str())
            .incr_batch(&late)
            .await
            .unwrap();
        assert_eq!(top(&rb, board, "1m").await, pairs(&[("b", 3), ("a", 2)]));
    }
    reset_stats(&redis).await;
    let results = rb.retire_many(&boards).await;
    let calls = command_calls(&redis).await;
    assert_eq!(calls.get("evalsha"), Some(&1), "{calls:?}");
    assert_eq!(calls.get("zremrangebyrank"), Some(&2), "{calls:?}");
    assert_eq!(calls.get("hgetall"), Some(&2), "{calls:?}");
    for (board, result) in boards.iter().zip(results) {
        assert_eq!(result.unwrap(), report(1, 2, 2));
        assert_eq!(top(&rb, board, "1m").await, Vec::<(String, i64)>::new());
        assert_eq!(
            top(&rb, board, "2m").await,
            pairs(&[("a", 7), ("b", 3), ("c", 1)])
        );
    }
    // Window 2 retires the merged stage whole at the next boundary.
    clock.set(ts(START + 150));
    for (board, result) in boards.iter().zip(rb.retire_many(&boards).await) {
        assert_eq!(result.unwrap(), report(1, 3, 3));
        assert_eq!(top(&rb, board, "2m").await, Vec::<(String, i64)>::new());
    }
}

#[tokio::test]
async fn a_board_bigger_than_a_chunk_is_retired_in_chunks() {
    let redis = TestRedis::spawn().await;
    let clock = clock();
    let retire = RetireOptions {
        chunk_size: 3,
        // The chunked path: window 1 of this board (1m of 1m slots) would swap.
        swap_fields: 0,
        ..RetireOptions::default()
    };
    let options = rollboard::RedisOptions {
        retire,
        ..rollboard::RedisOptions::default()
    };
    let rb = Rollboard::with(
        redis.store_with(options).await,
        Arc::new(clock.clone()),
        Settings::default(),
    );
    clock.set(ts(START + 30));
    let boards = boards(&rb, 1).await;
    let five: Vec<(String, i64)> = (1..=5).map(|k| (format!("m{k}"), k)).collect();
    let five: Vec<(&str, i64)> = five.iter().map(|(m, d)| (m.as_str(), *d)).collect();
    write(&rb, &boards[0], &five).await;
    clock.set(ts(START + 90));
    let report = rb.retire_many(&boards).await.remove(0).unwrap();
    assert_eq!(
        (
            report.slots_retired,
            report.fields_subtracted,
            report.members_zeroed
        ),
        (1, 5, 5)
    );
    assert!(report.chunks >= 2, "5 fields in chunks of 3: {report:?}");
    assert_eq!(
        top(&rb, &boards[0], "1m").await,
        Vec::<(String, i64)>::new()
    );
    assert_eq!(top(&rb, &boards[0], "2m").await.len(), 5);
}

#[tokio::test]
async fn a_board_behind_by_several_boundaries_is_caught_up_exactly() {
    let redis = TestRedis::spawn().await;
    let clock = clock();
    let rb = with_clock(redis.store().await, &clock);
    clock.set(ts(START + 30));
    let boards = boards(&rb, 1).await;
    write(&rb, &boards[0], &[("a", 2)]).await;
    clock.set(ts(START + 90));
    write(&rb, &boards[0], &[("a", 5), ("b", 1)]).await;
    // Slots START and START + 60 are due in both windows, more than one boundary's worth.
    clock.set(ts(START + 250));
    let report = rb.retire_many(&boards).await.remove(0).unwrap();
    assert_eq!(
        (
            report.slots_retired,
            report.fields_subtracted,
            report.members_zeroed
        ),
        (4, 6, 4)
    );
    for w in ["1m", "2m"] {
        assert_eq!(top(&rb, &boards[0], w).await, Vec::<(String, i64)>::new());
    }
    assert_eq!(
        rb.describe_board(boards[0].name.as_str())
            .await
            .unwrap()
            .windows[1]
            .retired_through,
        START + 120
    );
}

#[tokio::test]
async fn two_retirers_at_once_subtract_each_field_once() {
    two_retirers(Layout::Plain).await;
}

#[tokio::test]
async fn two_retirers_at_once_subtract_each_field_once_on_compact_slots() {
    two_retirers(Layout::Compact).await;
}

async fn two_retirers(layout: Layout) {
    let redis = TestRedis::spawn().await;
    let clock = clock();
    let rb = with_clock(store(&redis, layout).await, &clock);
    let other = with_clock(store(&redis, layout).await, &clock);
    let boards = written(&rb, &clock, 20).await;
    let (mine, theirs) = tokio::join!(rb.retire_many(&boards), other.retire_many(&boards));
    let mut fields = 0;
    for (a, b) in mine.into_iter().zip(theirs) {
        let (a, b) = (a.unwrap(), b.unwrap());
        assert!(a.complete && b.complete);
        fields += a.fields_subtracted + b.fields_subtracted;
    }
    assert_eq!(fields, 20 * 2, "each field subtracted by one retirer");
    for board in &boards {
        assert_retired_from_1m(&rb, board).await;
    }
}

#[tokio::test]
async fn a_crash_between_calls_leaves_the_rest_to_the_next_pass() {
    crash_between_calls(Layout::Plain).await;
}

#[tokio::test]
async fn a_crash_between_calls_leaves_the_rest_to_the_next_pass_on_compact_slots() {
    crash_between_calls(Layout::Compact).await;
}

async fn crash_between_calls(layout: Layout) {
    let redis = TestRedis::spawn().await;
    let clock = clock();
    let rb = with_clock(store(&redis, layout).await, &clock);
    let boards = written(&rb, &clock, 6).await;
    // The first process retired half the boards, then died.
    for result in rb.retire_many(&boards[..3]).await {
        let mut expected = report(1, 2, 2);
        if layout == Layout::Compact {
            (expected.slots_compacted, expected.fields_compacted) = (1, 2);
        }
        assert_eq!(result.unwrap(), expected);
    }
    let restarted = with_clock(store(&redis, layout).await, &clock);
    let results = restarted.retire_many(&boards).await;
    for (k, (board, result)) in boards.iter().zip(results).enumerate() {
        let mut expected = if k < 3 {
            report(0, 0, 0)
        } else {
            report(1, 2, 2)
        };
        if k >= 3 && layout == Layout::Compact {
            // Its closed slot (2 members, the fill is 1) is compacted after retiring.
            (expected.slots_compacted, expected.fields_compacted) = (1, 2);
        }
        assert_eq!(result.unwrap(), expected, "board {k}");
        assert_retired_from_1m(&rb, board).await;
    }
}

#[tokio::test]
async fn a_lost_pipeline_reply_is_sent_again_and_counts_once() {
    let redis = TestRedis::spawn().await;
    let proxy = FaultProxy::start(&redis.url).await;
    let clock = clock();
    let store = rollboard::RedisStore::connect(&proxy.url()).await.unwrap();
    let rb = with_clock(Arc::new(store), &clock);
    let boards = written(&rb, &clock, 4).await;
    let record = format!("board_{{{}}}", boards[1].name);
    proxy.arm(Fault::Cut, 1, move |r| r.is_script_with_key(&record));
    let results = rb.retire_many(&boards).await;
    assert_eq!(proxy.fired(), 1);
    for (board, result) in boards.iter().zip(results) {
        assert!(result.unwrap().complete);
        assert_retired_from_1m(&rb, board).await;
    }
}

#[tokio::test]
async fn flushed_scripts_are_loaded_again_for_the_pipeline() {
    let redis = TestRedis::spawn().await;
    let clock = clock();
    let rb = with_clock(redis.store().await, &clock);
    let boards = written(&rb, &clock, 3).await;
    let _: () = redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query_async(&mut redis.raw().await)
        .await
        .unwrap();
    reset_stats(&redis).await;
    for result in rb.retire_many(&boards).await {
        assert_eq!(result.unwrap(), report(1, 2, 2));
    }
    let calls = command_calls(&redis).await;
    // The call refused with NOSCRIPT, one load, the call again.
    assert_eq!(calls.get("evalsha"), Some(&2), "{calls:?}");
    assert_eq!(calls.get("script|load"), Some(&1), "{calls:?}");
}

#[tokio::test]
async fn the_retirer_retires_many_boards_in_few_calls() {
    let redis = TestRedis::spawn().await;
    let clock = clock();
    let rb = with_clock(redis.store().await, &clock);
    let boards = written(&rb, &clock, 40).await;
    clock.set(ts(START + 30));
    let retirer = rb.start_retirer();
    let mut status = retirer.status();
    let first = ts(START + 30);
    tokio::time::timeout(
        Duration::from_secs(10),
        status.wait_for(|s| s.as_of.is_some_and(|t| t >= first)),
    )
    .await
    .unwrap()
    .unwrap();
    reset_stats(&redis).await;
    clock.set(ts(START + 90));
    let crossed = ts(START + 90);
    let seen = *tokio::time::timeout(
        Duration::from_secs(10),
        status.wait_for(|s| s.as_of.is_some_and(|t| t >= crossed)),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(seen.failed, 0);
    // 32 boards a call.
    assert_eq!(command_calls(&redis).await.get("evalsha"), Some(&2));
    for board in &boards {
        assert_retired_from_1m(&rb, board).await;
    }
    retirer.stop().await;
}

#[tokio::test]
async fn small_boards_on_a_cluster_are_retired_exactly() {
    let h = Harness::cluster().await;
    let boards = written(&h.boards, &h.clock, 12).await;
    for (board, result) in boards.iter().zip(h.boards.retire_many(&boards).await) {
        assert_eq!(result.unwrap(), report(1, 2, 2));
        assert_eq!(
            top(&h.boards, board, "1m").await,
            Vec::<(String, i64)>::new()
        );
        assert_eq!(
            top(&h.boards, board, "2m").await,
            pairs(&[("b", 3), ("a", 2)])
        );
    }
    h.clock.set(ts(START + 150));
    for (board, result) in boards.iter().zip(h.boards.retire_many(&boards).await) {
        assert_eq!(result.unwrap(), report(1, 2, 2));
        assert_eq!(
            top(&h.boards, board, "2m").await,
            Vec::<(String, i64)>::new()
        );
    }
}

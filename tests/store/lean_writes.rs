//! The lean write (`write_plain.lua`, docs/design.md, "The lean write"): an unguarded
//! write of the open slot is one script call. When the board needs `write.lua` (here:
//! its bound has no room left, so values must be checked) the lean script answers `{6}`
//! having changed nothing, and the same call goes to `write.lua`. Totals and verdicts
//! equal the memory store's throughout.

use rollboard::{Error, MAX_ABS, RedisOptions};

use crate::bounded_writes::{script_calls, top};
use crate::budget_stops::on;
use crate::support::{Harness, TestRedis};

#[tokio::test]
async fn an_open_slot_write_is_one_call_and_falls_back_to_write_lua_past_the_bound() {
    let redis = TestRedis::spawn().await;
    let h = on(&redis.url, RedisOptions::default()).await;
    let memory = Harness::memory().await;
    let b = h.board("1h", &["1h", "2h"]).await;
    let mb = memory.board("1h", &["1h", "2h"]).await;

    // (member, delta, script calls on Redis): within the bound, one lean call each (the
    // second takes abs_sum to the limit exactly); past it, the lean call answers {6},
    // write.lua's summed call finds a total without room ({2}), and its exact call
    // applies the event: three calls.
    for (member, delta, calls) in [("a", 5, 1), ("a", MAX_ABS - 5, 1), ("b", 1, 3)] {
        let before = script_calls(&redis).await;
        h.boards
            .windowed(&b)
            .incr(member, delta, None)
            .await
            .unwrap();
        memory
            .boards
            .windowed(&mb)
            .incr(member, delta, None)
            .await
            .unwrap();
        assert_eq!(
            script_calls(&redis).await - before,
            calls,
            "{member} {delta}"
        );
    }
    let past = Error::OutOfRange { member: "a".into() };
    assert_eq!(
        h.boards.windowed(&b).incr("a", 1, None).await.unwrap_err(),
        past
    );
    assert_eq!(
        memory
            .boards
            .windowed(&mb)
            .incr("a", 1, None)
            .await
            .unwrap_err(),
        past
    );
    let want = vec![("a".to_string(), MAX_ABS), ("b".to_string(), 1)];
    for window in ["1h", "2h"] {
        assert_eq!(top(&h.boards, &b, window).await, want, "{window}");
        assert_eq!(top(&memory.boards, &mb, window).await, want, "{window}");
    }

    // An unlike takes room from the bound as a like does (it is the sum of |delta|): after
    // it, a like is past the bound, so the lean call answers {6} and write.lua applies it
    // (two calls), and the next one is refused.
    let b = h.board("1h", &["1h", "2h"]).await;
    let mb = memory.board("1h", &["1h", "2h"]).await;
    for (member, delta, calls) in [("a", MAX_ABS - 1, 1), ("b", -1, 1), ("a", 1, 2)] {
        let before = script_calls(&redis).await;
        h.boards
            .windowed(&b)
            .incr(member, delta, None)
            .await
            .unwrap();
        memory
            .boards
            .windowed(&mb)
            .incr(member, delta, None)
            .await
            .unwrap();
        let calls_made = script_calls(&redis).await - before;
        assert_eq!(calls_made, calls, "{member} {delta}");
    }
    assert_eq!(
        h.boards.windowed(&b).incr("a", 1, None).await.unwrap_err(),
        past
    );
    assert_eq!(
        memory
            .boards
            .windowed(&mb)
            .incr("a", 1, None)
            .await
            .unwrap_err(),
        past
    );
    let want = vec![("a".to_string(), MAX_ABS)];
    assert_eq!(top(&h.boards, &b, "2h").await, want);
    assert_eq!(top(&memory.boards, &mb, "2h").await, want);
}

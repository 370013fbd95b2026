//! The board config's rules, at their boundaries.

use super::*;

#[test]
fn differences_name_each_field_that_differs() {
    let stored = BoardConfig::parse("1d", &["7d"]).unwrap();
    let asked = stored.clone().with_offset(3600).unwrap();
    assert_eq!(stored.differences(&asked), ["offset: stored 0, asked 3600"]);
    let asked = BoardConfig::parse("1h", &["1h", "24h"])
        .unwrap()
        .with_ties(Ties::Dense)
        .with_layout(Some(Layout::Plain));
    assert_eq!(
        stored.differences(&asked),
        [
            "slot: stored 1d, asked 1h",
            "windows: stored [7d], asked [1h, 1d]",
            "ties: stored competition, asked dense",
            "layout: stored default, asked plain",
        ]
    );
    // Larger windows added are no difference (a live board takes them).
    let wider = BoardConfig::parse("1d", &["7d", "28d"]).unwrap();
    assert_eq!(
        stored.differences(&wider.with_offset(60).unwrap()),
        ["offset: stored 0, asked 60"]
    );
}

fn at(seconds: i64) -> Timestamp {
    Timestamp::from_unix_seconds(seconds).unwrap()
}

#[test]
fn slot_start_floors_to_the_slot_and_respects_the_offset() {
    let c = BoardConfig::parse("1h", &["1h", "24h"]).unwrap();
    assert_eq!(c.slot_start(at(7_199)), 3_600);
    assert_eq!(c.slot_start(at(7_200)), 7_200);
    let shifted = c.clone().with_offset(-1_800).unwrap();
    assert_eq!(shifted.offset(), 1_800);
    assert_eq!(shifted.slot_start(at(7_199)), 5_400);
    assert_eq!(shifted.slot_start(at(5_399)), 1_800);
}

#[test]
fn a_window_holds_the_current_slot_and_the_ones_before_it() {
    let c = BoardConfig::parse("1h", &["3h"]).unwrap();
    let now = at(10 * 3_600 + 5);
    assert_eq!(c.cutoff(0, now), 7 * 3_600);
    assert_eq!(c.window_start(0, now), 8 * 3_600);
    assert!(c.is_too_late(7 * 3_600, now));
    assert!(!c.is_too_late(8 * 3_600, now));
}

#[test]
fn rejects_bad_window_sets_with_a_reason() {
    let cases = [
        ("1h", vec![]),
        ("1h", vec!["24h", "1h"]),
        ("1h", vec!["1h", "1h"]),
        ("1h", vec!["90m"]),
        ("1s", vec!["2d"]),
        ("1h", vec!["1h"; 9]),
    ];
    for (slot, windows) in cases {
        let err = BoardConfig::parse(slot, &windows).unwrap_err();
        assert_eq!(err.code(), "invalid_config", "{slot} {windows:?}");
    }
    let err = BoardConfig::parse("1h", &["90m"]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid board config: window 90m is not a multiple of the slot length 1h"
    );
}

#[test]
fn only_larger_windows_extend_a_config() {
    let c = BoardConfig::parse("1h", &["1h", "24h"]).unwrap();
    let wider = BoardConfig::parse("1h", &["1h", "24h", "7d"]).unwrap();
    assert_eq!(
        c.extended_by(&wider),
        Some(vec![Span::parse("7d").unwrap()])
    );
    for other in [
        ["1h", "6h", "24h"].as_slice(),
        &["1h"],
        &["1h", "24h"],
        &["2h", "24h", "7d"],
    ] {
        let slot = if other[0] == "2h" { "2h" } else { "1h" };
        assert_eq!(
            c.extended_by(&BoardConfig::parse(slot, other).unwrap()),
            None,
            "{other:?}"
        );
    }
    // Changing how ties rank is not an extension, even with a window added.
    let dense = wider.with_ties(Ties::Dense);
    assert_eq!(c.extended_by(&dense), None);
}

#[test]
fn a_board_keeping_contributors_takes_no_new_windows() {
    let cap = |c: BoardConfig, n| c.with_contributor_cap(n).unwrap();
    let c = cap(BoardConfig::parse("1h", &["1h", "24h"]).unwrap(), Some(1));
    let wider = BoardConfig::parse("1h", &["1h", "24h", "7d"]).unwrap();
    assert_eq!(c.extended_by(&cap(wider.clone(), Some(1))), None);
    assert_eq!(
        c.differences(&cap(wider.clone(), Some(1))),
        ["windows: stored [1h, 1d], asked [1h, 1d, 7d]"]
    );
    // Nor does a board without the cap take one with the windows.
    let plain = BoardConfig::parse("1h", &["1h", "24h"]).unwrap();
    assert_eq!(plain.extended_by(&cap(wider, Some(1))), None);
}

#[test]
fn offset_must_stay_inside_one_slot() {
    let c = BoardConfig::parse("1h", &["1h"]).unwrap();
    assert!(c.clone().with_offset(3_600).is_err());
    assert!(c.clone().with_offset(-3_600).is_err());
    assert_eq!(c.with_offset(-1).unwrap().offset(), 3_599);
}

#[test]
fn json_round_trips_and_validates() {
    let c: BoardConfig = serde_json::from_str(r#"{"slot":"1h","windows":["1h","24h"]}"#).unwrap();
    assert_eq!(c.windows().len(), 2);
    assert_eq!(
        serde_json::to_string(&c).unwrap(),
        r#"{"slot":"1h","windows":["1h","1d"],"offset":0,"ties":"competition"}"#
    );
    let dense: BoardConfig =
        serde_json::from_str(r#"{"slot":"1h","windows":["1h"],"ties":"dense"}"#).unwrap();
    assert_eq!(dense.ties(), Ties::Dense);
    let err = serde_json::from_str::<BoardConfig>(r#"{"slot":"1h","windows":["1h"],"ties":"x"}"#);
    assert!(err.unwrap_err().to_string().contains("unknown variant"));
    let err = serde_json::from_str::<BoardConfig>(r#"{"slot":"1h","windows":["90m"]}"#);
    assert!(err.unwrap_err().to_string().contains("not a multiple"));
}

#[test]
fn the_rank_option_round_trips_is_compared_and_refuses_dense_ties() {
    let text = r#"{"slot":"1h","windows":["1h"],"offset":0,"ties":"position","rank":"nonzero"}"#;
    let c: BoardConfig = serde_json::from_str(text).unwrap();
    assert_eq!(c.rank(), RankedTotals::Nonzero);
    assert_eq!(serde_json::to_string(&c).unwrap(), text);
    let positive = c.clone().with_rank(RankedTotals::Positive).unwrap();
    assert_eq!(
        c.differences(&positive),
        ["rank: stored nonzero, asked positive"]
    );
    let wider = BoardConfig::parse("1h", &["1h", "2h"])
        .unwrap()
        .with_ties(Ties::Position);
    assert_eq!(c.extended_by(&wider), None);
    let wider = wider.with_rank(RankedTotals::Nonzero).unwrap();
    assert_eq!(
        c.extended_by(&wider),
        Some(vec![Span::parse("2h").unwrap()])
    );
    let err = serde_json::from_str::<BoardConfig>(
        r#"{"slot":"1h","windows":["1h"],"ties":"dense","rank":"nonzero"}"#,
    );
    assert!(err.unwrap_err().to_string().contains("not dense"));
    let late = BoardConfig::parse("1h", &["1h"])
        .unwrap()
        .with_rank(RankedTotals::Nonzero)
        .unwrap()
        .with_ties(Ties::Dense);
    assert_eq!(late.check_rank().unwrap_err().code(), "invalid_config");
    let err =
        serde_json::from_str::<BoardConfig>(r#"{"slot":"1h","windows":["1h"],"rank":"negative"}"#);
    assert!(err.unwrap_err().to_string().contains("unknown variant"));
}

#[test]
fn the_snapshots_policy_round_trips_and_is_the_only_free_change() {
    let text = r#"{"slot":"1h","windows":["1h"],"offset":0,"ties":"competition","snapshots":{"top":5,"keep":7}}"#;
    let c: BoardConfig = serde_json::from_str(text).unwrap();
    assert_eq!(c.snapshots(), Some(SnapshotPolicy::new(5, 7).unwrap()));
    assert_eq!(serde_json::to_string(&c).unwrap(), text);
    let plain = c.clone().with_snapshots(None);
    assert!(plain.same_but_live(&c) && c.same_but_live(&plain));
    assert!(!plain.same_but_live(&plain.clone().with_ties(Ties::Dense)));
    let wider = BoardConfig::parse("1h", &["1h", "2h"]).unwrap();
    assert!(!plain.same_but_live(&wider));
    let err = serde_json::from_str::<BoardConfig>(
        r#"{"slot":"1h","windows":["1h"],"snapshots":{"top":0,"keep":7}}"#,
    );
    assert!(err.unwrap_err().to_string().contains("snapshots.top"));
}

#[test]
fn max_and_min_boards_rank_every_value_and_refuse_what_they_cannot_keep() {
    let base = || BoardConfig::parse("1h", &["1h", "24h"]).unwrap();
    let max = base().with_aggregate(Aggregate::Max);
    assert_eq!(max.rank(), RankedTotals::All);
    assert_eq!(max.check_rank(), Ok(()));
    let json = serde_json::to_value(&max).unwrap();
    assert_eq!(json["aggregate"], "max");
    assert!(
        json.get("rank").is_none(),
        "the default rank is left out: {json}"
    );
    let back: BoardConfig = serde_json::from_value(json).unwrap();
    assert_eq!(back, max);
    let sum = serde_json::to_value(base()).unwrap();
    assert!(sum.get("aggregate").is_none(), "{sum}");
    let refused = [
        max.clone().with_rank(RankedTotals::Positive),
        base().with_rank(RankedTotals::All),
    ];
    for config in refused {
        assert_eq!(config.unwrap_err().code(), "invalid_config");
    }
    let dense_min = base()
        .with_aggregate(Aggregate::Min)
        .with_ties(Ties::Dense)
        .with_rank(RankedTotals::All)
        .unwrap();
    assert_eq!(dense_min.ties(), Ties::Dense);
    assert_eq!(
        max.differences(&base()),
        [
            "aggregate: stored max, asked sum",
            "rank: stored all, asked positive"
        ]
    );
    let wider = BoardConfig::parse("1h", &["1h", "24h", "7d"]).unwrap();
    assert_eq!(
        max.extended_by(&wider.clone().with_aggregate(Aggregate::Max)),
        Some(vec![Span::parse("7d").unwrap()])
    );
    assert_eq!(max.extended_by(&wider.with_aggregate(Aggregate::Min)), None);
    assert_eq!(
        base().extended_by(&BoardConfig::parse("1h", &["1h", "24h", "7d"]).unwrap()),
        Some(vec![Span::parse("7d").unwrap()])
    );
}

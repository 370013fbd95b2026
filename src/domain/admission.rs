//! Admission: whether an event is accepted before any store sees it, and in which slot
//! it lands. Pure rules over a board's config, the current time and the limits; no I/O.
//!
//! A batch is refused whole when it holds more than `max_batch` events. Each event on
//! its own is then refused when its member is not a valid [`Member`] or its `by` not a
//! valid [`Contributor`], its delta is zero
//! or outside ±[`MAX_ABS`](super::MAX_ABS) (on a max, min or latest board: its value is missing
//! or outside that range), its time is more than `max_future_skew`
//! ahead of now, or its slot has already left every window (too late). Checks run in
//! that order and the first failure is the event's error. The store can still refuse an
//! admitted event (too late by the time it runs, or a total leaving the range).

use super::error::Error;
use crate::domain::{Aggregate, BoardConfig, Contributor, Event, Member, Span, Timestamp};
use crate::domain::{check_delta, check_value};

/// One admitted event, placed in its slot: what a store writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotWrite {
    /// The start of the event's slot, unix seconds.
    pub slot: i64,
    /// The member.
    pub member: Member,
    /// The delta (non-zero, inside ±(2^53 − 1)); on a max or latest board the value, on
    /// a min board the value negated (any integer inside that range, zero included).
    pub delta: i64,
    /// The event's time, unix milliseconds (a latest board keeps the newest event).
    pub at: i64,
    /// Who gave it, on a board that keeps contributors; `None` on others.
    pub by: Option<Contributor>,
}

/// The limits events are admitted under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Admission {
    /// Most events in one batch.
    pub max_batch: usize,
    /// How far ahead of now an event's time may be (clock skew between writers).
    pub max_future_skew: Span,
}

impl Admission {
    /// Refuses a batch of `len` events when it exceeds `max_batch`.
    pub fn check_batch(&self, len: usize) -> Result<(), Error> {
        if len > self.max_batch {
            return Err(Error::BatchTooLarge {
                len,
                max: self.max_batch,
            });
        }
        Ok(())
    }

    /// Checks one event on a board with `config` at `now`, and places it in its slot.
    pub fn admit(
        &self,
        config: &BoardConfig,
        now: Timestamp,
        event: &Event,
    ) -> Result<SlotWrite, Error> {
        let member = Member::parse(&event.member)?;
        let by = event.by.as_deref().map(Contributor::parse).transpose()?;
        let delta = stored_change(config.aggregate(), event)?;
        let at = not_in_future(event.at, now, self.max_future_skew)?;
        let slot = config.slot_start(at);
        if config.is_too_late(slot, now) {
            return Err(too_late(config, now, event, slot));
        }
        Ok(SlotWrite {
            slot,
            member,
            delta,
            at: at.unix_millis(),
            by: by.filter(|_| config.keeps_contributors()),
        })
    }
}

/// What the store adds (a sum board's delta) or keeps the maximum of (a max board's
/// value, a min board's value negated) for `event` on a board of `aggregate`.
fn stored_change(aggregate: Aggregate, event: &Event) -> Result<i64, Error> {
    let name = aggregate.as_str();
    match (aggregate.sums(), event.value) {
        (true, None) => check_delta(event.delta),
        (true, Some(_)) => Err(Error::InvalidValue {
            reason: "this board sums deltas (\"aggregate\":\"sum\"): send \"delta\", not \
                     \"value\""
                .into(),
        }),
        (false, Some(value)) => Ok(check_value(value)? * aggregate.sign()),
        (false, None) => Err(Error::InvalidValue {
            reason: format!(
                "this board keeps the {name} of values (\"aggregate\":\"{name}\"): send \
                 \"value\" (an integer within ±(2^53 - 1)), not \"delta\""
            ),
        }),
    }
}

/// The error for `event`, in `slot`, having left every window of `config` at `now`
/// (found here, or by the store when retirement moved on meanwhile).
pub fn too_late(config: &BoardConfig, now: Timestamp, event: &Event, slot: i64) -> Error {
    Error::TooLate {
        at: event.at.unwrap_or(now).unix_seconds_f64(),
        slot,
        oldest_open: config.window_start(config.windows().len() - 1, now),
    }
}

/// The time of an event, hit or increment (`now` when `None`), unless it is more than
/// `skew` after `now`: [`Error::InFuture`].
pub fn not_in_future(
    at: Option<Timestamp>,
    now: Timestamp,
    skew: Span,
) -> Result<Timestamp, Error> {
    let at = at.unwrap_or(now);
    if at > now.plus_millis(skew.secs_i64() * 1000) {
        return Err(Error::InFuture {
            at: at.unix_seconds_f64(),
            now: now.unix_seconds_f64(),
            skew_seconds: skew.seconds(),
        });
    }
    Ok(at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::MAX_ABS;

    /// Slots of 1 h, windows of 1 h and 24 h; now is 100 h + 30 min.
    const NOW: i64 = 100 * 3_600 + 1_800;

    fn config() -> BoardConfig {
        BoardConfig::parse("1h", &["1h", "24h"]).unwrap()
    }

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_unix_seconds(seconds).unwrap()
    }

    fn rules() -> Admission {
        Admission {
            max_batch: 3,
            max_future_skew: Span::from_seconds(60).unwrap(),
        }
    }

    fn admit(event: Event) -> Result<SlotWrite, Error> {
        rules().admit(&config(), at(NOW), &event)
    }

    #[test]
    fn batch_of_max_batch_events_passes_one_more_is_too_large() {
        assert_eq!(rules().check_batch(0), Ok(()));
        assert_eq!(rules().check_batch(3), Ok(()));
        assert_eq!(
            rules().check_batch(4),
            Err(Error::BatchTooLarge { len: 4, max: 3 })
        );
    }

    #[test]
    fn event_without_time_lands_in_the_current_slot() {
        assert_eq!(
            admit(Event::new("post:1", 2)).unwrap(),
            SlotWrite {
                slot: 100 * 3_600,
                member: Member::parse("post:1").unwrap(),
                delta: 2,
                at: NOW * 1000,
                by: None,
            }
        );
    }

    #[test]
    fn bad_member_is_refused_before_anything_else() {
        let event = Event::new("", 0).at(at(NOW + 3_600));
        assert_eq!(admit(event).unwrap_err().code(), "invalid_member");
    }

    #[test]
    fn delta_must_be_non_zero_and_inside_max_abs() {
        assert_eq!(admit(Event::new("m", MAX_ABS)).unwrap().delta, MAX_ABS);
        assert_eq!(admit(Event::new("m", -MAX_ABS)).unwrap().delta, -MAX_ABS);
        for bad in [0, MAX_ABS + 1, -MAX_ABS - 1] {
            assert_eq!(
                admit(Event::new("m", bad)).unwrap_err().code(),
                "invalid_delta"
            );
        }
    }

    #[test]
    fn event_up_to_the_skew_ahead_is_accepted_one_millisecond_more_is_in_the_future() {
        let edge = at(NOW + 60);
        assert_eq!(
            admit(Event::new("m", 1).at(edge)).unwrap().slot,
            100 * 3_600
        );
        let beyond = Timestamp::from_unix_millis((NOW + 60) * 1000 + 1).unwrap();
        assert_eq!(
            admit(Event::new("m", 1).at(beyond)),
            Err(Error::InFuture {
                at: (NOW + 60) as f64 + 0.001,
                now: NOW as f64,
                skew_seconds: 60,
            })
        );
    }

    #[test]
    fn oldest_slot_of_the_largest_window_is_open_the_one_before_is_too_late() {
        // The 24 h window at 100 h 30 min holds the slots from 77 h to 100 h.
        let oldest_open = 77 * 3_600;
        let last_second_before = at(oldest_open - 1);
        assert_eq!(
            admit(Event::new("m", 1).at(at(oldest_open))).unwrap().slot,
            oldest_open
        );
        assert_eq!(
            admit(Event::new("m", 1).at(last_second_before)),
            Err(Error::TooLate {
                at: (oldest_open - 1) as f64,
                slot: 76 * 3_600,
                oldest_open,
            })
        );
    }

    #[test]
    fn too_late_reports_now_as_the_time_of_an_event_without_one() {
        assert_eq!(
            too_late(&config(), at(NOW), &Event::new("m", 1), 100 * 3_600),
            Error::TooLate {
                at: NOW as f64,
                slot: 100 * 3_600,
                oldest_open: 77 * 3_600,
            }
        );
    }

    #[test]
    fn a_max_board_takes_values_a_min_board_stores_them_negated_a_sum_board_refuses_them() {
        let on = |aggregate: Aggregate, event: Event| {
            let config = config().with_aggregate(aggregate);
            rules().admit(&config, at(NOW), &event).map(|w| w.delta)
        };
        assert_eq!(on(Aggregate::Max, Event::value("m", 0)), Ok(0));
        assert_eq!(on(Aggregate::Max, Event::value("m", -7)), Ok(-7));
        assert_eq!(on(Aggregate::Min, Event::value("m", 95)), Ok(-95));
        assert_eq!(on(Aggregate::Min, Event::value("m", -MAX_ABS)), Ok(MAX_ABS));
        assert_eq!(on(Aggregate::Latest, Event::value("m", -3)), Ok(-3));
        let code = |r: Result<i64, Error>| r.unwrap_err().code();
        assert_eq!(
            code(on(Aggregate::Max, Event::new("m", 3))),
            "invalid_value"
        );
        assert_eq!(
            code(on(Aggregate::Sum, Event::value("m", 3))),
            "invalid_value"
        );
        assert_eq!(
            code(on(Aggregate::Min, Event::value("m", MAX_ABS + 1))),
            "invalid_value"
        );
        let Err(Error::InvalidValue { reason }) = on(Aggregate::Min, Event::new("m", 3)) else {
            panic!("a delta on a min board is an invalid value");
        };
        assert!(reason.contains("send \"value\""), "{reason}");
    }
}

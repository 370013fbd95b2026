//! A script's guard refusing a call, parsed once from the error reply's code.
//!
//! Scripts refuse with an error reply whose first word is the reason (`STALE …`,
//! `ORDER …`); this is the one place that reads those words. Callers that act on a
//! refusal (retire first, run again) match on [`Refusal`]; every other refusal becomes
//! the board's [`Error`] through [`Refusal::into_error`].

use redis::RedisError;

use crate::domain::BoardName;
use crate::error::Error;

/// Why a script refused to run its call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// `STALE`: the board record is missing, being dropped, or of another version.
    Stale,
    /// `DROPPING`: an earlier incarnation of the board is being dropped.
    Dropping,
    /// `RECOMPUTING`: a recompute holds the board's lease.
    Recomputing,
    /// `RELAYOUT`: an active relayout holds the board's lease (a recompute, or a second
    /// relayout, waits).
    Relayout,
    /// `RETIRE`: the largest window has frozen slots left to retire (retire, then again).
    RetireFirst,
    /// `ORDER`: retirement steps out of order, or a stage written by someone else.
    Order(String),
    /// `LOST`: the recompute lost its lease (it stalled, or another took over).
    LeaseLost,
    /// `REMOVING <member>`: a max, min or latest board's removal of the member is
    /// pending (finish it, then again).
    Removing(String),
    /// `KIND`: the board is of another kind (a trending board) than the call's.
    Kind(&'static str),
    /// `RESCALE`: a trending board's landmark is too far behind for the write (rescale,
    /// then again).
    Rescale,
}

impl Refusal {
    /// The refusal in a script's error reply, if it is one.
    pub(crate) fn parse(err: &RedisError) -> Option<Refusal> {
        let detail = || err.detail().unwrap_or("").to_owned();
        Some(match err.code()? {
            "STALE" => Refusal::Stale,
            "DROPPING" => Refusal::Dropping,
            "RECOMPUTING" => Refusal::Recomputing,
            "RELAYOUT" => Refusal::Relayout,
            "RETIRE" => Refusal::RetireFirst,
            "ORDER" => Refusal::Order(detail()),
            "LOST" => Refusal::LeaseLost,
            "REMOVING" => Refusal::Removing(detail()),
            "KIND" => Refusal::Kind(if detail().starts_with("trending") {
                "trending"
            } else {
                "windowed"
            }),
            "RESCALE" => Refusal::Rescale,
            _ => return None,
        })
    }

    /// The refusal as the error of a call on `board`.
    pub(crate) fn into_error(self, board: Option<&BoardName>) -> Error {
        let name = board.map(|b| b.to_string()).unwrap_or_default();
        match self {
            Refusal::Stale | Refusal::Dropping => Error::BoardChanged(name),
            Refusal::Recomputing | Refusal::Removing(_) => Error::BoardBusy(name),
            Refusal::Relayout => Error::RelayoutRunning(name),
            Refusal::RetireFirst => Error::store(format!(
                "board {name:?}: its largest window has frozen slots left to retire"
            )),
            Refusal::Order(detail) => Error::store(format!("retirement out of order: {detail}")),
            Refusal::Kind(kind) => Error::BoardKind { board: name, kind },
            Refusal::Rescale => Error::store(format!(
                "trending board {name:?}: its landmark is too far behind; rescale first"
            )),
            Refusal::LeaseLost => Error::store(
                "the recompute lost its lease (it stalled, or another took over); run it again",
            ),
        }
    }
}

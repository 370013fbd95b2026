//! `with=` of a top read: `data` (member data, see `member_data.rs`), `movement` (each
//! watched member's rank at `since`, see `rollboard/movement.rs`), or both
//! (`with=data,movement`).

use crate::{BoardPage, Error, Rollboard, Span};

/// What a top read adds to each entry.
#[derive(Debug, Clone, Copy, Default)]
pub struct TopWith {
    pub data: bool,
    pub movement: bool,
}

impl TopWith {
    /// `with`: a comma-separated list of `data` and `movement`; anything else is 422
    /// `invalid_query` naming what is accepted.
    pub fn parse(with: Option<&str>) -> crate::Result<TopWith> {
        let mut out = TopWith::default();
        for part in with.into_iter().flat_map(|w| w.split(',')) {
            match part {
                "data" => out.data = true,
                "movement" => out.movement = true,
                other => {
                    return Err(Error::InvalidQuery {
                        reason: format!(
                            "with={other:?} is not known: with=data returns each member's \
                             data, with=movement its rank at since (with=data,movement both)"
                        ),
                    });
                }
            }
        }
        Ok(out)
    }
}

/// `page` with each watched entry's movement since `since` when `with.movement`.
pub async fn with_movement(
    boards: &Rollboard,
    board: &str,
    page: BoardPage,
    with: TopWith,
    since: Option<&str>,
) -> crate::Result<BoardPage> {
    if !with.movement {
        return match since {
            Some(_) => Err(Error::InvalidQuery {
                reason: "since is the time with=movement compares with: add with=movement, \
                         or leave out since"
                    .into(),
            }),
            None => Ok(page),
        };
    }
    let since = since_ms(boards, since)?;
    match page {
        BoardPage::Windowed(page) => Ok(BoardPage::Windowed(
            boards.windowed(board).with_movement(page, since).await?,
        )),
        BoardPage::Trending(_) => Err(Error::InvalidQuery {
            reason: format!(
                "with=movement reads a watched top's changes, which only windowed boards \
                 keep, and board {board:?} is a trending board: leave out movement"
            ),
        }),
    }
}

/// `since` in unix ms: a span back from now (`24h`, `90m`: a number and its unit), or a
/// unix time in seconds (a plain integer).
fn since_ms(boards: &Rollboard, since: Option<&str>) -> crate::Result<i64> {
    let bad = |text: &str| Error::InvalidQuery {
        reason: format!(
            "since={text:?} is neither a span back from now (24h, 90m: a number and its \
             unit) nor a unix time in seconds"
        ),
    };
    let Some(text) = since else {
        return Err(Error::InvalidQuery {
            reason: "with=movement compares each rank with the one at since: add since=24h \
                     (a span back from now) or since=<unix seconds>"
                .into(),
        });
    };
    let now = boards.now().unix_millis();
    if let Ok(seconds) = text.parse::<i64>() {
        return seconds.checked_mul(1000).ok_or_else(|| bad(text));
    }
    let span = Span::parse(text).map_err(|_| bad(text))?;
    Ok(now - span.seconds() as i64 * 1000)
}

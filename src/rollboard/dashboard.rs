//! The dashboard's reads: everything one refresh shows in one call
//! ([`Rollboard::dashboard`]), the board picker's search ([`Rollboard::search_boards`])
//! and the member lookup ([`Rollboard::lookup_member`]). Each is made of the library's
//! single reads (describe, top, snapshots, history, recent changes, trending top,
//! counters, slowest, stats, the clock and memory checks); what they answer is in
//! [`super::dashboard_view`].
//!
//! The boards are read [`BOARDS_AT_ONCE`] at a time, each board's windows at once, so a
//! refresh of 50 boards costs one HTTP request and a bounded number of store calls in
//! flight. A board that cannot be read is an entry with its error; the others still
//! answer. Counters and stats that cannot be read leave their part empty with an error,
//! so that a store outage shows as `ready: false` rather than a failed page.

use std::collections::BTreeSet;

use futures_util::StreamExt;
use futures_util::future::{join, join_all, join3, join4};

use super::Rollboard;
use super::clock_skew::SkewTooLarge;
use super::dashboard_view::*;
use crate::domain::any_board::{AnyBoard, BoardKind};
use crate::domain::counter::{CounterName, SampleQuery};
use crate::domain::memory_check::MemoryReading;
use crate::domain::stats::{SLOWEST_KEPT, StatsKind};
use crate::domain::{BoardName, Member, ScoreRange, SnapshotRange, TrendRange};
use crate::error::{Error, Result};

/// Boards read at once by one dashboard read.
pub const BOARDS_AT_ONCE: usize = 8;

/// [`Error::InvalidQuery`] with `reason`.
fn invalid(reason: String) -> Error {
    Error::InvalidQuery { reason }
}

impl DashboardQuery {
    /// Checks every bound, saying which parameter is wrong and what it accepts.
    pub fn check(&self) -> Result<()> {
        if self.boards.len() > MAX_DASHBOARD_BOARDS {
            return Err(invalid(format!(
                "boards: at most {MAX_DASHBOARD_BOARDS} boards, got {}; pick fewer",
                self.boards.len()
            )));
        }
        for board in &self.boards {
            BoardName::parse(board).map_err(|e| invalid(format!("boards: {e}")))?;
        }
        if !(1..=100).contains(&self.top) {
            return Err(invalid(format!("top must be 1 to 100, got {}", self.top)));
        }
        if self.leaders > 10 {
            return Err(invalid(format!(
                "leaders must be 0 to 10, got {}",
                self.leaders
            )));
        }
        if let Some(counters) = &self.counters {
            if counters.len() > MAX_DASHBOARD_COUNTERS {
                return Err(invalid(format!(
                    "counters: at most {MAX_DASHBOARD_COUNTERS} counters, got {}; pick fewer",
                    counters.len()
                )));
            }
            for counter in counters {
                CounterName::parse(counter).map_err(|e| invalid(format!("counters: {e}")))?;
            }
        }
        if !(1..=1000).contains(&self.samples) {
            return Err(invalid(format!(
                "samples must be 1 to 1000, got {}",
                self.samples
            )));
        }
        StatsKind::parse(&self.kind).map_err(|e| invalid(format!("kind: {e}")))?;
        if !(1..=SLOWEST_KEPT).contains(&self.slowest) {
            return Err(invalid(format!(
                "slowest must be 1 to {SLOWEST_KEPT}, got {}",
                self.slowest
            )));
        }
        Ok(())
    }
}

impl Rollboard {
    /// Everything one dashboard refresh shows (see the module docs): the health, the
    /// boards of `query` in its order, the counters and the slowest contexts of its
    /// kind. Bad bounds are [`Error::InvalidQuery`]; a board or part that cannot be read
    /// carries its error in the answer.
    pub async fn dashboard(&self, query: &DashboardQuery) -> Result<Dashboard> {
        query.check()?;
        let boards = futures_util::stream::iter(query.boards.iter().cloned())
            .map(|name| async move { self.dashboard_board(&name, query).await })
            .buffered(BOARDS_AT_ONCE)
            .collect::<Vec<_>>();
        let (health, boards, counters, stats) = join4(
            self.dashboard_health(query),
            boards,
            self.dashboard_counters(query),
            self.dashboard_stats(query),
        )
        .await;
        Ok(Dashboard {
            now: self.now().unix_seconds(),
            health,
            boards,
            counters,
            stats,
        })
    }

    /// The checks of `/readyz`: the store answers (its clock is read), the clock is
    /// within `max_clock_skew`, Redis keeps every key.
    async fn dashboard_health(&self, query: &DashboardQuery) -> DashboardHealth {
        let (skew, memory) = join(self.clock_skew(), self.memory_check()).await;
        let mut problems = Vec::new();
        let clock_skew_seconds = match skew {
            Ok(skew) => {
                let too_large = query
                    .max_clock_skew
                    .and_then(|max| SkewTooLarge::judge(skew, max));
                problems.extend(too_large.map(|p| DashboardProblem {
                    code: p.code().into(),
                    message: p.to_string(),
                }));
                skew
            }
            Err(e) => {
                problems.push(DashboardProblem::from(&e));
                0.0
            }
        };
        let memory = match memory {
            Ok(check) => {
                problems.extend(check.problem.map(|p| DashboardProblem {
                    code: p.code().into(),
                    message: p.to_string(),
                }));
                match check.reading {
                    MemoryReading::Read(limit) => Some(DashboardMemory {
                        used_bytes: limit.used_bytes,
                        max_bytes: limit.max_bytes,
                        policy: limit.policy,
                    }),
                    MemoryReading::InProcess | MemoryReading::Hidden(_) => None,
                }
            }
            Err(e) => {
                problems.push(DashboardProblem::from(&e));
                None
            }
        };
        let problem = problems.into_iter().next();
        DashboardHealth {
            ready: problem.is_none(),
            problem,
            store: self.store().kind(),
            clock_skew_seconds,
            memory,
        }
    }

    /// One board, or its error.
    async fn dashboard_board(&self, name: &str, query: &DashboardQuery) -> DashboardBoard {
        let read = async {
            Ok(match self.any_board(name).await? {
                AnyBoard::Windowed(_) => {
                    DashboardBoard::Windowed(self.windowed_view(name, query).await?)
                }
                AnyBoard::Trending(_) => {
                    DashboardBoard::Trending(self.trending_view(name, query).await?)
                }
            })
        };
        read.await.unwrap_or_else(|e: Error| {
            DashboardBoard::Failed(FailedBoardView {
                name: name.to_owned(),
                error: DashboardProblem::from(&e),
            })
        })
    }

    /// A windowed board: its state, each window's top and newest snapshot (all windows
    /// at once, and the newest changes of a board that watches tops with them), then the
    /// histories of the leaders.
    async fn windowed_view(&self, name: &str, query: &DashboardQuery) -> Result<WindowedBoardView> {
        let status = self.describe_board(name).await?;
        let takes_snapshots = status.config.snapshots().is_some();
        let watches = !status.config.watch().is_empty();
        let newest = SnapshotRange::new(None, None, Some(1))?;
        let changes = async {
            if !watches {
                return Ok(None);
            }
            let page = self
                .windowed(name)
                .recent_changes(None, DASHBOARD_CHANGES)
                .await?;
            Ok::<_, Error>(Some(page.changes))
        };
        let windows = join_all(status.windows.iter().map(|w| async move {
            let top = async {
                let page = self
                    .windowed(name)
                    .ranking(Some(w.window), ScoreRange::ALL, query.order, 0, query.top)
                    .await?;
                self.windowed(name).with_data(page).await
            };
            let snapshot = async {
                if takes_snapshots {
                    let listed = self
                        .windowed(name)
                        .snapshots(Some(w.window), newest)
                        .await?;
                    Ok(listed.snapshots.into_iter().next())
                } else {
                    Ok(None)
                }
            };
            let hidden = async {
                if !query.hidden {
                    return Ok(Vec::new());
                }
                let hidden = self.windowed(name).hidden_members(Some(w.window)).await?;
                let held = hidden.members.into_iter().filter(|m| m.score.is_some());
                Ok::<_, Error>(held.collect())
            };
            let (top, snapshot, hidden) = join3(top, snapshot, hidden).await;
            let entries = top?.entries;
            Ok::<_, Error>(WindowView {
                window: w.window,
                members: w.members,
                ranked: w.ranked,
                lag_seconds: w.lag_seconds,
                from: w.from,
                to: w.to,
                leaders: entries
                    .iter()
                    .take(query.leaders)
                    .map(|e| e.member.clone())
                    .collect(),
                entries,
                snapshot: snapshot?,
                hidden: hidden?,
            })
        }));
        let (windows, changes) = join(windows, changes).await;
        let windows = windows.into_iter().collect::<Result<Vec<_>>>()?;
        let mut seen = BTreeSet::new();
        let leaders: Vec<&String> = windows
            .iter()
            .flat_map(|w| &w.leaders)
            .filter(|m| seen.insert(m.as_str()))
            .collect();
        let histories = join_all(leaders.iter().map(|m| self.windowed(name).history(m)))
            .await
            .into_iter()
            .collect::<Result<Vec<_>>>()?;
        Ok(WindowedBoardView {
            name: status.name.to_string(),
            kind: BoardKind::Windowed,
            config: status.config,
            windows,
            histories,
            changes: changes?,
        })
    }

    /// A trending board: its counts and its top.
    async fn trending_view(&self, name: &str, query: &DashboardQuery) -> Result<TrendingBoardView> {
        let (described, top) = join(
            self.trending(name).describe(),
            self.trending(name)
                .ranking(TrendRange::ALL, query.order, 0, query.top),
        )
        .await;
        let (board, counts) = described?;
        Ok(TrendingBoardView {
            name: board.name.to_string(),
            kind: BoardKind::Trending,
            config: board.config,
            members: counts.members,
            ranked: counts.ranked,
            entries: top?.entries,
        })
    }

    /// Every counter name and the newest samples of the counters shown.
    async fn dashboard_counters(&self, query: &DashboardQuery) -> DashboardCounters {
        let all = match self.counters().list().await {
            Ok(all) => all,
            Err(e) => {
                return DashboardCounters {
                    total: 0,
                    names: Vec::new(),
                    shown: Vec::new(),
                    error: Some(DashboardProblem::from(&e)),
                };
            }
        };
        let names: Vec<String> = all.iter().map(|c| c.name.to_string()).collect();
        let shown: Vec<String> = match &query.counters {
            Some(asked) => asked.clone(),
            None => names
                .iter()
                .take(DEFAULT_DASHBOARD_COUNTERS)
                .cloned()
                .collect(),
        };
        let shown = join_all(shown.into_iter().map(|name| {
            let info = all.iter().find(|c| c.name.as_str() == name);
            async move {
                let Some(info) = info else {
                    let error = Error::CounterNotFound(name.clone());
                    return CounterView {
                        name,
                        precisions: Vec::new(),
                        error: Some(DashboardProblem::from(&error)),
                    };
                };
                let name_ref = name.as_str();
                let read = join_all(info.precisions.iter().map(|&precision| async move {
                    let samples = self
                        .counters()
                        .samples(name_ref, precision, SampleQuery::default())
                        .await?;
                    let skip = samples.len().saturating_sub(query.samples);
                    Ok::<_, Error>(PrecisionSamples {
                        precision,
                        samples: samples
                            .into_iter()
                            .skip(skip)
                            .map(|s| (s.slice_start, s.count))
                            .collect(),
                    })
                }))
                .await
                .into_iter()
                .collect::<Result<Vec<_>>>();
                match read {
                    Ok(precisions) => CounterView {
                        name,
                        precisions,
                        error: None,
                    },
                    Err(e) => CounterView {
                        name,
                        precisions: Vec::new(),
                        error: Some(DashboardProblem::from(&e)),
                    },
                }
            }
        }))
        .await;
        DashboardCounters {
            total: names.len() as u64,
            names: names.into_iter().take(COUNTER_NAMES_LISTED).collect(),
            shown,
            error: None,
        }
    }

    /// Every stats kind, and the slowest contexts of the kind asked with their p95.
    async fn dashboard_stats(&self, query: &DashboardQuery) -> DashboardStats {
        let kind = query.kind.clone();
        let read = async {
            let (kinds, slowest) = join(
                self.stat_kinds(),
                self.stats().slowest(&query.kind, query.slowest),
            )
            .await;
            let slowest = slowest?;
            let p95s = join_all(
                slowest
                    .iter()
                    .map(|e| self.stats().read(&e.context, &query.kind)),
            )
            .await;
            let slowest = slowest
                .into_iter()
                .zip(p95s)
                .map(|(e, stats)| SlowView {
                    p95: stats
                        .ok()
                        .and_then(|s| s.current.or(s.previous))
                        .map(|h| h.p95),
                    context: e.context,
                    mean: e.mean,
                    count: e.count,
                })
                .collect();
            Ok::<_, Error>((kinds?, slowest))
        };
        match read.await {
            Ok((kinds, slowest)) => DashboardStats {
                kind,
                kinds,
                slowest,
                error: None,
            },
            Err(e) => DashboardStats {
                kind,
                kinds: Vec::new(),
                slowest: Vec::new(),
                error: Some(DashboardProblem::from(&e)),
            },
        }
    }

    /// The board picker's search: the boards of either kind whose name holds `search`
    /// (case-insensitive; empty: all), in `order`, the first `limit` (1–500) of them,
    /// with how many there are and how many match.
    pub async fn search_boards(
        &self,
        search: &str,
        limit: usize,
        order: BoardOrder,
    ) -> Result<BoardSearch> {
        if !(1..=MAX_SEARCH_LIMIT).contains(&limit) {
            return Err(invalid(format!(
                "limit must be 1 to {MAX_SEARCH_LIMIT}, got {limit}"
            )));
        }
        let (windowed, trending) = join(self.boards(), self.trending_boards()).await;
        let board = |name: &BoardName, kind| BoardRef {
            name: name.to_string(),
            kind,
            ranked: None,
        };
        let mut boards: Vec<BoardRef> = windowed?
            .iter()
            .map(|b| board(&b.name, BoardKind::Windowed))
            .chain(
                trending?
                    .iter()
                    .map(|b| board(&b.name, BoardKind::Trending)),
            )
            .collect();
        boards.sort_by(|a, b| a.name.cmp(&b.name));
        let total = boards.len() as u64;
        let needle = search.to_lowercase();
        let mut matching: Vec<BoardRef> = boards
            .into_iter()
            .filter(|b| b.name.to_lowercase().contains(&needle))
            .collect();
        let matched = matching.len() as u64;
        if order == BoardOrder::Busiest {
            matching.truncate(MAX_BUSIEST_MEASURED);
            matching = futures_util::stream::iter(matching)
                .map(|b| async move {
                    let ranked = self.ranked_now(&b).await;
                    BoardRef {
                        ranked: Some(ranked),
                        ..b
                    }
                })
                .buffered(BOARDS_AT_ONCE)
                .collect()
                .await;
            // Stable: equal activity stays by name.
            matching.sort_by_key(|b| std::cmp::Reverse(b.ranked));
        }
        Ok(BoardSearch {
            total,
            matched,
            boards: matching.into_iter().take(limit).collect(),
        })
    }

    /// How many members `board` ranks now: in its first window, or its trending scores;
    /// 0 when it cannot be read (the picker's order is a hint).
    async fn ranked_now(&self, board: &BoardRef) -> u64 {
        match board.kind {
            BoardKind::Windowed => self
                .describe_board(&board.name)
                .await
                .ok()
                .and_then(|s| s.windows.first().map(|w| w.ranked)),
            BoardKind::Trending => self
                .trending(&board.name)
                .describe()
                .await
                .ok()
                .map(|(_, counts)| counts.ranked),
        }
        .unwrap_or(0)
    }

    /// The member's score, rank and percentile in every window of the board (its score
    /// now on a trending board) and its history (windowed boards). A window where it has
    /// no positive total answers its total (0 when none) without a rank;
    /// [`Error::MemberNotFound`] when it has no event in any window at all. For a
    /// `moderator`, on a board keeping contributors, who gave to it too.
    pub async fn lookup_member(
        &self,
        board: &str,
        member: &str,
        moderator: bool,
    ) -> Result<MemberLookup> {
        BoardName::parse(board)?;
        Member::parse(member)?;
        match self.any_board(board).await? {
            AnyBoard::Windowed(_) => self.lookup_windowed(board, member, moderator).await,
            AnyBoard::Trending(_) => self.lookup_trending(board, member).await,
        }
    }

    async fn lookup_windowed(
        &self,
        board: &str,
        member: &str,
        moderator: bool,
    ) -> Result<MemberLookup> {
        let status = self.describe_board(board).await?;
        let contributors = match moderator && status.config.keeps_contributors() {
            true => {
                let read = self.member_contributors(board, member, LOOKUP_CONTRIBUTORS);
                Some(read.await?.windows)
            }
            false => None,
        };
        let standings = join_all(
            status
                .windows
                .iter()
                .map(|w| self.windowed(board).score(member, Some(w.window))),
        );
        let (standings, history) = join(standings, self.windowed(board).history(member)).await;
        let history = history?;
        let mut windows = Vec::with_capacity(status.windows.len());
        for (w, standing) in status.windows.iter().zip(standings) {
            // A standing answers every non-zero total; none is a total of 0.
            let standing = standing?;
            windows.push(MemberWindow {
                window: w.window.to_string(),
                score: MemberScore::Total(standing.as_ref().map_or(0, |s| s.score)),
                rank: standing.as_ref().and_then(|s| s.rank),
                percentile: standing.as_ref().and_then(|s| s.rank.map(|_| s.percentile)),
                ranked: w.ranked,
            });
        }
        if windows.iter().all(|w| w.rank.is_none()) && history.points.is_empty() {
            return Err(Error::MemberNotFound {
                board: board.to_owned(),
                member: member.to_owned(),
                missing: "event in any window",
            });
        }
        Ok(MemberLookup {
            board: status.name.to_string(),
            member: member.to_owned(),
            windows,
            history: Some(history),
            contributors,
        })
    }

    async fn lookup_trending(&self, board: &str, member: &str) -> Result<MemberLookup> {
        let (described, standing) = join(
            self.trending(board).describe(),
            self.trending(board).score(member),
        )
        .await;
        let (described, counts) = described?;
        let Some(standing) = standing? else {
            return Err(Error::MemberNotFound {
                board: board.to_owned(),
                member: member.to_owned(),
                missing: "score",
            });
        };
        let window = MemberWindow {
            window: "now".into(),
            score: MemberScore::Decayed(standing.score),
            rank: standing.rank,
            percentile: standing.rank.map(|_| standing.percentile),
            ranked: counts.ranked,
        };
        Ok(MemberLookup {
            board: described.name.to_string(),
            member: member.to_owned(),
            windows: vec![window],
            history: None,
            contributors: None,
        })
    }

    /// Every stats kind that has a slowest list, sorted by name.
    pub async fn stat_kinds(&self) -> Result<Vec<String>> {
        self.flush_pending_stats().await;
        let kinds = self.inner.store.stats().stat_kinds().await?;
        Ok(kinds.into_iter().map(|k| k.as_str().to_owned()).collect())
    }
}

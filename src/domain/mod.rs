//! The pure domain: names, spans, times, board configs, window arithmetic, the rules
//! that admit events and reads, and the plain data reads and maintenance answer. No I/O.

mod admission;
mod aggregate;
mod ahead;
pub(crate) mod any_board;
pub(crate) mod board;
mod config;
mod contributor;
pub mod counter;
mod coverage;
pub(crate) mod error;
mod event;
mod idempotency;
mod layout;
mod maintenance;
mod member_data;
mod member_ranks;
pub(crate) mod memory_check;
mod moderation;
mod name;
mod ranked_totals;
mod ranking;
mod read_limits;
mod read_order;
mod review;
mod score_range;
mod snapshot;
mod span;
mod staleness;
pub mod stats;
mod stored_values;
mod ties;
mod timestamp;
pub(crate) mod trending;
mod watch;
mod write_standing;

pub use admission::{Admission, SlotWrite, not_in_future, too_late};
pub use aggregate::Aggregate;
pub use ahead::{Ahead, AheadProbe};
pub use config::BoardConfig;
pub use contributor::{
    Contribution, Contributor, Given, MemberContribution, Retracted, WindowContributions,
    WindowContributors, admitted, counted,
};
pub(crate) use coverage::{Coverage, WindowState, complete_from, coverage};
pub use event::{Event, MAX_ABS, check_delta, check_value};
pub use idempotency::{Fingerprint, IdempotencyKey, MAX_IDEMPOTENCY_KEY};
pub use layout::Layout;
pub use maintenance::{
    RecomputeReport, RelayoutOptions, RelayoutReport, Removed, ReshardReport, RetireReport,
};
pub use member_data::{MAX_MEMBER_DATA, MemberData};
pub use member_ranks::{MAX_RANKS_MEMBERS, MemberRank, Ranks, parse_ranks_members};
pub use moderation::{
    HiddenMember, HiddenMembers, LOG_KEPT, LogEntry, MAX_ACTOR, MAX_PIN_POSITION, MAX_PINS,
    MAX_REASON, Moderated, ModerationAction, ModerationNote, Pin, SkippedBoard, parse_log_id,
};
pub use name::{BoardName, Member};
pub use ranked_totals::RankedTotals;
pub use ranking::{Entry, History, Movement, Point, Standing, TopPage, percentile};
pub use read_limits::{check_around, check_page};
pub use read_order::{
    AroundOptions, AroundQuery, Order, PageQuery, around_positions, page_positions,
};
pub(crate) use review::GateBar;
pub use review::{Decision, HeldEvent, HeldMember, ReviewPolicy, ReviewQueue};
pub use score_range::{ScoreBounds, ScoreRange};
pub(crate) use snapshot::rank_run;
pub use snapshot::{Snapshot, SnapshotPass, SnapshotPolicy, SnapshotRange, Snapshots, rank_prefix};
pub use span::Span;
pub use staleness::{MAX_STALENESS_MS, Staleness};
pub(crate) use stored_values::{own_values, ranking_end, stored_range, sums_only};
pub use ties::Ties;
pub use timestamp::Timestamp;
pub use trending::{
    TrendAt, TrendCounts, TrendCreated, TrendEntry, TrendMaintenance, TrendOptions, TrendPage,
    TrendRange, TrendRank, TrendRanks, TrendStanding, TrendWrite, TrendingBoard, TrendingConfig,
};
pub use watch::{
    Change, ChangeCause, ChangePage, ChangeStamp, ChangeType, ChangesKept, TopList, Watch, diff_top,
};
pub use write_standing::{
    MAX_STANDING_EVENTS, MAX_STANDING_MEMBERS, MAX_STANDING_READS, WindowStanding, WrittenStanding,
    check_standing_write,
};

//! The pure domain: names, spans, times, board configs and window arithmetic. No I/O.

mod config;
mod event;
mod name;
mod span;
mod timestamp;

pub use config::BoardConfig;
pub use event::{Event, MAX_ABS, check_delta};
pub use name::{BoardName, Member};
pub use span::Span;
pub use timestamp::Timestamp;

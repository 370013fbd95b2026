//! The pure domain: names, spans, times, board configs, window arithmetic, and the rules
//! that admit events and reads. No I/O.

mod admission;
mod config;
pub mod counter;
mod event;
mod name;
mod read_limits;
mod span;
pub mod stats;
mod timestamp;

pub use admission::{Admission, SlotWrite, too_late};
pub use config::BoardConfig;
pub use event::{Event, MAX_ABS, check_delta};
pub use name::{BoardName, Member};
pub use read_limits::{check_around, check_page};
pub use span::Span;
pub use timestamp::Timestamp;

//! A board in Redis, whatever its family: its keys and record, the registry and the slot
//! index, the layout of its slots (plain or compact buckets), its lifecycle (create,
//! extend, load, list, drop), and what reads and keeps it beside the families' writes:
//! rankings, history, describe, member data, snapshots, memory, relayout.

pub(crate) mod board_record;
pub(crate) mod boards;
pub(crate) mod describe;
pub(crate) mod family;
pub(crate) mod geometry;
pub(crate) mod history;
pub(crate) mod layout;
pub(crate) mod lease;
pub(crate) mod member_data;
pub(crate) mod memory_info;
pub(crate) mod read;
pub(crate) mod read_top;
pub(crate) mod registry;
pub(crate) mod relayout;
pub(crate) mod slot_index;
pub(crate) mod snapshots;

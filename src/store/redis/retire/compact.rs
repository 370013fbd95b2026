//! Compaction of the slot that just closed, by the retirer: `write.lua` creates a compact
//! board's open slot plain (a hashtable takes writes cheaper than buckets), and after
//! retiring the board at a boundary the retirer converts that slot to buckets while
//! writes go on (`docs/compact-slots.md`, "Compact slots"). A slot too small to gain (under two
//! buckets' fill, one listpack already), a plain board, or a slot with a geometry is left
//! as it is, by the first call itself, which then takes no lease: a board with nothing
//! to compact costs that one call on the chunked path, and none on the small path
//! (`retire_small.lua` answers whether to call).
//!
//! How, in three steps, all under the relayout lease with a fresh token:
//! 1. *Setup*: one `relayout_chunk.lua` call with the minimum fields and `setup` checks
//!    the slot, takes the lease and gives the slot its geometry, moving nothing.
//! 2. *Whole buckets*: stage by stage, increasing `k` (as the converter, for the same
//!    reason), the client reads the stage's plain hash (`HSCAN … COUNT 1000`), computes
//!    each member's hash and bucket ([`member_hash`], [`Geometry::bucket_of`]) and sends
//!    `compact_move.lua` calls each carrying whole buckets (up to [`FIELD_BUDGET`]
//!    fields), so that Redis does one `HSET` per bucket instead of a SHA-1 and an
//!    `HMGET` + `HSET` per field. The script moves each field with the slot's current
//!    geometry (stage 1 of a slot no window froze may split meanwhile) and skips what is
//!    gone. A stage whose plain hash still holds fields afterwards (retirement handed
//!    stage `k-1` on meanwhile) is read again, at most [`SCAN_ROUNDS`] times.
//! 3. *Finish*: ordinary `relayout_chunk.lua` calls from the cursor `c1:0` move what
//!    is left (normally nothing: the first answers `done`), then the lease is ended.
//!
//! Memory: the client holds one stage's members at a time (a 200,000-member stage:
//! about 10 MB); a stage over [`FAST_LIMIT`] fields is left to step 3, the converter's
//! own field-by-field path.
//!
//! Retry classes: every call is [`Retry::Idempotent`]. `HSCAN`, `HLEN` and `HGET` of the
//! geometry are reads. `relayout_chunk.lua`, as an active relayout's: a call moves what
//! it reads from a stage's plain hash to its buckets and deletes it, in one atomic call,
//! so sent again after a lost reply it finds the moved values gone; the call ending the
//! lease deletes it only while this run's token holds it. `compact_move.lua` likewise:
//! it reads the values itself, moves and deletes them atomically, so a resend finds
//! them gone and skips them; it renews the lease only while the run's token holds it.

use redis::Value;

use crate::domain::board::Board;
use crate::domain::{Layout, Timestamp};
use crate::error::{Error, Result};
use crate::store::redis::board::family::Compacted;
use crate::store::redis::board::geometry::Geometry;
use crate::store::redis::board::layout::member_hash;
use crate::store::redis::board::relayout;
use crate::store::redis::conn::options::RetireOptions;
use crate::store::redis::conn::refusal::Refusal;
use crate::store::redis::conn::reply::{array, int, string};
use crate::store::redis::conn::{RedisConn, Retry};

/// The converter's lease, as an active relayout's: every call renews it, the run ends it.
const LEASE_MS: u64 = 5_000;

/// Fields per `compact_move.lua` call at most (whole buckets, see [`whole_buckets`]):
/// ~0.85 ms of Redis time at the ~3.3 µs per field measured with writes going on (512
/// made 1.7 ms before the call's overhead), and within Lua's `unpack` limit. The call
/// also stops before a bucket that would overrun its time budget.
const FIELD_BUDGET: usize = 256;

/// `HSCAN`'s `COUNT` when reading a stage's plain hash.
const SCAN_COUNT: usize = 1000;

/// How often a stage's plain hash is read and moved before its leftovers are left to
/// the converter's own calls (step 3).
const SCAN_ROUNDS: usize = 4;

/// A stage with more fields than this is left to the converter's own calls (step 3),
/// so that the client never holds more than this many members.
const FAST_LIMIT: u64 = 2_000_000;

/// The slot of `board` that closed at the boundary of `now`.
pub(super) fn closed_slot(board: &Board, now: Timestamp) -> i64 {
    board.config.slot_start(now) - board.config.slot().secs_i64()
}

/// The fewest fields a closed slot's largest stage must hold to be compacted: as many
/// as give a geometry of two buckets (`sized_geometry`); fewer are one listpack anyway.
pub(super) fn minimum_fields(conn: &RedisConn) -> u64 {
    2 * conn.layout().fill
}

/// Compacts the slot of `board` that closed at the boundary of `now`, if it is a compact
/// board's plain slot big enough to gain. A user relayout or a recompute holding the
/// board's lease, or a board changed meanwhile, leaves it as it is (plain, or part
/// converted: exact either way), silently.
pub(crate) async fn compact_closed(
    conn: &RedisConn,
    board: &Board,
    now: Timestamp,
    options: &RetireOptions,
) -> Result<Compacted> {
    let run = Run {
        conn,
        board,
        slot: closed_slot(board, now),
        token: crate::store::new_version().to_string(),
        budget: u64::try_from(options.chunk_budget.as_micros())
            .unwrap_or(u64::MAX)
            .max(1),
    };
    let mut done = Compacted::default();
    let mut leased = false;
    let result: Result<()> = async {
        let mut cursor = "0".to_owned();
        let mut setup = true;
        loop {
            let Some(step) = run.chunk(&cursor, setup).await? else {
                return Ok(());
            };
            done.fields += step.moved;
            // A first call that changed nothing and is done took no lease.
            leased |= step.changed || step.next != "done";
            if step.next == "done" {
                if step.changed || done.fields > 0 {
                    done.slots = 1;
                }
                return Ok(());
            }
            if setup && step.next == "c1:0" && !run.move_buckets(&mut done).await? {
                return Ok(());
            }
            setup = false;
            cursor = step.next;
        }
    }
    .await;
    if leased {
        let mut end = relayout::chunk(conn, board, 0);
        end.arg(Layout::Compact.as_str())
            .arg("")
            .arg("0")
            .arg(0)
            .arg(0)
            .arg(0)
            .arg(&run.token);
        // Ends this run's lease only (Idempotent, see the module header); a board
        // dropped or changed meanwhile has no lease of ours left.
        let ended = conn
            .script_or_refusal::<Value>(&end, &board.name, Retry::Idempotent)
            .await;
        result?;
        let _refused = ended?;
    } else {
        result?;
    }
    Ok(done)
}

/// One compaction run's fixed parts.
struct Run<'a> {
    conn: &'a RedisConn,
    board: &'a Board,
    slot: i64,
    token: String,
    /// Time budget of each call, microseconds.
    budget: u64,
}

/// What one `relayout_chunk.lua` call answered.
struct Step {
    next: String,
    moved: u64,
    changed: bool,
}

/// A member of a stage's plain hash, with its hash.
struct Field {
    hash: u32,
    member: String,
}

impl Run<'_> {
    /// One `relayout_chunk.lua` call (the setup call with `setup`); `None` when refused
    /// because a user relayout or a recompute holds the board, or the board changed.
    async fn chunk(&self, cursor: &str, setup: bool) -> Result<Option<Step>> {
        let conn = self.conn;
        let mut call = relayout::chunk(conn, self.board, self.slot);
        call.arg(Layout::Compact.as_str())
            .arg(self.slot)
            .arg(cursor)
            .arg(self.budget)
            .arg(conn.layout().fill)
            .arg(LEASE_MS)
            .arg(&self.token)
            .arg(minimum_fields(conn))
            .arg(conn.layout().default.as_str());
        if setup {
            call.arg("setup");
        }
        let reply: Value = match conn
            .script_or_refusal(&call, &self.board.name, Retry::Idempotent)
            .await?
        {
            Ok(reply) => reply,
            Err(Refusal::Relayout | Refusal::Recomputing | Refusal::Stale) => return Ok(None),
            Err(refusal) => return Err(refusal.into_error(Some(&self.board.name))),
        };
        let items = array(reply, "relayout_chunk")?;
        let [next, moved, changed] = items.as_slice() else {
            return Err(Error::store("relayout_chunk answered too little"));
        };
        Ok(Some(Step {
            next: string(next, "cursor")?,
            moved: int(moved, "moved")? as u64,
            changed: int(changed, "changed")? == 1,
        }))
    }

    /// Step 2 (module header): moves every stage's plain hash to its buckets, whole
    /// buckets per call. False when the run must stop (its lease lost, the slot retired
    /// or no longer to be compacted, the board changed): exact either way.
    async fn move_buckets(&self, done: &mut Compacted) -> Result<bool> {
        let mut get = redis::cmd("HGET");
        get.arg(self.conn.keys().slot_geometry(&self.board.name))
            .arg(self.slot);
        let text: Option<String> = self
            .conn
            .query(&get, Some(&self.board.name), Retry::Idempotent)
            .await?;
        let Some(geometry) = text.as_deref().and_then(Geometry::parse) else {
            // Retired meanwhile, or being converted to plain: step 3 sorts it out.
            return Ok(true);
        };
        for stage in self.conn.keys().stages(self.board, self.slot) {
            for _round in 0..SCAN_ROUNDS {
                let mut len = redis::cmd("HLEN");
                len.arg(&stage);
                let len: u64 = self
                    .conn
                    .query(&len, Some(&self.board.name), Retry::Idempotent)
                    .await?;
                if len == 0 || len > FAST_LIMIT {
                    break;
                }
                let fields = self.scan(&stage).await?;
                if !self.send(&stage, geometry, &fields, done).await? {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    /// The members of the plain hash `stage` (`HSCAN`), each once, ordered by their
    /// hash with its bits reversed: the members of one bucket are adjacent under any
    /// geometry (`bucket_of` keeps a hash's low bits), including one split since.
    async fn scan(&self, stage: &str) -> Result<Vec<Field>> {
        let mut fields = Vec::new();
        let mut cursor = "0".to_owned();
        loop {
            let mut scan = redis::cmd("HSCAN");
            scan.arg(stage).arg(&cursor).arg("COUNT").arg(SCAN_COUNT);
            let (next, flat): (String, Vec<String>) = self
                .conn
                .query(&scan, Some(&self.board.name), Retry::Idempotent)
                .await?;
            fields.extend(flat.into_iter().step_by(2).map(|member| Field {
                hash: member_hash(&member),
                member,
            }));
            if next == "0" {
                break;
            }
            cursor = next;
        }
        // HSCAN may answer a field twice; equal members have equal hashes.
        fields.sort_unstable_by(|a, b| {
            (a.hash.reverse_bits(), &a.member).cmp(&(b.hash.reverse_bits(), &b.member))
        });
        fields.dedup_by(|a, b| a.member == b.member);
        Ok(fields)
    }

    /// Sends `fields` of `stage` (ordered as [`Run::scan`] answers) in
    /// `compact_move.lua` calls of whole buckets of `geometry`, each up to
    /// [`FIELD_BUDGET`] fields, the rest of a call stopped by its time budget sent
    /// again. False when a call answered that the run must stop.
    async fn send(
        &self,
        stage: &str,
        geometry: Geometry,
        fields: &[Field],
        done: &mut Compacted,
    ) -> Result<bool> {
        let mut rest = fields;
        while !rest.is_empty() {
            let end = whole_buckets(rest, geometry, FIELD_BUDGET);
            let mut call = &rest[..end];
            rest = &rest[end..];
            while !call.is_empty() {
                let Some((handled, moved)) = self.move_call(stage, call).await? else {
                    return Ok(false);
                };
                done.fields += moved;
                if handled == 0 || handled > call.len() {
                    return Err(Error::store(format!(
                        "compact_move handled {handled} of {} fields",
                        call.len()
                    )));
                }
                call = &call[handled..];
            }
        }
        Ok(true)
    }

    /// One `compact_move.lua` call for `fields` of `stage`: `(fields handled, values
    /// moved)`, `None` when the run must stop (refused, lease lost, nothing to do).
    async fn move_call(&self, stage: &str, fields: &[Field]) -> Result<Option<(usize, u64)>> {
        let conn = self.conn;
        let name = &self.board.name;
        let mut hashes = Vec::with_capacity(4 * fields.len());
        for field in fields {
            hashes.extend_from_slice(&field.hash.to_be_bytes());
        }
        let mut call = conn.scripts().compact_move.key(conn.keys().record(name));
        call.key(conn.keys().index(name))
            .key(conn.keys().slot_geometry(name))
            .key(stage)
            .arg(self.board.version)
            .arg(self.slot)
            .arg(&self.token)
            .arg(LEASE_MS)
            .arg(self.budget)
            .arg(conn.layout().default.as_str())
            .arg(hashes);
        for field in fields {
            call.arg(&field.member);
        }
        let reply: Value = match conn
            .script_or_refusal(&call, name, Retry::Idempotent)
            .await?
        {
            Ok(reply) => reply,
            Err(Refusal::Relayout | Refusal::Recomputing | Refusal::Stale) => return Ok(None),
            Err(refusal) => return Err(refusal.into_error(Some(name))),
        };
        let items = array(reply, "compact_move")?;
        let [status, handled, moved] = items.as_slice() else {
            return Err(Error::store("compact_move answered too little"));
        };
        if string(status, "status")? != "ok" {
            return Ok(None);
        }
        Ok(Some((
            int(handled, "handled")? as usize,
            int(moved, "moved")? as u64,
        )))
    }
}

/// How many of `fields` (ordered as [`Run::scan`] answers) one call takes: whole
/// buckets of `geometry` while they fit in `budget` fields, at least one bucket; of a
/// first bucket bigger than `budget`, `budget` fields (the next call adds the rest into
/// the bucket: exact either way, only not one `HSET`).
fn whole_buckets(fields: &[Field], geometry: Geometry, budget: usize) -> usize {
    let mut end = 0;
    while end < fields.len() {
        let bucket = geometry.bucket_of(fields[end].hash);
        let size = fields[end..]
            .iter()
            .take_while(|f| geometry.bucket_of(f.hash) == bucket)
            .count();
        if end + size > budget {
            return if end == 0 { budget.max(1) } else { end };
        }
        end += size;
    }
    end
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_take_whole_buckets_in_reversed_bit_order() {
        let g = Geometry { level: 1, split: 0 };
        let mut fields: Vec<Field> = [0u32, 2, 4, 1, 3, 6]
            .into_iter()
            .map(|hash| Field {
                hash,
                member: hash.to_string(),
            })
            .collect();
        fields.sort_unstable_by_key(|f| f.hash.reverse_bits());
        let order: Vec<u32> = fields.iter().map(|f| f.hash).collect();
        // Even hashes (bucket 0) first, and within them 0, 4 (h mod 4 = 0), then 2, 6.
        assert_eq!(order, [0, 4, 2, 6, 1, 3]);
        assert_eq!(whole_buckets(&fields, g, 4), 4);
        assert_eq!(whole_buckets(&fields, g, 5), 4);
        assert_eq!(whole_buckets(&fields, g, 6), 6);
        // A bucket bigger than the budget is cut at the budget.
        assert_eq!(whole_buckets(&fields, g, 3), 3);
        assert_eq!(whole_buckets(&fields[4..], g, 1), 1);
        assert_eq!(whole_buckets(&fields[4..], g, 0), 1);
        assert_eq!(whole_buckets(&[], g, 4), 0);
    }
}

//! Changing a sharded board's shard count online ([`Store::reshard`]): every member whose
//! shard differs under the new count moves there, exactly, while writes, reads and
//! retirement go on (`docs/operations.md`, "Resharding").
//!
//! Each step is stored on shard 0's record ([`Resharding`]), so every process routes
//! alike and a run cut short is finished by running it again:
//! 1. **Begin**: the record says `Moving { to }`, under a new version, and every other
//!    shard's version is renewed (every process reloads before its next call); the
//!    shards of the new count that are missing are created. Each member a shard hides is
//!    hidden on its shard under `to` too, and each member a review gate allowed allowed
//!    there (hiding, showing and deciding wait while a reshard runs), so its values stay
//!    apart (or pass the gate) wherever a move puts them.
//! 2. **Move**: on each old shard, the members leaving it (every member of its live
//!    slots whose shard under `to` is another), a chunk at a time: the chunk is marked
//!    moved (writers then send a marked member's writes to its new shard, see
//!    `writes.rs`), then each member of it moves (below).
//! 3. **Sweep**: the record says `Sweeping { from }` with the new count (versions
//!    renewed again): everyone writes by the new count. What writes left on members' old
//!    shards (a write routed just before its member was marked; a keyed write, which
//!    follows the old count) moves the same way.
//! 4. **End**: each shard first shows the hidden members it no longer holds (their
//!    marks are on their new shards; so for the members a review gate allowed); the
//!    record holds the new count alone; the moved marks are dropped, and so are the
//!    shards a smaller count leaves out; a gated board's gate across the shards catches
//!    up (`gate.rs`).
//!
//! A member moves by its values per live slot (its history) and its data: stashed on its
//! old shard, taken off there by a write of the values negated, given to its new shard
//! by a write of the values, then the stash dropped. Both writes are applied once under
//! tokens named by the stash (`write_once`), so a move cut short anywhere is finished
//! from the stash; the tokens are dropped from the shards' journals after the stash.
//! Both writes are made at one `now`, so each value lands in the same stage on both
//! shards (`write.lua`: the stage of the windows that still count its slot), and every
//! window's total over the shards is the same before and after. The shards are retired
//! before each chunk, so no window still counts a frozen slot on the old shard (but one
//! that closes while the chunk moves, until its retirement). Between the two writes (one
//! round trip) the member's values are in neither shard. A lease on shard 0, renewed
//! every chunk, keeps a second run from moving members at once.

use futures_util::future::{join, try_join_all};

use super::ShardedStore;
use super::names::shard_of;
use super::shard_set::ShardSet;
use crate::clock::Clock;
use crate::domain::board::{Board, Resharding};
use crate::domain::{Member, MemberData, ReshardReport, SlotWrite};
use crate::error::{Error, Result};
use crate::store::{ShardMoves, Store, new_version};

/// Members marked moved at once (each chunk renews the lease).
const CHUNK: usize = 256;

/// Member moves under way at once.
const IN_FLIGHT: usize = 64;

/// How long a run's lease lasts unless renewed (each chunk renews it), in milliseconds.
const LEASE_MS: i64 = 30_000;

impl ShardedStore {
    pub(super) async fn reshard_board(
        &self,
        board: &Board,
        to: u32,
        clock: &dyn Clock,
    ) -> Result<ReshardReport> {
        let moves = self
            .inner
            .shard_moves()
            .ok_or_else(|| Error::store("the store underneath keeps no shard moves"))?;
        board.config.clone().with_shards(to)?.check_rank()?;
        let mut report = ReshardReport {
            from: board.config.shards(),
            to,
            moved_members: 0,
            moved_values: 0,
        };
        let running = |to| Error::ReshardRunning {
            board: board.name.to_string(),
            to,
        };
        match board.resharding {
            None if report.from == to => return Ok(report),
            None => {}
            Some(Resharding::Moving { to: other }) if other != to => return Err(running(other)),
            Some(Resharding::Moving { .. }) => {}
            Some(Resharding::Sweeping { from }) if report.from == to => report.from = from,
            Some(Resharding::Sweeping { .. }) => return Err(running(report.from)),
        }
        let mover = Mover {
            store: self.inner.as_ref(),
            moves,
            clock,
            holder: new_version().to_string(),
            running: running(to),
        };
        let mut board = board.clone();
        mover.hold(&board).await?;
        if board.resharding.is_none() {
            let moving = Resharding::Moving { to };
            board = match self.renew(&board, report.from, moving).await {
                Ok(board) => board,
                // Nothing moved: the next run is free to start at once.
                Err(error) => {
                    mover.release(&board).await?;
                    return Err(error);
                }
            };
        }
        if let Some(Resharding::Moving { .. }) = board.resharding {
            let set = self.sets.get(self.inner.as_ref(), &board).await?;
            mover.give_marks(&set, to).await?;
            for shard in 0..report.from as usize {
                mover.empty(&set, shard, to, true, &mut report).await?;
            }
            let sweeping = Resharding::Sweeping { from: report.from };
            board = self.renew(&board, to, sweeping).await?;
        }
        let set = self.sets.get(self.inner.as_ref(), &board).await?;
        for shard in 0..set.boards.len() {
            mover.empty(&set, shard, to, false, &mut report).await?;
        }
        mover.take_marks(&set, to).await?;
        let ended = moves.set_shards(&board, to, None).await;
        self.sets.forget(&board.name);
        let board = ended?;
        moves.clear_moved(&board).await?;
        for (i, shard) in set.boards.iter().enumerate().skip(1) {
            if i < to as usize {
                moves.clear_moved(shard).await?;
            } else {
                self.inner.drop_board(&shard.name).await?;
            }
        }
        // The gate across the new shards; a board of one shard gates alone.
        match self.sharded(&board).await? {
            Some(s) => s.regate().await?,
            None if board.config.review().is_some() => {
                let none = vec![None; board.config.windows().len()];
                let epoch = moves.gate_epoch(&board).await?;
                moves.publish_bars(&board, epoch, &none).await?;
            }
            None => {}
        }
        Ok(report)
    }

    /// Sets shard 0's count and reshard state, after creating the shards they name,
    /// and renews every other shard's version at the same time: the board as stored now.
    async fn renew(&self, board: &Board, shards: u32, resharding: Resharding) -> Result<Board> {
        let moves = self.inner.shard_moves().expect("checked by the caller");
        let next = board.resharded(shards, Some(resharding))?;
        let set = self.sets.get(self.inner.as_ref(), &next).await;
        self.sets.forget(&board.name);
        let set = set?;
        let others = set.boards[1..]
            .iter()
            .map(|shard| moves.set_shards(shard, 1, None));
        let renewed = moves.set_shards(board, shards, Some(resharding));
        let (board, others) = join(renewed, try_join_all(others)).await;
        self.sets.forget(&next.name);
        others?;
        board
    }
}

/// One run's moves.
struct Mover<'a> {
    store: &'a dyn Store,
    moves: &'a dyn ShardMoves,
    clock: &'a dyn Clock,
    /// This run, in the lease.
    holder: String,
    /// The error when another run holds the lease.
    running: Error,
}

impl Mover<'_> {
    /// Takes or renews the lease on `board` (shard 0).
    async fn hold(&self, board: &Board) -> Result<()> {
        let now = self.clock.now().unix_millis();
        let until = now + LEASE_MS;
        match self.moves.lease(board, &self.holder, now, until).await? {
            true => Ok(()),
            false => Err(self.running.clone()),
        }
    }

    /// Ends this run's lease on `board` (shard 0) now.
    async fn release(&self, board: &Board) -> Result<()> {
        let now = self.clock.now().unix_millis();
        self.moves.lease(board, &self.holder, now, now).await?;
        Ok(())
    }

    /// Moves every member off shard `shard` of `set` whose shard under `count` is
    /// another, each chunk marked moved first when `mark`; moves cut short first. The
    /// lease on shard 0 is renewed before each chunk.
    async fn empty(
        &self,
        set: &ShardSet,
        shard: usize,
        count: u32,
        mark: bool,
        report: &mut ReshardReport,
    ) -> Result<()> {
        self.hold(&set.boards[0]).await?;
        let board = &set.boards[shard];
        let mut done = Done::default();
        for (member, stash) in self.moves.stashed(board).await? {
            let to = shard_of(&member, count);
            let moved = self.finish(set, shard, to, &member, &stash).await?;
            done.add(moved, report);
        }
        self.forget(set, done).await?;
        let leaving: Vec<Member> = self
            .moves
            .slot_members(board)
            .await?
            .into_iter()
            .filter(|m| shard_of(m, count) != shard)
            .collect();
        for chunk in leaving.chunks(CHUNK) {
            self.hold(&set.boards[0]).await?;
            self.retire(set).await?;
            if mark {
                self.moves.mark_moved(board, chunk).await?;
            }
            let mut done = Done::default();
            for some in chunk.chunks(IN_FLIGHT) {
                let moving = some
                    .iter()
                    .map(|m| self.move_member(set, shard, shard_of(m, count), m));
                for moved in try_join_all(moving).await?.into_iter().flatten() {
                    done.add(moved, report);
                }
            }
            self.forget(set, done).await?;
        }
        Ok(())
    }

    /// Hides each member hidden on a shard of `set` on its shard under `count` too, and
    /// allows there each member its review gate allowed, as the run begins (hiding and
    /// deciding wait while it runs): its values then go on being kept apart (or let
    /// through the gate) wherever a move puts them. Idempotent.
    async fn give_marks(&self, set: &ShardSet, count: u32) -> Result<()> {
        self.marks(set, count, true).await
    }

    /// Takes off each shard of `set` the marks of the members it no longer holds (given
    /// to their shards under `count`), as the run ends. Idempotent.
    async fn take_marks(&self, set: &ShardSet, count: u32) -> Result<()> {
        self.marks(set, count, false).await
    }

    /// For each shard's hidden and allowed members whose shard under `count` is another:
    /// marks them there (`give`), or takes the mark off the shard they left.
    async fn marks(&self, set: &ShardSet, count: u32, give: bool) -> Result<()> {
        let now = self.clock.now();
        let n = set.boards.len();
        // Each of `members` of shard `i` leaving it, by the shard to mark.
        let leaving = |i: usize, members: Vec<Member>| {
            let mut by_shard: Vec<Vec<Member>> = vec![Vec::new(); n];
            for member in members {
                let to = shard_of(&member, count);
                if to != i {
                    by_shard[if give { to } else { i }].push(member);
                }
            }
            by_shard
                .into_iter()
                .enumerate()
                .filter(|(_, m)| !m.is_empty())
        };
        for (i, shard) in set.boards.iter().enumerate() {
            let hidden = self.store.hidden_members(shard.at(0, now)).await?;
            let hidden = hidden.iter().map(|(m, _)| Member::parse(m));
            for (k, members) in leaving(i, hidden.collect::<Result<_>>()?) {
                let board = &set.boards[k];
                self.store.set_hidden(board, &members, give, now).await?;
            }
            for (k, members) in leaving(i, self.moves.allowed(shard).await?) {
                let board = &set.boards[k];
                self.moves.set_allowed(board, &members, give).await?;
            }
        }
        Ok(())
    }

    /// Retires every shard of `set` through now: a window that froze a slot no longer
    /// counts it, so a member moving now is whole on its new shard in every window (a
    /// frozen value left on its old shard would show it there too until retired).
    async fn retire(&self, set: &ShardSet) -> Result<()> {
        let now = self.clock.now();
        let passes = set
            .boards
            .iter()
            .map(|shard| self.store.retire(shard, now, None));
        try_join_all(passes).await?;
        Ok(())
    }

    /// Drops from each shard's journal the tokens of the moves `done` (no move sends
    /// them again: their stashes are gone).
    async fn forget(&self, set: &ShardSet, done: Done) -> Result<()> {
        let forgets = done
            .tokens
            .iter()
            .enumerate()
            .filter(|(_, t)| !t.is_empty());
        let forgets =
            forgets.map(|(shard, tokens)| self.moves.forget_tokens(&set.boards[shard], tokens));
        try_join_all(forgets).await?;
        Ok(())
    }

    /// Moves `member` from shard `from` of `set` to shard `to`; `None` when it had
    /// nothing there (no value, no data).
    async fn move_member(
        &self,
        set: &ShardSet,
        from: usize,
        to: usize,
        member: &Member,
    ) -> Result<Option<Moved>> {
        let board = &set.boards[from];
        let history = self.store.history(board, self.clock.now(), member).await?;
        let points: Vec<(i64, i64)> = history
            .points
            .iter()
            .filter(|p| p.value != 0)
            .map(|p| (p.slot, p.value))
            .collect();
        let data = self.store.member_data(board, std::slice::from_ref(member));
        let data = data.await?.into_iter().next().flatten();
        if points.is_empty() && data.is_none() {
            return Ok(None);
        }
        let stash = Stash {
            nonce: new_version(),
            points,
            data,
        };
        let kept = self.moves.stash(board, member, &stash.text()).await?;
        self.finish(set, from, to, member, &kept).await.map(Some)
    }

    /// Finishes the move of `member` from shard `from` of `set` to shard `to`, stashed
    /// as `stash`.
    async fn finish(
        &self,
        set: &ShardSet,
        from: usize,
        to: usize,
        member: &Member,
        stash: &str,
    ) -> Result<Moved> {
        let stash = Stash::parse(stash)
            .ok_or_else(|| Error::store(format!("a bad reshard stash of {member}: {stash:?}")))?;
        let (old, new) = (&set.boards[from], &set.boards[to]);
        // Both at one `now`: each value lands in the same stage on both shards (a slot
        // too late for one is too late for the other, and retires from the old one).
        let now = self.clock.now();
        let writes = |sign: i64| -> Vec<SlotWrite> {
            let points = stash.points.iter();
            points
                .map(|(slot, value)| SlotWrite {
                    slot: *slot,
                    member: member.clone(),
                    delta: sign * value,
                    at: slot * 1000,
                    by: None,
                })
                .collect()
        };
        let take = format!("reshard-take-{}", stash.nonce);
        let give = format!("reshard-give-{}", stash.nonce);
        if !stash.points.is_empty() {
            self.store
                .write_once(old.writing(now, writes(-1)), &take)
                .await?;
            self.store
                .write_once(new.writing(now, writes(1)), &give)
                .await?;
        }
        if let Some(data) = stash.data {
            // Data set on the new shard since the member was marked is newer: kept.
            let there = self.store.member_data(new, std::slice::from_ref(member));
            if there.await?.into_iter().next().flatten().is_none() {
                let data = [(member.clone(), data)];
                self.store.set_member_data(new, &data).await?;
            }
        }
        self.moves.unstash(old, member).await?;
        Ok(Moved {
            values: stash.points.len() as u64,
            tokens: [(from, take), (to, give)],
        })
    }
}

/// A member's move, done: the values it took, and its writes' tokens by shard.
struct Moved {
    values: u64,
    tokens: [(usize, String); 2],
}

/// The moves of a chunk: the tokens of their writes, by shard.
#[derive(Default)]
struct Done {
    tokens: Vec<Vec<String>>,
}

impl Done {
    /// Counts `moved` in `report` and keeps its tokens.
    fn add(&mut self, moved: Moved, report: &mut ReshardReport) {
        report.moved_members += 1;
        report.moved_values += moved.values;
        for (shard, token) in moved.tokens {
            if self.tokens.len() <= shard {
                self.tokens.resize(shard + 1, Vec::new());
            }
            self.tokens[shard].push(token);
        }
    }
}

/// What a member takes from its old shard: its values per slot and its data, and the
/// nonce naming its move's keyed writes. Stored as text: the nonce, the `slot:value`
/// pairs comma-separated, then the data (compact JSON, one line), a line each.
struct Stash {
    nonce: u64,
    points: Vec<(i64, i64)>,
    data: Option<MemberData>,
}

impl Stash {
    fn text(&self) -> String {
        let points: Vec<String> = self
            .points
            .iter()
            .map(|(s, v)| format!("{s}:{v}"))
            .collect();
        let data = self.data.as_ref().map_or("", |d| d.as_str());
        format!("{}\n{}\n{data}", self.nonce, points.join(","))
    }

    fn parse(text: &str) -> Option<Stash> {
        let mut lines = text.splitn(3, '\n');
        let nonce = lines.next()?.parse().ok()?;
        let points = lines.next()?;
        let points = match points.is_empty() {
            true => Vec::new(),
            false => points
                .split(',')
                .map(|p| {
                    let (slot, value) = p.split_once(':')?;
                    Some((slot.parse().ok()?, value.parse().ok()?))
                })
                .collect::<Option<_>>()?,
        };
        let data = lines.next()?;
        let data = (!data.is_empty()).then(|| MemberData::stored(data.to_owned()));
        Some(Stash {
            nonce,
            points,
            data,
        })
    }
}

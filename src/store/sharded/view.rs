//! [`Sharded`]: one call's view of a sharded board (its shards in the store underneath),
//! and what every sharded operation shares: running a call on every shard, and a
//! shard's answer told as the board's.

use std::ops::Range;
use std::sync::Arc;

use futures_util::future::try_join_all;

use super::names::shard_of;
use super::shard_set::{ShardSet, ShardSets};
use crate::domain::Member;
use crate::domain::board::{Board, Resharding};
use crate::error::{Error, Result};
use crate::store::{ShardMoves, Store};

/// One call's view of a sharded board: its shards in the store underneath.
pub(super) struct Sharded<'a> {
    pub(super) store: &'a dyn Store,
    pub(super) sets: &'a ShardSets,
    pub(super) set: Arc<ShardSet>,
}

impl<'a> Sharded<'a> {
    pub(super) fn new(store: &'a dyn Store, sets: &'a ShardSets, set: Arc<ShardSet>) -> Self {
        Sharded { store, sets, set }
    }

    /// The board: shard 0.
    pub(super) fn board(&self) -> &Board {
        self.set.board()
    }

    /// The shards, shard 0 first.
    pub(super) fn shards(&self) -> &[Board] {
        &self.set.boards
    }

    /// `result` of a call on a shard, a shard that changed or is gone answered as the
    /// board having changed (the caller reloads the board and retries; its shards are
    /// found again), a shard busy as the board.
    pub(super) fn lift<T>(&self, result: Result<T>) -> Result<T> {
        let board = self.board().name.as_str();
        match result {
            Err(Error::BoardChanged(name) | Error::BoardNotFound(name)) if name != board => {
                self.sets.forget(&self.board().name);
                Err(Error::BoardChanged(board.to_owned()))
            }
            Err(Error::BoardBusy(name)) if name != board => Err(Error::BoardBusy(board.into())),
            Err(Error::RelayoutRunning(name)) if name != board => {
                Err(Error::RelayoutRunning(board.into()))
            }
            other => other,
        }
    }

    /// `op` on every shard (its index and board) at once: the results in shard order,
    /// or the first error.
    pub(super) async fn each<'s, T, F, Fut>(&'s self, op: F) -> Result<Vec<T>>
    where
        F: Fn(usize, &'s Board) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let calls = self.shards().iter().enumerate().map(|(i, b)| op(i, b));
        let result = try_join_all(calls).await;
        self.lift(result)
    }

    /// The shard that holds each of `members`: its shard under the board's count, but
    /// while a reshard moves members, a member marked moved off that shard is on the
    /// one it moved to (one read of the marks per shard members are leaving).
    pub(super) async fn homes<'m>(
        &self,
        members: impl Iterator<Item = &'m Member>,
    ) -> Result<Vec<usize>> {
        let Some(Resharding::Moving { to }) = self.board().resharding else {
            return Ok(members.map(|m| self.set.of(m)).collect());
        };
        let members: Vec<&Member> = members.collect();
        let mut homes: Vec<usize> = members.iter().map(|m| self.set.of(m)).collect();
        let mut leaving: Vec<Vec<usize>> = vec![Vec::new(); self.shards().len()];
        for (k, member) in members.iter().enumerate() {
            if shard_of(member, to) != homes[k] {
                leaving[homes[k]].push(k);
            }
        }
        let moves = self.moves()?;
        let asks = leaving.iter().enumerate().filter(|(_, ks)| !ks.is_empty());
        let members = &members;
        let moved = try_join_all(asks.map(|(shard, ks)| async move {
            let asked: Vec<Member> = ks.iter().map(|k| members[*k].clone()).collect();
            let moved = moves.moved(&self.shards()[shard], &asked).await?;
            Ok::<_, Error>(ks.iter().zip(moved).filter(|(_, m)| *m).map(|(k, _)| *k))
        }))
        .await;
        let moved = self.lift(moved)?;
        for k in moved.into_iter().flatten() {
            homes[k] = shard_of(members[k], to);
        }
        Ok(homes)
    }

    /// The shard that holds `member` (see [`homes`](Self::homes)).
    pub(super) async fn home(&self, member: &Member) -> Result<&Board> {
        let homes = self.homes(std::iter::once(member)).await?;
        Ok(&self.shards()[homes[0]])
    }

    /// The store's part in a reshard.
    pub(super) fn moves(&self) -> Result<&'a dyn ShardMoves> {
        self.store
            .shard_moves()
            .ok_or_else(|| Error::store("the store underneath keeps no shard moves"))
    }

    /// Items (in the order asked, duplicates kept) grouped by `shards`, the shard that
    /// holds each.
    pub(super) fn group(&self, shards: Vec<usize>) -> ByShard {
        let mut order: Vec<usize> = (0..shards.len()).collect();
        order.sort_by_key(|k| shards[*k]);
        let groups = (0..self.shards().len())
            .map(|i| {
                let from = order.partition_point(|k| shards[*k] < i);
                let to = order.partition_point(|k| shards[*k] <= i);
                from..to
            })
            .collect();
        ByShard { groups, order }
    }

    /// `call` on every shard holding some of `items` (each of a member, `member`), with
    /// its part; each part's answers, one per item, put back in the order asked.
    pub(super) async fn per_member<'s, I, T, F, Fut>(
        &'s self,
        items: &[I],
        member: fn(&I) -> &Member,
        call: F,
    ) -> Result<Vec<T>>
    where
        I: Clone,
        F: Fn(&'s Board, Vec<I>) -> Fut,
        Fut: Future<Output = Result<Vec<T>>>,
    {
        let by_shard = self.group(self.homes(items.iter().map(member)).await?);
        let answers = self
            .each(|i, b| {
                let part = by_shard.part(i, items);
                let call = &call;
                async move {
                    match part.is_empty() {
                        true => Ok(Vec::new()),
                        false => call(b, part).await,
                    }
                }
            })
            .await?;
        Ok(by_shard.ungroup(answers))
    }

    /// Refuses `what`: [`Error::ShardedUnsupported`].
    pub(super) fn unsupported<T>(&self, what: &'static str) -> Result<T> {
        Err(Error::ShardedUnsupported {
            board: self.board().name.to_string(),
            what,
        })
    }
}

/// Items asked in some order, grouped by shard: each shard's part to ask of it, and its
/// answers put back in the order asked.
pub(super) struct ByShard {
    /// The items' indexes, ordered by shard (stable).
    order: Vec<usize>,
    /// Each shard's range of `order`.
    groups: Vec<Range<usize>>,
}

impl ByShard {
    /// Shard `shard`'s items of `items` (those grouped), in the order asked.
    pub(super) fn part<T: Clone>(&self, shard: usize, items: &[T]) -> Vec<T> {
        self.groups[shard]
            .clone()
            .map(|k| items[self.order[k]].clone())
            .collect()
    }

    /// The shards' answers, one per item of their part, shard by shard, back in the
    /// order asked.
    pub(super) fn ungroup<T>(&self, answers: Vec<Vec<T>>) -> Vec<T> {
        let mut out: Vec<Option<T>> = self.order.iter().map(|_| None).collect();
        for (k, answer) in answers.into_iter().flatten().enumerate() {
            out[self.order[k]] = Some(answer);
        }
        out.into_iter()
            .map(|a| a.expect("one answer per item asked"))
            .collect()
    }
}

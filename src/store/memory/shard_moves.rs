//! The memory store's part in a reshard ([`ShardMoves`]): the shard count on shard 0's
//! board, and per shard the members marked moved off it and the moves under way
//! (`MemBoard::moves`), and a shard's part in a review gate across the shards
//! (`board_state/review.rs`).

use async_trait::async_trait;

use super::MemoryStore;
use crate::domain::board::{Board, Resharding, WindowAt};
use crate::domain::{Ahead, AheadProbe, GateBar, Member};
use crate::error::Result;
use crate::store::{ShardMoves, new_version};

#[async_trait]
impl ShardMoves for MemoryStore {
    async fn count_ahead(&self, at: WindowAt<'_>, probes: &[AheadProbe]) -> Result<Ahead> {
        self.with_board(at.board, |b| b.count_ahead(at.window, at.now, probes))
    }

    async fn set_shards(
        &self,
        board: &Board,
        shards: u32,
        resharding: Option<Resharding>,
    ) -> Result<Board> {
        self.with_board(board, |b| {
            let next = b.board.resharded(shards, resharding)?;
            b.board = Board {
                version: new_version(),
                ..next
            };
            Ok(b.board.clone())
        })?
    }

    async fn mark_moved(&self, board: &Board, members: &[Member]) -> Result<()> {
        self.with_board(board, |b| {
            let moved = members.iter().map(|m| m.as_str().to_owned());
            b.moves.moved.extend(moved)
        })
    }

    async fn moved(&self, board: &Board, members: &[Member]) -> Result<Vec<bool>> {
        self.with_board(board, |b| {
            let moved = &b.moves.moved;
            members.iter().map(|m| moved.contains(m.as_str())).collect()
        })
    }

    async fn clear_moved(&self, board: &Board) -> Result<()> {
        self.with_board(board, |b| b.moves = Default::default())
    }

    async fn stash(&self, board: &Board, member: &Member, stash: &str) -> Result<String> {
        self.with_board(board, |b| {
            let kept = b.moves.stashed.entry(member.as_str().to_owned());
            kept.or_insert_with(|| stash.to_owned()).clone()
        })
    }

    async fn stashed(&self, board: &Board) -> Result<Vec<(Member, String)>> {
        let stashed = self.with_board(board, |b| b.moves.stashed.clone())?;
        stashed
            .into_iter()
            .map(|(m, s)| Ok((Member::parse(&m)?, s)))
            .collect()
    }

    async fn unstash(&self, board: &Board, member: &Member) -> Result<()> {
        self.with_board(board, |b| {
            b.moves.stashed.remove(member.as_str());
        })
    }

    async fn forget_tokens(&self, board: &Board, tokens: &[String]) -> Result<()> {
        self.with_board(board, |b| b.forget_tokens(tokens))
    }

    async fn lease(&self, board: &Board, holder: &str, now_ms: i64, until_ms: i64) -> Result<bool> {
        self.with_board(board, |b| {
            let free = match &b.moves.lease {
                Some((other, until)) => other == holder || *until <= now_ms,
                None => true,
            };
            if free {
                b.moves.lease = Some((holder.to_owned(), until_ms));
            }
            free
        })
    }

    async fn slot_members(&self, board: &Board) -> Result<Vec<Member>> {
        let members: Vec<String> = self.with_board(board, |b| {
            b.slot_members().into_iter().map(str::to_owned).collect()
        })?;
        members.iter().map(|m| Member::parse(m)).collect()
    }

    async fn gate_epoch(&self, board: &Board) -> Result<u64> {
        self.with_board(board, |b| b.gate_epoch())
    }

    async fn gate_top(&self, board: &Board, k: u32) -> Result<Vec<Vec<(i64, String)>>> {
        self.with_board(board, |b| b.gate_top(k as usize))
    }

    async fn publish_bars(
        &self,
        board: &Board,
        epoch: u64,
        bars: &[Option<GateBar>],
    ) -> Result<()> {
        self.with_board(board, |b| b.publish_bars(epoch, bars))
    }

    async fn allowed(&self, board: &Board) -> Result<Vec<Member>> {
        let allowed = self.with_board(board, |b| b.allowed())?;
        allowed.iter().map(|m| Member::parse(m)).collect()
    }

    async fn set_allowed(&self, board: &Board, members: &[Member], allowed: bool) -> Result<()> {
        self.with_board(board, |b| b.set_allowed(members, allowed))
    }
}

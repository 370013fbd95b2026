//! The memory store's part in a reshard ([`ShardMoves`]): the shard count on shard 0's
//! board, and per shard the members moved off it (`MemBoard::moved`, which its writes
//! check as `write.lua` checks `moved_{b}`).

use async_trait::async_trait;

use super::MemoryStore;
use crate::board::Board;
use crate::domain::Member;
use crate::error::{Error, Result};
use crate::store::{ShardMoves, new_version};

#[async_trait]
impl ShardMoves for MemoryStore {
    async fn set_shards(
        &self,
        board: &Board,
        shards: u32,
        resharding: Option<u32>,
    ) -> Result<Board> {
        let config = board
            .config
            .clone()
            .with_shards(shards)
            .map_err(|e| Error::store(e.to_string()))?;
        self.with_board(board, |b| {
            b.board.version = new_version();
            b.board.resharding = resharding;
            b.set_config(config);
            b.board.clone()
        })
    }

    async fn mark_moved(&self, board: &Board, members: &[Member]) -> Result<()> {
        self.with_board(board, |b| {
            b.moved
                .extend(members.iter().map(|m| m.as_str().to_owned()))
        })
    }

    async fn moved(&self, board: &Board, members: &[Member]) -> Result<Vec<bool>> {
        self.with_board(board, |b| {
            members
                .iter()
                .map(|m| b.moved.contains(m.as_str()))
                .collect()
        })
    }

    async fn clear_moved(&self, board: &Board) -> Result<()> {
        self.with_board(board, |b| b.moved.clear())
    }

    async fn slot_members(&self, board: &Board) -> Result<Vec<Member>> {
        let members = self.with_board(board, |b| {
            b.slot_members()
                .into_iter()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })?;
        members.iter().map(|m| Member::parse(m)).collect()
    }
}

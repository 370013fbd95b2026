//! The shards of each sharded board this process has used, found once per incarnation
//! of the board (its version) and kept until a shard answers that it changed.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use futures_util::future::try_join_all;

use super::names::{shard_names, shard_of};
use crate::domain::any_board::{AnyBoard, NewBoard};
use crate::domain::board::Board;
use crate::domain::{BoardConfig, BoardName, Member};
use crate::error::{Error, Result};
use crate::store::Store;

/// A sharded board's shards, shard 0 (the board itself) first (while a reshard runs,
/// those of both counts).
pub(super) struct ShardSet {
    /// The shards, as boards.
    pub(super) boards: Vec<Board>,
}

impl ShardSet {
    /// The board: shard 0.
    pub(super) fn board(&self) -> &Board {
        &self.boards[0]
    }

    /// The shard of `member` under the board's count (while a reshard moves members,
    /// one it moved is elsewhere: see `Sharded::homes`).
    pub(super) fn of(&self, member: &Member) -> usize {
        shard_of(member, self.board().config.shards())
    }
}

/// Shard sets by board.
#[derive(Default)]
pub(super) struct ShardSets {
    sets: Mutex<HashMap<BoardName, Arc<ShardSet>>>,
}

impl ShardSets {
    /// The shards of `board` (which has more than one): from this cache when found for
    /// this incarnation, else loaded, and any shard missing (a creation cut short)
    /// created.
    pub(super) async fn get(&self, store: &dyn Store, board: &Board) -> Result<Arc<ShardSet>> {
        if let Some(set) = self.lock().get(&board.name)
            && set.board().version == board.version
        {
            return Ok(set.clone());
        }
        let names = shard_names(board);
        let config = NewBoard::Windowed(shard_config(&board.config));
        let loads = names[1..].iter().map(|name| {
            let config = &config;
            async move {
                match store.load_board(name).await? {
                    Some(AnyBoard::Windowed(shard)) => Ok(Board::clone(&shard)),
                    Some(_) => Err(Error::store(format!(
                        "shard {name} is not a windowed board"
                    ))),
                    None => {
                        let created = store.create_board(name, config, board.created_at);
                        let shard = created.await?.board().windowed().cloned();
                        shard.ok_or_else(|| Error::store(format!("shard {name} is trending")))
                    }
                }
            }
        });
        let mut boards = vec![board.clone()];
        boards.extend(try_join_all(loads).await?);
        let set = Arc::new(ShardSet { boards });
        self.lock().insert(board.name.clone(), set.clone());
        Ok(set)
    }

    /// Forgets the shards of board `name`: the next call finds them again.
    pub(super) fn forget(&self, name: &BoardName) {
        self.lock().remove(name);
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<BoardName, Arc<ShardSet>>> {
        self.sets.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The config of a shard of a board with `config`: the same, one shard, no snapshots
/// (the board's are taken from its merged tops and kept by shard 0).
pub(super) fn shard_config(config: &BoardConfig) -> BoardConfig {
    let one = config.clone().with_shards(1).expect("one shard is valid");
    one.with_snapshots(None)
}

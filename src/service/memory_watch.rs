//! Watches Redis's memory at start and then every [`CHECK_EVERY`]: an eviction policy
//! that may drop keys is a loud warning (and `/readyz` fails) unless `accept_eviction`;
//! a full Redis is a warning; the readings are gauges. Where Redis will not say (an ACL
//! or a managed service refuses `INFO`), that is logged once and the service carries on.

use std::time::Duration;

use tokio::task::JoinHandle;

use crate::{MemoryCheck, MemoryProblem, MemoryReading, Rollboard};

/// How often the memory is read.
pub const CHECK_EVERY: Duration = Duration::from_secs(60);

/// Reads the memory now and then every [`CHECK_EVERY`], until the task is aborted.
pub fn spawn(boards: Rollboard) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut every = tokio::time::interval(CHECK_EVERY);
        let mut said_hidden = false;
        loop {
            every.tick().await;
            check(&boards, &mut said_hidden).await;
        }
    })
}

/// Reads the memory once, records it and warns about a problem.
async fn check(boards: &Rollboard, said_hidden: &mut bool) {
    let check = match boards.memory_check().await {
        Ok(check) => check,
        Err(e) => {
            tracing::warn!(error = %e, "cannot read Redis's memory");
            crate::metrics::store_error(e.code());
            return;
        }
    };
    let MemoryCheck { reading, problem } = check;
    match &reading {
        MemoryReading::InProcess => return,
        MemoryReading::Hidden(why) => {
            if !*said_hidden {
                tracing::info!(
                    reason = %why,
                    "Redis does not tell its memory limit and eviction policy (INFO memory): \
                     make sure its maxmemory-policy is noeviction (see docs/operations.md)"
                );
                *said_hidden = true;
            }
            return;
        }
        MemoryReading::Read(limit) => {
            crate::metrics::redis_memory(limit, boards.settings().accept_eviction)
        }
    }
    match problem {
        Some(problem @ MemoryProblem::Evicting { .. }) => {
            tracing::error!(code = problem.code(), "{problem}; /readyz fails until then")
        }
        Some(problem @ MemoryProblem::Full { .. }) => {
            tracing::warn!(code = problem.code(), "{problem}")
        }
        None => {}
    }
}

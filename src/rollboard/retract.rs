//! Taking back a contributor's contributions (a brigade's votes): from every window of
//! every board that keeps contributors, or of the boards named, as if its events had
//! never been written ([`Store::retract`](crate::store::Store::retract)), board by board,
//! each in bounded store calls. One cut short (an error, a crash) is finished by running
//! it again: what it took back is gone from the contributor's index. The HTTP route runs
//! it in the background ([`Rollboard::start_retraction`]) and answers once it is done
//! or after a wait, with a status to poll ([`Rollboard::retraction`]).

use std::collections::HashMap;
use std::time::Duration;

use serde::Serialize;
use tokio::sync::watch;

use super::Rollboard;
use super::multi_write::check_boards;
use crate::domain::{BoardName, ChangeCause, Contributor, Retracted, Timestamp};
use crate::error::{Error, Result};

/// Where a retraction is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub enum RetractionState {
    /// Boards are left to visit.
    Running,
    /// Every board was visited.
    Done,
    /// A board's store call failed (`error` says how): run it again to finish.
    Failed,
}

/// A retraction's progress, or what it did once done.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct Retraction {
    /// The contributor.
    pub by: String,
    /// Where it is.
    pub state: RetractionState,
    /// Boards it took something back from so far.
    pub boards: u64,
    /// Boards still to visit (0 once done).
    pub boards_left: u64,
    /// Contributions taken back: the contributor's sum to one member in one slot
    /// (several events of a slot to one member are one contribution).
    pub contributions: u64,
    /// Events taken back, as the sum of those contributions' absolute deltas: each like
    /// counts 1, except that a like and its unlike in the same slot cancel out.
    pub events: u64,
    /// Why it failed (state `failed`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A retraction asked: who, from when, on which boards (checked).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Plan {
    by: Contributor,
    since: Option<Timestamp>,
    boards: Vec<BoardName>,
}

/// The retractions started here, by contributor: what each asked and its progress.
pub(super) type Retractions =
    std::sync::Mutex<HashMap<String, (Plan, watch::Receiver<Retraction>)>>;

/// Retractions remembered once done, at most (the oldest finished are forgotten first).
const REMEMBERED: usize = 1_000;

impl Rollboard {
    /// Takes back every contribution `by` made to each of `boards` (1 to
    /// [`MAX_BOARDS`](super::multi_write::MAX_BOARDS) distinct boards, each keeping
    /// contributors) or, when `None`, to every board keeping contributors, from every
    /// window and from what the caps counted, so that each window is what it would be
    /// had those events never been written; with `since`, only the contributions in
    /// slots from the one holding `since` on (a slot is the finest grain contributions
    /// are kept at). Board by board, in store calls bounded as the retirer's are; writes
    /// go on meanwhile (one written during it may stay: run it again). One cut short is
    /// finished by running it again. An invalid `by` is [`Error::InvalidContributor`];
    /// a named board that does not exist [`Error::BoardNotFound`], one keeping no
    /// contributors [`Error::InvalidQuery`]. A store failure ends it in state `failed`.
    pub async fn retract(
        &self,
        by: &str,
        since: Option<Timestamp>,
        boards: Option<&[String]>,
    ) -> Result<Retraction> {
        let plan = self.retraction_plan(by, since, boards).await?;
        let (progress, _) = watch::channel(status(&plan));
        self.run_retraction(&plan, &progress).await;
        Ok(progress.borrow().clone())
    }

    /// [`retract`](Self::retract) in the background: checks what is asked, starts it
    /// (or joins the same retraction running here), and answers its progress once it is
    /// done or `wait` has passed, whichever is first (at once when `wait` is zero).
    pub async fn start_retraction(
        &self,
        by: &str,
        since: Option<Timestamp>,
        boards: Option<&[String]>,
        wait: Duration,
    ) -> Result<Retraction> {
        let plan = self.retraction_plan(by, since, boards).await?;
        let mut progress = {
            let mut jobs = self.inner.retractions.lock().expect("retractions");
            match jobs.get(plan.by.as_str()) {
                Some((asked, progress))
                    if *asked == plan && progress.borrow().state == RetractionState::Running =>
                {
                    progress.clone()
                }
                _ => {
                    forget_finished(&mut jobs);
                    let (tx, rx) = watch::channel(status(&plan));
                    jobs.insert(plan.by.to_string(), (plan.clone(), rx.clone()));
                    let rb = self.clone();
                    tokio::spawn(async move { rb.run_retraction(&plan, &tx).await });
                    rx
                }
            }
        };
        if !wait.is_zero() {
            let done = progress.wait_for(|p| p.state != RetractionState::Running);
            // Timed out: still running; the sender gone (a panic): as last told.
            let _ = tokio::time::timeout(wait, done).await;
        }
        Ok(progress.borrow().clone())
    }

    /// The progress of the last retraction of `by` started here
    /// ([`start_retraction`](Self::start_retraction)); [`Error::RetractionNotFound`] when
    /// none ran since this process started.
    pub fn retraction(&self, by: &str) -> Result<Retraction> {
        let by = Contributor::parse(by)?;
        let jobs = self.inner.retractions.lock().expect("retractions");
        let (_, progress) = jobs
            .get(by.as_str())
            .ok_or_else(|| Error::RetractionNotFound(by.to_string()))?;
        Ok(progress.borrow().clone())
    }

    /// Checks what a retraction asks: the contributor, and the boards named (each must
    /// exist and keep contributors) or every board keeping contributors.
    async fn retraction_plan(
        &self,
        by: &str,
        since: Option<Timestamp>,
        boards: Option<&[String]>,
    ) -> Result<Plan> {
        let by = Contributor::parse(by)?;
        let boards = match boards {
            Some(names) => {
                let names = check_boards(names)?;
                for name in &names {
                    self.windowed(name.as_str())
                        .on_board(|b| async move {
                            super::contributors::keeps_contributors(&b, "; leave it out of boards")
                        })
                        .await?;
                }
                names
            }
            None => self.boards_keeping_contributors().await?,
        };
        Ok(Plan { by, since, boards })
    }

    /// Runs `plan`, telling `progress` after each board.
    async fn run_retraction(&self, plan: &Plan, progress: &watch::Sender<Retraction>) {
        let store = &self.inner.store;
        let (by, since) = (&plan.by, plan.since);
        for name in &plan.boards {
            let taken = self
                .change_contributions(name.as_str(), ChangeCause::Retract, |b, stamp| async move {
                    let from = since.map(|t| b.config.slot_start(t));
                    store.retract(&b, by, from, stamp).await
                })
                .await;
            let taken = match taken {
                Ok(taken) => taken,
                Err(e) => {
                    progress.send_modify(|p| {
                        p.state = RetractionState::Failed;
                        p.error = Some(format!("board {:?}: {e}", name.as_str()));
                    });
                    return;
                }
            };
            progress.send_modify(|p| {
                p.boards += u64::from(taken != Retracted::default());
                p.boards_left -= 1;
                p.contributions += taken.contributions;
                p.events += taken.events;
            });
        }
        progress.send_modify(|p| p.state = RetractionState::Done);
    }
}

/// The progress of `plan` before it starts.
fn status(plan: &Plan) -> Retraction {
    Retraction {
        by: plan.by.to_string(),
        state: RetractionState::Running,
        boards: 0,
        boards_left: plan.boards.len() as u64,
        contributions: 0,
        events: 0,
        error: None,
    }
}

/// Forgets finished retractions while more than [`REMEMBERED`] are kept.
fn forget_finished(jobs: &mut HashMap<String, (Plan, watch::Receiver<Retraction>)>) {
    if jobs.len() < REMEMBERED {
        return;
    }
    jobs.retain(|_, (_, progress)| progress.borrow().state == RetractionState::Running);
}

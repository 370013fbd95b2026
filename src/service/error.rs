//! Why the service could not run.

use crate::Error;

/// Why the service could not run.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// The store could not be opened, or a configured board could not be created.
    #[error(transparent)]
    Store(#[from] Error),
    /// A configured board conflicts with the stored one, or similar.
    #[error("{0}")]
    Config(String),
    /// The scheduler could not start.
    #[error(transparent)]
    Scheduler(#[from] super::scheduler::SchedulerError),
    /// Listening or serving failed.
    #[error("serving HTTP: {0}")]
    Io(#[from] std::io::Error),
}

//! The library's one error type, [`Error`], and [`Result`]: defined with the domain
//! whose values its variants carry (`domain/error.rs`), reached from everywhere else
//! through this module.

pub use crate::domain::error::{Error, Result};

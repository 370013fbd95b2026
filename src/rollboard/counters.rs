//! Counters: increment, read samples, list, drop, and the clean-up pass.

use super::Counters;
use crate::domain::counter::{self, CleanPlan, CounterName, Sample, SampleQuery};
use crate::domain::{Span, Timestamp, check_delta};
use crate::error::{Error, Result};
use crate::store::{CounterInfo, Incremented};

/// What one clean-up pass over every counter did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CleanReport {
    /// Counters visited.
    pub counters: u64,
    /// Samples deleted.
    pub removed: u64,
    /// Counters found empty and forgotten.
    pub forgotten: u64,
}

impl Counters<'_> {
    /// Adds `count` (non-zero, within ±(2^53 − 1)) to counter `name` at every precision
    /// of [`Settings::counter_precisions`](crate::Settings), at `at` (now when `None`),
    /// atomically. A time further ahead than the allowed skew is
    /// [`Error::InFuture`]; one whose slice the coarsest precision no longer keeps is
    /// [`Error::TooLate`].
    pub async fn incr(self, name: &str, count: i64, at: Option<Timestamp>) -> Result<()> {
        self.incr_batch(name, &[(count, at)]).await
    }

    /// Adds a batch of increments `(count, at)` to counter `name`, in one store call
    /// (one script on Redis) that adds one sum per touched sample: all or nothing. Each
    /// increment is checked as by [`incr`](Self::incr); a sum leaving
    /// ±(2^53 − 1) is [`Error::OutOfRange`].
    pub async fn incr_batch(
        self,
        name: &str,
        increments: &[(i64, Option<Timestamp>)],
    ) -> Result<()> {
        let name = CounterName::parse(name)?;
        let settings = self.rb.settings();
        settings.admission().check_batch(increments.len())?;
        let now = self.rb.now();
        let out_of_range = || Error::OutOfRange {
            member: name.to_string(),
        };
        // Most counters have no precisions of their own: assume so, and let the store
        // (atomically with the increment) say otherwise.
        let mut own: Option<Vec<Span>> = None;
        for _ in 0..3 {
            let precisions = match &own {
                Some(p) => p.clone(),
                None => counter::check_precisions(&settings.counter_precisions)?,
            };
            let admitted = increments
                .iter()
                .map(|(count, at)| {
                    Ok((
                        check_delta(*count)?,
                        self.counter_time(&precisions, *at, now)?,
                    ))
                })
                .collect::<Result<Vec<_>>>()?;
            if admitted.is_empty() {
                return Ok(());
            }
            let sums = counter::slice_sums(&precisions, &admitted).ok_or_else(out_of_range)?;
            match self
                .rb
                .inner
                .store
                .counters()
                .incr_counter(&name, own.as_deref(), &sums)
                .await?
            {
                Incremented::Done => return Ok(()),
                Incremented::OutOfRange => return Err(out_of_range()),
                Incremented::Precisions(stored) => own = stored,
            }
        }
        Err(Error::store(format!(
            "counter {name:?} kept changing its precisions"
        )))
    }

    /// Gives counter `name` precisions of its own (1 to 16 distinct durations, each a
    /// whole number of seconds), used by every later increment instead of
    /// [`Settings::counter_precisions`](crate::Settings); `None` takes them away (the
    /// global ones apply again). Samples counted at other precisions stay readable until
    /// cleaned. Answers the precisions now in effect, finest first.
    pub async fn set_precisions(
        self,
        name: &str,
        precisions: Option<&[Span]>,
    ) -> Result<Vec<Span>> {
        let name = CounterName::parse(name)?;
        let own = precisions.map(counter::check_precisions).transpose()?;
        self.rb
            .inner
            .store
            .counters()
            .set_counter_config(&name, own.as_deref())
            .await?;
        match own {
            Some(p) => Ok(p),
            None => counter::check_precisions(&self.rb.settings().counter_precisions),
        }
    }

    /// The precisions increments of counter `name` count at: its own, else the global
    /// ones.
    pub async fn precisions_in_effect(self, name: &str) -> Result<Vec<Span>> {
        let name = CounterName::parse(name)?;
        match self.rb.inner.store.counters().counter_config(&name).await? {
            Some(p) => Ok(p),
            None => counter::check_precisions(&self.rb.settings().counter_precisions),
        }
    }

    /// `at` (now when `None`), if it is neither too far ahead nor too late.
    fn counter_time(
        self,
        precisions: &[Span],
        at: Option<Timestamp>,
        now: Timestamp,
    ) -> Result<Timestamp> {
        let at = crate::domain::not_in_future(at, now, self.rb.settings().max_future_skew)?;
        let coarsest = precisions[precisions.len() - 1];
        let oldest_open = self.clean_plan(0).cutoff(coarsest, now);
        let slot = counter::slice_start(at, coarsest);
        if slot < oldest_open {
            return Err(Error::TooLate {
                at: at.unix_seconds_f64(),
                slot,
                oldest_open,
            });
        }
        Ok(at)
    }

    /// The samples of counter `name` at `precision`, oldest first, as `query` asks.
    /// [`Error::CounterNotFound`] for an unknown counter, [`Error::PrecisionNotFound`]
    /// for a precision it does not count at.
    pub async fn samples(
        self,
        name: &str,
        precision: Span,
        query: SampleQuery,
    ) -> Result<Vec<Sample>> {
        let name = CounterName::parse(name)?;
        let store = self.rb.inner.store.counters();
        let Some(stored) = store.counter_samples(&name, precision).await? else {
            return Err(match store.counter_precisions(&name).await? {
                None => Error::CounterNotFound(name.to_string()),
                Some(_) => Error::PrecisionNotFound {
                    counter: name.to_string(),
                    precision,
                },
            });
        };
        counter::select_samples(&stored, precision, self.rb.now(), query)
    }

    /// Every counter and its precisions, by name.
    pub async fn list(self) -> Result<Vec<CounterInfo>> {
        self.rb.inner.store.counters().list_counters().await
    }

    /// Deletes counter `name`; [`Error::CounterNotFound`] when there is none.
    pub async fn delete(self, name: &str) -> Result<()> {
        let name = CounterName::parse(name)?;
        if self.rb.inner.store.counters().drop_counter(&name).await? {
            Ok(())
        } else {
            Err(Error::CounterNotFound(name.to_string()))
        }
    }

    /// The clean-up plan of pass number `pass`, keeping
    /// [`Settings::counter_keep`](crate::Settings) slices per precision.
    pub fn clean_plan(self, pass: u64) -> CleanPlan {
        CleanPlan {
            keep: self.rb.settings().counter_keep,
            pass,
        }
    }

    /// One clean-up pass over every counter (see [`CleanPlan`]): each call to the store
    /// is bounded, and a counter left empty is forgotten.
    pub async fn clean(self, plan: CleanPlan) -> Result<CleanReport> {
        let mut report = CleanReport::default();
        for info in self.list().await? {
            let cleaned = self
                .rb
                .inner
                .store
                .counters()
                .clean_counter(&info.name, self.rb.now(), plan)
                .await?;
            report.counters += 1;
            report.removed += cleaned.removed;
            report.forgotten += u64::from(cleaned.forgotten);
        }
        Ok(report)
    }
}

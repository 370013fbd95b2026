//! Progress display for long batch commands: shown on stderr when it is a terminal,
//! never in logs or pipes.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// A counter of `what` with its rate, or `None` when stderr is not a terminal.
pub fn counter(what: &str) -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::new_spinner();
    bar.set_style(
        ProgressStyle::with_template(&format!(
            "{{spinner}} {what} {{pos}} ({{per_sec}}, {{elapsed}})"
        ))
        .expect("a valid template"),
    );
    bar.enable_steady_tick(Duration::from_millis(200));
    Some(bar)
}

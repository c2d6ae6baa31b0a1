//! The per-epoch progress bar (indicatif): loss, examples per second and ETA.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::Instant;

/// A progress bar over the examples of one epoch; hidden when disabled or when standard error is
/// not a terminal.
pub(crate) struct Progress {
    bar: ProgressBar,
    start: Instant,
    done: u64,
}

impl Progress {
    /// A bar of `total` examples labelled `prefix`.
    pub(crate) fn new(enabled: bool, total: u64, prefix: String) -> Self {
        let bar = if enabled && std::io::stderr().is_terminal() {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            if let Ok(style) = ProgressStyle::with_template(
                "{prefix} [{bar:30.cyan/blue}] {pos}/{len} {msg} ETA {eta}",
            ) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar
        } else {
            ProgressBar::hidden()
        };
        bar.set_prefix(prefix);
        Progress {
            bar,
            start: Instant::now(),
            done: 0,
        }
    }

    /// Moves the bar to `pos` examples without counting them in the throughput (a resumed epoch).
    pub(crate) fn set_position(&mut self, pos: u64) {
        self.bar.set_position(pos);
    }

    /// Adds `examples` done, showing the running mean `loss` and the throughput.
    pub(crate) fn advance(&mut self, examples: u64, loss: f64) {
        self.done += examples;
        let rate = self.done as f64 / self.start.elapsed().as_secs_f64().max(1e-9);
        self.bar.inc(examples);
        self.bar
            .set_message(format!("loss {loss:.4} {rate:.0} ex/s"));
    }

    /// Clears the bar.
    pub(crate) fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

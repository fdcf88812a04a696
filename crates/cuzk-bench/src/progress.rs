//! Progress display for long steps (fixture generation, proving).

use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

use cuzk_fixtures::Progress;

/// A spinner with elapsed time, for a step of unknown length.
pub fn spinner(message: impl Into<String>) -> ProgressBar {
    let bar = ProgressBar::new_spinner();
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {msg}")
            .expect("valid template"),
    );
    bar.enable_steady_tick(Duration::from_millis(200));
    bar.set_message(message.into());
    bar
}

/// A bar of `total` units with rate and ETA.
pub fn bar(total: u64) -> ProgressBar {
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template(
            "[{elapsed_precise}] {bar:30} {human_pos}/{human_len} ({per_sec}, eta {eta}) {msg}",
        )
        .expect("valid template"),
    );
    bar
}

/// Shows fixture generation steps as spinners with their rough cost.
pub struct FixtureProgress {
    current: Option<ProgressBar>,
}

impl Default for FixtureProgress {
    fn default() -> Self {
        FixtureProgress::new()
    }
}

impl FixtureProgress {
    pub fn new() -> Self {
        FixtureProgress { current: None }
    }

    pub fn on(&mut self, event: Progress) {
        match event {
            Progress::Reused { step } => eprintln!("  reused    {step}"),
            Progress::Started {
                step,
                estimate_secs,
            } => {
                let est = if estimate_secs >= 60 {
                    format!("~{} min on 2 cores", estimate_secs.div_ceil(60))
                } else {
                    format!("~{estimate_secs} s")
                };
                self.current = Some(spinner(format!("generating {step} ({est})")));
            }
            Progress::Advanced { step, done, total } => {
                let bar = self.current.get_or_insert_with(|| bar(total));
                if bar.length() != Some(total) {
                    *bar = self::bar(total);
                }
                bar.set_message(step);
                bar.set_position(done);
            }
            Progress::Done { step, secs } => {
                if let Some(bar) = self.current.take() {
                    bar.finish_and_clear();
                }
                eprintln!("  generated {step} in {secs:.1} s");
            }
        }
    }
}

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

/// Shows fixture generation steps as spinners with their rough cost.
pub struct FixtureProgress {
    current: Option<ProgressBar>,
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
            Progress::Done { step, secs } => {
                if let Some(bar) = self.current.take() {
                    bar.finish_and_clear();
                }
                eprintln!("  generated {step} in {secs:.1} s");
            }
        }
    }
}

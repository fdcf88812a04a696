//! Progress reports of a streaming generation, and the process' peak memory.
//!
//! [`generate_streaming`](crate::stream::generate_streaming) calls its
//! progress callback with a [`Progress`] at every stage change and every
//! chunk: the [`Stage`], how far the stage is, and how many of the file's
//! points are written, so a command line can draw a bar with rate and ETA.

use std::fmt;
use std::time::Duration;

/// A stage of a streaming generation, in order (`Ord` is that order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Stage {
    /// First synthesis pass: counting variables and constraints.
    Count,
    /// Powers of tau and the Lagrange basis at tau.
    Lagrange,
    /// Second synthesis pass: per-variable evaluations at tau (progress in
    /// constraints).
    Evaluate,
    /// Scanning the evaluations for section sizes and unconstrained variables.
    Scan,
    /// Building the fixed-base tables.
    Tables,
    /// The verifying key and its ic points.
    Vk,
    H,
    L,
    A,
    BG1,
    BG2,
    /// The `.params` file is synced and renamed, the `.vk` written.
    Done,
}

impl Stage {
    /// A short lower-case name (the `.params` section's name for sections).
    pub fn name(self) -> &'static str {
        match self {
            Stage::Count => "count",
            Stage::Lagrange => "lagrange",
            Stage::Evaluate => "evaluate",
            Stage::Scan => "scan",
            Stage::Tables => "tables",
            Stage::Vk => "vk",
            Stage::H => "h",
            Stage::L => "l",
            Stage::A => "a",
            Stage::BG1 => "b_g1",
            Stage::BG2 => "b_g2",
            Stage::Done => "done",
        }
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One progress report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    pub stage: Stage,
    /// Work of this stage done and in all: constraints in
    /// [`Stage::Evaluate`], points in the point stages (`Vk` to `BG2`),
    /// `0` of `0` where a stage has no count.
    pub stage_done: u64,
    pub stage_total: u64,
    /// Points of the `.params` file written so far and in all (ic, h, l, a,
    /// b_g1 and b_g2; `0` of `0` until the section sizes are known, after
    /// [`Stage::Evaluate`]). A G2 point (b_g2) costs about three G1 points.
    pub points_done: u64,
    pub points_total: u64,
}

/// A progress callback that ignores every report.
pub fn no_progress(_: &Progress) {}

/// Peak resident memory of this process so far (`VmHWM`), in bytes; `None`
/// where `/proc/self/status` does not say.
pub fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line
        .trim_start_matches("VmHWM:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// CPU time this process has used so far, all threads together.
pub fn cpu_time() -> Duration {
    // SAFETY: getrusage fills the zeroed struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_SELF, &mut usage) != 0 {
            return Duration::ZERO;
        }
        usage
    };
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec.max(0) as u64) + Duration::from_micros(t.tv_usec.max(0) as u64)
    };
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

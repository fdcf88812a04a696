//! `srs`: sizes and load times of one circuit's SRS in each form.

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use cuzk_core::params::param_files;
use cuzk_core::ProofKind;
use cuzk_prover::srs::{write_warm, ParamsFile, SubgroupCheck, WarmSrs};

fn mib(b: u64) -> f64 {
    b as f64 / (1 << 20) as f64
}

/// Loads the fixtures' SRS of `kind` as `.params` (unchecked, and checked if
/// asked), writes and opens its warm form under `warm_dir`, and prints sizes
/// and times.
pub fn run(
    kind: ProofKind,
    sel: &crate::select::Selection,
    checked: bool,
    warm_dir: &Path,
) -> Result<()> {
    let (_, req) = crate::commands::fixture_request(sel, kind)?;
    let files = param_files(req.proof_type)?;
    let t = Instant::now();
    let file = ParamsFile::open(&files.params)?;
    let open_ms = t.elapsed().as_secs_f64() * 1000.0;
    let c = file.counts();
    println!(
        "srs {} file={} file_mib={:.1} open_ms={open_ms:.2}",
        req.proof_type.circuit_id(),
        files.params.display(),
        mib(file.len())
    );
    println!(
        "  points h={} l={} a={} b_g1={} b_g2={} ic={}",
        c.h, c.l, c.a, c.b_g1, c.b_g2, c.ic
    );
    let t = Instant::now();
    let srs = file.decode(SubgroupCheck::None)?;
    println!(
        "  decode unchecked: {:.0} ms, {:.1} MiB in memory",
        t.elapsed().as_secs_f64() * 1000.0,
        mib(srs.bytes())
    );
    if checked {
        let t = Instant::now();
        file.decode(SubgroupCheck::Full)?;
        println!(
            "  decode checked (subgroup): {:.0} ms",
            t.elapsed().as_secs_f64() * 1000.0
        );
    }
    std::fs::create_dir_all(warm_dir)?;
    let warm_path = warm_dir.join(format!("{}.warm", req.proof_type.circuit_id()));
    let t = Instant::now();
    write_warm(&srs, &warm_path).with_context(|| format!("writing {}", warm_path.display()))?;
    println!(
        "  warm write: {:.0} ms ({})",
        t.elapsed().as_secs_f64() * 1000.0,
        warm_path.display()
    );
    let t = Instant::now();
    let warm = WarmSrs::open(&warm_path)?;
    println!(
        "  warm open (mmap): {:.2} ms, {:.1} MiB mapped",
        t.elapsed().as_secs_f64() * 1000.0,
        mib(warm.bytes())
    );
    Ok(())
}

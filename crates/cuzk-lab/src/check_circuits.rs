//! `check-circuits`: every partition of a fixture proof synthesized and
//! checked (A·B = C for every constraint), without parameters.
//!
//! Each partition runs in a child process of its own (`--partition k`), so
//! its peak RSS is its own; the parent runs `--jobs` children at a time,
//! compares every partition's constraint count with filecoin-proofs' blank
//! circuit of that shape, and ends with
//! `check-circuits kind=K sector_size=SIZE partitions=N satisfied=S/N
//! constraints_per_partition=C blank_constraints=B vanilla_verified=V`
//! (the fixture's vanilla proofs are checked with filecoin-proofs' own
//! vanilla verifier first).

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use cuzk_core::kinds::{post_proof_from_wire, seal_proof_from_wire, update_proof_from_wire};
use cuzk_core::prover::partition_source;
use cuzk_core::ProofKind;
use cuzk_fixtures::Fixtures;
use cuzk_setup::FilecoinCircuit;
use serde::{Deserialize, Serialize};

use crate::commands::gen_fixtures;
use crate::select::Selection;

/// One partition's check, as a child prints it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PartitionCheck {
    pub partition: usize,
    pub constraints: usize,
    pub inputs: usize,
    pub aux: usize,
    pub unsatisfied: usize,
    pub first_unsatisfied: Option<usize>,
    /// Building the circuit from the vanilla proofs and synthesizing it.
    pub synth_ms: u64,
    /// The child's whole run, fixture loading included.
    pub wall_ms: u64,
    pub peak_rss_bytes: u64,
}

/// The circuit of `kind` in the fixture set (its registered proof).
fn circuit_of(f: &Fixtures, kind: ProofKind) -> Result<FilecoinCircuit> {
    let m = &f.manifest;
    let bad = || anyhow::anyhow!("the manifest's {kind} registered proof is unknown");
    Ok(match kind {
        ProofKind::PoRep => {
            FilecoinCircuit::Seal(seal_proof_from_wire(m.porep.registered_proof).ok_or_else(bad)?)
        }
        ProofKind::SnapDeals => FilecoinCircuit::Update(
            update_proof_from_wire(m.snap.registered_proof).ok_or_else(bad)?,
        ),
        ProofKind::WindowPost => FilecoinCircuit::Window(
            post_proof_from_wire(m.window_post.registered_proof).ok_or_else(bad)?,
        ),
        ProofKind::WinningPost => FilecoinCircuit::Winning(
            post_proof_from_wire(m.winning_post.registered_proof).ok_or_else(bad)?,
        ),
    })
}

/// The fixture's partition source of `kind`, built without parameters.
pub(crate) fn source(
    f: &Fixtures,
    kind: ProofKind,
) -> Result<Box<dyn cuzk_circuits::PartitionSource>> {
    let req = f
        .request(kind)?
        .validate_without_params(u64::MAX)
        .map_err(|e| anyhow::anyhow!("fixture request for {kind}: {e}"))?;
    partition_source(&req).map_err(|e| anyhow::anyhow!("building the {kind} circuits: {e}"))
}

/// The process's peak resident set (VmHWM), in bytes.
pub fn peak_rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// Child mode: checks partition `k` and prints one JSON line.
pub fn run_child(kind: ProofKind, sel: &Selection, k: usize) -> Result<()> {
    let start = Instant::now();
    let f = sel.load()?;
    let src = source(&f, kind)?;
    let t = Instant::now();
    let check = src.check(k)?;
    let out = PartitionCheck {
        partition: k,
        constraints: check.constraints,
        inputs: check.inputs,
        aux: check.aux,
        unsatisfied: check.unsatisfied,
        first_unsatisfied: check.first_unsatisfied,
        synth_ms: t.elapsed().as_millis() as u64,
        wall_ms: start.elapsed().as_millis() as u64,
        peak_rss_bytes: peak_rss_bytes(),
    };
    println!("{}", serde_json::to_string(&out)?);
    Ok(())
}

/// Runs the check of every partition (or of `only`); `Ok(true)` when every
/// partition is satisfied and has the blank circuit's constraint count.
pub fn run(kind: ProofKind, sel: &Selection, jobs: usize, only: &[usize]) -> Result<bool> {
    let f = gen_fixtures(sel, true)?;
    let circuit = circuit_of(&f, kind)?;
    let t = Instant::now();
    let vanilla = f.verify_vanilla(kind)?;
    eprintln!(
        "{kind} vanilla proofs: verified={vanilla} by filecoin-proofs' vanilla verifier ({:.1} s)",
        t.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    let blank = circuit.shape()?;
    eprintln!(
        "{circuit}: blank circuit constraints={} inputs={} aux={} (counted in {:.1} s)",
        blank.constraints,
        blank.inputs,
        blank.aux,
        t.elapsed().as_secs_f64()
    );
    let count = source(&f, kind)?.partitions();
    let partitions: Vec<usize> = if only.is_empty() {
        (0..count).collect()
    } else {
        only.to_vec()
    };
    if let Some(k) = partitions.iter().find(|&&k| k >= count) {
        bail!("partition {k} does not exist: the {kind} proof has {count}");
    }

    let results = run_children(kind, sel, &partitions, jobs.max(1))?;
    let mut satisfied = 0;
    let mut sizes = BTreeMap::new();
    for r in results.values() {
        let ok = r.unsatisfied == 0 && r.constraints == blank.constraints;
        satisfied += usize::from(ok);
        *sizes.entry(r.constraints).or_insert(0) += 1;
        println!(
            "partition={} constraints={} inputs={} aux={} satisfied={} unsatisfied={} \
             matches_blank={} synth_ms={} wall_ms={} peak_rss_mib={:.0}",
            r.partition,
            r.constraints,
            r.inputs,
            r.aux,
            r.unsatisfied == 0,
            r.unsatisfied,
            r.constraints == blank.constraints,
            r.synth_ms,
            r.wall_ms,
            r.peak_rss_bytes as f64 / f64::from(1 << 20)
        );
    }
    let per_partition = match sizes.len() {
        1 => sizes.keys().next().copied().unwrap_or(0).to_string(),
        _ => format!("{sizes:?}"),
    };
    println!(
        "check-circuits kind={} sector_size={} partitions={} satisfied={satisfied}/{} \
         constraints_per_partition={per_partition} blank_constraints={} vanilla_verified={vanilla}",
        kind.as_str(),
        sel.size,
        results.len(),
        results.len(),
        blank.constraints
    );
    Ok(vanilla && satisfied == results.len())
}

/// Runs one child per partition, `jobs` at a time, with a progress bar.
fn run_children(
    kind: ProofKind,
    sel: &Selection,
    partitions: &[usize],
    jobs: usize,
) -> Result<BTreeMap<usize, PartitionCheck>> {
    let exe = std::env::current_exe()?;
    let bar = indicatif::ProgressBar::new(partitions.len() as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "[{elapsed_precise}] {bar:30} {pos}/{len} partitions (eta {eta}) {msg}",
        )
        .expect("valid template"),
    );
    let queue = Arc::new(Mutex::new(partitions.to_vec()));
    let results = Arc::new(Mutex::new(BTreeMap::new()));
    std::thread::scope(|scope| -> Result<()> {
        let workers: Vec<_> = (0..jobs.min(partitions.len()))
            .map(|_| {
                let (queue, results, bar, exe) = (&queue, &results, &bar, &exe);
                scope.spawn(move || -> Result<()> {
                    loop {
                        let Some(k) = queue.lock().expect("queue").pop() else {
                            return Ok(());
                        };
                        bar.set_message(format!("checking partition {k}"));
                        let r = child(exe, kind, sel, k)?;
                        bar.inc(1);
                        results.lock().expect("results").insert(k, r);
                    }
                })
            })
            .collect();
        for w in workers {
            w.join()
                .map_err(|_| anyhow::anyhow!("a check thread panicked"))??;
        }
        Ok(())
    })?;
    bar.finish_and_clear();
    let results = std::mem::take(&mut *results.lock().expect("results"));
    Ok(results)
}

fn child(
    exe: &std::path::Path,
    kind: ProofKind,
    sel: &Selection,
    k: usize,
) -> Result<PartitionCheck> {
    let out = child_command(exe, "check-circuits", kind, sel, k)
        .arg("--child")
        .output()
        .with_context(|| format!("running the check of partition {k}"))?;
    if !out.status.success() {
        bail!(
            "the check of partition {k} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    last_json_line(out.stdout, &format!("the check of partition {k}"))
}

/// `exe SUBCOMMAND --kind K` on the selected fixtures for partition `k`
/// (a child process of `check-circuits` or `synth-bench`).
pub(crate) fn child_command(
    exe: &std::path::Path,
    subcommand: &str,
    kind: ProofKind,
    sel: &Selection,
    k: usize,
) -> Command {
    let mut cmd = Command::new(exe);
    cmd.args([
        subcommand,
        "--kind",
        kind.as_str(),
        "--sector-size",
        sel.size.name(),
    ])
    .arg("--fixtures")
    .arg(&sel.dir)
    .arg("--params")
    .arg(&sel.params)
    .args(["--partition", &k.to_string()]);
    cmd
}

/// The JSON report a child printed last on its stdout.
pub(crate) fn last_json_line<T: serde::de::DeserializeOwned>(
    stdout: Vec<u8>,
    what: &str,
) -> Result<T> {
    let text = String::from_utf8(stdout)?;
    let line = text
        .lines()
        .last()
        .with_context(|| format!("{what} printed nothing"))?;
    serde_json::from_str(line).with_context(|| format!("parsing {what}"))
}

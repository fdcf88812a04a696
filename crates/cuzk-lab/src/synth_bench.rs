//! `synth-bench`: today's synthesis and the compiled-constraint-system
//! path side by side on one fixture partition.
//!
//! Three child processes, one after the other, each with its own peak RSS:
//! `record` (the one-time matrix build, saved to `<params>/r1cs`),
//! `baseline` (`PartitionSource::synthesize`, linear combinations built and
//! evaluated per constraint) and `compiled` (the saved matrices loaded,
//! then `PartitionSource::synthesize_compiled`). CPU time is the child's
//! `getrusage` user + system time around the synthesis call alone. Each
//! synthesis child runs the partition twice and reports the second run (a
//! daemon's steady state: the compiled path then reuses the first run's
//! vectors through the witness pool, as the engine does; the first run's
//! figures, which pay the kernel for fresh memory, are printed beside it).
//! Each child fingerprints its witness (a, b, c, assignment and densities)
//! and the parent checks that both paths agree. Ends with `synth-bench kind=K
//! sector_size=S core_s_per_partition=X baseline_core_s_per_partition=Y
//! ratio_vs_baseline=Y/X wall_s=W peak_rss_gib=R ...`.

use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use blstrs::Scalar;
use cuzk_core::ProofKind;
use cuzk_prover::{AbcAt, PartitionWitness};
use ff::Field;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::check_circuits::{child_command, last_json_line, peak_rss_bytes, source};
use crate::commands::gen_fixtures;
use crate::select::Selection;

/// What one child measured.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PathRun {
    pub path: String,
    pub wall_ms: u64,
    pub core_s: f64,
    pub peak_rss_bytes: u64,
    pub constraints: usize,
    /// The witness fingerprint (empty for `record`).
    pub fingerprint: String,
    /// `record`: the matrices' bytes in memory; `compiled`: the same, loaded.
    pub matrix_bytes: u64,
    /// `compiled`: loading the matrices file (not part of the synthesis).
    pub load_ms: u64,
    pub detail: String,
}

/// This process's user + system CPU seconds so far.
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the struct it is given; zeroed is a valid
    // initial value for this plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 * 1e-6;
    t(ru.ru_utime) + t(ru.ru_stime)
}

/// A fingerprint of a vector of scalars: per chunk of 2^16, Horner's rule
/// at a fixed point, the chunk values combined in order. Equal vectors
/// give equal fingerprints; different ones almost surely do not.
fn fingerprint_scalars(v: &[Scalar]) -> Scalar {
    let x = Scalar::from(0x9e37_79b9_7f4a_7c15u64);
    let chunks: Vec<Scalar> = v
        .par_chunks(1 << 16)
        .map(|c| c.iter().fold(Scalar::ZERO, |acc, s| acc * x + s))
        .collect();
    chunks
        .iter()
        .fold(Scalar::from(v.len() as u64), |acc, s| acc * x.square() + s)
}

fn fingerprint(w: &PartitionWitness) -> String {
    let parts = [&w.a, &w.b, &w.c, &w.input, &w.aux].map(|v| fingerprint_scalars(v));
    let mut out = String::new();
    for p in parts {
        out.push_str(&hex::encode(&p.to_bytes_le()[..8]));
    }
    for d in [&w.a_aux_density, &w.b_input_density, &w.b_aux_density] {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (d.len(), d.words()).hash(&mut h);
        out.push_str(&format!("{:016x}", h.finish()));
    }
    out
}

/// Child mode: runs one path on partition `k` and prints one JSON line.
pub fn run_child(path: &str, kind: ProofKind, sel: &Selection, k: usize) -> Result<()> {
    let f = sel.load()?;
    let src = source(&f, kind)?;
    // Named as the daemon names it, so a recording made here is the one a
    // daemon on the same parameter directory loads.
    let (key, file) = cuzk_core::r1cs_manager::recorded_file(&sel.params, src.shape());
    if path == "record" {
        return record_child(&*src, k, &key, &file);
    }
    let (mut load_ms, mut matrix_bytes, mut compiled) = (0, 0, None);
    if path == "compiled" {
        let t = Instant::now();
        let cs = cuzk_r1cs::load(&file, &key)?;
        load_ms = t.elapsed().as_millis() as u64;
        matrix_bytes = cs.bytes();
        compiled = Some(std::sync::Arc::new(cs));
    }
    if compiled.is_some() {
        // As the engine does: vectors of a proved partition go to the next.
        cuzk_prover::pool::pool().configure(u64::MAX, None);
    }
    // Twice: the first run pays for fresh memory, the second is the steady
    // state of a daemon proving one partition after another.
    let mut runs = Vec::with_capacity(2);
    for _ in 0..2 {
        let (t, cpu) = (Instant::now(), cpu_seconds());
        let witness = match (path, &compiled) {
            ("baseline", _) => src.synthesize(k)?.witness,
            ("compiled", Some(cs)) => src.synthesize_compiled(k, cs, AbcAt::Synthesis)?.witness,
            _ => bail!("unknown synth-bench path {path}"),
        };
        let (core_s, wall_ms) = (cpu_seconds() - cpu, t.elapsed().as_millis() as u64);
        runs.push((
            core_s,
            wall_ms,
            witness.num_constraints(),
            fingerprint(&witness),
        ));
        witness.recycle();
    }
    let (cold, warm) = (&runs[0], &runs[1]);
    if cold.3 != warm.3 {
        bail!("the {path} path gave two different witnesses for one partition");
    }
    print(PathRun {
        path: path.into(),
        wall_ms: warm.1,
        core_s: warm.0,
        peak_rss_bytes: peak_rss_bytes(),
        constraints: warm.2,
        fingerprint: warm.3.clone(),
        matrix_bytes,
        load_ms,
        detail: format!(
            "first_run_core_s={:.2} first_run_wall_ms={} reused_gib={:.1}",
            cold.0,
            cold.1,
            cuzk_prover::pool::pool().reused_bytes() as f64 / f64::from(1 << 30)
        ),
    })
}

fn record_child(
    src: &dyn cuzk_circuits::PartitionSource,
    k: usize,
    key: &str,
    file: &Path,
) -> Result<()> {
    let (t, cpu) = (Instant::now(), cpu_seconds());
    let mut cs = src.record(k)?;
    cs.key = key.to_string();
    let (core_s, wall_ms) = (cpu_seconds() - cpu, t.elapsed().as_millis() as u64);
    cuzk_r1cs::save(&cs, file)?;
    let st = cs.stats();
    print(PathRun {
        path: "record".into(),
        wall_ms,
        core_s,
        peak_rss_bytes: peak_rss_bytes(),
        constraints: st.constraints as usize,
        fingerprint: String::new(),
        matrix_bytes: st.bytes,
        load_ms: 0,
        detail: format!(
            "segments={} instances={} coefficients={} file_bytes={}",
            st.segments,
            st.instances,
            st.coefficients,
            std::fs::metadata(file).map_or(0, |m| m.len())
        ),
    })
}

fn print(r: PathRun) -> Result<()> {
    println!("{}", serde_json::to_string(&r)?);
    Ok(())
}

fn child(exe: &Path, path: &str, kind: ProofKind, sel: &Selection, k: usize) -> Result<PathRun> {
    let out = child_command(exe, "synth-bench", kind, sel, k)
        .args(["--child", path])
        .stderr(std::process::Stdio::inherit())
        .output()
        .with_context(|| format!("running the {path} child"))?;
    if !out.status.success() {
        bail!("the {path} child failed ({})", out.status);
    }
    last_json_line(out.stdout, &format!("the {path} child"))
}

/// Runs the three children on partition `k`; `Ok(true)` when both paths
/// gave the same witness.
pub fn run(kind: ProofKind, sel: &Selection, k: usize) -> Result<bool> {
    let f = gen_fixtures(sel, true)?;
    let count = source(&f, kind)?.partitions();
    if k >= count {
        bail!("partition {k} does not exist: the {kind} proof has {count}");
    }
    let exe = std::env::current_exe()?;
    let mut runs = Vec::new();
    for path in ["record", "baseline", "compiled"] {
        eprintln!("synth-bench: {path} (partition {k}) ...");
        let r = child(&exe, path, kind, sel, k)?;
        println!(
            "path={} wall_ms={} core_s={:.2} peak_rss_mib={:.0} constraints={} matrix_bytes={} load_ms={} {}",
            r.path,
            r.wall_ms,
            r.core_s,
            r.peak_rss_bytes as f64 / f64::from(1 << 20),
            r.constraints,
            r.matrix_bytes,
            r.load_ms,
            r.detail
        );
        runs.push(r);
    }
    let (rec, base, comp) = (&runs[0], &runs[1], &runs[2]);
    let same = base.fingerprint == comp.fingerprint && base.constraints == comp.constraints;
    println!(
        "synth-bench kind={} sector_size={} partition={k} core_s_per_partition={:.2} \
         baseline_core_s_per_partition={:.2} ratio_vs_baseline={:.2} wall_s={:.2} \
         peak_rss_gib={:.2} baseline_peak_rss_gib={:.2} same_witness={same} \
         matrix_build_s={:.1} matrix_mib={:.1}",
        kind.as_str(),
        sel.size,
        comp.core_s,
        base.core_s,
        base.core_s / comp.core_s.max(1e-9),
        comp.wall_ms as f64 / 1e3,
        comp.peak_rss_bytes as f64 / f64::from(1 << 30),
        base.peak_rss_bytes as f64 / f64::from(1 << 30),
        rec.wall_ms as f64 / 1e3,
        comp.matrix_bytes as f64 / f64::from(1 << 20),
    );
    Ok(same)
}

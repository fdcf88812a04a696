//! `prover-bench`: bellperson's CPU prover and ours on the same circuit, the
//! same SRS and the same r and s, side by side in one run.
//!
//! Each prover runs in its own child process so that peak RSS and caches are
//! its own; the parent compares the proofs, prints per-stage times and ends
//! with `ratio_vs_bellperson=<bellperson time / our time>`. Times cover
//! synthesis plus proving (the SRS is loaded before the clock starts, and
//! its load time is reported apart).

use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use bellperson::groth16::Parameters;
use blstrs::{Bls12, Scalar};
use cuzk_core::params::param_files;
use cuzk_core::prover::proof_circuits;
use cuzk_core::ProofKind;
use cuzk_prover::srs::{ParamsFile, SubgroupCheck};
use cuzk_prover::{CpuBackend, ProveStats, ProverBackend};
use ff::Field;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::select::Selection;

/// Which prover a child process runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
pub enum Impl {
    Both,
    Cuzk,
    Bellperson,
}

/// One child's measurements (milliseconds).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Run {
    pub prover: String,
    pub partitions: usize,
    pub srs_load_ms: f64,
    pub total_ms: f64,
    pub synthesis_ms: f64,
    pub ntt_ms: f64,
    pub msm_h_ms: f64,
    pub msm_l_ms: f64,
    pub msm_a_ms: f64,
    pub msm_b_g1_ms: f64,
    pub msm_b_g2_ms: f64,
    pub assembly_ms: f64,
    pub zeros: usize,
    pub ones: usize,
    pub others: usize,
    pub peak_rss_mib: f64,
    pub proof_hex: String,
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Peak resident set of this process (VmHWM), MiB.
fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(0.0, |kib| kib / 1024.0)
}

/// Runs one prover in this process and returns its measurements.
pub fn measure(kind: ProofKind, sel: &Selection, which: Impl) -> Result<Run> {
    let (fixtures, req) = crate::commands::fixture_request(sel, kind)?;
    let circuits = proof_circuits(&req)?;
    let source = circuits.source();
    let files = param_files(req.proof_type)?;
    let n = source.partitions();
    let mut rng = ChaCha8Rng::seed_from_u64(0xbe4c);
    let r: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
    let s: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
    let mut run = Run {
        partitions: n,
        ..Default::default()
    };
    let mut proof = Vec::new();
    match which {
        Impl::Bellperson => {
            run.prover = "bellperson".into();
            let t = Instant::now();
            let file = std::fs::File::open(&files.params)?;
            let params = Parameters::<Bls12>::read(std::io::BufReader::new(file), false)?;
            run.srs_load_ms = ms(t.elapsed());
            let t = Instant::now();
            let proofs = circuits.reference().bellperson_proofs(&params, r, s)?;
            run.total_ms = ms(t.elapsed());
            for p in proofs {
                p.write(&mut proof)?;
            }
        }
        Impl::Cuzk => {
            run.prover = "cuzk-cpu".into();
            let t = Instant::now();
            let srs = ParamsFile::open(&files.params)?.decode(SubgroupCheck::None)?;
            run.srs_load_ms = ms(t.elapsed());
            let t = Instant::now();
            let mut stats = ProveStats::default();
            for k in 0..n {
                let synthesized = source.synthesize(k)?;
                run.synthesis_ms += ms(synthesized.elapsed);
                let mut w = [synthesized.witness];
                let (proofs, st) =
                    CpuBackend.prove(&mut w, &srs.as_srs_ref(), &r[k..=k], &s[k..=k])?;
                accumulate(&mut stats, &st);
                proof.extend_from_slice(&proofs[0].to_bytes());
            }
            run.total_ms = ms(t.elapsed());
            run.ntt_ms = ms(stats.ntt);
            run.msm_h_ms = ms(stats.msm_h);
            run.msm_l_ms = ms(stats.msm_l);
            run.msm_a_ms = ms(stats.msm_a);
            run.msm_b_g1_ms = ms(stats.msm_b_g1);
            run.msm_b_g2_ms = ms(stats.msm_b_g2);
            run.assembly_ms = ms(stats.assembly);
            run.zeros = stats.shape.zeros;
            run.ones = stats.shape.ones;
            run.others = stats.shape.others;
        }
        Impl::Both => bail!("measure runs one prover"),
    }
    if !fixtures.verify(kind, &proof)? {
        bail!("{} made a {kind} proof that does not verify", run.prover);
    }
    run.proof_hex = hex::encode(&proof);
    run.peak_rss_mib = peak_rss_mib();
    Ok(run)
}

fn accumulate(total: &mut ProveStats, st: &ProveStats) {
    total.ntt += st.ntt;
    total.msm_h += st.msm_h;
    total.msm_l += st.msm_l;
    total.msm_a += st.msm_a;
    total.msm_b_g1 += st.msm_b_g1;
    total.msm_b_g2 += st.msm_b_g2;
    total.assembly += st.assembly;
    total.shape += st.shape;
}

/// Runs both provers in child processes, `runs` times each (best time
/// kept), and prints the comparison.
pub fn compare(kind: ProofKind, sel: &Selection, runs: usize) -> Result<()> {
    let exe = std::env::current_exe()?;
    let child = |which: &str| -> Result<Run> {
        let out = Command::new(&exe)
            .args([
                "prover-bench",
                "--kind",
                kind.as_str(),
                "--impl",
                which,
                "--json",
            ])
            .arg("--sector-size")
            .arg(sel.size.name())
            .arg("--fixtures")
            .arg(&sel.dir)
            .arg("--params")
            .arg(&sel.params)
            .output()
            .with_context(|| format!("running the {which} child"))?;
        if !out.status.success() {
            bail!(
                "{which} child failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        let line = String::from_utf8(out.stdout)?;
        serde_json::from_str(line.trim()).context("parsing the child's result")
    };
    let best = |which: &str| -> Result<Run> {
        let mut best: Option<Run> = None;
        for _ in 0..runs.max(1) {
            let r = child(which)?;
            if best.as_ref().is_none_or(|b| r.total_ms < b.total_ms) {
                best = Some(r);
            }
        }
        Ok(best.expect("at least one run"))
    };
    println!(
        "prover-bench kind={} sector_size=2KiB threads={} runs={runs} (best of)",
        kind.as_str(),
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    let b = best("bellperson")?;
    println!(
        "bellperson  total_ms={:.0} (synthesis+prove, {} partition(s)) srs_load_ms={:.0} peak_rss_mib={:.0}",
        b.total_ms, b.partitions, b.srs_load_ms, b.peak_rss_mib
    );
    let c = best("cuzk")?;
    println!(
        "cuzk-cpu    total_ms={:.0} srs_load_ms={:.0} peak_rss_mib={:.0}",
        c.total_ms, c.srs_load_ms, c.peak_rss_mib
    );
    println!(
        "  stages_ms synthesis={:.0} ntt={:.0} msm_h={:.0} msm_l={:.0} msm_a={:.0} msm_b_g1={:.0} msm_b_g2={:.0} assembly={:.1}",
        c.synthesis_ms, c.ntt_ms, c.msm_h_ms, c.msm_l_ms, c.msm_a_ms, c.msm_b_g1_ms, c.msm_b_g2_ms, c.assembly_ms
    );
    println!(
        "  scalars (l, a, b queries) zeros={} ones={} others={}",
        c.zeros, c.ones, c.others
    );
    println!(
        "proofs_identical={} verified=true",
        b.proof_hex == c.proof_hex
    );
    if b.proof_hex != c.proof_hex {
        bail!("the two provers made different proofs from the same r and s");
    }
    println!("ratio_vs_bellperson={:.2}", b.total_ms / c.total_ms);
    Ok(())
}

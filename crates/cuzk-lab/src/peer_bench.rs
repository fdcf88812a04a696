//! `peer-bench`: stock supraseal-c2 (crates.io 0.1.2, the GPU prover behind
//! bellperson's `cuda-supraseal` feature, which Curio's reference daemon
//! uses) and our CUDA backend proving the same partition of a real proof
//! from the fixtures, one after the other.
//!
//! supraseal-c2 runs in a child process, `cuzk-peer` (a crate of its own:
//! it and our backend both compile sppark's kernels, whose symbols clash in
//! one binary), then ours here, so the card holds one SRS at a time. Both
//! read the same `.params` file and prove the same witness (our synthesis,
//! made in each process) with r = 7 and s = 11, so their proofs must be
//! byte-identical; where the proof has one partition it is also verified
//! with filecoin-proofs' verifier. Each prover first proves once untimed
//! (its SRS goes to the device, buffers are allocated), then `--runs` times
//! timed: the wall time of the call, from a witness in host memory to the
//! proof (for ours also the GPU busy time its kernel regions report). Ends
//! with `peer-bench kind=K sector_size=S partition=P cuzk_ms=..
//! supraseal_ms=.. ratio_vs_supraseal=<supraseal / cuzk>
//! proofs_identical=true`; exits non-zero when the proofs differ or do not
//! verify. Needs `--features cuda` here and `cuzk-peer` built with
//! `--features supraseal`.

use cuzk_core::ProofKind;

use crate::select::Selection;

/// What `peer-bench` measures.
#[derive(Clone, Debug)]
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub struct Opts {
    pub kind: ProofKind,
    pub partition: usize,
    pub runs: usize,
    pub device: usize,
    /// The `cuzk-peer` binary (default: beside this one).
    pub peer: Option<std::path::PathBuf>,
}

#[cfg(not(feature = "cuda"))]
pub fn run(_sel: &Selection, _opts: Opts) -> anyhow::Result<()> {
    anyhow::bail!("peer-bench needs the CUDA backend: rebuild cuzk-lab with `--features cuda`")
}

#[cfg(feature = "cuda")]
pub use imp::run;

#[cfg(feature = "cuda")]
mod imp {
    use std::path::Path;
    use std::process::Command;
    use std::time::Instant;

    use anyhow::{bail, Context, Result};
    use blstrs::Scalar;
    use cuzk_core::device_tier::DeviceTier;
    use cuzk_core::params::param_files;
    use cuzk_core::prover::proof_circuits;
    use cuzk_core::r1cs_manager::synthesize_on_host;
    use cuzk_cuda::{CudaBackend, SrsPlacement};
    use cuzk_prover::backend::ProverBackend;
    use cuzk_prover::srs::{ParamsFile, SubgroupCheck};
    use cuzk_prover::{PartitionWitness, WitnessSize};

    use super::{Opts, Selection};

    /// One prover's runs: wall ms of each timed call, GPU busy ms (ours
    /// only), the SRS's load and the proof.
    struct Timed {
        srs_load_ms: f64,
        wall_ms: Vec<f64>,
        gpu_ms: Vec<f64>,
        proof: Vec<u8>,
    }

    impl Timed {
        fn mean(v: &[f64]) -> f64 {
            v.iter().sum::<f64>() / v.len().max(1) as f64
        }
    }

    fn ms(d: std::time::Duration) -> f64 {
        d.as_secs_f64() * 1000.0
    }

    pub fn run(sel: &Selection, opts: Opts) -> Result<()> {
        if opts.runs == 0 {
            bail!("--runs must be at least 1");
        }
        let (fixtures, req) = cuzk_bench::commands::fixture_request(sel, opts.kind)?;
        let circuits = proof_circuits(&req)?;
        let source = circuits.source();
        let n = source.partitions();
        if opts.partition >= n {
            bail!("--partition {}: the proof has {n}", opts.partition);
        }
        let params = param_files(req.proof_type)?.params;
        let t = Instant::now();
        let (w, path) = synthesize_on_host(&sel.params, source, opts.partition)?;
        println!(
            "peer_bench_setup kind={} sector_size={} partition={} partitions={n} \
             constraints={} aux={} synthesis={path} synthesis_ms={:.0} params={}",
            opts.kind.as_str(),
            sel.size.name(),
            opts.partition,
            w.a.len(),
            w.aux.len(),
            ms(t.elapsed()),
            params.display()
        );
        // cuzk-peer proves with the same r and s.
        let (r, s) = (Scalar::from(7u64), Scalar::from(11u64));
        let peer = supraseal(sel, &opts, w.a.len())?;
        report("supraseal", &peer);
        let ours = cuzk(&params, &w, (r, s), &opts)?;
        report("cuzk", &ours);
        let identical = ours.proof == peer.proof;
        let verified = match n {
            1 => Some(fixtures.verify(opts.kind, &ours.proof)?),
            _ => None,
        };
        let (c, p) = (Timed::mean(&ours.wall_ms), Timed::mean(&peer.wall_ms));
        println!(
            "peer-bench kind={} sector_size={} partition={} runs={} cuzk_ms={c:.1} \
             cuzk_gpu_ms={:.1} supraseal_ms={p:.1} ratio_vs_supraseal={:.2} \
             proofs_identical={identical} verified={}",
            opts.kind.as_str(),
            sel.size.name(),
            opts.partition,
            opts.runs,
            Timed::mean(&ours.gpu_ms),
            p / c,
            verified.map_or("n/a (one partition of several)".into(), |v| v.to_string()),
        );
        if !identical {
            bail!("supraseal-c2 and cuzk made different proofs from the same witness, r and s");
        }
        if verified == Some(false) {
            bail!("the proof does not verify");
        }
        Ok(())
    }

    fn report(who: &str, t: &Timed) {
        let list = |v: &[f64]| {
            v.iter()
                .map(|x| format!("{x:.1}"))
                .collect::<Vec<_>>()
                .join(",")
        };
        println!(
            "peer_bench_prover prover={who} srs_load_ms={:.0} wall_ms={} gpu_ms={}",
            t.srs_load_ms,
            list(&t.wall_ms),
            list(&t.gpu_ms)
        );
    }

    /// What `cuzk-peer` prints.
    #[derive(serde::Deserialize)]
    struct PeerReport {
        constraints: usize,
        srs_load_ms: f64,
        wall_ms: Vec<f64>,
        proof_hex: String,
    }

    /// supraseal-c2 in its child process, on the same fixtures.
    fn supraseal(sel: &Selection, opts: &Opts, constraints: usize) -> Result<Timed> {
        let exe = match &opts.peer {
            Some(p) => p.clone(),
            None => std::env::current_exe()?.with_file_name("cuzk-peer"),
        };
        let out = Command::new(&exe)
            .args(["--kind", opts.kind.as_str()])
            .args(["--partition", &opts.partition.to_string()])
            .args(["--runs", &opts.runs.to_string()])
            .arg("--sector-size")
            .arg(sel.size.name())
            .arg("--fixtures")
            .arg(&sel.dir)
            .arg("--params")
            .arg(&sel.params)
            .output()
            .with_context(|| format!("running {}", exe.display()))?;
        if !out.status.success() {
            bail!(
                "{} failed: {}",
                exe.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        let line = String::from_utf8(out.stdout)?;
        let r: PeerReport =
            serde_json::from_str(line.trim()).context("parsing cuzk-peer's report")?;
        if r.constraints != constraints {
            bail!(
                "cuzk-peer synthesized {} constraints, we {constraints}",
                r.constraints
            );
        }
        Ok(Timed {
            srs_load_ms: r.srs_load_ms,
            wall_ms: r.wall_ms,
            gpu_ms: Vec::new(),
            proof: hex::decode(r.proof_hex)?,
        })
    }

    /// Our CUDA backend, SRS resident as the daemon keeps it; each call
    /// proves a copy of the witness (the backend consumes it), made before
    /// the clock starts.
    fn cuzk(
        params: &Path,
        w: &PartitionWitness,
        (r, s): (Scalar, Scalar),
        opts: &Opts,
    ) -> Result<Timed> {
        let t = Instant::now();
        let host = ParamsFile::open(params)?.decode(SubgroupCheck::None)?;
        let srs = host.as_srs_ref();
        let gpu = CudaBackend::with_placement(opts.device, SrsPlacement::Always)
            .with_context(|| format!("CUDA device {}", opts.device))?;
        let tier = DeviceTier::new();
        let size = WitnessSize {
            constraints: w.a.len(),
            inputs: w.input.len(),
            aux: w.aux.len(),
        };
        let lease = tier.on_device("peer-bench", &srs, 0, &gpu, &size)?;
        let Some(on) = lease.srs() else {
            bail!("the SRS does not fit on device {}", opts.device);
        };
        let srs = srs.on_device(on);
        let srs_load_ms = ms(t.elapsed());
        let (r, s) = (&[r], &[s]);
        let (first, _) = gpu.prove(&mut [w.clone()], &srs, r, s)?;
        let proof = first[0].to_bytes().to_vec();
        let (mut wall_ms, mut gpu_ms) = (Vec::new(), Vec::new());
        for _ in 0..opts.runs {
            let mut copy = [w.clone()];
            let busy = gpu.gpu_busy()?;
            let t = Instant::now();
            let (proofs, _) = gpu.prove(&mut copy, &srs, r, s)?;
            wall_ms.push(ms(t.elapsed()));
            gpu_ms.push(ms(gpu.gpu_busy()? - busy));
            if proofs[0].to_bytes()[..] != proof[..] {
                bail!("cuzk proved the same witness differently on a later run");
            }
        }
        gpu.release_buffers()?;
        drop(lease);
        tier.forget("peer-bench");
        Ok(Timed {
            srs_load_ms,
            wall_ms,
            gpu_ms,
            proof,
        })
    }
}

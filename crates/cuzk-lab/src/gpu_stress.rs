//! `cuzk-lab gpu-stress`: several prover workers sharing one GPU under a
//! `gpus.vram_limit`, over synthetic chain partitions at 2^k constraints
//! plus (with fixtures) every partition of the four 2 KiB Filecoin kinds.
//!
//! For each worker count the same jobs run again: each worker thread takes
//! the next job, proves it with the shared CUDA backend (as the engine's
//! GPU workers do, the SRS kept on the device through a device tier as the
//! daemon keeps it) and keeps the bytes; the backend counts the staging
//! tiers of each run. Every GPU
//! proof must equal the CPU backend's for the same witness, r and s, and
//! verify (chain proofs with their verifying key, 2 KiB proofs with
//! filecoin-proofs). Chain witnesses are `--witnesses` distinct ones reused
//! with fresh r and s per partition; their CPU reference (MSMs once per
//! witness, then one assembly per r and s) runs on the CPU while the GPU
//! runs go.
//!
//! Output: `key=value` lines, one `gpu_stress_run` per worker count, a
//! `gpu_stress_summary` at the end; fails when a proof differs, does not
//! verify, or a job failed (out of device memory or otherwise).

use std::path::PathBuf;

use anyhow::{bail, Result};

/// What to run.
#[derive(Clone, Debug)]
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub struct Opts {
    pub log_domain: u32,
    pub partitions: usize,
    pub witnesses: usize,
    pub workers: Vec<usize>,
    pub vram_limit: Option<u64>,
    pub device: usize,
    /// The 2 KiB fixtures to add (None: chain partitions only).
    pub fixtures: Option<PathBuf>,
    pub seed: u64,
}

#[cfg(not(feature = "cuda"))]
pub fn run(_opts: Opts) -> Result<()> {
    bail!("gpu-stress needs the CUDA backend: rebuild cuzk-lab with `--features cuda`")
}

#[cfg(feature = "cuda")]
pub fn run(opts: Opts) -> Result<()> {
    if opts.partitions == 0 || opts.witnesses == 0 || opts.workers.contains(&0) {
        bail!("--partitions, --witnesses and every --workers count must be at least 1");
    }
    if !(4..=26).contains(&opts.log_domain) {
        bail!("--log-domain {}: want 4..=26", opts.log_domain);
    }
    imp::run(opts)
}

#[cfg(feature = "cuda")]
mod imp {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    use std::time::Instant;

    use anyhow::{bail, Context, Result};
    use bellperson::groth16::{prepare_verifying_key, verify_proof, Proof as BpProof};
    use blstrs::{Bls12, Scalar};
    use cuzk_circuits::chain::Chain;
    use cuzk_core::device_tier::DeviceTier;
    use cuzk_core::params::param_files;
    use cuzk_core::prover::partition_source;
    use cuzk_core::ProofKind;
    use cuzk_cuda::{CudaBackend, SrsPlacement, StagingCounts, DEFAULT_VRAM_MARGIN};
    use cuzk_prover::backend::ProverBackend;
    use cuzk_prover::proof::{assemble, MsmResults};
    use cuzk_prover::srs::{ParamsFile, Srs, SubgroupCheck};
    use cuzk_prover::WitnessSize;
    use cuzk_prover::{synthesize, CpuBackend, PartitionWitness};
    use ff::Field;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    use super::Opts;

    /// One partition to prove.
    struct Job {
        label: String,
        /// Index into the SRS list.
        srs: usize,
        witness: usize,
        r: Scalar,
        s: Scalar,
        /// The CPU proof (chain jobs: filled in once the reference is done).
        expected: Option<[u8; 192]>,
        /// 2 KiB jobs: kind and partition number.
        kind: Option<(ProofKind, usize)>,
    }

    /// A 2 KiB partition's number and GPU proof.
    type PartitionProof = (usize, [u8; 192]);

    /// One GPU proof (or the error).
    struct Outcome {
        job: usize,
        proof: Result<[u8; 192], String>,
    }

    fn ms(t: Instant) -> f64 {
        t.elapsed().as_secs_f64() * 1e3
    }

    pub(super) fn run(opts: Opts) -> Result<()> {
        let mut rng = ChaCha8Rng::seed_from_u64(opts.seed);
        let k = opts.log_domain;
        let t = Instant::now();
        let (chain_srs, _) =
            cuzk_setup::generate(Chain::for_log(k, None), &mut rng).context("chain parameters")?;
        let params_ms = ms(t);
        let t = Instant::now();
        let chains: Vec<Chain> = (0..opts.witnesses)
            .map(|_| Chain::for_log(k, Some(Scalar::random(&mut rng))))
            .collect();
        let mut witnesses: Vec<PartitionWitness> = std::thread::scope(|sc| {
            let hs: Vec<_> = chains
                .iter()
                .map(|c| sc.spawn(move || synthesize(c.clone()).map(|s| s.witness)))
                .collect();
            hs.into_iter()
                .map(|h| h.join().expect("synthesis thread"))
                .collect::<Result<Vec<_>, _>>()
        })
        .context("chain synthesis")?;
        let publics: Vec<Vec<Scalar>> = chains
            .iter()
            .map(|c| c.public_inputs().expect("assigned chain"))
            .collect();
        println!(
            "gpu_stress_setup log_domain={k} constraints={} aux={} witnesses={} partitions={} \
             params_ms={params_ms:.0} synthesis_ms={:.0} vram_limit={} workers={:?}",
            witnesses[0].num_constraints(),
            witnesses[0].aux.len(),
            opts.witnesses,
            opts.partitions,
            ms(t),
            opts.vram_limit.map_or("none".into(), |b| b.to_string()),
            opts.workers
        );

        let mut srss: Vec<Srs> = vec![chain_srs];
        let mut jobs: Vec<Job> = (0..opts.partitions)
            .map(|i| Job {
                label: format!("chain2^{k} p{i}"),
                srs: 0,
                witness: i % opts.witnesses,
                r: Scalar::random(&mut rng),
                s: Scalar::random(&mut rng),
                expected: None,
                kind: None,
            })
            .collect();
        let fixtures = match &opts.fixtures {
            Some(dir) => Some(add_fixture_jobs(
                dir,
                &mut rng,
                &mut srss,
                &mut witnesses,
                &mut jobs,
            )?),
            None => None,
        };

        // The chain's CPU reference, on the CPU while the GPU runs go.
        let results = std::thread::scope(|sc| -> Result<_> {
            let reference = sc.spawn(|| chain_reference(&srss[0], &witnesses[..opts.witnesses]));
            let mut runs = Vec::new();
            for &workers in &opts.workers {
                runs.push(gpu_run(&opts, workers, &srss, &witnesses, &jobs)?);
            }
            let msms = reference.join().expect("CPU reference thread")?;
            Ok((runs, msms))
        })?;
        let (runs, msms) = results;
        let chain_ref = srss[0].as_srs_ref();
        for job in jobs.iter_mut().filter(|j| j.kind.is_none()) {
            let p = assemble(&chain_ref, &msms[job.witness], job.r, job.s)?;
            job.expected = Some(p.to_bytes());
        }
        let vk = bellperson::groth16::VerifyingKey::<Bls12>::read(&srss[0].vk.to_bytes()[..])
            .context("chain verifying key")?;
        let pvk = prepare_verifying_key(&vk);

        let mut failed = false;
        let mut tiers = StagingCounts::default();
        for (workers, outcomes, line, st) in &runs {
            tiers += *st;
            let (mut same, mut verified, mut errors, mut oom) = (0, 0, 0, 0);
            let mut per_kind: Vec<(ProofKind, Vec<PartitionProof>)> = Vec::new();
            for o in outcomes {
                let job = &jobs[o.job];
                let bytes = match &o.proof {
                    Ok(b) => b,
                    Err(e) => {
                        errors += 1;
                        oom += usize::from(e.contains("out of device memory"));
                        println!(
                            "gpu_stress_error workers={workers} job={} error={e:?}",
                            job.label
                        );
                        continue;
                    }
                };
                if Some(*bytes) == job.expected {
                    same += 1;
                } else {
                    println!("gpu_stress_mismatch workers={workers} job={}", job.label);
                }
                match job.kind {
                    None => {
                        let proof = BpProof::<Bls12>::read(&bytes[..])?;
                        if verify_proof(&pvk, &proof, &publics[job.witness])? {
                            verified += 1;
                        }
                    }
                    Some((kind, part)) => match per_kind.iter_mut().find(|(k, _)| *k == kind) {
                        Some((_, v)) => v.push((part, *bytes)),
                        None => per_kind.push((kind, vec![(part, *bytes)])),
                    },
                }
            }
            if let Some(fx) = &fixtures {
                for (kind, mut parts) in per_kind {
                    parts.sort_by_key(|(p, _)| *p);
                    let proof: Vec<u8> = parts.iter().flat_map(|(_, b)| b.to_vec()).collect();
                    if fx
                        .verify(kind, &proof)
                        .with_context(|| format!("{kind}: verify"))?
                    {
                        verified += parts.len();
                    } else {
                        println!("gpu_stress_unverified workers={workers} kind={kind}");
                    }
                }
            }
            let n = jobs.len();
            let ok = same == n && verified == n && errors == 0;
            failed |= !ok;
            println!(
                "{line} identical_to_cpu={same}/{n} verified={verified}/{n} errors={errors} \
                 out_of_memory={oom} pass={ok}"
            );
        }
        let seen: Vec<&str> = tiers
            .by_tier()
            .iter()
            .filter(|(_, c)| *c > 0)
            .map(|(t, _)| t.label())
            .collect();
        println!(
            "gpu_stress_summary runs={} jobs_per_run={} all={} a_only={} none={} fallbacks={} \
             waits={} tiers_seen={} pass={}",
            runs.len(),
            jobs.len(),
            tiers.all,
            tiers.a_only,
            tiers.none,
            tiers.fallbacks,
            tiers.waits,
            seen.join(","),
            !failed
        );
        if failed {
            bail!("gpu-stress: some proofs failed, differ from the CPU's or do not verify");
        }
        Ok(())
    }

    /// The CPU backend's MSM results of each chain witness.
    fn chain_reference(srs: &Srs, witnesses: &[PartitionWitness]) -> Result<Vec<MsmResults>> {
        let t = Instant::now();
        let out = witnesses
            .iter()
            .map(|w| CpuBackend.msm_results(&mut w.clone(), &srs.as_srs_ref()))
            .collect::<Result<Vec<_>, _>>()?;
        println!(
            "gpu_stress_cpu_reference witnesses={} ms={:.0}",
            witnesses.len(),
            ms(t)
        );
        Ok(out)
    }

    /// Every partition of the four 2 KiB kinds, with CPU proofs.
    fn add_fixture_jobs(
        dir: &std::path::Path,
        rng: &mut ChaCha8Rng,
        srss: &mut Vec<Srs>,
        witnesses: &mut Vec<PartitionWitness>,
        jobs: &mut Vec<Job>,
    ) -> Result<cuzk_fixtures::Fixtures> {
        let t = Instant::now();
        let fixtures = cuzk_fixtures::ensure(dir, &mut |_| {})
            .with_context(|| format!("fixtures in {}", dir.display()))?;
        let mut count = 0;
        for kind in ProofKind::ALL {
            let req = fixtures
                .request(kind)
                .with_context(|| format!("{kind}: request"))?
                .validate(u64::MAX)
                .map_err(|e| anyhow::anyhow!("{kind}: request: {e}"))?;
            let source = partition_source(&req).map_err(|e| anyhow::anyhow!("{kind}: {e}"))?;
            let files = param_files(req.proof_type).map_err(|e| anyhow::anyhow!("{kind}: {e}"))?;
            let srs = ParamsFile::open(&files.params)
                .and_then(|f| f.decode(SubgroupCheck::None))
                .map_err(|e| anyhow::anyhow!("{kind}: {e}"))?;
            srss.push(srs);
            let si = srss.len() - 1;
            for part in 0..source.partitions() {
                let w = source
                    .synthesize(part)
                    .map_err(|e| anyhow::anyhow!("{kind} partition {part}: {e}"))?
                    .witness;
                let (r, s) = (Scalar::random(&mut *rng), Scalar::random(&mut *rng));
                let (cpu, _) =
                    CpuBackend.prove(&mut [w.clone()], &srss[si].as_srs_ref(), &[r], &[s])?;
                witnesses.push(w);
                jobs.push(Job {
                    label: format!("{kind} p{part}"),
                    srs: si,
                    witness: witnesses.len() - 1,
                    r,
                    s,
                    expected: Some(cpu[0].to_bytes()),
                    kind: Some((kind, part)),
                });
                count += 1;
            }
        }
        println!(
            "gpu_stress_fixtures partitions={count} ms={:.0} (synthesis and CPU proofs)",
            ms(t)
        );
        Ok(fixtures)
    }

    /// All jobs once with `workers` threads on one backend: the outcomes,
    /// the run's `gpu_stress_run` line (without the checks) and its tiers.
    fn gpu_run(
        opts: &Opts,
        workers: usize,
        srss: &[Srs],
        witnesses: &[PartitionWitness],
        jobs: &[Job],
    ) -> Result<(usize, Vec<Outcome>, String, StagingCounts)> {
        let gpu = CudaBackend::with_placement(opts.device, SrsPlacement::Always)
            .with_context(|| format!("CUDA device {}", opts.device))?
            .with_memory(opts.vram_limit, DEFAULT_VRAM_MARGIN)?;
        let refs: Vec<_> = srss.iter().map(|s| s.as_srs_ref()).collect();
        // The SRS on the device as the daemon keeps it (one at a time,
        // released when idle for another).
        let tier = DeviceTier::new();
        let before = gpu.staging_counts();
        let next = AtomicUsize::new(0);
        let outcomes = Mutex::new(Vec::new());
        let busy0 = gpu.gpu_busy()?;
        let t = Instant::now();
        std::thread::scope(|sc| {
            for _ in 0..workers {
                sc.spawn(|| loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(job) = jobs.get(i) else { break };
                    let mut batch = vec![witnesses[job.witness].clone()];
                    let w = &batch[0];
                    let size = WitnessSize {
                        constraints: w.a.len().next_power_of_two(),
                        inputs: w.input.len(),
                        aux: w.aux.len(),
                    };
                    let srs = &refs[job.srs];
                    let res = tier
                        .on_device(&format!("srs {}", job.srs), srs, 0, &gpu, &size)
                        .and_then(|lease| {
                            let srs = match lease.srs() {
                                Some(d) => srs.on_device(d),
                                None => *srs,
                            };
                            gpu.prove(&mut batch, &srs, &[job.r], &[job.s])
                        });
                    let o = Outcome {
                        job: i,
                        proof: res.map(|(p, _)| p[0].to_bytes()).map_err(|e| e.to_string()),
                    };
                    outcomes.lock().unwrap_or_else(|p| p.into_inner()).push(o);
                });
            }
        });
        let wall = ms(t);
        let busy = (gpu.gpu_busy()? - busy0).as_secs_f64() * 1e3;
        let outcomes = outcomes.into_inner().unwrap_or_else(|p| p.into_inner());
        let st: StagingCounts = gpu.staging_counts() - before;
        // Free the device for the next run.
        for i in 0..srss.len() {
            tier.forget(&format!("srs {i}"));
        }
        let line = format!(
            "gpu_stress_run workers={workers} jobs={} all={} a_only={} none={} fallbacks={} \
             waits={} wall_ms={wall:.0} gpu_busy_ms={busy:.0}",
            jobs.len(),
            st.all,
            st.a_only,
            st.none,
            st.fallbacks,
            st.waits
        );
        println!("{line}");
        // Later runs start from a clean device.
        gpu.release_buffers()?;
        Ok((workers, outcomes, line, st))
    }
}

#[cfg(all(test, not(feature = "cuda")))]
mod tests {
    #[test]
    fn without_the_feature_gpu_stress_says_so() {
        let opts = super::Opts {
            log_domain: 10,
            partitions: 1,
            witnesses: 1,
            workers: vec![1],
            vram_limit: None,
            device: 0,
            fixtures: None,
            seed: 1,
        };
        let e = super::run(opts).expect_err("no CUDA backend is built");
        assert!(e.to_string().contains("--features cuda"), "{e}");
    }
}

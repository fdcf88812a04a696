//! `gpu-bench --workers N`: the whole CUDA backend (the engine's path, not
//! the per-stage calls) proving one synthetic partition-shaped input again
//! and again with N worker threads sharing the device, SRS resident.
//!
//! A feeder thread copies fresh a, b, c for every partition on
//! `--feed-threads` threads (the backend consumes them, as it consumes a
//! synthesized witness), so the workers only prove; the first partition's
//! copy is made before the clock starts. Reported per worker count: wall
//! time per partition and the device's busy share, twice: the growth of
//! [`CudaBackend::gpu_busy`] (kernel regions timed by CUDA events) over the
//! host's wall time of the run (which includes the first partition's
//! upload, before any kernel can run), and over the GPU's own span from the
//! first region's begin to the last one's end
//! ([`CudaBackend::gpu_timeline`], CUDA events only). Every proof must be
//! the same (one witness, fixed r and s).

use std::sync::mpsc::sync_channel;
use std::sync::Mutex;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use blstrs::Scalar;
use cuzk_core::device_tier::DeviceTier;
use cuzk_cuda::{CudaBackend, SrsPlacement};
use cuzk_prover::backend::{ProverBackend, SrsRef};
use cuzk_prover::{PartitionWitness, WitnessSize};

use super::imp::{host_srs, make_input, ms, par_fill, par_fill_with, Input};

/// a, b, c of one partition.
type Abc = (Vec<Scalar>, Vec<Scalar>, Vec<Scalar>);

/// Copies in parallel (a witness at 2^27 is 17 GB).
fn par_copy(v: &[Scalar]) -> Vec<Scalar> {
    par_fill(v.len(), |i| v[i])
}

fn witness(inp: &Input, abc: Abc) -> PartitionWitness {
    PartitionWitness {
        a: abc.0,
        b: abc.1,
        c: abc.2,
        input: inp.input.clone(),
        aux: par_copy(&inp.aux),
        a_aux_density: inp.a_aux.clone(),
        b_input_density: inp.b_input.clone(),
        b_aux_density: inp.b_aux.clone(),
        matrices: None,
        urgent: false,
    }
}

pub(crate) fn run(
    gpu: &CudaBackend,
    lg_n: u32,
    partitions: usize,
    workers: &[usize],
    feed_threads: usize,
) -> Result<()> {
    let t = Instant::now();
    let inp = make_input(lg_n);
    let host = host_srs(&inp);
    let srs = SrsRef {
        h: &host.g1[..inp.n() - 1],
        l: &host.g1[..inp.aux.len()],
        a: &host.g1[..inp.a_len()],
        b_g1: &host.g1[..inp.b_len()],
        b_g2: &host.g2[..inp.b_len()],
        ..inp.vk_ref()
    };
    let gpu = CudaBackend::with_placement(gpu.device(), SrsPlacement::Always).context("backend")?;
    // The SRS on the device, as the daemon's SRS manager keeps it.
    let tier = DeviceTier::new();
    let size = WitnessSize {
        constraints: inp.n(),
        inputs: inp.input.len(),
        aux: inp.aux.len(),
    };
    let lease = tier.on_device("gpu-bench", &srs, 0, &gpu, &size)?;
    let srs = match lease.srs() {
        Some(d) => srs.on_device(d),
        None => bail!("the synthetic SRS does not fit on the device"),
    };
    let (r, s) = (&[Scalar::from(3u64)], &[Scalar::from(5u64)]);
    let feed = |v: &[Scalar]| par_fill_with(feed_threads, v.len(), |i| v[i]);
    let abc = || (feed(&inp.a), feed(&inp.b), feed(&inp.c));

    // Warm-up (not timed): the SRS goes resident, buffers are allocated.
    let tw = Instant::now();
    let (first, _) = gpu.prove(&mut [witness(&inp, abc())], &srs, r, s)?;
    let reference = first[0].to_bytes();
    println!(
        "gpu_bench_workers_setup log_domain={lg_n} input_ms={:.0} warmup_ms={:.0} \
         note=\"SRS resident; one warm-up partition not timed\"",
        ms(t) - ms(tw),
        ms(tw)
    );

    for &w in workers {
        let tiers0 = gpu.staging_counts();
        let (tx, rx) = sync_channel::<Abc>(1);
        let rx = Mutex::new(rx);
        let results = Mutex::new(Vec::new());
        // The first partition's a, b, c are ready when the clock starts
        // (the run measures proving, not the feeder's first copy).
        if partitions > 0 {
            tx.send(abc())?;
        }
        gpu.mark_gpu_timeline()?;
        let busy0 = gpu.gpu_busy()?;
        let t = Instant::now();
        std::thread::scope(|sc| {
            // The sender moves into the feeder, so the channel closes (and
            // the workers stop) when it is done.
            let feeder = |tx: std::sync::mpsc::SyncSender<Abc>| {
                for p in 1..partitions {
                    let t = Instant::now();
                    let next = abc();
                    println!("gpu_bench_workers_feed partition={p} copy_ms={:.0}", ms(t));
                    if tx.send(next).is_err() {
                        break;
                    }
                }
            };
            sc.spawn(move || feeder(tx));
            for worker in 0..w {
                let (rx, results, inp, gpu, srs) = (&rx, &results, &inp, &gpu, &srs);
                sc.spawn(move || {
                    // Each worker keeps its aux and densities between
                    // partitions (the backend does not consume them).
                    let mut wit: Option<PartitionWitness> = None;
                    loop {
                        let tw = Instant::now();
                        let next = rx.lock().unwrap_or_else(|p| p.into_inner()).recv();
                        let Ok(abc) = next else { break };
                        let wait = ms(tw);
                        let mut one = match wit.take() {
                            Some(mut x) => {
                                (x.a, x.b, x.c) = abc;
                                x
                            }
                            None => witness(inp, abc),
                        };
                        let tp = Instant::now();
                        let res = gpu.prove(std::slice::from_mut(&mut one), srs, r, s);
                        if let Ok((_, st)) = &res {
                            let d = |x: std::time::Duration| x.as_secs_f64() * 1e3;
                            println!(
                                "gpu_bench_workers_partition worker={worker} wait_ms={wait:.0} \
                                 prove_ms={:.0} ntt_ms={:.0} h_ms={:.0} l_ms={:.0} a_ms={:.0} \
                                 b_g1_ms={:.0} b_g2_ms={:.0} assembly_ms={:.0}",
                                ms(tp),
                                d(st.ntt),
                                d(st.msm_h),
                                d(st.msm_l),
                                d(st.msm_a),
                                d(st.msm_b_g1),
                                d(st.msm_b_g2),
                                d(st.assembly)
                            );
                        }
                        wit = Some(one);
                        let out = res.map(|(p, _)| p[0].to_bytes());
                        results.lock().unwrap_or_else(|p| p.into_inner()).push(out);
                    }
                });
            }
        });
        let wall = ms(t);
        let busy = (gpu.gpu_busy()? - busy0).as_secs_f64() * 1e3;
        let timeline = gpu.gpu_timeline()?;
        let results = results.into_inner().unwrap_or_else(|p| p.into_inner());
        let tiers = gpu.staging_counts() - tiers0;
        let mut same = 0;
        for r in &results {
            match r {
                Ok(bytes) => {
                    same += usize::from(*bytes == reference);
                }
                Err(e) => println!("gpu_bench_workers_error workers={w} error={e:?}"),
            }
        }
        println!(
            "gpu_bench_workers log_domain={lg_n} workers={w} partitions={partitions} wall_ms={wall:.0} \
             per_partition_ms={:.1} gpu_busy_ms={busy:.0} busy_share={:.3} gpu_span_ms={:.0} \
             busy_share_gpu_clock={:.3} all={} a_only={} none={} fallbacks={} \
             proofs_identical={same}/{partitions}",
            wall / partitions as f64,
            busy / wall,
            timeline.last_end_ms.unwrap_or(0.0) - timeline.first_begin_ms.unwrap_or(0.0),
            timeline.busy_share().unwrap_or(0.0),
            tiers.all,
            tiers.a_only,
            tiers.none,
            tiers.fallbacks
        );
        if same != partitions {
            bail!(
                "{w} workers: {} of {partitions} proofs differ or failed",
                partitions - same
            );
        }
    }
    gpu.release_buffers()?;
    drop(lease);
    tier.forget("gpu-bench");
    Ok(())
}

//! `gpu-bench --workers N`: the whole CUDA backend (the engine's path, not
//! the per-stage calls) proving one synthetic partition-shaped input again
//! and again with N worker threads sharing the device, SRS resident; with
//! `--devices`, N workers on each of those devices, all fed from one queue
//! (each device with the SRS on it, every proof the first device's).
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

use super::input::{host_srs, make_input, ms, par_fill, par_fill_with, HostSrs, Input};

/// a, b, c of one partition.
type Abc = (Vec<Scalar>, Vec<Scalar>, Vec<Scalar>);

/// Each proved partition's device and proof bytes (or why it failed).
type Results = Mutex<Vec<(usize, Result<Vec<u8>, cuzk_prover::ProverError>)>>;

/// Copies in parallel (a witness at 2^27 is 17 GB).
fn par_copy(v: &[Scalar]) -> Vec<Scalar> {
    par_fill(v.len(), |i| v[i])
}

/// A fresh copy of the input's a, b, c (the backend consumes them).
fn fresh_abc(inp: &Input) -> Abc {
    (par_copy(&inp.a), par_copy(&inp.b), par_copy(&inp.c))
}

/// The input as a partition witness, with a fresh copy of a, b, c.
pub(super) fn witness(inp: &Input) -> PartitionWitness {
    with_abc(inp, fresh_abc(inp))
}

/// Gives `w` a fresh copy of the input's a, b, c.
pub(super) fn refill(w: &mut PartitionWitness, inp: &Input) {
    (w.a, w.b, w.c) = fresh_abc(inp);
}

/// The synthetic SRS over `host`'s tiled points (the G1 sections alias).
pub(super) fn srs_of<'a>(inp: &Input, host: &'a HostSrs) -> SrsRef<'a> {
    SrsRef {
        h: &host.g1[..inp.n() - 1],
        l: &host.g1[..inp.aux.len()],
        a: &host.g1[..inp.a_len()],
        b_g1: &host.g1[..inp.b_len()],
        b_g2: &host.g2[..inp.b_len()],
        ..inp.vk_ref()
    }
}

fn with_abc(inp: &Input, abc: Abc) -> PartitionWitness {
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

/// One device of the run: its backend and the SRS on it.
struct OnDevice<'a> {
    device: usize,
    gpu: CudaBackend,
    srs: SrsRef<'a>,
}

pub(crate) fn run(
    devices: &[usize],
    lg_n: u32,
    partitions: usize,
    workers: &[usize],
    feed_threads: usize,
) -> Result<()> {
    let t = Instant::now();
    let inp = make_input(lg_n);
    let host = host_srs(&inp);
    let srs = srs_of(&inp, &host);
    // The SRS on each device, as the daemon's SRS manager keeps it.
    let tier = DeviceTier::new();
    let size = WitnessSize {
        constraints: inp.n(),
        inputs: inp.input.len(),
        aux: inp.aux.len(),
    };
    let mut leases = Vec::new();
    for (slot, &device) in devices.iter().enumerate() {
        let gpu = CudaBackend::with_placement(device, SrsPlacement::Always)
            .with_context(|| format!("CUDA device {device}"))?;
        leases.push((
            device,
            tier.on_device("gpu-bench", &srs, slot, &gpu, &size)?,
            gpu,
        ));
    }
    let mut on = Vec::new();
    for (device, lease, gpu) in &leases {
        let Some(d) = lease.srs() else {
            bail!("the synthetic SRS does not fit on device {device}");
        };
        on.push(OnDevice {
            device: *device,
            gpu: gpu.clone(),
            srs: srs.on_device(d),
        });
    }
    let (r, s) = (&[Scalar::from(3u64)], &[Scalar::from(5u64)]);
    let feed = |v: &[Scalar]| par_fill_with(feed_threads, v.len(), |i| v[i]);
    let abc = || (feed(&inp.a), feed(&inp.b), feed(&inp.c));

    // Warm-up (not timed): the SRS goes resident, buffers are allocated;
    // every device must give the first device's proof.
    let tw = Instant::now();
    let mut reference = None;
    for d in &on {
        let (first, _) = d.gpu.prove(&mut [with_abc(&inp, abc())], &d.srs, r, s)?;
        let bytes = first[0].to_bytes();
        if *reference.get_or_insert(bytes) != bytes {
            bail!(
                "device {} proves the warm-up partition differently",
                d.device
            );
        }
    }
    let Some(reference) = reference else {
        bail!("no device");
    };
    println!(
        "gpu_bench_workers_setup log_domain={lg_n} devices={} input_ms={:.0} warmup_ms={:.0} \
         note=\"SRS resident; one warm-up partition per device not timed\"",
        list(devices),
        ms(t) - ms(tw),
        ms(tw)
    );
    for &w in workers {
        one_count(&on, (lg_n, partitions, w), &abc, &inp, (r, s), &reference)?;
    }
    for d in &on {
        d.gpu.release_buffers()?;
    }
    drop(on);
    drop(leases);
    tier.forget("gpu-bench");
    Ok(())
}

fn list(devices: &[usize]) -> String {
    let v: Vec<String> = devices.iter().map(|d| d.to_string()).collect();
    v.join(",")
}

/// One run with `w` workers on every device.
fn one_count(
    on: &[OnDevice<'_>],
    (lg_n, partitions, w): (u32, usize, usize),
    abc: &(dyn Fn() -> Abc + Sync),
    inp: &Input,
    (r, s): (&[Scalar], &[Scalar]),
    reference: &[u8],
) -> Result<()> {
    let tiers0: Vec<_> = on.iter().map(|d| d.gpu.staging_counts()).collect();
    let (tx, rx) = sync_channel::<Abc>(on.len());
    let rx = Mutex::new(rx);
    let results = Mutex::new(Vec::new());
    // The first partition's a, b, c are ready when the clock starts
    // (the run measures proving, not the feeder's first copy).
    if partitions > 0 {
        tx.send(abc())?;
    }
    let mut busy0 = Vec::new();
    for d in on {
        d.gpu.mark_gpu_timeline()?;
        busy0.push(d.gpu.gpu_busy()?);
    }
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
        for d in on {
            for worker in 0..w {
                let (rx, results) = (&rx, &results);
                sc.spawn(move || prove_fed(d, worker, rx, results, inp, (r, s)));
            }
        }
    });
    let wall = ms(t);
    let results = results.into_inner().unwrap_or_else(|p| p.into_inner());
    let (mut busy, mut shares) = (0.0, 0.0);
    let mut tiers = cuzk_cuda::StagingCounts::default();
    for (i, d) in on.iter().enumerate() {
        let b = (d.gpu.gpu_busy()? - busy0[i]).as_secs_f64() * 1e3;
        let timeline = d.gpu.gpu_timeline()?;
        let share = timeline.busy_share().unwrap_or(0.0);
        println!(
            "gpu_bench_workers_device device={} workers={w} partitions={} gpu_busy_ms={b:.0} \
             busy_share={:.3} busy_share_gpu_clock={share:.3}",
            d.device,
            results.iter().filter(|(dev, _)| *dev == d.device).count(),
            b / wall
        );
        busy += b;
        shares += share;
        tiers += d.gpu.staging_counts() - tiers0[i];
    }
    let mut same = 0;
    for (device, r) in &results {
        match r {
            Ok(bytes) => same += usize::from(bytes[..] == *reference),
            Err(e) => println!("gpu_bench_workers_error device={device} workers={w} error={e:?}"),
        }
    }
    let n = on.len() as f64;
    println!(
        "gpu_bench_workers log_domain={lg_n} devices={} workers={w} partitions={partitions} \
         wall_ms={wall:.0} per_partition_ms={:.1} gpu_busy_ms={busy:.0} busy_share={:.3} \
         busy_share_gpu_clock={:.3} all={} a_only={} none={} fallbacks={} \
         proofs_identical={same}/{partitions}",
        list(&on.iter().map(|d| d.device).collect::<Vec<_>>()),
        wall / partitions as f64,
        busy / (wall * n),
        shares / n,
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
    Ok(())
}

/// A worker: proves what the feeder sends on device `d` until the feed
/// ends, printing each partition's stages.
fn prove_fed(
    d: &OnDevice<'_>,
    worker: usize,
    rx: &Mutex<std::sync::mpsc::Receiver<Abc>>,
    results: &Results,
    inp: &Input,
    (r, s): (&[Scalar], &[Scalar]),
) {
    // Each worker keeps its aux and densities between partitions (the
    // backend does not consume them).
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
            None => with_abc(inp, abc),
        };
        let tp = Instant::now();
        let res = d.gpu.prove(std::slice::from_mut(&mut one), &d.srs, r, s);
        if let Ok((_, st)) = &res {
            let f = |x: std::time::Duration| x.as_secs_f64() * 1e3;
            println!(
                "gpu_bench_workers_partition device={} worker={worker} wait_ms={wait:.0} \
                 prove_ms={:.0} ntt_ms={:.0} h_ms={:.0} l_ms={:.0} a_ms={:.0} \
                 b_g1_ms={:.0} b_g2_ms={:.0} assembly_ms={:.0}",
                d.device,
                ms(tp),
                f(st.ntt),
                f(st.msm_h),
                f(st.msm_l),
                f(st.msm_a),
                f(st.msm_b_g1),
                f(st.msm_b_g2),
                f(st.assembly)
            );
        }
        wit = Some(one);
        let out = res.map(|(p, _)| p[0].to_bytes().to_vec());
        results
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((d.device, out));
    }
}

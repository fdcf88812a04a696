//! `gpu-bench --partitions-per-pass K`: the whole CUDA backend (the
//! daemon's path) proving K partitions of one synthetic shape in each
//! call, under `--vram-limit`: the SRS sections that fit stay on the card
//! (chosen as the daemon chooses them), the others stream from page-locked
//! host memory, and the K partitions share each pass over them
//! (`gpus.partitions_per_pass`). Unless `--srs streamed`, the same
//! partitions are then proved one at a time with the SRS resident on the
//! whole card, in the same call, as the side-by-side figure.
//!
//! Each group's a, b, c are copied before its clock starts (the backend
//! consumes them); the first group of each mode is a warm-up, not timed.
//! Reported per group: wall time, the backend's stage times (summed over
//! its partitions), the SRS bytes copied host-to-device and their rate
//! over the MSM stages. Every proof must equal the first one (one witness,
//! fixed r and s), across both modes.
//!
//! The G1 sections alias one host buffer, as in the stage-by-stage runs;
//! the backend page-locks each streamed section, so a section inside one
//! already locked logs a warning and is copied by DMA all the same.

use std::time::Instant;

use anyhow::{bail, Context, Result};
use blstrs::Scalar;
use cuzk_core::device_tier::DeviceTier;
use cuzk_cuda::{CudaBackend, SrsPlacement, DEFAULT_VRAM_MARGIN};
use cuzk_prover::backend::{ProveStats, ProverBackend, SrsRef};
use cuzk_prover::{PartitionWitness, WitnessSize};

use super::input::{make_input_with, ms, section_srs, Input};
use super::workers::{refill, witness};

/// What one `--partitions-per-pass` run measures.
pub(crate) struct PerPass {
    pub(crate) device: usize,
    pub(crate) lg_n: u32,
    /// Timed groups of each mode (after the warm-up).
    pub(crate) groups: usize,
    pub(crate) k: usize,
    pub(crate) vram_limit: Option<u64>,
    /// Also the whole card with the SRS resident, one partition a call.
    pub(crate) resident_beside: bool,
    pub(crate) synthetic: super::Synthetic,
    /// `[gpus.tuning]` of both backends.
    pub(crate) tuning: cuzk_cuda::GpuTuning,
}

/// One mode's figures, per partition.
struct Figures {
    ms: f64,
    srs_h2d_bytes: f64,
    msm_ms: f64,
    resident: String,
}

pub(crate) fn run(o: &PerPass) -> Result<()> {
    if o.k == 0 || o.groups == 0 {
        bail!("--partitions-per-pass and --partitions must be at least 1");
    }
    let t = Instant::now();
    let inp = make_input_with(o.lg_n, o.synthetic.clone());
    let host = section_srs(&inp);
    let srs = host.srs(&inp);
    println!(
        "gpu_bench_per_pass_setup log_domain={} k={} groups={} vram_limit={} others_percent={} \
         pattern_g1={} input_ms={:.0}",
        o.lg_n,
        o.k,
        o.groups,
        o.vram_limit.map_or("none".into(), |v| v.to_string()),
        o.synthetic.others_percent,
        inp.g1.len(),
        ms(t)
    );
    let mut reference = None;
    let streamed = {
        let gpu = CudaBackend::with_placement(o.device, SrsPlacement::Auto)
            .with_context(|| format!("CUDA device {}", o.device))?
            .with_memory(o.vram_limit, DEFAULT_VRAM_MARGIN)?
            .with_tuning(&o.tuning)?
            .with_partitions_per_pass(o.k);
        mode(
            &gpu,
            &inp,
            &srs,
            (o.groups, o.k),
            "streamed",
            &mut reference,
        )?
    };
    let resident = match o.resident_beside {
        true => {
            // The limit is the device's (every backend on it): lifted.
            let gpu = CudaBackend::with_placement(o.device, SrsPlacement::Always)?
                .with_memory(None, DEFAULT_VRAM_MARGIN)?
                .with_tuning(&o.tuning)?
                .with_partitions_per_pass(1);
            let n = o.groups * o.k;
            Some(mode(&gpu, &inp, &srs, (n, 1), "resident", &mut reference)?)
        }
        false => None,
    };
    let gb = |b: f64| b / 1e9;
    let rate = gb(streamed.srs_h2d_bytes) / (streamed.msm_ms / 1e3);
    println!(
        "gpu_bench_per_pass_summary log_domain={} k={} vram_limit={} resident_sections={} \
         per_partition_ms={:.1} srs_h2d_gb_per_partition={:.2} srs_h2d_gb_per_s_over_msms={:.1} \
         msm_ms_per_partition={:.1}{}",
        o.lg_n,
        o.k,
        o.vram_limit.map_or("none".into(), |v| v.to_string()),
        streamed.resident,
        streamed.ms,
        gb(streamed.srs_h2d_bytes),
        if rate.is_finite() { rate } else { 0.0 },
        streamed.msm_ms,
        resident.map_or(String::new(), |r| format!(
            " resident_per_partition_ms={:.1} streamed_over_resident={:.3}",
            r.ms,
            streamed.ms / r.ms
        ))
    );
    Ok(())
}

/// Proves a warm-up group and then `groups` groups of `k` partitions on
/// `gpu` (its SRS placed as the daemon's SRS manager places it); checks
/// every proof against `reference` (set by the first proof of the run).
fn mode(
    gpu: &CudaBackend,
    inp: &Input,
    srs: &SrsRef<'_>,
    (groups, k): (usize, usize),
    label: &str,
    reference: &mut Option<Vec<u8>>,
) -> Result<Figures> {
    let tier = DeviceTier::new();
    let size = WitnessSize {
        constraints: inp.n(),
        inputs: inp.input.len(),
        aux: inp.aux.len(),
    };
    let lease = tier.on_device("gpu-bench", srs, 0, gpu, &size)?;
    let on = lease.srs().map(|d| srs.on_device(d));
    let resident = tier
        .ready_on("gpu-bench")
        .first()
        .map_or("none".into(), |c| c.resident.join(","));
    let use_srs = on.as_ref().unwrap_or(srs);
    let (r, s) = (vec![Scalar::from(3u64); k], vec![Scalar::from(5u64); k]);
    let mut ws: Vec<PartitionWitness> = (0..k).map(|_| witness(inp)).collect();
    let tw = Instant::now();
    let (first, _) = gpu.prove(&mut ws, use_srs, &r, &s)?;
    check(&first, reference, label)?;
    println!(
        "gpu_bench_per_pass_warmup srs={label} k={k} resident_sections={resident} ms={:.0}",
        ms(tw)
    );
    let (mut wall, mut bytes, mut msm) = (0.0, 0.0, 0.0);
    for g in 0..groups {
        for w in ws.iter_mut() {
            refill(w, inp);
        }
        let t = Instant::now();
        let (proofs, st) = gpu.prove(&mut ws, use_srs, &r, &s)?;
        let group_ms = ms(t);
        check(&proofs, reference, label)?;
        wall += group_ms;
        bytes += st.streamed_bytes as f64;
        msm += msm_ms(&st);
        print_group(label, g, k, group_ms, &st);
    }
    drop(lease);
    tier.forget("gpu-bench");
    gpu.release_buffers()?;
    let n = (groups * k) as f64;
    Ok(Figures {
        ms: wall / n,
        srs_h2d_bytes: bytes / n,
        msm_ms: msm / n,
        resident,
    })
}

fn f(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The MSM stages' time (their walls, summed over the group).
fn msm_ms(st: &ProveStats) -> f64 {
    f(st.msm_h) + f(st.msm_l) + f(st.msm_a) + f(st.msm_b_g1) + f(st.msm_b_g2)
}

fn print_group(label: &str, g: usize, k: usize, group_ms: f64, st: &ProveStats) {
    let gb = st.streamed_bytes as f64 / 1e9;
    let rate = gb / (msm_ms(st) / 1e3);
    println!(
        "gpu_bench_per_pass_group srs={label} group={g} k={k} ms={group_ms:.0} \
         per_partition_ms={:.1} h_stage_ms={:.0} msm_h_ms={:.0} msm_l_ms={:.0} msm_a_ms={:.0} \
         msm_b_g1_ms={:.0} msm_b_g2_ms={:.0} assembly_ms={:.0} srs_h2d_gb={gb:.2} \
         srs_h2d_gb_per_s_over_msms={:.1}",
        group_ms / k as f64,
        f(st.ntt),
        f(st.msm_h),
        f(st.msm_l),
        f(st.msm_a),
        f(st.msm_b_g1),
        f(st.msm_b_g2),
        f(st.assembly),
        if rate.is_finite() { rate } else { 0.0 }
    );
}

/// Every proof must be the run's first.
fn check(
    proofs: &[cuzk_prover::Proof],
    reference: &mut Option<Vec<u8>>,
    label: &str,
) -> Result<()> {
    for p in proofs {
        let bytes = p.to_bytes().to_vec();
        if *reference.get_or_insert_with(|| bytes.clone()) != bytes {
            bail!("srs={label}: a proof differs from the run's first (same witness, r and s)");
        }
    }
    Ok(())
}

//! `cuzk-lab gpu-bench`: per-stage GPU timings of one partition-shaped
//! input at domain 2^k, without circuit synthesis (too slow at 2^27).
//!
//! The input is synthetic but shaped like a PoRep partition: a, b, c of n =
//! 2^k scalars from a pool of random ones; aux ≈ n variables, 45 % zeros,
//! 45 % ones, 10 % distinct random values; ~95 % of the A-density bits and
//! ~25 % of the B-density bits set.
//! SRS points are valid (random multiples of the generators) but a few
//! thousand of them are repeated to fill each section: timings are those of
//! real points, the SRS is not a real one. Streamed: the points are tiled
//! once in host memory (the G1 sections alias one buffer) and sppark streams
//! them per MSM. Resident: they are uploaded once from that host buffer
//! (page-locked for the copy) when it exists, else tiled on the device.
//!
//! Output: `key=value` lines (`gpu_bench_setup`, one `gpu_bench` line per
//! partition, one `gpu_bench_summary` per size and SRS mode); without
//! `--overlap` they also give `gpu_total_ms`, the H stage and the MSMs. a/b/c and aux
//! are copied from page-locked host memory when CUDA can lock it; with
//! `--overlap` the a/b/c upload and the H computation are one call whose
//! copies overlap the NTTs (as in the backend). `--split01` times the
//! resident L, A and B MSMs with the 0/1 split (the backend's default), as
//! plain Pippenger over every scalar, or both side by side (then checks
//! that the proofs are equal). `--workers 1,2` runs the whole backend
//! instead, with that many worker threads ([`workers`]).

use anyhow::{bail, Result};

/// Which SRS modes to time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SrsMode {
    Resident,
    Streamed,
    Both,
}

/// Whether the resident witness MSMs split their 0/1 scalars.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Split01 {
    On,
    Off,
    Both,
}

/// What to time at each size.
#[derive(Clone, Debug)]
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub struct Opts {
    pub srs: SrsMode,
    pub partitions: usize,
    pub device: usize,
    /// `--workers` runs: the devices, each with that many workers (empty:
    /// `device` alone).
    pub devices: Vec<usize>,
    pub overlap: bool,
    pub split01: Split01,
    /// `--workers` runs: threads copying each partition's a, b, c (0: one
    /// per core).
    pub feed_threads: usize,
    /// `gpus.vram_limit` for the stage-by-stage runs (a small card on a
    /// large one): H at the a-only tier, its vector freed before the L/A/B
    /// stage, every MSM fitted to what is left, as the backend does.
    pub vram_limit: Option<u64>,
    /// With the SRS streamed: these sections (h, l, a, b_g1, b_g2) are
    /// uploaded and stay on the device, as the backend keeps the sections
    /// that fit a small card.
    pub resident_sections: Vec<String>,
    /// The whole backend with this many partitions sharing each streamed
    /// pass ([`per_pass`]) instead of the stage-by-stage calls.
    pub partitions_per_pass: Option<usize>,
    /// The synthetic witness's share of others and G1 pattern.
    pub synthetic: Synthetic,
    /// `[gpus.tuning]` for the `--partitions-per-pass` backends.
    pub tuning: cuzk_cuda::GpuTuning,
}

/// Distinct G1 points of the synthetic SRS by default.
pub const DEFAULT_PATTERN_G1: usize = 4096;

/// What the synthetic witness and SRS look like (`gpu-bench
/// --others-percent`, `--pattern-points`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Synthetic {
    /// Aux values neither 0 nor 1, in percent (the rest half zeros, half
    /// ones); a 32 GiB PoRep partition has ~1 % (`witness-shape`).
    pub others_percent: u64,
    /// Distinct G1 points the SRS sections are tiled from: the default
    /// 4,096 stay in the card's L2 cache, a real SRS's do not.
    pub pattern_g1: usize,
    /// Values the others take in turn (a real partition's, with its
    /// repeats); empty: distinct pseudorandom values.
    pub others_from: Option<std::sync::Arc<Vec<blstrs::Scalar>>>,
}

impl Default for Synthetic {
    fn default() -> Self {
        Synthetic {
            others_percent: 10,
            pattern_g1: DEFAULT_PATTERN_G1,
            others_from: None,
        }
    }
}

/// A `witness-shape --dump-others` file: 32-byte little-endian scalars.
pub fn read_others(path: std::path::PathBuf) -> Result<std::sync::Arc<Vec<blstrs::Scalar>>> {
    use ff::PrimeField;
    let bytes = std::fs::read(&path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    if bytes.is_empty() || bytes.len() % 32 != 0 {
        bail!("{}: not a whole number of 32-byte scalars", path.display());
    }
    let mut out = Vec::with_capacity(bytes.len() / 32);
    for c in bytes.chunks_exact(32) {
        let mut r = [0u8; 32];
        r.copy_from_slice(c);
        let x: Option<blstrs::Scalar> = blstrs::Scalar::from_repr(r).into();
        out.push(x.ok_or_else(|| anyhow::anyhow!("{}: a value past the field", path.display()))?);
    }
    Ok(std::sync::Arc::new(out))
}

/// `--tuning`: `[gpus.tuning]` lines, `;` between them (e.g.
/// `trace_msm = true; trace_split = true`).
pub fn parse_tuning(s: &str) -> Result<cuzk_cuda::GpuTuning> {
    let text = s.replace(';', "\n");
    toml::from_str(&text).map_err(|e| anyhow::anyhow!("--tuning {s:?}: {e}"))
}

/// The sections named in `--resident-sections`, in the order h, l, a,
/// b_g1, b_g2.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub fn parse_sections(names: &[String]) -> Result<[bool; 5]> {
    const NAMES: [&str; 5] = ["h", "l", "a", "b_g1", "b_g2"];
    let mut on = [false; 5];
    for n in names {
        match NAMES.iter().position(|x| x == n) {
            Some(i) => on[i] = true,
            None => bail!("--resident-sections: unknown section {n:?} (h, l, a, b_g1, b_g2)"),
        }
    }
    Ok(on)
}

/// Parses `A..B` (inclusive) or `A`.
pub fn parse_range(s: &str) -> Result<(u32, u32), String> {
    let num = |x: &str| {
        x.trim()
            .parse::<u32>()
            .map_err(|e| format!("bad log-domain {x:?}: {e}"))
    };
    let (a, b) = match s.split_once("..") {
        Some((a, b)) => (num(a)?, num(b.trim_start_matches('='))?),
        None => (num(s)?, num(s)?),
    };
    if a > b || !(10..=28).contains(&a) || b > 28 {
        return Err(format!(
            "log-domain {s:?}: want A..B with 10 <= A <= B <= 28"
        ));
    }
    Ok((a, b))
}

/// The partition's GPU total: the H stage without copies (`ntt_h`) and
/// the five MSMs, each timed from the host around a call that waits
/// for the device (so a few host steps inside the MSM calls count:
/// the scalar picks' bitmap copies, the window sums). None with
/// `--overlap`, whose H stage includes the a/b/c copies.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
fn gpu_ms(stages: &[(&'static str, f64)]) -> Option<f64> {
    stages.iter().any(|(k, _)| *k == "ntt_h").then(|| {
        stages
            .iter()
            .filter(|(k, _)| *k == "ntt_h" || k.starts_with("msm_"))
            .map(|(_, v)| v)
            .sum()
    })
}

#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
fn gpu_field(gpu: Option<f64>) -> String {
    gpu.map(|g| format!(" gpu_total_ms={g:.1}"))
        .unwrap_or_default()
}

#[cfg(not(feature = "cuda"))]
pub fn run(_range: (u32, u32), _opts: Opts, _workers: &[usize]) -> Result<()> {
    bail!("gpu-bench needs the CUDA backend: rebuild cuzk-lab with `--features cuda`")
}

#[cfg(feature = "cuda")]
mod input;
pub mod others;
#[cfg(feature = "cuda")]
mod per_pass;
#[cfg(feature = "cuda")]
mod workers;

#[cfg(feature = "cuda")]
pub fn run(range: (u32, u32), opts: Opts, workers: &[usize]) -> Result<()> {
    let device = opts.device;
    if opts.partitions == 0 {
        bail!("--partitions must be at least 1");
    }
    use anyhow::Context;
    let gpu = cuzk_cuda::CudaBackend::with_placement(device, cuzk_cuda::SrsPlacement::Never)
        .with_context(|| format!("CUDA device {device}"))?;
    println!(
        "gpu_bench_device device={device} name={:?}",
        gpu.device_name().unwrap_or_else(|e| e.to_string())
    );
    if workers.contains(&0) {
        bail!("--workers: every count must be at least 1");
    }
    if workers.is_empty() && !opts.devices.is_empty() {
        bail!("--devices takes effect with --workers");
    }
    let devices = match opts.devices.is_empty() {
        true => vec![device],
        false => opts.devices.clone(),
    };
    if opts.partitions_per_pass.is_some() && !(workers.is_empty() && opts.devices.is_empty()) {
        bail!("--partitions-per-pass runs on --device alone, without --workers");
    }
    for k in range.0..=range.1 {
        if let Some(per) = opts.partitions_per_pass {
            per_pass::run(&per_pass::PerPass {
                device,
                lg_n: k,
                groups: opts.partitions,
                k: per,
                vram_limit: opts.vram_limit,
                resident_beside: opts.srs != SrsMode::Streamed,
                synthetic: opts.synthetic.clone(),
                tuning: opts.tuning.clone(),
            })?;
        } else if workers.is_empty() {
            imp::one_size(&gpu, k, opts.clone())?;
        } else {
            workers::run(&devices, k, opts.partitions, workers, opts.feed_threads)?;
        }
    }
    Ok(())
}

#[cfg(feature = "cuda")]
pub(crate) mod imp {
    use std::time::Instant;

    use anyhow::{Context, Result};
    use blstrs::{G1Affine, G2Affine, Scalar};
    use cuzk_cuda::lab::StageContext;
    use cuzk_cuda::{CudaBackend, Source};
    use cuzk_prover::msm::{msm, MsmShape, G1, G2};
    use cuzk_prover::proof::{assemble, MsmResults};
    use cuzk_prover::srs::Section;

    use super::{gpu_field, gpu_ms, Opts, Split01, SrsMode};

    use super::input::{
        host_srs, make_input_with, ms, HostSrs, Input, FR, G1B, G2B, INPUTS, PATTERN_G2,
    };

    pub(super) fn one_size(gpu: &CudaBackend, lg_n: u32, opts: Opts) -> Result<()> {
        let (mode, partitions) = (opts.srs, opts.partitions);
        let t = Instant::now();
        let mut inp = make_input_with(lg_n, opts.synthetic.clone());
        inp.overlap = opts.overlap;
        let n = inp.n();
        let want_streamed = mode != SrsMode::Resident;
        let host = want_streamed.then(|| host_srs(&inp));
        println!(
            "gpu_bench_setup log_domain={lg_n} n={n} inputs={INPUTS} aux={} a_aux_set={} b_aux_set={} \
             srs_h={} srs_l={} srs_a={} srs_b_g1={} srs_b_g2={} srs_device_bytes={} \
             srs_points=tiled pattern_g1={} pattern_g2={PATTERN_G2} others_percent={} host_srs_bytes={} gen_ms={:.0} \
             note=\"valid points repeated to fill each section: not a real SRS\"",
            inp.aux.len(),
            inp.a_aux.count(),
            inp.b_aux.count(),
            n - 1,
            inp.aux.len(),
            inp.a_len(),
            inp.b_len(),
            inp.b_len(),
            srs_bytes(&inp),
            inp.g1.len(),
            opts.synthetic.others_percent,
            host.as_ref()
                .map_or(0, |h| h.g1.len() as u64 * G1B + h.g2.len() as u64 * G2B),
            ms(t)
        );
        let mut results = Vec::new();
        let mut st = gpu.stages()?;
        let limit = opts.vram_limit.unwrap_or(0);
        st.set_vram_limit(limit, cuzk_cuda::DEFAULT_VRAM_MARGIN)?;
        let keep = super::parse_sections(&opts.resident_sections)?;
        if let Some(h) = &host {
            st.srs_free()?;
            // Page-locked once, as the backend does with the sections it
            // streams (the G1 sections alias one buffer).
            let t = Instant::now();
            let locks = (
                cuzk_cuda::lab::page_lock(&h.g1)?,
                cuzk_cuda::lab::page_lock(&h.g2)?,
            );
            println!(
                "gpu_bench_page_lock log_domain={lg_n} bytes={} ms={:.1}",
                h.g1.len() as u64 * G1B + h.g2.len() as u64 * G2B,
                ms(t)
            );
            make_resident(&mut st, &inp, Some(h), keep)?;
            let label = if keep.contains(&true) {
                "partial"
            } else {
                "streamed"
            };
            let run = Run {
                host: Some(h),
                keep,
                limited: limit != 0,
            };
            let (proofs, _) = series(&mut st, &inp, &run, partitions, label)?;
            st.srs_free()?;
            drop(locks);
            results.push((label, proofs));
        }
        if mode != SrsMode::Streamed {
            st.release_buffers()?;
            let t = Instant::now();
            let how = make_resident(&mut st, &inp, host.as_ref(), [true; 5])?;
            let setup = ms(t);
            let bytes = srs_bytes(&inp);
            println!(
                "gpu_bench_resident log_domain={lg_n} how={how} srs_device_bytes={bytes} setup_ms={setup:.1} \
                 gb_per_s={:.2}",
                bytes as f64 / setup / 1e6
            );
            let splits: &[bool] = match opts.split01 {
                Split01::On => &[true],
                Split01::Off => &[false],
                Split01::Both => &[false, true],
            };
            let mut by_split = Vec::new();
            for &split in splits {
                st.set_split01(split)?;
                let label = if split { "resident" } else { "resident_plain" };
                let run = Run {
                    host: None,
                    keep: [true; 5],
                    limited: limit != 0,
                };
                let (proofs, shape) = series(&mut st, &inp, &run, partitions, label)?;
                if split {
                    println!(
                        "gpu_bench_split01 log_domain={lg_n} zeros={} ones={} others={}",
                        shape.zeros, shape.ones, shape.others
                    );
                }
                by_split.push(proofs);
            }
            st.set_split01(true)?;
            st.srs_free()?;
            if let [plain, split] = by_split.as_slice() {
                println!(
                    "gpu_bench_check log_domain={lg_n} split01_equals_plain={}",
                    plain == split
                );
            }
            if let Some(proofs) = by_split.pop() {
                results.push(("resident", proofs));
            }
        }
        st.release_buffers()?;
        st.set_vram_limit(0, cuzk_cuda::DEFAULT_VRAM_MARGIN)?;
        if let [(_, x), (_, y)] = results.as_slice() {
            println!(
                "gpu_bench_check log_domain={lg_n} resident_equals_streamed={}",
                x == y
            );
        }
        Ok(())
    }

    /// How one series proves: the host SRS its streamed sections come
    /// from, the sections kept on the device (h, l, a, b_g1, b_g2), and
    /// whether the card is limited (H at the a-only tier).
    struct Run<'a> {
        host: Option<&'a HostSrs>,
        keep: [bool; 5],
        limited: bool,
    }

    fn srs_bytes(inp: &Input) -> u64 {
        (inp.n() - 1 + inp.aux.len() + inp.a_len() + inp.b_len()) as u64 * G1B
            + inp.b_len() as u64 * G2B
    }

    /// Puts the sections of `keep` (h, l, a, b_g1, b_g2) on the device.
    fn make_resident(
        st: &mut StageContext<'_>,
        inp: &Input,
        host: Option<&HostSrs>,
        keep: [bool; 5],
    ) -> Result<&'static str> {
        let lens = [
            (Section::H, inp.n() - 1),
            (Section::L, inp.aux.len()),
            (Section::A, inp.a_len()),
            (Section::BG1, inp.b_len()),
        ];
        for (i, (sec, len)) in lens.into_iter().enumerate() {
            if !keep[i] {
                continue;
            }
            st.srs_alloc(sec, len)?;
            match host {
                Some(h) => st.srs_upload(sec, &h.g1[..len])?,
                None => st.srs_tile(sec, &inp.g1)?,
            }
        }
        if keep[4] {
            st.srs_alloc(Section::BG2, inp.b_len())?;
            match host {
                Some(h) => st.srs_upload(Section::BG2, &h.g2[..inp.b_len()])?,
                None => st.srs_tile(Section::BG2, &inp.g2)?,
            }
        }
        Ok(if host.is_some() {
            "uploaded_from_host"
        } else {
            "tiled_on_device"
        })
    }

    /// `partitions` partitions back to back; returns each proof's bytes.
    fn series(
        st: &mut StageContext<'_>,
        inp: &Input,
        run: &Run<'_>,
        partitions: usize,
        label: &str,
    ) -> Result<(Vec<[u8; 192]>, MsmShape)> {
        let mut totals = Vec::new();
        let mut proofs = Vec::new();
        let mut shapes = MsmShape::default();
        for p in 0..partitions {
            let (stages, bytes, streamed, proof, shape) = partition(st, inp, run)
                .with_context(|| format!("2^{} {label} partition {p}", inp.lg_n))?;
            let total: f64 = stages.iter().map(|(_, v)| v).sum();
            let line: Vec<String> = stages
                .iter()
                .map(|(k, v)| format!("{k}_ms={v:.1}"))
                .collect();
            let msm_ms: f64 = stages
                .iter()
                .filter(|(k, _)| k.starts_with("msm_"))
                .map(|(_, v)| v)
                .sum();
            println!(
                "gpu_bench log_domain={} srs={label} partition={p} {}{} msms_ms={msm_ms:.1} total_ms={total:.1} \
                 h2d_bytes={bytes} srs_streamed_bytes={streamed} srs_streamed_gb_per_msm_s={:.2}",
                inp.lg_n,
                line.join(" "),
                gpu_field(gpu_ms(&stages)),
                streamed as f64 / msm_ms.max(1e-3) / 1e6,
            );
            totals.push(stages);
            proofs.push(proof);
            shapes += shape;
        }
        let rest = if totals.len() > 1 {
            &totals[1..]
        } else {
            &totals[..]
        };
        let mean = |i: usize| rest.iter().map(|s| s[i].1).sum::<f64>() / rest.len() as f64;
        let line: Vec<String> = (0..rest[0].len())
            .map(|i| format!("{}_ms={:.1}", rest[0][i].0, mean(i)))
            .collect();
        let total = rest
            .iter()
            .map(|s| s.iter().map(|(_, v)| v).sum::<f64>())
            .sum::<f64>()
            / rest.len() as f64;
        let gpu = rest
            .iter()
            .map(|s| gpu_ms(s))
            .sum::<Option<f64>>()
            .map(|g| g / rest.len() as f64);
        println!(
            "gpu_bench_summary log_domain={} srs={label} partitions={partitions} mean_over={} {}{} total_ms={total:.1}",
            inp.lg_n,
            if totals.len() > 1 { "partitions_after_first" } else { "the_only_partition" },
            line.join(" "),
            gpu_field(gpu),
        );
        Ok((proofs, shapes))
    }

    type Stages = Vec<(&'static str, f64)>;

    fn partition(
        st: &mut StageContext<'_>,
        inp: &Input,
        run: &Run<'_>,
    ) -> Result<(Stages, u64, u64, [u8; 192], MsmShape)> {
        let mut s: Stages = Vec::new();
        let n = inp.n();
        let aux_n = inp.aux.len() as u64;
        let words = aux_n.div_ceil(64);
        // a/b/c, aux, two density bitmaps (words + prefix offsets).
        let bytes = 3 * n as u64 * FR + aux_n * FR + 2 * words * 12;
        // The sections streamed, and from where.
        let host = |i: usize| run.host.filter(|_| !run.keep[i]);

        if run.limited {
            // A small card: the a-only tier, as the backend takes it, the
            // last partition's buffers freed first.
            st.release_buffers()?;
            let t = Instant::now();
            st.h_prepare_a_only(&inp.a, &inp.b, &inp.c, inp.lg_n)?;
            s.push(("upload_abc_ntt_h_a_only", ms(t)));
        } else if inp.overlap {
            let t = Instant::now();
            st.h_prepare(&inp.a, &inp.b, &inp.c, inp.lg_n)?;
            s.push(("upload_abc_ntt_h_overlapped", ms(t)));
        } else {
            let t = Instant::now();
            st.upload_abc(&inp.a, &inp.b, &inp.c, inp.lg_n)?;
            s.push(("upload_abc", ms(t)));
            let t = Instant::now();
            st.h_compute(inp.lg_n)?;
            s.push(("ntt_h", ms(t)));
        }

        let t = Instant::now();
        let h = match host(0) {
            Some(hs) => st.msm_g1(Source::H, &hs.g1[..n - 1])?,
            None => st.msm_g1_resident(Source::H, Section::H, 0, n - 1)?,
        };
        s.push(("msm_h", ms(t)));
        if run.limited {
            // H's vector goes before aux, as below the top tier.
            st.release_buffers()?;
        }

        let t = Instant::now();
        st.upload_aux(&inp.aux)?;
        s.push(("upload_aux", ms(t)));
        let t = Instant::now();
        let l = match host(1) {
            Some(hs) => st.msm_g1(Source::Aux, &hs.g1[..inp.aux.len()])?,
            None => st.msm_g1_resident(Source::Aux, Section::L, 0, inp.aux.len())?,
        };
        s.push(("msm_l", ms(t)));

        // B, then A: below the top tier (`limited`) A's scalars are picked
        // over aux itself, as the backend does.
        let t = Instant::now();
        let bi = inp.b_input.count();
        let nb = st.pick(&inp.b_aux)?;
        let b1_aux = match host(3) {
            Some(hs) => st.msm_g1(Source::Picked, &hs.g1[bi..bi + nb])?,
            None => st.msm_g1_resident(Source::Picked, Section::BG1, bi, nb)?,
        };
        s.push(("msm_b_g1", ms(t)));

        let t = Instant::now();
        let b2_aux = match host(4) {
            Some(hs) => st.msm_g2(Source::Picked, &hs.g2[bi..bi + nb])?,
            None => st.msm_g2_resident(Source::Picked, bi, nb)?,
        };
        s.push(("msm_b_g2", ms(t)));

        let t = Instant::now();
        let (na, a_src) = if run.limited {
            (st.pick_in_place(&inp.a_aux)?, Source::Aux)
        } else {
            (st.pick(&inp.a_aux)?, Source::Picked)
        };
        let a_aux = match host(2) {
            Some(hs) => st.msm_g1(a_src, &hs.g1[INPUTS..INPUTS + na])?,
            None => st.msm_g1_resident(a_src, Section::A, INPUTS, na)?,
        };
        s.push(("msm_a", ms(t)));
        let (shape, streamed) = st.take_shape()?;

        // Input MSMs on the CPU (the first points of each section) and the
        // assembly, as the backend does.
        let t = Instant::now();
        let p1: Vec<G1Affine> = (0..INPUTS).map(|i| inp.g1[i % inp.g1.len()]).collect();
        let p2: Vec<G2Affine> = (0..INPUTS).map(|i| inp.g2[i % inp.g2.len()]).collect();
        let (a_in, _) = msm::<G1>(&p1, &inp.input, None);
        let (b1_in, _) = msm::<G1>(&p1[..bi], &inp.input, Some(&inp.b_input));
        let (b2_in, _) = msm::<G2>(&p2[..bi], &inp.input, Some(&inp.b_input));
        let m = MsmResults {
            a: a_in + a_aux,
            b_g1: b1_in + b1_aux,
            b_g2: b2_in + b2_aux,
            h,
            l,
        };
        let srs = inp.vk_ref();
        let proof = assemble(&srs, &m, Scalar::from(3u64), Scalar::from(5u64))?;
        s.push(("inputs_assembly", ms(t)));
        Ok((s, bytes + streamed, streamed, proof.to_bytes(), shape))
    }
}

#[cfg(test)]
mod tests {
    use super::{gpu_field, gpu_ms, parse_range};

    #[test]
    fn the_gpu_total_is_the_h_stage_and_the_msms() {
        let split = [
            ("upload_abc", 900.0),
            ("ntt_h", 300.0),
            ("msm_h", 700.0),
            ("upload_aux", 250.0),
            ("msm_l", 150.0),
            ("inputs_assembly", 8.0),
        ];
        assert_eq!(gpu_ms(&split), Some(1150.0));
        assert_eq!(gpu_field(gpu_ms(&split)), " gpu_total_ms=1150.0");
        let overlapped = [("upload_abc_ntt_h_overlapped", 950.0), ("msm_h", 700.0)];
        assert_eq!(gpu_ms(&overlapped), None);
        assert_eq!(gpu_field(None), "");
    }

    #[test]
    fn tuning_lines_parse_and_unknown_keys_are_refused() {
        let t = super::parse_tuning("trace_msm = true; trace_split = true").ok();
        let t = t.map(|t| (t.trace_msm, t.trace_split, t.trace_ntt));
        assert_eq!(t, Some((true, true, false)));
        assert!(super::parse_tuning("trace_everything = true").is_err());
    }

    #[test]
    fn a_dump_of_others_reads_back_and_a_torn_one_is_refused() {
        use ff::PrimeField;
        let dir = std::env::temp_dir().join(format!("cuzk-others-{}", std::process::id()));
        let xs = [blstrs::Scalar::from(7u64), -blstrs::Scalar::from(3u64)];
        let bytes: Vec<u8> = xs.iter().flat_map(|x| x.to_repr()).collect();
        std::fs::write(&dir, &bytes).expect("temp file");
        let back = super::read_others(dir.clone()).expect("two scalars");
        assert_eq!(back.as_slice(), &xs);
        std::fs::write(&dir, &bytes[..40]).expect("temp file");
        assert!(super::read_others(dir.clone()).is_err());
        std::fs::write(&dir, [0xffu8; 32]).expect("temp file");
        assert!(super::read_others(dir.clone()).is_err());
        let _ = std::fs::remove_file(&dir);
    }

    #[test]
    fn resident_sections_parse() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(super::parse_sections(&[]).ok(), Some([false; 5]));
        assert_eq!(
            super::parse_sections(&names(&["l", "b_g2"])).ok(),
            Some([false, true, false, false, true])
        );
        assert!(super::parse_sections(&names(&["g"])).is_err());
    }

    #[test]
    fn log_domain_ranges() {
        assert_eq!(parse_range("24"), Ok((24, 24)));
        assert_eq!(parse_range("20..27"), Ok((20, 27)));
        assert_eq!(parse_range("20..=27"), Ok((20, 27)));
        assert!(parse_range("27..20").is_err());
        assert!(parse_range("29").is_err());
        assert!(parse_range("x").is_err());
    }

    #[cfg(not(feature = "cuda"))]
    #[test]
    fn without_the_feature_gpu_bench_says_so() {
        let opts = super::Opts {
            srs: super::SrsMode::Both,
            partitions: 1,
            device: 0,
            devices: Vec::new(),
            overlap: false,
            split01: super::Split01::Both,
            feed_threads: 0,
            vram_limit: None,
            resident_sections: Vec::new(),
            partitions_per_pass: Some(2),
            synthetic: super::Synthetic::default(),
            tuning: Default::default(),
        };
        let e = super::run((20, 20), opts, &[]).expect_err("no CUDA backend is built");
        assert!(e.to_string().contains("--features cuda"), "{e}");
    }
}

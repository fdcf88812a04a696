//! `cuzk-lab others-bench`: the Pippenger run that a split witness MSM
//! leaves (its "others", the scalars neither 0 nor 1), timed at each
//! `gpus.tuning.heavy_bucket_points` cap, with the points on the device.
//!
//! A real partition's others repeat values (`witness-shape`): a repeated
//! value puts all its points into one bucket of every window, and those
//! long buckets, one thread each, decide how long the accumulation takes.
//! Here the same number of distinct pseudorandom scalars runs beside them
//! (what the accumulation costs without long buckets), G1 against distinct
//! points of section L and, with `--g2`, G2 against section B_G2. Every
//! cap's sum must equal the first cap's: the run fails otherwise.
//!
//! With `--presum R` a third set runs too: the real others with each value
//! met at least R times kept once ([`presum_set`]), what Pippenger would
//! be left with if the points of a repeated value were summed beforehand.
//! Its time against the real set's is that lever's gain in Pippenger; the
//! summing itself is not timed here.
//!
//! Output: one `others_bench` line per scalar set, group and cap (the
//! first repetition is a warm-up, outside the figures), then one
//! `others_bench_summary` line.

use anyhow::Result;

/// What `others-bench` runs.
#[derive(Clone, Debug)]
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub struct Opts {
    pub device: usize,
    /// The real others (a `witness-shape --dump-others` file).
    pub others: std::sync::Arc<Vec<blstrs::Scalar>>,
    /// `heavy_bucket_points` values, in order (0: off).
    pub caps: Vec<u32>,
    /// Timed repetitions a cap, after one warm-up.
    pub reps: usize,
    /// Also the G2 MSM (B_G2's group).
    pub g2: bool,
    /// `gpus.tuning.trace_msm` (per batch phases, to stderr).
    pub trace: bool,
    /// Also the others with each value met at least this many times kept
    /// once (0: not).
    pub presum: usize,
}

/// `others` with every value met at least `min` times (`min` ≥ 2) kept
/// once, at its first place, and every other value as often as it is
/// met, in order: the scalars Pippenger gets when the points of each
/// value met `min` times or more are summed first (the sum then standing
/// for them at that value).
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub fn presum_set(others: &[blstrs::Scalar], min: usize) -> Vec<blstrs::Scalar> {
    use ff::PrimeField;
    use std::collections::{HashMap, HashSet};
    let min = min.max(2);
    let mut counts: HashMap<[u8; 32], usize> = HashMap::with_capacity(others.len());
    for x in others {
        *counts.entry(x.to_repr()).or_insert(0) += 1;
    }
    let mut kept: HashSet<[u8; 32]> = HashSet::new();
    others
        .iter()
        .filter(|x| {
            let r = x.to_repr();
            counts[&r] < min || kept.insert(r)
        })
        .copied()
        .collect()
}

/// `--caps` values: 0 (off) or what `gpus.tuning.heavy_bucket_points`
/// accepts.
pub fn parse_cap(s: &str) -> Result<u32, String> {
    let v: u32 = s.trim().parse().map_err(|e| format!("{s:?}: {e}"))?;
    if v != 0 && !(64..=65_534).contains(&v) {
        return Err(format!("{v}: use 0 (off) or 64 to 65534"));
    }
    Ok(v)
}

#[cfg(not(feature = "cuda"))]
pub fn run(_opts: Opts) -> Result<bool> {
    anyhow::bail!("others-bench needs the CUDA backend: rebuild cuzk-lab with `--features cuda`")
}

#[cfg(feature = "cuda")]
pub fn run(opts: Opts) -> Result<bool> {
    imp::run(opts)
}

#[cfg(feature = "cuda")]
mod imp {
    use std::time::Instant;

    use anyhow::{bail, Context, Result};
    use blstrs::{G1Projective, G2Projective, Scalar};
    use cuzk_cuda::lab::StageContext;
    use cuzk_cuda::{CudaBackend, GpuTuning, Source};
    use cuzk_prover::srs::Section;

    use super::super::input::{ms, par_fill, random_scalar, walk};
    use super::Opts;

    /// The sums of one scalar set at every cap, to compare.
    #[derive(PartialEq)]
    enum Sum {
        G1(G1Projective),
        G2(G2Projective),
    }

    /// Timings of one (scalars, group, cap): milliseconds a run.
    struct Timed {
        min: f64,
        mean: f64,
    }

    fn msm(st: &mut StageContext<'_>, g2: bool, n: usize) -> Result<Sum> {
        Ok(match g2 {
            false => Sum::G1(st.msm_g1_resident(Source::Aux, Section::L, 0, n)?),
            true => Sum::G2(st.msm_g2_resident(Source::Aux, 0, n)?),
        })
    }

    /// One cap: a warm-up, then `reps` timed runs, each sum checked
    /// against `want` (the first cap's, set here when it is the first).
    fn time_cap(
        st: &mut StageContext<'_>,
        opts: &Opts,
        g2: bool,
        n: usize,
        cap: u32,
        want: &mut Option<Sum>,
    ) -> Result<(Timed, bool)> {
        let tuning = GpuTuning {
            heavy_bucket_points: cap,
            trace_msm: opts.trace,
            ..Default::default()
        };
        st.set_tuning(&tuning)?;
        let mut same = true;
        let mut times = Vec::with_capacity(opts.reps);
        for r in 0..=opts.reps {
            let t = Instant::now();
            let sum = msm(st, g2, n)?;
            if r > 0 {
                times.push(ms(t));
            }
            match want {
                Some(w) => same &= *w == sum,
                None => *want = Some(sum),
            }
        }
        let min = times.iter().copied().fold(f64::INFINITY, f64::min);
        let mean = times.iter().sum::<f64>() / times.len() as f64;
        Ok((Timed { min, mean }, same))
    }

    pub(super) fn run(opts: Opts) -> Result<bool> {
        if opts.caps.is_empty() || opts.reps == 0 {
            bail!("--caps and --reps need at least one value");
        }
        let device = opts.device;
        let gpu = CudaBackend::with_placement(device, cuzk_cuda::SrsPlacement::Never)
            .with_context(|| format!("CUDA device {device}"))?;
        let n = opts.others.len();
        let t = Instant::now();
        let random = par_fill(n, |i| random_scalar(0x6f74_6865_7273 ^ i as u64));
        let g1 = walk::<G1Projective>(n, Scalar::from(7u64));
        let g2 = match opts.g2 {
            true => walk::<G2Projective>(n, Scalar::from(11u64)),
            false => Vec::new(),
        };
        println!(
            "others_bench_setup device={device} name={:?} n={n} g2={} reps={} gen_ms={:.0}",
            gpu.device_name().unwrap_or_else(|e| e.to_string()),
            opts.g2,
            opts.reps,
            ms(t)
        );
        let mut st = gpu.stages()?;
        st.set_split01(false)?;
        st.srs_free()?;
        st.srs_alloc(Section::L, n)?;
        st.srs_upload(Section::L, &g1)?;
        if opts.g2 {
            st.srs_alloc(Section::BG2, n)?;
            st.srs_upload(Section::BG2, &g2)?;
        }
        let mut ok = true;
        let mut summary = String::new();
        let groups: &[bool] = if opts.g2 { &[false, true] } else { &[false] };
        let presummed = match opts.presum {
            0 => Vec::new(),
            r => super::presum_set(&opts.others, r),
        };
        let presum_label = format!("presum{}", opts.presum);
        let mut sets = vec![("real", &opts.others[..])];
        if opts.presum > 0 {
            sets.push((presum_label.as_str(), &presummed[..]));
        }
        sets.push(("random", &random[..]));
        for (label, scalars) in sets {
            st.upload_aux(scalars)?;
            let n = scalars.len();
            for &g2 in groups {
                let group = if g2 { "g2" } else { "g1" };
                let mut want = None;
                let mut best: Option<(u32, f64)> = None;
                for &cap in &opts.caps {
                    let (tm, same) = time_cap(&mut st, &opts, g2, n, cap, &mut want)?;
                    ok &= same;
                    println!(
                        "others_bench scalars={label} group={group} n={n} cap={cap} \
                         ms_min={:.2} ms_mean={:.2} same_sum={same}",
                        tm.min, tm.mean
                    );
                    if best.is_none_or(|(_, b)| tm.min < b) {
                        best = Some((cap, tm.min));
                    }
                    if cap == opts.caps[0] {
                        summary += &format!(" {group}_{label}_first_ms={:.2}", tm.min);
                    }
                }
                if let Some((cap, b)) = best {
                    summary +=
                        &format!(" {group}_{label}_best_cap={cap} {group}_{label}_best_ms={b:.2}");
                }
            }
        }
        st.srs_free()?;
        println!(
            "others_bench_summary n={n} first_cap={}{summary} sums_agree={ok}",
            opts.caps[0]
        );
        Ok(ok)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn caps_are_zero_or_in_the_knobs_range() {
        assert_eq!(super::parse_cap("0"), Ok(0));
        assert_eq!(super::parse_cap("64"), Ok(64));
        assert_eq!(super::parse_cap("65534"), Ok(65_534));
        assert!(super::parse_cap("63").is_err());
        assert!(super::parse_cap("65535").is_err());
        assert!(super::parse_cap("-1").is_err());
    }

    #[test]
    fn presum_keeps_a_value_met_often_once_and_the_rest_as_met() {
        use blstrs::Scalar;
        let [a, b, c] = [5u64, 6, 7].map(Scalar::from);
        // a four times, b twice, c once.
        let xs = [a, b, a, c, a, b, a];
        assert_eq!(super::presum_set(&xs, 4), vec![a, b, c, b]);
        assert_eq!(super::presum_set(&xs, 2), vec![a, b, c]);
        // Below 2 it is the same as 2: a value met once is kept anyway.
        assert_eq!(super::presum_set(&xs, 0), vec![a, b, c]);
        assert_eq!(super::presum_set(&xs, 5), xs.to_vec());
        assert!(super::presum_set(&[], 4).is_empty());
    }

    #[cfg(not(feature = "cuda"))]
    #[test]
    fn without_the_feature_others_bench_says_so() {
        let opts = super::Opts {
            device: 0,
            others: std::sync::Arc::new(vec![blstrs::Scalar::from(2u64)]),
            caps: vec![0],
            reps: 1,
            g2: false,
            trace: false,
            presum: 0,
        };
        let e = super::run(opts).err().map(|e| e.to_string());
        assert!(e.is_some_and(|m| m.contains("--features cuda")));
    }
}

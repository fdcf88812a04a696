//! `witness-shape`: what the L, A and B MSMs of one fixture partition are
//! given, on the CPU alone (no parameters, no GPU): how many scalars are
//! zero, one or other, and among the others how many distinct values
//! there are and how often the commonest repeat. A value that repeats
//! puts its points into the same bucket of every Pippenger window, so a
//! few values met hundreds of thousands of times make a few long buckets
//! that one GPU thread each adds up point after point; the heaviest
//! bucket at the MSM driver's window width says how long. Ends with
//! `witness-shape kind=K sector_size=S partition=P l_others=... ...`.

use std::collections::HashMap;
use std::time::Instant;

use std::path::Path;

use anyhow::{Context, Result};
use blstrs::Scalar;
use cuzk_core::ProofKind;
use ff::{Field, PrimeField};

use crate::check_circuits::source;
use crate::select::Selection;

/// The scalars of one MSM, as the GPU's 0/1 split and Pippenger see them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Shape {
    pub n: usize,
    pub zeros: usize,
    pub ones: usize,
    pub others: usize,
    /// Distinct values among the others.
    pub distinct: usize,
    /// How often the commonest other value occurs.
    pub max_repeat: usize,
    /// Others whose value occurs at least twice.
    pub repeated: usize,
    /// Others below 2^64 or above p − 2^64 (negated small ones: `breakdown`
    /// takes them as small), whose digits are all in the low windows.
    pub small: usize,
    /// The MSM driver's window width for `others` points (its rule).
    pub window_bits: u32,
    /// Points in the fullest bucket of any window, and the mean a bucket.
    pub max_bucket: usize,
    pub mean_bucket: f64,
}

/// The driver's width for `n` points (`msm_driver.cuh`: sppark's rule,
/// 17 bits for 2^22..2^24 after half again, 22 from 2^27).
pub fn driver_window_bits(n: usize) -> u32 {
    if n <= 192 {
        return 10;
    }
    let lg = usize::BITS - 1 - (n + n / 2).leading_zeros();
    if (22..=24).contains(&lg) {
        return 17;
    }
    if lg >= 27 {
        return 22;
    }
    (lg as i64 - 8).clamp(10, 18) as u32
}

/// The shape of `scalars`.
pub fn shape<'a>(scalars: impl Iterator<Item = &'a Scalar>) -> Shape {
    let mut s = Shape::default();
    let mut counts: HashMap<[u8; 32], usize> = HashMap::new();
    for x in scalars {
        s.n += 1;
        if x.is_zero_vartime() {
            s.zeros += 1;
        } else if *x == Scalar::ONE {
            s.ones += 1;
        } else {
            *counts.entry(x.to_repr()).or_insert(0) += 1;
        }
    }
    s.others = s.n - s.zeros - s.ones;
    s.distinct = counts.len();
    s.max_repeat = counts.values().copied().max().unwrap_or(0);
    s.repeated = counts.values().filter(|&&c| c > 1).sum();
    s.small = counts
        .iter()
        .filter(|(r, _)| small_side(r)[8..].iter().all(|&b| b == 0))
        .map(|(_, &c)| c)
        .sum();
    s.window_bits = driver_window_bits(s.others);
    (s.max_bucket, s.mean_bucket) = buckets(&counts, s.window_bits);
    s
}

/// The fullest bucket of any `bits`-wide window and the mean points a
/// bucket, over values counted `counts`, with the digits sppark's
/// `breakdown` gives the driver: a value above (p−1)/2 taken as its
/// negation, then signed (Booth) digits, a bucket per magnitude.
fn buckets(counts: &HashMap<[u8; 32], usize>, bits: u32) -> (usize, f64) {
    let total: usize = counts.values().sum();
    if total == 0 {
        return (0, 0.0);
    }
    let windows = 255usize.div_ceil(bits as usize);
    let mut load = vec![vec![0usize; (1 << bits) + 1]; windows];
    for (repr, &c) in counts {
        let limbs = limbs_of(&small_side(repr));
        for (w, row) in load.iter_mut().enumerate() {
            row[booth_magnitude(&limbs, w, bits)] += c;
        }
    }
    // Window 0's bucket of magnitude 1 is summed apart (the driver's
    // `batch_addition`, every point at once), not by one thread.
    load[0][1] = 0;
    // The top window's digits are spread over 2^(bits − top) buckets each
    // by the point index (`bucket_sort.cuh`).
    let top = 255 - bits as usize * (windows - 1);
    let spread = 1usize << (bits as usize - top);
    let max = load
        .iter()
        .enumerate()
        .map(|(w, row)| {
            let m = row[1..].iter().copied().max().unwrap_or(0);
            if w == windows - 1 {
                m.div_ceil(spread)
            } else {
                m
            }
        })
        .max();
    (
        max.unwrap_or(0),
        total as f64 / (1usize << (bits - 1)) as f64,
    )
}

/// `repr` or its negation, whichever is the smaller integer.
fn small_side(repr: &[u8; 32]) -> [u8; 32] {
    let x = Option::<Scalar>::from(Scalar::from_repr(*repr)).unwrap_or(Scalar::ZERO);
    let neg: [u8; 32] = (-x).to_repr();
    if neg.iter().rev().cmp(repr.iter().rev()) == std::cmp::Ordering::Less {
        neg
    } else {
        *repr
    }
}

fn limbs_of(repr: &[u8; 32]) -> [u32; 8] {
    std::array::from_fn(|i| {
        u32::from_le_bytes([
            repr[4 * i],
            repr[4 * i + 1],
            repr[4 * i + 2],
            repr[4 * i + 3],
        ])
    })
}

/// The magnitude of window `w`'s signed digit as sppark's `breakdown`
/// computes it (`get_wval`, `booth_encode`).
fn booth_magnitude(limbs: &[u32; 8], w: usize, bits: u32) -> usize {
    let wmask = u32::MAX >> (31 - bits);
    let wval = if w == 0 {
        limbs[0] << 1
    } else {
        let off = w * bits as usize - 1;
        let i = off / 32;
        let mut v = limbs[i] as u64;
        if i < 7 {
            v |= (limbs[i + 1] as u64) << 32;
        }
        (v >> (off % 32)) as u32
    };
    ((wval.wrapping_add(1) & wmask) >> 1) as usize
}

fn line(name: &str, s: &Shape) -> String {
    format!(
        "{name}_n={} {name}_zeros={} {name}_ones={} {name}_others={} {name}_distinct={} \
         {name}_max_repeat={} {name}_repeated={} {name}_small={} {name}_window_bits={} \
         {name}_max_bucket={} \
         {name}_mean_bucket={:.1}",
        s.n,
        s.zeros,
        s.ones,
        s.others,
        s.distinct,
        s.max_repeat,
        s.repeated,
        s.small,
        s.window_bits,
        s.max_bucket,
        s.mean_bucket
    )
}

/// Block sizes (points) of [`zero_blocks`].
pub const BLOCKS: [usize; 4] = [64, 1024, 16_384, 262_144];

/// Which scalars of an MSM are zero, one bit a point.
fn zero_bits<'a>(scalars: impl Iterator<Item = &'a Scalar>) -> Vec<bool> {
    scalars.map(|x| x.is_zero_vartime()).collect()
}

/// For each of [`BLOCKS`]: the share of points in aligned blocks of that
/// many points where every scalar of `a` (and of `b`, if given) is zero:
/// what a streamed pass shared by those partitions need not copy.
pub fn zero_blocks(a: &[bool], b: Option<&[bool]>) -> [f64; 4] {
    let n = a.len().max(1);
    BLOCKS.map(|size| {
        let skipped: usize = a
            .chunks(size)
            .enumerate()
            .filter(|(i, c)| {
                c.iter().all(|&z| z)
                    && b.is_none_or(|b| {
                        b.get(i * size..(i * size + c.len()).min(b.len()))
                            .is_some_and(|d| d.len() == c.len() && d.iter().all(|&z| z))
                    })
            })
            .map(|(_, c)| c.len())
            .sum();
        skipped as f64 / n as f64
    })
}

/// The zero bits of a witness's L (every aux), A and B (aux by density)
/// scalars.
fn section_zeros(w: &cuzk_prover::synth::PartitionWitness) -> [Vec<bool>; 3] {
    let picked = |d: &cuzk_prover::density::Density| {
        zero_bits(
            w.aux
                .iter()
                .zip(d.iter())
                .filter(|(_, on)| *on)
                .map(|(x, _)| x),
        )
    };
    [
        zero_bits(w.aux.iter()),
        picked(&w.a_aux_density),
        picked(&w.b_aux_density),
    ]
}

fn zero_line(name: &str, shares: &[f64; 4]) -> String {
    BLOCKS
        .iter()
        .zip(shares)
        .map(|(b, f)| format!("{name}_zero_blocks_{b}={f:.4}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// With `pair`: partition `k`'s and partition `pair`'s L, A and B scalars
/// side by side, the share of each section in blocks all zero in `k` alone
/// and in both (a pass two partitions share could skip those blocks'
/// points). One line: `witness-shape-pair kind=K ... l_zero_blocks_64=...`.
fn pair_line(
    kind: ProofKind,
    src: &dyn cuzk_circuits::PartitionSource,
    k: usize,
    pair: usize,
    first: [Vec<bool>; 3],
) -> Result<()> {
    let second = section_zeros(&src.synthesize(pair)?.witness);
    let mut out = format!("witness-shape-pair kind={kind} partition={k} pair={pair}");
    for (i, name) in ["l", "a", "b"].iter().enumerate() {
        out += &format!(
            " {} {}",
            zero_line(&format!("{name}_alone"), &zero_blocks(&first[i], None)),
            zero_line(name, &zero_blocks(&first[i], Some(&second[i])))
        );
    }
    println!("{out}");
    Ok(())
}

/// Synthesizes partition `k` of the fixtures' proof of `kind` and prints
/// the shape of its L (every aux), A and B (aux by density) scalars.
/// With `dump_others`, the L scalars neither 0 nor 1 are also written
/// there in order, 32 little-endian bytes each (`gpu-bench --others-from`);
/// with `pair`, that partition's zeros beside these (`pair_line`).
pub fn run(
    kind: ProofKind,
    sel: &Selection,
    k: usize,
    dump_others: Option<&Path>,
    pair: Option<usize>,
) -> Result<()> {
    let f = sel.load()?;
    let src = source(&f, kind)?;
    let t = Instant::now();
    let w = src.synthesize(k)?.witness;
    let synth_ms = t.elapsed().as_millis();
    if let Some(path) = dump_others {
        let mut bytes = Vec::new();
        for x in w
            .aux
            .iter()
            .filter(|x| !x.is_zero_vartime() && **x != Scalar::ONE)
        {
            bytes.extend_from_slice(&x.to_repr());
        }
        std::fs::write(path, &bytes).with_context(|| format!("writing {}", path.display()))?;
    }
    let picked = |d: &cuzk_prover::density::Density| {
        shape(
            w.aux
                .iter()
                .zip(d.iter())
                .filter(|(_, on)| *on)
                .map(|(x, _)| x),
        )
    };
    let (l, a, b) = (
        shape(w.aux.iter()),
        picked(&w.a_aux_density),
        picked(&w.b_aux_density),
    );
    println!(
        "witness-shape kind={kind} sector_size={} partition={k} synth_ms={synth_ms} {} {} {}",
        sel.size,
        line("l", &l),
        line("a", &a),
        line("b", &b)
    );
    if let Some(pair) = pair {
        let first = section_zeros(&w);
        drop(w);
        pair_line(kind, src.as_ref(), k, pair, first)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_value_fills_one_bucket_of_every_window() {
        let v = Scalar::from(0x1234_5678_9abc_def1u64) * Scalar::from(u64::MAX);
        let mut xs = vec![Scalar::ZERO, Scalar::ONE, Scalar::ONE];
        xs.extend(std::iter::repeat_n(v, 1000));
        xs.extend((2..502u64).map(Scalar::from));
        let s = shape(xs.iter());
        assert_eq!((s.n, s.zeros, s.ones, s.others), (1503, 1, 2, 1500));
        assert_eq!((s.distinct, s.max_repeat, s.repeated), (501, 1000, 1000));
        assert_eq!(s.window_bits, 10);
        assert_eq!(s.small, 500);
        assert!(s.max_bucket >= 1000, "{s:?}");
        assert!((s.mean_bucket - 1500.0 / 512.0).abs() < 1e-9);
    }

    #[test]
    fn zero_blocks_count_points_zero_in_every_partition() {
        // 2,048 points: the first 1,024 zero in a, the first 64 in b too.
        let a: Vec<bool> = (0..2048).map(|i| i < 1024).collect();
        let b: Vec<bool> = (0..2048).map(|i| !(64..1024).contains(&i)).collect();
        let alone = zero_blocks(&a, None);
        assert_eq!(alone[0], 0.5);
        assert_eq!(alone[1], 0.5);
        assert_eq!(alone[2], 0.0);
        let both = zero_blocks(&a, Some(&b));
        assert_eq!(both[0], 64.0 / 2048.0);
        assert_eq!(both[1], 0.0);
    }

    #[test]
    fn the_window_follows_the_driver() {
        assert_eq!(driver_window_bits(100), 10);
        assert_eq!(driver_window_bits(1_288_261), 12);
        assert_eq!(driver_window_bits(1 << 22), 17);
        assert_eq!(driver_window_bits(130_000_000), 22);
    }

    #[test]
    fn a_negated_small_value_lands_beside_the_small_one() {
        let (two, minus_two) = (Scalar::from(2u64), -Scalar::from(2u64));
        let [a, b] = [two, minus_two].map(|x| small_side(&x.to_repr()));
        assert_eq!(a, b);
        let l = limbs_of(&a);
        // 2: window 0's digit 2 (the low bit doubled in), none above.
        assert_eq!(booth_magnitude(&l, 0, 10), 2);
        assert_eq!(booth_magnitude(&l, 1, 10), 0);
    }
}

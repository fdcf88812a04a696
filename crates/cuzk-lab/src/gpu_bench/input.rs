//! The synthetic partition-shaped input of `gpu-bench` (see the parent
//! module's doc): a, b, c, aux and densities at domain 2^k from a seeded
//! generator, valid SRS points tiled from a small pattern, and the
//! parallel fill that makes gigabytes of them quickly.

use std::time::Instant;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_prover::backend::SrsRef;
use cuzk_prover::density::Density;
use ff::Field;
use group::{Curve, Group};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::Synthetic;

pub(crate) const INPUTS: usize = 40;
pub(crate) const POOL: usize = 4096;
pub(crate) const PATTERN_G1: usize = super::DEFAULT_PATTERN_G1;
pub(crate) const PATTERN_G2: usize = 1024;
pub(crate) const FR: u64 = 32;
pub(crate) const G1B: u64 = 96;
pub(crate) const G2B: u64 = 192;

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Fills `len` elements in parallel from `f(index)`, in memory backed
/// by transparent huge pages where the kernel offers them (the first
/// touch of gigabytes in 4 KiB pages costs more than the copy).
pub(crate) fn par_fill<T: Copy + Send + Sync>(len: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    par_fill_with(0, len, f)
}

/// [`par_fill`] on `threads` threads (0: one per core).
pub(crate) fn par_fill_with<T: Copy + Send + Sync>(
    threads: usize,
    len: usize,
    f: impl Fn(usize) -> T + Sync,
) -> Vec<T> {
    let mut v: Vec<T> = Vec::with_capacity(len);
    huge_pages(v.as_mut_ptr().cast(), len * std::mem::size_of::<T>());
    let threads = match threads {
        0 => std::thread::available_parallelism().map_or(4, |n| n.get()),
        t => t,
    };
    let chunk = len.div_ceil(threads).max(1);
    std::thread::scope(|s| {
        for (c, part) in v.spare_capacity_mut()[..len].chunks_mut(chunk).enumerate() {
            let f = &f;
            s.spawn(move || {
                for (j, x) in part.iter_mut().enumerate() {
                    x.write(f(c * chunk + j));
                }
            });
        }
    });
    // SAFETY: every one of the first `len` elements was written above.
    unsafe { v.set_len(len) };
    v
}

/// Asks for transparent huge pages over the whole 2 MiB pages inside
/// `[ptr, ptr + bytes)`; best effort.
fn huge_pages(ptr: *mut u8, bytes: usize) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let start = (ptr as usize).next_multiple_of(HUGE);
        let end = (ptr as usize + bytes) / HUGE * HUGE;
        if end > start {
            // SAFETY: advice only, over memory this process owns.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (ptr, bytes);
}

/// `len` distinct G1 points, cheaply (see [`walk`]).
fn walk_g1(len: usize, seed: Scalar) -> Vec<G1Affine> {
    walk::<G1Projective>(len, seed)
}

/// `len` distinct points of group `P`, cheaply: runs of successive
/// additions of one step from a start per thread, normalized together.
pub(crate) fn walk<P>(len: usize, seed: Scalar) -> Vec<P::AffineRepr>
where
    P: Curve + Group<Scalar = Scalar> + Send + Sync,
    P::AffineRepr: Send + Clone,
{
    let threads = std::thread::available_parallelism().map_or(4, |n| n.get());
    let chunk = len.div_ceil(threads);
    let step = P::generator() * seed.square();
    let runs: Vec<Vec<P::AffineRepr>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                s.spawn(move || {
                    let count = chunk.min(len.saturating_sub(t * chunk));
                    let mut p = P::generator() * (seed + Scalar::from(t as u64 + 1));
                    let mut proj = Vec::with_capacity(count);
                    for _ in 0..count {
                        proj.push(p);
                        p += step;
                    }
                    let mut out = vec![P::identity().to_affine(); count];
                    P::batch_normalize(&proj, &mut out);
                    out
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    runs.concat()
}

/// A scalar below 2^254 (< r) from four splitmix words.
pub(crate) fn random_scalar(seed: u64) -> Scalar {
    let mut bytes = [0u8; 32];
    for (k, chunk) in bytes.chunks_mut(8).enumerate() {
        chunk.copy_from_slice(&splitmix(seed.wrapping_add(k as u64 + 1)).to_le_bytes());
    }
    bytes[31] &= 0x3f;
    Option::from(Scalar::from_bytes_le(&bytes)).unwrap_or(Scalar::ONE)
}

fn density(len: usize, seed: u64, percent_set: u64) -> Density {
    let mut d = Density::new();
    d.reserve(len);
    for i in 0..len {
        d.push();
        if splitmix(seed ^ i as u64) % 100 < percent_set {
            d.set(i);
        }
    }
    d
}

pub(crate) struct Input {
    pub(crate) lg_n: u32,
    pub(crate) a: Vec<Scalar>,
    pub(crate) b: Vec<Scalar>,
    pub(crate) c: Vec<Scalar>,
    pub(crate) input: Vec<Scalar>,
    pub(crate) aux: Vec<Scalar>,
    pub(crate) a_aux: Density,
    pub(crate) b_aux: Density,
    pub(crate) b_input: Density,
    pub(crate) g1: Vec<G1Affine>,
    pub(crate) g2: Vec<G2Affine>,
    pub(crate) vk: [G1Affine; 3],
    pub(crate) vk2: [G2Affine; 2],
    /// Upload a/b/c and compute H in one overlapped call.
    pub(crate) overlap: bool,
}

impl Input {
    pub(crate) fn a_len(&self) -> usize {
        INPUTS + self.a_aux.count()
    }
    pub(crate) fn b_len(&self) -> usize {
        self.b_input.count() + self.b_aux.count()
    }
    /// The SRS's verifying-key points, no query points.
    pub(crate) fn vk_ref(&self) -> SrsRef<'static> {
        SrsRef {
            alpha_g1: self.vk[0],
            beta_g1: self.vk[1],
            beta_g2: self.vk2[0],
            delta_g1: self.vk[2],
            delta_g2: self.vk2[1],
            h: &[],
            l: &[],
            a: &[],
            b_g1: &[],
            b_g2: &[],
            device: None,
        }
    }
    pub(crate) fn n(&self) -> usize {
        1 << self.lg_n
    }
}

pub(crate) fn make_input(lg_n: u32) -> Input {
    make_input_with(lg_n, Synthetic::default())
}

/// [`make_input`] with `shape`'s share of others and G1 pattern.
pub(crate) fn make_input_with(lg_n: u32, shape: Synthetic) -> Input {
    let n = 1usize << lg_n;
    let mut rng = ChaCha8Rng::seed_from_u64(u64::from(lg_n));
    let pool: Vec<Scalar> = (0..POOL).map(|_| Scalar::random(&mut rng)).collect();
    let pick = |salt: u64| {
        let pool = &pool;
        move |i: usize| pool[(splitmix(salt ^ i as u64) % POOL as u64) as usize]
    };
    let a = par_fill(n, pick(1));
    let b = par_fill(n, pick(2));
    let c = par_fill(n, pick(3));
    let aux_len = n - 2 * INPUTS;
    let zeros = (100 - shape.others_percent.min(100)) / 2;
    let ones = 100 - shape.others_percent.min(100) - zeros;
    let from = shape.others_from.clone();
    let aux = par_fill(aux_len, |i| {
        let h = splitmix(4 ^ i as u64);
        match h % 100 {
            x if x < zeros => Scalar::ZERO,
            x if x < zeros + ones => Scalar::ONE,
            // A real partition's others in turn (by position), or
            // distinct values, as hash outputs are (a small pool would
            // pile Pippenger's points into a few buckets).
            _ => match &from {
                Some(v) => v[i % v.len()],
                None => random_scalar(h),
            },
        }
    });
    let mut input: Vec<Scalar> = pool[..INPUTS].to_vec();
    input[0] = Scalar::ONE;
    let g1_pattern: Vec<G1Affine> = match shape.pattern_g1 {
        PATTERN_G1 => (0..PATTERN_G1)
            .map(|_| (G1Projective::generator() * Scalar::random(&mut rng)).to_affine())
            .collect(),
        len => walk_g1(len.max(1), Scalar::random(&mut rng)),
    };
    let g2_pattern: Vec<G2Affine> = (0..PATTERN_G2)
        .map(|_| (G2Projective::generator() * Scalar::random(&mut rng)).to_affine())
        .collect();
    let a_aux = density(aux_len, 5, 95);
    let b_aux = density(aux_len, 6, 25);
    let b_input = Density::full(INPUTS);
    let g1 = g1_pattern;
    let g2 = g2_pattern;
    let vk = [g1[0], g1[1], g1[2]];
    let vk2 = [g2[0], g2[1]];
    Input {
        lg_n,
        a,
        b,
        c,
        input,
        aux,
        a_aux,
        b_aux,
        b_input,
        g1,
        g2,
        vk,
        vk2,
        overlap: false,
    }
}

/// Host SRS for streaming: the G1 sections alias one tiled buffer.
pub(crate) struct HostSrs {
    pub(crate) g1: Vec<G1Affine>,
    pub(crate) g2: Vec<G2Affine>,
}

pub(crate) fn host_srs(inp: &Input) -> HostSrs {
    let g1_len = (inp.n() - 1)
        .max(inp.aux.len())
        .max(inp.a_len())
        .max(inp.b_len());
    let (p1, p2) = (&inp.g1, &inp.g2);
    HostSrs {
        g1: par_fill(g1_len, |i| p1[i % p1.len()]),
        g2: par_fill(inp.b_len(), |i| p2[i % p2.len()]),
    }
}

/// Host SRS for the per-pass bench: the same tiled points, each section
/// its own allocation as in a real SRS. Sections aliasing one buffer can
/// be page-locked only once (`cudaHostRegister` refuses memory already
/// registered), so all but the first streamed from pageable memory
/// through the chunk ring (every per-pass figure before 2026-12-06).
pub(crate) struct SectionSrs {
    pub(crate) h: Vec<G1Affine>,
    pub(crate) l: Vec<G1Affine>,
    pub(crate) a: Vec<G1Affine>,
    pub(crate) b_g1: Vec<G1Affine>,
    pub(crate) b_g2: Vec<G2Affine>,
}

pub(crate) fn section_srs(inp: &Input) -> SectionSrs {
    let (p1, p2) = (&inp.g1, &inp.g2);
    let g1 = |len: usize| par_fill(len, |i| p1[i % p1.len()]);
    SectionSrs {
        h: g1(inp.n() - 1),
        l: g1(inp.aux.len()),
        a: g1(inp.a_len()),
        b_g1: g1(inp.b_len()),
        b_g2: par_fill(inp.b_len(), |i| p2[i % p2.len()]),
    }
}

impl SectionSrs {
    /// The SRS the backend proves with (`inp`'s verifying key).
    pub(crate) fn srs<'a>(&'a self, inp: &Input) -> SrsRef<'a> {
        SrsRef {
            h: &self.h,
            l: &self.l,
            a: &self.a,
            b_g1: &self.b_g1,
            b_g2: &self.b_g2,
            ..inp.vk_ref()
        }
    }
}

pub(crate) fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

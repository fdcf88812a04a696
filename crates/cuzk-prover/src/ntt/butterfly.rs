//! The butterfly passes of [`Domain`]: column passes and in-cache leaves, and the radix-4 and
//! radix-2 butterflies they run.

use blst::{blst_fr, blst_fr_add, blst_fr_cneg, blst_fr_mul, blst_fr_sub};
use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use super::{Domain, SyncPtr, COL_GROUP, TW_PREFETCH};

impl Domain {
    /// `*w = twiddle(k, inv)`, negating in place: copying blst's result from a temporary would
    /// stall on store forwarding (see the note before the butterflies).
    #[inline(always)]
    pub(super) fn load_twiddle(&self, w: &mut Scalar, k: usize, inv: bool) {
        match self.tw_index(k, inv) {
            (i, false) => *w = self.tw[i],
            // SAFETY: valid field elements, see `fr`.
            (i, true) => unsafe { blst_fr_cneg(fr_mut(w), fr(&self.tw[i]), true) },
        }
    }

    /// Where `twiddle(k, inv)` is: index in `tw`, and whether to negate it.
    #[inline]
    fn tw_index(&self, k: usize, inv: bool) -> (usize, bool) {
        let k = if inv && k != 0 { self.n - k } else { k };
        match k.checked_sub(self.n / 2) {
            None => (k, false),
            Some(k) => (k, true),
        }
    }

    /// The `log_r` outermost butterfly stages of a size-`m` transform (`m = a.len()`): the first
    /// ones of a DIF or, if `dit`, the last ones of a DIT.
    ///
    /// View `a` as `R = 2^log_r` rows of `C = m/R` elements. At DIF stage `s` the butterfly span
    /// is `h = m >> (s+1)`, a multiple of `C`, so butterflies pair `(r, c)` with `(r + h/C, c)`:
    /// each column is independent. Its twiddle is `w^(j << s)` with `w` the `m`-th root
    /// (`= omega^(n/m)`) and `j = c + C * (r mod h/C)` the offset within the butterfly block.
    /// Stages `s, s+1` fuse into radix-4 butterflies of span `h = m >> (s+2)` with twiddles
    /// `w^(tj << s)`, `t = 1, 2, 3`; a last radix-2 stage handles an odd `log_r`.
    pub(super) fn column_pass(&self, a: &mut [Scalar], log_r: u32, dit: bool, inv: bool) {
        let m = a.len();
        let rows = 1usize << log_r;
        let cols = m >> log_r;
        let width = COL_GROUP.min(cols);
        let log_st0 = self.log_n - m.trailing_zeros();
        let im = if inv { self.im_inv } else { self.im };
        let ptr = SyncPtr(a.as_mut_ptr());
        (0..cols / width).into_par_iter().for_each_init(
            || vec![Scalar::ZERO; rows * width],
            |buf, grp| {
                let c0 = grp * width;
                // SAFETY: this task only touches columns c0..c0 + width of the rows x cols view
                // of `a` (indices < m); tasks have disjoint column ranges and `a` is exclusively
                // borrowed for the duration of the parallel loop.
                unsafe {
                    for (r, dst) in buf.chunks_exact_mut(width).enumerate() {
                        let src = ptr.get().add(r * cols + c0);
                        std::ptr::copy_nonoverlapping(src, dst.as_mut_ptr(), width);
                    }
                }
                let mut w = [[Scalar::ONE; 3]; COL_GROUP];
                // Radix-2 stage `s` (only the last one of a DIF, first of a DIT, if `log_r` is
                // odd), or the radix-4 pair of stages `s, s + 1` (block `4h`, span `h` rows).
                let mut stage = |s: u32, radix4: bool| {
                    let half = rows >> (s + 1 + u32::from(radix4));
                    let shift = s + log_st0;
                    let terms = if radix4 { 3 } else { 1 };
                    // Twiddle exponent `t * j` for column `c0 + k` of butterfly row `rp`.
                    let exp = |rp: usize, k: usize, t: usize| t * ((c0 + k + rp * cols) << shift);
                    for rp in 0..half {
                        // The twiddles are strided reads from a table larger than the caches,
                        // out of reach of hardware prefetchers: fetch those of row rp + 2 now.
                        if rp + TW_PREFETCH < half {
                            for k in 0..width {
                                for t in 1..=terms {
                                    let i = self.tw_index(exp(rp + TW_PREFETCH, k, t), inv).0;
                                    prefetch(&self.tw[i]);
                                }
                            }
                        }
                        for (k, wk) in w[..width].iter_mut().enumerate() {
                            for (t, wt) in wk[..terms].iter_mut().enumerate() {
                                self.load_twiddle(wt, exp(rp, k, t + 1), inv);
                            }
                        }
                        let (r0, span) = (rp * width, half * width);
                        for blk in buf.chunks_exact_mut(span << (1 + u32::from(radix4))) {
                            if radix4 {
                                let [q0, q1, q2, q3] = split4(blk, span);
                                let quads = q0[r0..r0 + width].iter_mut().zip(&mut q1[r0..]);
                                let quads = quads.zip(q2[r0..].iter_mut().zip(&mut q3[r0..]));
                                for (((x0, x1), (x2, x3)), wk) in quads.zip(&w) {
                                    let x = [x0, x1, x2, x3];
                                    bfly4(x, Some(wk), &im, dit);
                                }
                            } else {
                                let (lo, hi) = blk.split_at_mut(span);
                                let pairs = lo[r0..r0 + width].iter_mut().zip(&mut hi[r0..]);
                                for ((x, y), wk) in pairs.zip(&w) {
                                    if dit {
                                        dit_bfly(x, y, &wk[0]);
                                    } else {
                                        dif_bfly(x, y, &wk[0]);
                                    }
                                }
                            }
                        }
                    }
                };
                let pairs = (0..log_r / 2).map(|p| 2 * p);
                if dit {
                    if log_r % 2 == 1 {
                        stage(log_r - 1, false);
                    }
                    pairs.rev().for_each(|s| stage(s, true));
                } else {
                    pairs.for_each(|s| stage(s, true));
                    if log_r % 2 == 1 {
                        stage(log_r - 1, false);
                    }
                }
                // SAFETY: as above.
                unsafe {
                    for (r, src) in buf.chunks_exact(width).enumerate() {
                        let dst = ptr.get().add(r * cols + c0);
                        std::ptr::copy_nonoverlapping(src.as_ptr(), dst, width);
                    }
                }
            },
        );
    }

    /// In-cache transform of a leaf (`a.len() == 2^leaf_log`): all stages of a DIF (natural ->
    /// bit-reversed) or, if `dit`, a DIT (bit-reversed -> natural); inverse roots if `inv`.
    /// Radix-4 stages of span `L/4, L/16, ...` (reversed for DIT); if `log L` is odd, one
    /// radix-2 stage of span 1, which needs no twiddles, comes last (DIF) or first (DIT).
    pub(super) fn leaf(&self, a: &mut [Scalar], dit: bool, inv: bool) {
        let (t, im) = if inv {
            (&self.leaf_tw_inv, &self.im_inv)
        } else {
            (&self.leaf_tw, &self.im)
        };
        let m = a.len();
        let radix4 = |a: &mut [Scalar], h: usize| {
            let tw = t[m - 4 * h..][..3 * h].chunks_exact(3).skip(1);
            for blk in a.chunks_exact_mut(4 * h) {
                let [q0, q1, q2, q3] = split4(blk, h);
                let (q0, q1) = (q0.split_first_mut().unwrap(), q1.split_first_mut().unwrap());
                let (q2, q3) = (q2.split_first_mut().unwrap(), q3.split_first_mut().unwrap());
                bfly4([q0.0, q1.0, q2.0, q3.0], None, im, dit); // j = 0: twiddles 1
                let quads = q0.1.iter_mut().zip(q1.1.iter_mut());
                let quads = quads.zip(q2.1.iter_mut().zip(q3.1.iter_mut()));
                for (((x0, x1), (x2, x3)), w) in quads.zip(tw.clone()) {
                    let w = <&[Scalar; 3]>::try_from(w).unwrap();
                    bfly4([x0, x1, x2, x3], Some(w), im, dit);
                }
            }
        };
        let radix2 = |a: &mut [Scalar]| {
            for p in a.chunks_exact_mut(2) {
                let (x, y) = p.split_at_mut(1);
                bfly0(&mut x[0], &mut y[0]);
            }
        };
        let log = m.trailing_zeros();
        let spans = (0..log / 2).map(|k| m >> (2 * k + 2));
        if dit {
            if log % 2 == 1 {
                radix2(a);
            }
            spans.rev().for_each(|h| radix4(a, h));
        } else {
            spans.for_each(|h| radix4(a, h));
            if log % 2 == 1 {
                radix2(a);
            }
        }
    }
}

// The butterflies (and `mul2`) call blst directly on the elements, in place: `Scalar`'s by-value
// operators copy every intermediate through the stack, and those copies (16-byte loads of
// values blst just wrote with 8-byte stores) defeat store forwarding, which made butterflies
// ~1.6x slower. `Scalar` is `#[repr(transparent)]` over `blst_fr`.
const _: () = assert!(
    std::mem::size_of::<Scalar>() == std::mem::size_of::<blst_fr>()
        && std::mem::align_of::<Scalar>() == std::mem::align_of::<blst_fr>()
);

#[inline(always)]
fn fr(x: &Scalar) -> *const blst_fr {
    (x as *const Scalar).cast()
}

#[inline(always)]
fn fr_mut(x: &mut Scalar) -> *mut blst_fr {
    (x as *mut Scalar).cast()
}

/// DIF butterfly: `(x, y) <- (x + y, (x - y) w)`.
#[inline(always)]
fn dif_bfly(x: &mut Scalar, y: &mut Scalar, w: &Scalar) {
    let mut d = blst_fr::default();
    let (xp, yp) = (fr_mut(x), fr_mut(y));
    // SAFETY: valid, properly aligned field elements (same layout); blst allows the output to
    // alias an input.
    unsafe {
        blst_fr_sub(&mut d, xp, yp);
        blst_fr_add(xp, xp, yp);
        blst_fr_mul(yp, &d, fr(w));
    }
}

/// Butterfly with twiddle 1: `(x, y) <- (x + y, x - y)`, as `y = x - y; x = 2x - y` so that no
/// intermediate is copied.
#[inline(always)]
fn bfly0(x: &mut Scalar, y: &mut Scalar) {
    let (xp, yp) = (fr_mut(x), fr_mut(y));
    // SAFETY: as in `dif_bfly`.
    unsafe {
        blst_fr_sub(yp, xp, yp);
        blst_fr_add(xp, xp, xp);
        blst_fr_sub(xp, xp, yp);
    }
}

/// `x <- x * a * b`.
#[inline(always)]
pub(super) fn mul2(x: &mut Scalar, a: &Scalar, b: &Scalar) {
    let mut t = blst_fr::default();
    let xp = fr_mut(x);
    // SAFETY: as in `dif_bfly`.
    unsafe {
        blst_fr_mul(&mut t, fr(a), fr(b));
        blst_fr_mul(xp, xp, &t);
    }
}

/// `x <- y - x`.
#[inline(always)]
pub(super) fn sub_from(x: &mut Scalar, y: &Scalar) {
    let xp = fr_mut(x);
    // SAFETY: as in `dif_bfly`.
    unsafe { blst_fr_sub(xp, fr(y), xp) };
}

/// DIT butterfly: `(x, y) <- (x + y w, x - y w)`.
#[inline(always)]
fn dit_bfly(x: &mut Scalar, y: &mut Scalar, w: &Scalar) {
    let mut t = blst_fr::default();
    let (xp, yp) = (fr_mut(x), fr_mut(y));
    // SAFETY: as in `dif_bfly`.
    unsafe {
        blst_fr_mul(&mut t, yp, fr(w));
        blst_fr_sub(yp, xp, &t);
        blst_fr_add(xp, xp, &t);
    }
}

/// Radix-4 butterfly on `x = [x0, x1, x2, x3]` (offsets `j, j + h, j + 2h, j + 3h` of a block
/// of `4h`), i.e. two radix-2 stages; `w = [W^j, W^2j, W^3j]` (`None`: `j = 0`, all 1) with `W`
/// the block's `4h`-th root, and `im = W^h`. Writing `a, b = x0 +- x2`, `c, e = x1 +- x3`:
///
/// * DIF: `(a + c, (a - c) W^2j, (b + im e) W^j, (b - im e) W^3j)`;
/// * DIT (bit-reversed quarters): with `t1, t2, t3 = x1 W^2j, x2 W^j, x3 W^3j`,
///   `p, q = x0 +- t1` and `s, d = t2 +- t3`: `(p + s, q + im d, p - s, q - im d)`.
///
/// 4 multiplications (1 if `j = 0`), exactly as many as two radix-2 stages: in a prime field the
/// multiplication by the 4th root `im` is a full one, which radix-2 spends as twiddle `W^(j+h)`.
#[inline(always)]
fn bfly4(x: [&mut Scalar; 4], w: Option<&[Scalar; 3]>, im: &Scalar, dit: bool) {
    let [x0, x1, x2, x3] = x.map(fr_mut);
    let mut tmp = [blst_fr::default(); 4];
    let [u, v, y, z] = tmp.each_mut().map(|t| t as *mut blst_fr);
    let im = fr(im);
    // SAFETY: `x0..x3` are distinct valid field elements, `u, v, y, z` locals; blst allows
    // the output to alias an input.
    unsafe {
        if dit {
            let (t1, t2, t3) = match w {
                None => (x1.cast_const(), x2.cast_const(), x3.cast_const()),
                Some(w) => {
                    blst_fr_mul(u, x1, fr(&w[1]));
                    blst_fr_mul(v, x2, fr(&w[0]));
                    blst_fr_mul(y, x3, fr(&w[2]));
                    (u.cast_const(), v.cast_const(), y.cast_const())
                }
            };
            blst_fr_sub(z, t2, t3);
            blst_fr_add(v, t2, t3); // s (t2 and t3 are no longer needed)
            blst_fr_mul(z, z, im); // im * d
            blst_fr_sub(y, x0, t1); // q
            blst_fr_add(u, x0, t1); // p (t1 is no longer needed)
            blst_fr_add(x0, u, v);
            blst_fr_sub(x2, u, v);
            blst_fr_add(x1, y, z);
            blst_fr_sub(x3, y, z);
        } else {
            blst_fr_add(u, x0, x2); // a
            blst_fr_sub(v, x0, x2); // b
            blst_fr_add(y, x1, x3); // c
            blst_fr_sub(z, x1, x3); // e
            blst_fr_mul(z, z, im);
            blst_fr_add(x0, u, y);
            match w {
                None => {
                    blst_fr_sub(x1, u, y);
                    blst_fr_add(x2, v, z);
                    blst_fr_sub(x3, v, z);
                }
                Some(w) => {
                    blst_fr_sub(u, u, y);
                    blst_fr_mul(x1, u, fr(&w[1]));
                    blst_fr_add(y, v, z);
                    blst_fr_mul(x2, y, fr(&w[0]));
                    blst_fr_sub(v, v, z);
                    blst_fr_mul(x3, v, fr(&w[2]));
                }
            }
        }
    }
}

/// Hint that `x` will be read soon.
#[inline(always)]
fn prefetch(x: &Scalar) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching is a hint without side effects.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>((x as *const Scalar).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}

/// `blk` (of length `4q`) as its four quarters.
fn split4(blk: &mut [Scalar], q: usize) -> [&mut [Scalar]; 4] {
    let (a, r) = blk.split_at_mut(q);
    let (b, r) = r.split_at_mut(q);
    let (c, d) = r.split_at_mut(q);
    [a, b, c, d]
}

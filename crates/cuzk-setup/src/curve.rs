//! A thin, uniform view of blst's G1 and G2 arithmetic.
//!
//! The fixed-base multiplier ([`crate::fixed_base`]) is written once over the
//! [`Curve`] trait: affine points `(x, y)` over a base field (`Fp` for G1,
//! `Fp2` for G2) with the handful of field operations an affine addition
//! needs, plus blst's Jacobian arithmetic for building tables and for the
//! rare exceptional cases (doubling). The affine types are blst's own, which
//! blstrs' `G1Affine` / `G2Affine` wrap `#[repr(transparent)]`, so results
//! are written straight into blstrs slices.

use blst::{
    blst_fp, blst_fp2, blst_fp2_add, blst_fp2_cneg, blst_fp2_eucl_inverse, blst_fp2_mul,
    blst_fp2_sqr, blst_fp2_sub, blst_fp_add, blst_fp_cneg, blst_fp_eucl_inverse, blst_fp_mul,
    blst_fp_sqr, blst_fp_sub, blst_p1, blst_p1_add_or_double_affine, blst_p1_affine,
    blst_p1_double, blst_p1_from_affine, blst_p1_to_affine, blst_p1s_to_affine, blst_p2,
    blst_p2_add_or_double_affine, blst_p2_affine, blst_p2_double, blst_p2_from_affine,
    blst_p2_to_affine, blst_p2s_to_affine,
};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective};

/// A curve group as the fixed-base multiplier sees it.
///
/// Affine points never represent the identity here: callers track it apart
/// (blst's all-zero encoding of infinity is only written on output).
pub trait Curve: Send + Sync + 'static {
    /// Base field element (`blst_fp` or `blst_fp2`).
    type Fe: Copy + Default + Send + Sync;
    /// blst affine point.
    type Affine: Copy + Default + Send + Sync;
    /// blst Jacobian point.
    type Jac: Copy + Default + Send + Sync;
    /// blstrs' affine type wrapping [`Curve::Affine`] (`#[repr(transparent)]`).
    type BlstrsAffine: Copy + Send + Sync;
    /// blstrs' projective type wrapping [`Curve::Jac`] (`#[repr(transparent)]`).
    type BlstrsProjective: Copy;
    /// Short name for logs.
    const NAME: &'static str;

    fn x(p: &Self::Affine) -> &Self::Fe;
    fn y(p: &Self::Affine) -> &Self::Fe;
    fn from_xy(x: Self::Fe, y: Self::Fe) -> Self::Affine;

    fn mul(a: &Self::Fe, b: &Self::Fe) -> Self::Fe;
    fn sqr(a: &Self::Fe) -> Self::Fe;
    fn add(a: &Self::Fe, b: &Self::Fe) -> Self::Fe;
    fn sub(a: &Self::Fe, b: &Self::Fe) -> Self::Fe;
    /// `-a` if `flag`, else `a`.
    fn cneg(a: &Self::Fe, flag: bool) -> Self::Fe;
    /// `1/a` (variable time); `a` must be non-zero.
    fn inv(a: &Self::Fe) -> Self::Fe;
    /// Whether `a == b` (blst keeps elements fully reduced).
    fn fe_eq(a: &Self::Fe, b: &Self::Fe) -> bool;

    fn from_affine(p: &Self::Affine) -> Self::Jac;
    /// `p + q`, correct for every input (doubling, inverse, identity).
    fn add_affine(p: &Self::Jac, q: &Self::Affine) -> Self::Jac;
    fn double(p: &Self::Jac) -> Self::Jac;
    fn to_affine(p: &Self::Jac) -> Self::Affine;
    /// Normalises `points` (none the identity) into `out` with one inversion.
    fn batch_to_affine(points: &[Self::Jac], out: &mut [Self::Affine]);

    fn from_blstrs(p: &Self::BlstrsProjective) -> Self::Jac;
    /// Reinterprets blstrs points as blst points.
    fn as_blst_mut(points: &mut [Self::BlstrsAffine]) -> &mut [Self::Affine];
}

/// G1 over `Fp`.
pub struct G1;
/// G2 over `Fp2`.
pub struct G2;

// The casts below rely on these layouts.
const _: () = assert!(std::mem::size_of::<G1Affine>() == std::mem::size_of::<blst_p1_affine>());
const _: () = assert!(std::mem::size_of::<G2Affine>() == std::mem::size_of::<blst_p2_affine>());
const _: () = assert!(std::mem::size_of::<G1Projective>() == std::mem::size_of::<blst_p1>());
const _: () = assert!(std::mem::size_of::<G2Projective>() == std::mem::size_of::<blst_p2>());

macro_rules! impl_curve {
    (
        $curve:ident, $name:literal, $fe:ty, $aff:ty, $jac:ty, $baff:ty, $bproj:ty,
        eq: $eq:ident,
        mul: $mul:ident, sqr: $sqr:ident, add: $add:ident, sub: $sub:ident,
        cneg: $cneg:ident, inv: $inv:ident,
        from_affine: $from_affine:ident, add_affine: $add_affine:ident,
        double: $double:ident, to_affine: $to_affine:ident, batch: $batch:ident $(,)?
    ) => {
        impl Curve for $curve {
            type Fe = $fe;
            type Affine = $aff;
            type Jac = $jac;
            type BlstrsAffine = $baff;
            type BlstrsProjective = $bproj;
            const NAME: &'static str = $name;

            #[inline(always)]
            fn x(p: &$aff) -> &$fe {
                &p.x
            }
            #[inline(always)]
            fn y(p: &$aff) -> &$fe {
                &p.y
            }
            #[inline(always)]
            fn from_xy(x: $fe, y: $fe) -> $aff {
                <$aff>::from_xy(x, y)
            }
            #[inline(always)]
            fn mul(a: &$fe, b: &$fe) -> $fe {
                let mut r = <$fe>::default();
                // SAFETY: valid pointers to initialised field elements.
                unsafe { $mul(&mut r, a, b) };
                r
            }
            #[inline(always)]
            fn sqr(a: &$fe) -> $fe {
                let mut r = <$fe>::default();
                // SAFETY: as above.
                unsafe { $sqr(&mut r, a) };
                r
            }
            #[inline(always)]
            fn add(a: &$fe, b: &$fe) -> $fe {
                let mut r = <$fe>::default();
                // SAFETY: as above.
                unsafe { $add(&mut r, a, b) };
                r
            }
            #[inline(always)]
            fn sub(a: &$fe, b: &$fe) -> $fe {
                let mut r = <$fe>::default();
                // SAFETY: as above.
                unsafe { $sub(&mut r, a, b) };
                r
            }
            #[inline(always)]
            fn cneg(a: &$fe, flag: bool) -> $fe {
                let mut r = <$fe>::default();
                // SAFETY: as above.
                unsafe { $cneg(&mut r, a, flag) };
                r
            }
            fn inv(a: &$fe) -> $fe {
                let mut r = <$fe>::default();
                // SAFETY: as above.
                unsafe { $inv(&mut r, a) };
                r
            }
            #[inline(always)]
            fn fe_eq(a: &$fe, b: &$fe) -> bool {
                $eq(a, b)
            }
            fn from_affine(p: &$aff) -> $jac {
                let mut r = <$jac>::default();
                // SAFETY: valid pointers.
                unsafe { $from_affine(&mut r, p) };
                r
            }
            fn add_affine(p: &$jac, q: &$aff) -> $jac {
                let mut r = <$jac>::default();
                // SAFETY: valid pointers.
                unsafe { $add_affine(&mut r, p, q) };
                r
            }
            fn double(p: &$jac) -> $jac {
                let mut r = <$jac>::default();
                // SAFETY: valid pointers.
                unsafe { $double(&mut r, p) };
                r
            }
            fn to_affine(p: &$jac) -> $aff {
                let mut r = <$aff>::default();
                // SAFETY: valid pointers.
                unsafe { $to_affine(&mut r, p) };
                r
            }
            fn batch_to_affine(points: &[$jac], out: &mut [$aff]) {
                assert_eq!(points.len(), out.len());
                if points.is_empty() {
                    return;
                }
                // blst takes an array of pointers; `[start, null]` means one
                // contiguous run of `npoints` points.
                let ptrs = [points.as_ptr(), std::ptr::null()];
                // SAFETY: `points` holds `len` points, `out` has room for `len`.
                unsafe { $batch(out.as_mut_ptr(), ptrs.as_ptr(), points.len()) };
            }
            fn from_blstrs(p: &$bproj) -> $jac {
                // SAFETY: the blstrs type is #[repr(transparent)] over the blst one
                // (sizes asserted above).
                unsafe { std::mem::transmute::<$bproj, $jac>(*p) }
            }
            fn as_blst_mut(points: &mut [$baff]) -> &mut [$aff] {
                // SAFETY: #[repr(transparent)] wrapper, same size and alignment.
                unsafe {
                    std::slice::from_raw_parts_mut(points.as_mut_ptr().cast::<$aff>(), points.len())
                }
            }
        }
    };
}

#[inline(always)]
fn fp_eq(a: &blst_fp, b: &blst_fp) -> bool {
    a.l == b.l
}

#[inline(always)]
fn fp2_eq(a: &blst_fp2, b: &blst_fp2) -> bool {
    a.fp[0].l == b.fp[0].l && a.fp[1].l == b.fp[1].l
}

/// Building affine points from coordinates (blst's structs have public fields).
trait FromXy<F> {
    fn from_xy(x: F, y: F) -> Self;
}
impl FromXy<blst_fp> for blst_p1_affine {
    #[inline(always)]
    fn from_xy(x: blst_fp, y: blst_fp) -> Self {
        blst_p1_affine { x, y }
    }
}
impl FromXy<blst_fp2> for blst_p2_affine {
    #[inline(always)]
    fn from_xy(x: blst_fp2, y: blst_fp2) -> Self {
        blst_p2_affine { x, y }
    }
}

impl_curve!(
    G1, "G1", blst_fp, blst_p1_affine, blst_p1, G1Affine, G1Projective,
    eq: fp_eq,
    mul: blst_fp_mul, sqr: blst_fp_sqr, add: blst_fp_add, sub: blst_fp_sub,
    cneg: blst_fp_cneg, inv: blst_fp_eucl_inverse,
    from_affine: blst_p1_from_affine, add_affine: blst_p1_add_or_double_affine,
    double: blst_p1_double, to_affine: blst_p1_to_affine, batch: blst_p1s_to_affine,
);

impl_curve!(
    G2, "G2", blst_fp2, blst_p2_affine, blst_p2, G2Affine, G2Projective,
    eq: fp2_eq,
    mul: blst_fp2_mul, sqr: blst_fp2_sqr, add: blst_fp2_add, sub: blst_fp2_sub,
    cneg: blst_fp2_cneg, inv: blst_fp2_eucl_inverse,
    from_affine: blst_p2_from_affine, add_affine: blst_p2_add_or_double_affine,
    double: blst_p2_double, to_affine: blst_p2_to_affine, batch: blst_p2s_to_affine,
);

//! Scalar tests without constant-time guards, for the hot loops of witness
//! evaluation and checking, where nearly every value is 0 or 1 and the
//! constant-time `==` and `is_zero` cost more than the arithmetic around
//! them. Witness values are compared in the open already (the prover skips
//! zero scalars in its MSMs), so nothing is lost.

use blst::blst_fr;
use blstrs::Scalar;

/// The Montgomery limbs of `s`.
#[inline(always)]
pub fn limbs(s: &Scalar) -> [u64; 4] {
    blst_fr::from(*s).l
}

/// The limbs of ONE.
#[inline(always)]
pub fn one_limbs() -> [u64; 4] {
    limbs(&Scalar::from(1u64))
}

/// `c` if `pick`, else zero, without a branch (`c` is any scalar).
#[inline(always)]
pub fn select(c: &Scalar, pick: bool) -> Scalar {
    let m = u64::from(pick).wrapping_neg();
    let l = limbs(c);
    Scalar::from(blst_fr {
        l: [l[0] & m, l[1] & m, l[2] & m, l[3] & m],
    })
}

#[inline(always)]
pub fn is_zero(s: &Scalar) -> bool {
    limbs(s) == [0; 4]
}

#[inline(always)]
pub fn is_one(s: &Scalar) -> bool {
    limbs(s) == ONE
}

/// ONE in Montgomery form (R mod r), checked against blstrs in the tests.
const ONE: [u64; 4] = [
    0x0000_0001_ffff_fffe,
    0x5884_b7fa_0003_4802,
    0x998c_4fef_ecbc_4ff5,
    0x1824_b159_acc5_056f,
];

#[inline(always)]
pub fn eq(a: &Scalar, b: &Scalar) -> bool {
    limbs(a) == limbs(b)
}

/// `a · b = c`, without a multiplication when `a` or `b` is 0 or 1 (as
/// most are: bits).
#[inline(always)]
pub fn holds(a: &Scalar, b: &Scalar, c: &Scalar) -> bool {
    if is_zero(a) || is_zero(b) {
        is_zero(c)
    } else if is_one(a) {
        eq(b, c)
    } else if is_one(b) {
        eq(a, c)
    } else {
        eq(&(*a * b), c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ff::Field;

    #[test]
    fn raw_tests_agree_with_blstrs() {
        assert_eq!(one_limbs(), ONE);
        for s in [Scalar::ZERO, Scalar::ONE, -Scalar::ONE, Scalar::from(2u64)] {
            assert_eq!(is_zero(&s), bool::from(s.is_zero()));
            assert_eq!(is_one(&s), s == Scalar::ONE);
            assert!(eq(&s, &s));
        }
        assert!(!eq(&Scalar::ONE, &Scalar::ZERO));
        let c = Scalar::from(12345u64);
        assert_eq!(select(&c, true), c);
        assert_eq!(select(&c, false), Scalar::ZERO);
    }
}

//! SHA-256 into an assignment-only constraint system.
//!
//! [`sha256`] allocates exactly the variables bellpepper's `sha256` gadget
//! allocates, in the same order and with the same values, and returns the
//! same digest bits; it builds none of the gadget's linear combinations.
//! Those are nearly all of the gadget's cost when only the assignment is
//! wanted: every 32-bit addition sums up to seven words bit by bit into a
//! linear combination and folds it into an accumulated equality that is
//! cloned on every addition.
//!
//! The single-bit operations (XOR, `ch`, `maj`) are bellpepper's own
//! `Boolean` functions, which allocate one variable or none depending on
//! which operands are constants or negations; only the word additions and
//! the compression schedule are written here, following the gadget's
//! allocation rules: an addition of words that are all constant allocates
//! nothing, any other allocates as many result bits as the largest possible
//! sum needs and keeps the low 32; deferred additions (`a` and `e` of each
//! round) are carried as operand lists and allocated when first used.

use bellpepper_core::boolean::{AllocatedBit, Boolean};
use bellpepper_core::SynthesisError;

use super::AssignOnly;

const ROUND_CONSTANTS: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

const IV: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];

/// A 32-bit word as circuit bits, least significant first, with its value.
#[derive(Clone)]
struct Word {
    bits: [Boolean; 32],
    value: u32,
}

fn value_of(b: &Boolean) -> Result<bool, SynthesisError> {
    b.get_value().ok_or(SynthesisError::AssignmentMissing)
}

impl Word {
    fn constant(value: u32) -> Word {
        Word {
            bits: std::array::from_fn(|i| Boolean::Constant((value >> i) & 1 == 1)),
            value,
        }
    }

    /// A word from 32 bits given most significant first.
    fn from_be(bits: &[Boolean]) -> Result<Word, SynthesisError> {
        let mut value = 0u32;
        for b in bits {
            value = (value << 1) | u32::from(value_of(b)?);
        }
        Ok(Word {
            bits: std::array::from_fn(|i| bits[31 - i].clone()),
            value,
        })
    }

    fn rotr(&self, by: usize) -> Word {
        Word {
            bits: std::array::from_fn(|i| self.bits[(i + by) % 32].clone()),
            value: self.value.rotate_right(by as u32),
        }
    }

    fn shr(&self, by: usize) -> Word {
        Word {
            bits: std::array::from_fn(|i| {
                self.bits
                    .get(i + by)
                    .cloned()
                    .unwrap_or(Boolean::Constant(false))
            }),
            value: self.value >> by,
        }
    }

    fn is_constant(&self) -> bool {
        self.bits.iter().all(Boolean::is_constant)
    }

    fn xor<CS: AssignOnly>(&self, cs: &mut CS, other: &Word) -> Result<Word, SynthesisError> {
        Ok(Word {
            bits: bitwise(|i| Boolean::xor(&mut *cs, &self.bits[i], &other.bits[i]))?,
            value: self.value ^ other.value,
        })
    }

    /// `ch(e, f, g)` bit by bit, as the gadget's `sha256_ch`.
    fn ch<CS: AssignOnly>(
        cs: &mut CS,
        e: &Word,
        f: &Word,
        g: &Word,
    ) -> Result<Word, SynthesisError> {
        Ok(Word {
            bits: bitwise(|i| Boolean::sha256_ch(&mut *cs, &e.bits[i], &f.bits[i], &g.bits[i]))?,
            value: (e.value & f.value) ^ (!e.value & g.value),
        })
    }

    /// `maj(a, b, c)` bit by bit, as the gadget's `sha256_maj`.
    fn maj<CS: AssignOnly>(
        cs: &mut CS,
        a: &Word,
        b: &Word,
        c: &Word,
    ) -> Result<Word, SynthesisError> {
        Ok(Word {
            bits: bitwise(|i| Boolean::sha256_maj(&mut *cs, &a.bits[i], &b.bits[i], &c.bits[i]))?,
            value: (a.value & b.value) ^ (a.value & c.value) ^ (b.value & c.value),
        })
    }

    /// The sum of `operands` modulo 2^32 with the gadget's allocations: none
    /// when every bit is a constant, else every bit of the widest possible
    /// sum (the carries included), of which the low 32 are kept.
    fn add_many<CS: AssignOnly>(cs: &mut CS, operands: &[Word]) -> Result<Word, SynthesisError> {
        debug_assert!((2..=10).contains(&operands.len()));
        let sum: u64 = operands.iter().map(|w| u64::from(w.value)).sum();
        if operands.iter().all(Word::is_constant) {
            return Ok(Word::constant(sum as u32));
        }
        let width = 64 - (operands.len() as u64 * u64::from(u32::MAX)).leading_zeros() as usize;
        let bits =
            bitwise(|i| AllocatedBit::alloc(&mut *cs, Some((sum >> i) & 1 == 1)).map(Boolean::Is))?;
        for i in 32..width {
            AllocatedBit::alloc(&mut *cs, Some((sum >> i) & 1 == 1))?;
        }
        Ok(Word {
            bits,
            value: sum as u32,
        })
    }
}

/// The 32 bits `bit(0)`, `bit(1)`, ... made in that order.
fn bitwise(
    mut bit: impl FnMut(usize) -> Result<Boolean, SynthesisError>,
) -> Result<[Boolean; 32], SynthesisError> {
    let mut bits: [Boolean; 32] = std::array::from_fn(|_| Boolean::Constant(false));
    for (i, slot) in bits.iter_mut().enumerate() {
        *slot = bit(i)?;
    }
    Ok(bits)
}

/// `a` and `e` of a round: a word, or the operands of a sum not yet made.
#[allow(clippy::large_enum_variant)]
enum Maybe {
    Concrete(Word),
    Deferred(Vec<Word>),
}

impl Maybe {
    /// The word, summing `others` into a deferred sum (a concrete word is
    /// returned as it is, `others` ignored, as the gadget does).
    fn compute<CS: AssignOnly>(self, cs: &mut CS, others: &[Word]) -> Result<Word, SynthesisError> {
        match self {
            Maybe::Concrete(w) => Ok(w),
            Maybe::Deferred(mut v) => {
                v.extend_from_slice(others);
                Word::add_many(cs, &v)
            }
        }
    }
}

fn sigma<CS: AssignOnly>(
    cs: &mut CS,
    w: &Word,
    (r1, r2): (usize, usize),
    third: Word,
) -> Result<Word, SynthesisError> {
    let s = w.rotr(r1).xor(cs, &w.rotr(r2))?;
    s.xor(cs, &third)
}

fn compression<CS: AssignOnly>(
    cs: &mut CS,
    block: &[Boolean],
    current: &[Word; 8],
) -> Result<[Word; 8], SynthesisError> {
    let mut w = Vec::with_capacity(64);
    for chunk in block.chunks(32) {
        w.push(Word::from_be(chunk)?);
    }
    for i in 16..64 {
        let s0 = sigma(cs, &w[i - 15], (7, 18), w[i - 15].shr(3))?;
        let s1 = sigma(cs, &w[i - 2], (17, 19), w[i - 2].shr(10))?;
        let sum = Word::add_many(cs, &[w[i - 16].clone(), s0, w[i - 7].clone(), s1])?;
        w.push(sum);
    }
    let [a0, b0, c0, d0, e0, f0, g0, h0] = current.clone();
    let (mut a, mut b, mut c, mut d) = (Maybe::Concrete(a0), b0, c0, d0);
    let (mut e, mut f, mut g, mut h) = (Maybe::Concrete(e0), f0, g0, h0);
    for (i, wi) in w.iter().enumerate() {
        let new_e = e.compute(cs, &[])?;
        let s1 = sigma(cs, &new_e, (6, 11), new_e.rotr(25))?;
        let ch = Word::ch(cs, &new_e, &f, &g)?;
        let temp1 = [h, s1, ch, Word::constant(ROUND_CONSTANTS[i]), wi.clone()];
        let new_a = a.compute(cs, &[])?;
        let s0 = sigma(cs, &new_a, (2, 13), new_a.rotr(22))?;
        let maj = Word::maj(cs, &new_a, &b, &c)?;
        h = g;
        g = f;
        f = new_e;
        let mut e_ops = temp1.to_vec();
        e_ops.push(d);
        e = Maybe::Deferred(e_ops);
        d = c;
        c = b;
        b = new_a;
        let mut a_ops = temp1.to_vec();
        a_ops.extend([s0, maj]);
        a = Maybe::Deferred(a_ops);
    }
    let [c0, c1, c2, c3, c4, c5, c6, c7] = current.clone();
    Ok([
        a.compute(cs, &[c0])?,
        Word::add_many(cs, &[c1, b])?,
        Word::add_many(cs, &[c2, c])?,
        Word::add_many(cs, &[c3, d])?,
        e.compute(cs, &[c4])?,
        Word::add_many(cs, &[c5, f])?,
        Word::add_many(cs, &[c6, g])?,
        Word::add_many(cs, &[c7, h])?,
    ])
}

/// SHA-256 of `input` (bits, most significant first within each byte, a
/// whole number of bytes): the digest's 256 bits, most significant first,
/// exactly as bellpepper's `sha256` gadget returns them and with exactly
/// its variables allocated.
pub fn sha256<CS: AssignOnly>(
    cs: &mut CS,
    input: &[Boolean],
) -> Result<Vec<Boolean>, SynthesisError> {
    if input.len() % 8 != 0 {
        return Err(SynthesisError::Unsatisfiable);
    }
    let bit_len = input.len() as u64;
    let mut padded = input.to_vec();
    padded.push(Boolean::Constant(true));
    while (padded.len() + 64) % 512 != 0 {
        padded.push(Boolean::Constant(false));
    }
    padded.extend(
        (0..64)
            .rev()
            .map(|i| Boolean::Constant((bit_len >> i) & 1 == 1)),
    );
    let mut current: [Word; 8] = std::array::from_fn(|i| Word::constant(IV[i]));
    for block in padded.chunks(512) {
        current = compression(cs, block, &current)?;
    }
    Ok(current
        .into_iter()
        .flat_map(|w| w.bits.into_iter().rev())
        .collect())
}

#[cfg(test)]
mod tests {
    use bellpepper_core::boolean::{AllocatedBit, Boolean};
    use bellpepper_core::ConstraintSystem;
    use bellperson::gadgets::sha256::sha256 as gadget_sha256;
    use cuzk_r1cs::AssignmentCs;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use sha2::Digest;

    /// Input bits: allocated, negated or constant, with random values, the
    /// same allocations made in `cs`.
    fn input(cs: &mut AssignmentCs, kinds: &[u8], values: &[bool]) -> Vec<Boolean> {
        kinds
            .iter()
            .zip(values)
            .map(|(k, v)| match k {
                0 => Boolean::Constant(*v),
                1 => Boolean::Is(AllocatedBit::alloc(&mut *cs, Some(*v)).unwrap()),
                _ => Boolean::Is(AllocatedBit::alloc(&mut *cs, Some(!*v)).unwrap()).not(),
            })
            .collect()
    }

    fn describe(b: &Boolean) -> (u8, Option<String>, Option<bool>) {
        match b {
            Boolean::Constant(v) => (0, None, Some(*v)),
            Boolean::Is(a) => (1, Some(format!("{:?}", a.get_variable())), a.get_value()),
            Boolean::Not(a) => (2, Some(format!("{:?}", a.get_variable())), a.get_value()),
        }
    }

    #[test]
    fn same_variables_values_and_digest_as_the_gadget() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        // Lengths around the block boundaries; inputs all allocated, all
        // constant, and mixed with negations.
        for bytes in [0usize, 1, 32, 55, 56, 64, 100, 128, 1248] {
            for mix in 0..3 {
                let n = bytes * 8;
                let values: Vec<bool> = (0..n).map(|_| rng.gen()).collect();
                let kinds: Vec<u8> = (0..n)
                    .map(|_| match mix {
                        0 => 1,
                        1 => 0,
                        _ => rng.gen_range(0..3),
                    })
                    .collect();
                let mut fast = AssignmentCs::default();
                fast.alloc_input(|| "one", || Ok(blstrs::Scalar::from(1u64)))
                    .unwrap();
                let bits = input(&mut fast, &kinds, &values);
                let mut slow = AssignmentCs::default();
                slow.alloc_input(|| "one", || Ok(blstrs::Scalar::from(1u64)))
                    .unwrap();
                let bits2 = input(&mut slow, &kinds, &values);
                let got = super::sha256(&mut fast, &bits).unwrap();
                let want = gadget_sha256(&mut slow, &bits2).unwrap();
                assert_eq!(fast.aux.len(), slow.aux.len(), "{bytes} bytes, mix {mix}");
                assert!(
                    fast.aux == slow.aux,
                    "{bytes} bytes, mix {mix}: aux differs"
                );
                let got: Vec<_> = got.iter().map(describe).collect();
                let want: Vec<_> = want.iter().map(describe).collect();
                assert_eq!(got, want, "{bytes} bytes, mix {mix}");
                // And it is SHA-256.
                let msg: Vec<u8> = values
                    .chunks(8)
                    .map(|c| c.iter().fold(0u8, |acc, b| (acc << 1) | u8::from(*b)))
                    .collect();
                let digest = sha2::Sha256::digest(&msg);
                let bits: Vec<bool> = got.iter().map(|d| d.2.unwrap() ^ (d.0 == 2)).collect();
                let want_bits: Vec<bool> = digest
                    .iter()
                    .flat_map(|byte| (0..8).rev().map(move |i| (byte >> i) & 1 == 1))
                    .collect();
                assert_eq!(bits, want_bits, "{bytes} bytes, mix {mix}");
            }
        }
    }
}

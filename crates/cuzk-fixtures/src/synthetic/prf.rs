//! Deterministic pseudorandom values of a synthetic sector.
//!
//! Every value a synthetic sector holds (data blocks, columns of parents,
//! default leaves, commitments that stand for trees nobody opens) is a field
//! element drawn from SHA-256 of the fixture seed, a tag and two indices, so
//! it does not depend on the order things are built in and a set rebuilt
//! from the same seed is byte-identical. Values have their top two bits
//! clear, as fr32-padded sector data has: always canonical field elements.

use blstrs::Scalar as Fr;
use ff::PrimeField;
use sha2::{Digest, Sha256};

/// A keyed source of field elements.
#[derive(Clone, Copy, Debug)]
pub struct Prf {
    key: [u8; 32],
}

impl Prf {
    pub fn new(seed: u64, name: &str) -> Prf {
        let key = Sha256::new()
            .chain_update(b"cuzk synthetic sector v1")
            .chain_update(seed.to_le_bytes())
            .chain_update(name.as_bytes())
            .finalize();
        Prf { key: key.into() }
    }

    /// 32 bytes for (`tag`, `a`, `b`) with the top two bits clear.
    pub fn bytes(&self, tag: &str, a: u64, b: u64) -> [u8; 32] {
        let mut out: [u8; 32] = Sha256::new()
            .chain_update(self.key)
            .chain_update((tag.len() as u64).to_le_bytes())
            .chain_update(tag.as_bytes())
            .chain_update(a.to_le_bytes())
            .chain_update(b.to_le_bytes())
            .finalize()
            .into();
        out[31] &= 0x3f;
        out
    }

    /// Another source, keyed by this one, `tag` and `a` (one per sector).
    pub fn derive(&self, tag: &str, a: u64) -> Prf {
        Prf {
            key: self.bytes(tag, a, u64::MAX),
        }
    }

    /// The field element for (`tag`, `a`, `b`).
    pub fn fr(&self, tag: &str, a: u64, b: u64) -> Fr {
        Fr::from_repr_vartime(self.bytes(tag, a, b))
            .expect("a 254-bit value is a canonical field element")
    }

    /// `n` field elements for `tag`.
    pub fn block(&self, tag: &str, n: usize) -> Vec<Fr> {
        (0..n as u64).map(|i| self.fr(tag, i, 0)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_depend_on_every_input() {
        let p = Prf::new(1, "porep");
        assert_eq!(p.fr("col", 3, 4), Prf::new(1, "porep").fr("col", 3, 4));
        let others = [
            Prf::new(2, "porep").fr("col", 3, 4),
            Prf::new(1, "snap").fr("col", 3, 4),
            p.fr("cox", 3, 4),
            p.fr("col", 4, 3),
        ];
        assert!(others.iter().all(|v| *v != p.fr("col", 3, 4)));
        let (d3, d4) = (p.derive("sector", 3), p.derive("sector", 4));
        assert_eq!(d3.fr("col", 3, 4), p.derive("sector", 3).fr("col", 3, 4));
        assert_ne!(d3.fr("col", 3, 4), d4.fr("col", 3, 4));
        assert_ne!(d3.fr("col", 3, 4), p.fr("col", 3, 4));
    }
}

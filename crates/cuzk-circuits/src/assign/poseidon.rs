//! Poseidon into an assignment-only constraint system.
//!
//! [`poseidon_hash`] allocates exactly what neptune's `poseidon_hash`
//! circuit allocates, in its order and with its values: per S-box the input
//! (where the state element is not yet a variable), its square, its fourth
//! power and the fifth power plus round key; finally the output element.
//! The linear layers, which the gadget carries as linear combinations
//! (scaled and summed per matrix entry), are computed here on field values
//! alone, with the same round constants and the same dense, pre-sparse and
//! sparse matrices, so every intermediate value is the gadget's.

use bellperson::gadgets::num::AllocatedNum;
use bellperson::SynthesisError;
use blstrs::Scalar as Fr;
use ff::Field;
use neptune::hash_type::HashType;
use neptune::poseidon::{Arity, PoseidonConstants};

use super::AssignOnly;

/// A state element: a variable, or a value the gadget holds as a linear
/// combination.
enum Elt {
    Allocated(AllocatedNum<Fr>),
    Num(Fr),
}

fn value(n: &AllocatedNum<Fr>) -> Result<Fr, SynthesisError> {
    n.get_value().ok_or(SynthesisError::AssignmentMissing)
}

fn alloc<CS: AssignOnly>(cs: &mut CS, v: Fr) -> Result<AllocatedNum<Fr>, SynthesisError> {
    AllocatedNum::alloc(&mut *cs, || Ok(v))
}

impl Elt {
    fn val(&self) -> Result<Fr, SynthesisError> {
        match self {
            Elt::Allocated(n) => value(n),
            Elt::Num(v) => Ok(*v),
        }
    }

    fn ensure_allocated<CS: AssignOnly>(
        &self,
        cs: &mut CS,
    ) -> Result<AllocatedNum<Fr>, SynthesisError> {
        match self {
            Elt::Allocated(n) => Ok(n.clone()),
            Elt::Num(v) => alloc(cs, *v),
        }
    }
}

struct State<'a, A: Arity<Fr>> {
    elements: Vec<Elt>,
    constants: &'a PoseidonConstants<Fr, A>,
    offset: usize,
    round: usize,
}

impl<A: Arity<Fr>> State<'_, A> {
    fn keys(&mut self, n: usize) -> Vec<Fr> {
        let keys = self.constants.compressed_round_constants[self.offset..self.offset + n].to_vec();
        self.offset += n;
        keys
    }

    fn full_round<CS: AssignOnly>(
        &mut self,
        cs: &mut CS,
        first: bool,
        last: bool,
    ) -> Result<(), SynthesisError> {
        let width = self.elements.len();
        let pre = if first { self.keys(width) } else { Vec::new() };
        let post = if first || !last {
            self.keys(width)
        } else {
            Vec::new()
        };
        for i in 0..width {
            let post_key = post.get(i).copied();
            self.elements[i] = match (first, i) {
                (true, 0) => {
                    // The domain tag is a constant: its S-box is a value.
                    let t = self.elements[0].val()? + pre[0];
                    Elt::Num(t.square().square() * t + post[0])
                }
                (true, _) => s_box(cs, &self.elements[i], Some(pre[i]), post_key)?,
                (false, _) => s_box(cs, &self.elements[i], None, post_key)?,
            };
        }
        self.product_mds()
    }

    fn partial_round<CS: AssignOnly>(&mut self, cs: &mut CS) -> Result<(), SynthesisError> {
        let key = self.keys(1)[0];
        self.elements[0] = s_box(cs, &self.elements[0], None, Some(key))?;
        self.product_mds()
    }

    fn product_mds(&mut self) -> Result<(), SynthesisError> {
        let c = self.constants;
        let sparse_offset = c.half_full_rounds - 1;
        let values = self
            .elements
            .iter()
            .map(Elt::val)
            .collect::<Result<Vec<_>, _>>()?;
        let width = values.len();
        let out: Vec<Fr> = if self.round == sparse_offset {
            dense(&values, &c.pre_sparse_matrix)
        } else if self.round > sparse_offset && self.round < c.half_full_rounds + c.partial_rounds {
            let m = &c.sparse_matrixes[self.round - sparse_offset - 1];
            let mut out = Vec::with_capacity(width);
            out.push(values.iter().zip(&m.w_hat).map(|(v, w)| *v * w).sum());
            for j in 1..width {
                out.push(values[j] + values[0] * m.v_rest[j - 1]);
            }
            out
        } else {
            dense(&values, &c.mds_matrices.m)
        };
        self.elements = out.into_iter().map(Elt::Num).collect();
        self.round += 1;
        Ok(())
    }
}

/// The state times the matrix: column `j` of `m` against the state.
fn dense(values: &[Fr], m: &[Vec<Fr>]) -> Vec<Fr> {
    (0..values.len())
        .map(|j| values.iter().enumerate().map(|(i, v)| *v * m[i][j]).sum())
        .collect()
}

/// The gadget's quintic S-box: `(x + pre)^5 + post` with `x` allocated
/// first if it is not a variable, then `(x + pre)^2`, its square, and the
/// result.
fn s_box<CS: AssignOnly>(
    cs: &mut CS,
    e: &Elt,
    pre: Option<Fr>,
    post: Option<Fr>,
) -> Result<Elt, SynthesisError> {
    let l = e.ensure_allocated(cs)?;
    let x = value(&l)? + pre.unwrap_or(Fr::ZERO);
    let l2 = x.square();
    alloc(cs, l2)?;
    let l4 = l2.square();
    alloc(cs, l4)?;
    let l5 = alloc(cs, l4 * x + post.unwrap_or(Fr::ZERO))?;
    Ok(Elt::Allocated(l5))
}

/// `neptune::circuit::poseidon_hash`: the hash of `preimage` (as many
/// elements as the arity), with exactly the gadget's variables.
pub fn poseidon_hash<CS: AssignOnly, A: Arity<Fr>>(
    cs: &mut CS,
    preimage: Vec<AllocatedNum<Fr>>,
    constants: &PoseidonConstants<Fr, A>,
) -> Result<AllocatedNum<Fr>, SynthesisError> {
    if preimage.len() != A::to_usize()
        || matches!(constants.hash_type, HashType::ConstantLength(n) if n != A::to_usize())
    {
        return Err(SynthesisError::Unsatisfiable);
    }
    let mut elements = Vec::with_capacity(preimage.len() + 1);
    elements.push(Elt::Num(constants.domain_tag));
    elements.extend(preimage.into_iter().map(Elt::Allocated));
    let mut st = State {
        elements,
        constants,
        offset: 0,
        round: 0,
    };
    let half = constants.full_rounds / 2;
    st.full_round(cs, true, false)?;
    for _ in 1..half {
        st.full_round(cs, false, false)?;
    }
    for _ in 0..constants.partial_rounds {
        st.partial_round(cs)?;
    }
    for _ in 0..half - 1 {
        st.full_round(cs, false, false)?;
    }
    st.full_round(cs, false, true)?;
    st.elements[1].ensure_allocated(cs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellperson::ConstraintSystem;
    use cuzk_r1cs::AssignmentCs;
    use filecoin_hashers::{POSEIDON_CONSTANTS_11, POSEIDON_CONSTANTS_2, POSEIDON_CONSTANTS_8};
    use generic_array::typenum::{U11, U2, U8};
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn check<A: Arity<Fr>>(constants: &PoseidonConstants<Fr, A>, rng: &mut ChaCha8Rng) {
        let n = A::to_usize();
        let values: Vec<Fr> = (0..n).map(|_| Fr::random(&mut *rng)).collect();
        let run = |native: bool| {
            let mut cs = AssignmentCs::default();
            cs.alloc_input(|| "one", || Ok(Fr::ONE)).unwrap();
            let pre: Vec<_> = values
                .iter()
                .map(|v| AllocatedNum::alloc(&mut cs, || Ok(*v)).unwrap())
                .collect();
            let out = if native {
                poseidon_hash(&mut cs, pre, constants).unwrap()
            } else {
                neptune::circuit::poseidon_hash(&mut cs, pre, constants).unwrap()
            };
            (cs.aux, format!("{:?}", out.get_variable()), out.get_value())
        };
        let (fast, slow) = (run(true), run(false));
        assert_eq!(fast.0.len(), slow.0.len(), "arity {n}");
        assert!(fast == slow, "arity {n}: the assignment differs");
    }

    #[test]
    fn same_variables_and_values_as_the_gadget() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        for _ in 0..3 {
            check::<U2>(&POSEIDON_CONSTANTS_2, &mut rng);
            check::<U8>(&POSEIDON_CONSTANTS_8, &mut rng);
            check::<U11>(&POSEIDON_CONSTANTS_11, &mut rng);
        }
    }
}

//! Native assignment: a partition's witness without the SHA-256 gadget's
//! linear combinations.
//!
//! With the constraint matrices recorded once per shape (`cuzk-r1cs`), a
//! partition needs only its assignment, and running the bellpepper gadgets
//! into an assignment-only system still pays for the linear combinations
//! the gadgets build eagerly: in the SHA-256 gadget, which is nearly all of
//! a PoRep partition, that is most of the time. Here the circuits whose
//! cost is SHA-256 are walked as storage-proofs walks them, calling the
//! same gadgets for everything but SHA-256 ([`sha256`]), so the variables,
//! their order and their values are exactly the gadgets'. The tests
//! compare every aux and input value with the gadget path, and the engine
//! checks every partition's assignment against the recorded constraints
//! before a witness is used.

pub mod por;
pub(crate) mod porep;
pub mod poseidon;
pub(crate) mod post;
pub mod sha256;
pub(crate) mod snap;

use bellperson::gadgets::boolean::{field_into_allocated_bits_le, Boolean};
use bellperson::gadgets::num::AllocatedNum;
use bellperson::SynthesisError;
use blstrs::Scalar;
pub use cuzk_r1cs::AssignOnly;

/// `AllocatedNum::to_bits_le` without its packing constraint's linear
/// combination: the same 255 bits allocated in the same order.
pub fn to_bits_le<CS: AssignOnly>(
    cs: &mut CS,
    num: &AllocatedNum<Scalar>,
) -> Result<Vec<Boolean>, SynthesisError> {
    Ok(field_into_allocated_bits_le(&mut *cs, num.get_value())?
        .into_iter()
        .map(Boolean::from)
        .collect())
}

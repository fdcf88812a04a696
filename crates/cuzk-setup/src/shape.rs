//! The size of a synthesized blank circuit.

/// The size of a synthesized blank circuit, as bellperson's generator sees it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Shape {
    /// Public inputs, the constant one included.
    pub inputs: usize,
    /// Private (aux) variables.
    pub aux: usize,
    /// Constraints, including one `input_i * 0 = 0` per input.
    pub constraints: usize,
}

impl Shape {
    /// Inputs and aux variables together.
    pub fn variables(&self) -> usize {
        self.inputs + self.aux
    }

    /// The evaluation-domain size `m`: the constraint count rounded up to a
    /// power of two (`None` past `usize`).
    pub fn domain_size(&self) -> Option<usize> {
        self.constraints.max(1).checked_next_power_of_two()
    }

    /// Bytes of the streaming generator's bulk: three accumulators per
    /// variable and the Lagrange basis (`m` scalars), 32 bytes each.
    pub fn streaming_bytes(&self) -> u64 {
        let m = self.domain_size().unwrap_or(usize::MAX) as u64;
        32 * (3 * self.variables() as u64).saturating_add(m)
    }

    /// The `.params` file's size when every variable has non-zero a and b
    /// evaluations (an upper bound: the a and b sections leave the zero
    /// ones out).
    pub fn params_bytes_max(&self) -> u64 {
        let (g1, g2) = (96u64, 192u64);
        let m = self.domain_size().unwrap_or(usize::MAX) as u64;
        let (ni, nv) = (self.inputs as u64, self.variables() as u64);
        let vk = 3 * g1 + 3 * g2 + 4 + ni * g1;
        let sections = 5 * 4 + (m - 1) * g1 + (self.aux as u64) * g1 + nv * (2 * g1 + g2);
        vk + sections
    }
}

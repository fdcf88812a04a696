//! The CPU prover backend: H polynomial with our NTT, MSMs with blst.

use std::time::Instant;

use blstrs::Scalar;

use crate::backend::{
    check_batch, check_srs, HostBytes, ProveStats, ProverBackend, ProverError, SrsRef,
};
use crate::msm::{msm, G1, G2};
use crate::ntt::{compute_h, Domain};
use crate::proof::{assemble, MsmResults, Proof};
use crate::synth::{PartitionWitness, WitnessSize};

/// Proves on the CPU with all rayon threads.
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuBackend;

impl CpuBackend {
    /// Proves one partition; returns its MSM results.
    fn partition(
        &self,
        w: &mut PartitionWitness,
        srs: &SrsRef<'_>,
        stats: &mut ProveStats,
        abc_freed: &mut dyn FnMut(),
    ) -> Result<MsmResults, ProverError> {
        // A witness left for the backend to evaluate (this backend never
        // asks for one, but takes it).
        w.evaluate_abc()?;
        let domain = Domain::for_len(w.a.len()).map_err(|e| ProverError::Input(e.to_string()))?;
        check_srs(w, srs, domain.size())?;

        let t = Instant::now();
        let n = domain.size();
        let mut a = std::mem::take(&mut w.a);
        let mut b = std::mem::take(&mut w.b);
        let mut c = std::mem::take(&mut w.c);
        for v in [&mut a, &mut b, &mut c] {
            v.resize(n, Scalar::from(0u64));
        }
        compute_h(&domain, &mut a, &mut b, &mut c);
        crate::pool::pool().give(b);
        crate::pool::pool().give(c);
        let h_coeffs = a;
        stats.ntt += t.elapsed();

        let t = Instant::now();
        let (h, _) = msm::<G1>(srs.h, &h_coeffs[..n - 1], None);
        abc_freed();
        crate::pool::pool().give(h_coeffs);
        stats.msm_h += t.elapsed();

        let t = Instant::now();
        let (l, shape) = msm::<G1>(srs.l, &w.aux, None);
        stats.shape += shape;
        stats.msm_l += t.elapsed();

        let t = Instant::now();
        let ni = w.input.len();
        let (a_in, _) = msm::<G1>(&srs.a[..ni], &w.input, None);
        let (a_aux, shape) = msm::<G1>(&srs.a[ni..], &w.aux, Some(&w.a_aux_density));
        stats.shape += shape;
        stats.msm_a += t.elapsed();

        let t = Instant::now();
        let bi = w.b_input_density.count();
        let (b1_in, _) = msm::<G1>(&srs.b_g1[..bi], &w.input, Some(&w.b_input_density));
        let (b1_aux, shape) = msm::<G1>(&srs.b_g1[bi..], &w.aux, Some(&w.b_aux_density));
        stats.shape += shape;
        stats.msm_b_g1 += t.elapsed();

        let t = Instant::now();
        let (b2_in, _) = msm::<G2>(&srs.b_g2[..bi], &w.input, Some(&w.b_input_density));
        let (b2_aux, _) = msm::<G2>(&srs.b_g2[bi..], &w.aux, Some(&w.b_aux_density));
        stats.msm_b_g2 += t.elapsed();

        Ok(MsmResults {
            a: a_in + a_aux,
            b_g1: b1_in + b1_aux,
            b_g2: b2_in + b2_aux,
            h,
            l,
        })
    }
}

impl CpuBackend {
    /// The MSM results of one partition (a, b and c are consumed): with
    /// [`assemble`], proofs of this witness for any r and s, at the cost of
    /// one proof. Test harnesses use it as a reference for many randomisers.
    pub fn msm_results(
        &self,
        w: &mut PartitionWitness,
        srs: &SrsRef<'_>,
    ) -> Result<MsmResults, ProverError> {
        self.partition(w, srs, &mut ProveStats::default(), &mut || {})
    }
}

impl ProverBackend for CpuBackend {
    fn name(&self) -> String {
        "cpu".into()
    }

    /// a, b, c padded to the domain n, and per point of H and of aux the
    /// MSM's scalar bytes and pointers (40 bytes); assignments and density
    /// bitmaps.
    fn host_bytes(&self, size: &WitnessSize) -> HostBytes {
        let (n, aux, inputs) = (size.constraints as u64, size.aux as u64, size.inputs as u64);
        HostBytes {
            abc: 3 * 32 * n + 40 * n,
            rest: 32 * (aux + inputs) + (2 * aux + inputs) / 8 + 64 + 40 * aux,
        }
    }

    fn prove_with(
        &self,
        witnesses: &mut [PartitionWitness],
        srs: &SrsRef<'_>,
        r: &[Scalar],
        s: &[Scalar],
        abc_freed: &mut dyn FnMut(usize),
    ) -> Result<(Vec<Proof>, ProveStats), ProverError> {
        check_batch(witnesses.len(), r, s)?;
        let mut stats = ProveStats::default();
        let mut proofs = Vec::with_capacity(witnesses.len());
        for (i, ((w, r), s)) in witnesses.iter_mut().zip(r).zip(s).enumerate() {
            let m = self.partition(w, srs, &mut stats, &mut || abc_freed(i))?;
            let t = Instant::now();
            proofs.push(assemble(srs, &m, *r, *s)?);
            stats.assembly += t.elapsed();
        }
        Ok((proofs, stats))
    }
}

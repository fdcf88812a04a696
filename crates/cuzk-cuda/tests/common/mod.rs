//! Shared by the GPU tests: the device (or a loud skip when none exists),
//! proving with the SRS on the device as the daemon does (through a device
//! tier of the test's own), and the CPU-vs-GPU comparison of one batch of
//! witnesses.

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use blstrs::Scalar;
use cuzk_core::device_tier::DeviceTier;
use cuzk_cuda::{CudaBackend, SrsPlacement};
use cuzk_prover::backend::{ProveStats, ProverBackend, ProverError, SrsRef};
use cuzk_prover::proof::Proof;
use cuzk_prover::synth::{PartitionWitness, WitnessSize};
use cuzk_prover::CpuBackend;

/// Device 0 for one test at a time: the tests of a binary run on threads
/// of one process and share the device's state (the SRS on it, worker
/// contexts, `vram_limit`, the injected allocation failures), so each
/// holds this lock for its whole run.
pub struct Gpu {
    backend: CudaBackend,
    /// Where this test keeps its SRS on the device.
    pub tier: DeviceTier,
    _turn: MutexGuard<'static, ()>,
}

impl std::ops::Deref for Gpu {
    type Target = CudaBackend;
    fn deref(&self) -> &CudaBackend {
        &self.backend
    }
}

/// Device 0, or `None` (with a loud message) when the machine has no usable
/// CUDA device. Any other failure fails the test.
pub fn gpu() -> Option<Gpu> {
    static TURN: Mutex<()> = Mutex::new(());
    // A test that failed while holding the lock leaves it poisoned; the
    // device is still usable by the next one.
    let turn = TURN.lock().unwrap_or_else(|p| p.into_inner());
    let count = cuzk_cuda::device_count().unwrap_or_else(|e| panic!("counting CUDA devices: {e}"));
    if count == 0 {
        eprintln!("\n!!!!!!!! SKIPPED: no CUDA device on this machine: this GPU test proved NOTHING !!!!!!!!\n");
        return None;
    }
    let backend = CudaBackend::new(0).unwrap_or_else(|e| panic!("CUDA device 0: {e}"));
    eprintln!(
        "proving on {} ({})",
        backend.name(),
        backend.device_name().unwrap_or_else(|e| e.to_string())
    );
    Some(Gpu {
        backend,
        tier: DeviceTier::new(),
        _turn: turn,
    })
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

pub fn print_stats(label: &str, st: &ProveStats, wall: Duration) {
    eprintln!(
        "{label}: wall {:.1} ms | ntt {:.1} h {:.1} l {:.1} a {:.1} b_g1 {:.1} b_g2 {:.1} assembly {:.1} (ms)",
        ms(wall),
        ms(st.ntt),
        ms(st.msm_h),
        ms(st.msm_l),
        ms(st.msm_a),
        ms(st.msm_b_g1),
        ms(st.msm_b_g2),
        ms(st.assembly)
    );
}

/// The size the engine gives `prepare_srs` for these witnesses.
fn size_of(witnesses: &[PartitionWitness]) -> WitnessSize {
    let w = &witnesses[0];
    WitnessSize {
        constraints: w.a.len().next_power_of_two(),
        inputs: w.input.len(),
        aux: w.aux.len(),
    }
}

/// Proves on `gpu` as the daemon's prover worker does: the SRS (known to
/// `tier` as `key`) on the device when `gpu`'s placement and the device's
/// room allow, else streamed from host memory.
#[allow(clippy::too_many_arguments)]
pub fn prove_on(
    gpu: &CudaBackend,
    tier: &DeviceTier,
    key: &str,
    witnesses: &mut [PartitionWitness],
    srs: &SrsRef<'_>,
    r: &[Scalar],
    s: &[Scalar],
    abc_freed: &mut dyn FnMut(usize),
) -> Result<(Vec<Proof>, ProveStats), ProverError> {
    let lease = tier.on_device(key, srs, gpu.device(), gpu, &size_of(witnesses))?;
    let srs = match lease.srs() {
        Some(d) => srs.on_device(d),
        None => *srs,
    };
    gpu.prove_with(witnesses, &srs, r, s, abc_freed)
}

/// Proves `witnesses` on the CPU, on `gpu` (SRS through `tier`, as `key`)
/// and on a backend of the same device with the other SRS placement
/// (streamed if `gpu` keeps the SRS on the device, on the device
/// otherwise) with the same r and s, and asserts equal proof bytes;
/// returns the GPU proofs' bytes.
#[allow(clippy::too_many_arguments)]
pub fn compare(
    label: &str,
    gpu: &CudaBackend,
    tier: &DeviceTier,
    key: &str,
    witnesses: Vec<PartitionWitness>,
    srs: &SrsRef<'_>,
    r: &[Scalar],
    s: &[Scalar],
) -> Vec<[u8; 192]> {
    let mut cpu_w = witnesses.clone();
    let mut other_w = witnesses.clone();
    let mut gpu_w = witnesses;
    let t = std::time::Instant::now();
    let (cpu_proofs, cpu_stats) = CpuBackend.prove(&mut cpu_w, srs, r, s).expect("CPU proof");
    print_stats(&format!("{label} cpu"), &cpu_stats, t.elapsed());

    let mut freed = Vec::new();
    let t = std::time::Instant::now();
    let (gpu_proofs, gpu_stats) = prove_on(gpu, tier, key, &mut gpu_w, srs, r, s, &mut |i| {
        freed.push(i)
    })
    .unwrap_or_else(|e| panic!("{label}: GPU proof: {e}"));
    print_stats(&format!("{label} gpu"), &gpu_stats, t.elapsed());
    assert_eq!(
        freed,
        (0..gpu_w.len()).collect::<Vec<_>>(),
        "abc_freed once per witness, in order"
    );
    assert!(
        gpu_w
            .iter()
            .all(|w| w.a.is_empty() && w.b.is_empty() && w.c.is_empty()),
        "a/b/c consumed"
    );

    let other_placement = match gpu.placement() {
        SrsPlacement::Never => SrsPlacement::Always,
        _ => SrsPlacement::Never,
    };
    let other = CudaBackend::with_placement(gpu.device(), other_placement)
        .unwrap_or_else(|e| panic!("{label}: backend {other_placement:?}: {e}"));
    // The device holds one SRS: the other placement gets the room.
    tier.forget(key);
    let other_tier = DeviceTier::new();
    let t = std::time::Instant::now();
    let (other_proofs, other_stats) = prove_on(
        &other,
        &other_tier,
        key,
        &mut other_w,
        srs,
        r,
        s,
        &mut |_| {},
    )
    .unwrap_or_else(|e| panic!("{label}: GPU proof ({other_placement:?}): {e}"));
    other_tier.forget(key);
    print_stats(
        &format!("{label} gpu {other_placement:?}"),
        &other_stats,
        t.elapsed(),
    );
    for (i, (g, o)) in gpu_proofs.iter().zip(&other_proofs).enumerate() {
        assert_eq!(
            hex(&g.to_bytes()),
            hex(&o.to_bytes()),
            "{label}: partition {i}: {:?} and {other_placement:?} proofs differ",
            gpu.placement()
        );
    }

    assert_eq!(cpu_proofs.len(), gpu_proofs.len());
    let mut out = Vec::new();
    for (i, (c, g)) in cpu_proofs.iter().zip(&gpu_proofs).enumerate() {
        assert_eq!(
            hex(&c.to_bytes()),
            hex(&g.to_bytes()),
            "{label}: partition {i}: GPU proof bytes differ from the CPU backend's"
        );
        out.push(g.to_bytes());
    }
    eprintln!(
        "{label}: {} GPU proof(s), SRS {:?} and {other_placement:?}, byte-identical to the CPU backend's",
        out.len(),
        gpu.placement()
    );
    out
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

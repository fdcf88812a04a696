//! GPU proofs of synthetic circuits (2^16 and 2^20 constraints) are
//! byte-identical to the CPU backend's with the same r and s, with the SRS
//! on the device and streamed from the host.
//!
//! Needs a CUDA device (skipped, loudly, without one):
//! `cargo test --release -p cuzk-cuda --features cuda,lab --test gpu_synthetic -- --nocapture`
//! (the tests of the staging tiers inject allocation failures, a `lab`
//! feature hook)
//! (build with `eval "$(scripts/install-cuda-toolchain.sh | grep ^export)"`
//! on a machine without the CUDA toolkit; see crates/cuzk-cuda/README.md).
#![cfg(feature = "cuda")]

mod common;

use blstrs::Scalar;
use cuzk_circuits::chain::Chain;
use cuzk_core::device_tier::DeviceTier;
use cuzk_cuda::{CudaBackend, CudaError, SrsPlacement};
use cuzk_prover::backend::{ProverBackend, ProverError};
use cuzk_prover::srs::Section;
use cuzk_prover::synthesize;
use cuzk_prover::CpuBackend;
use ff::Field;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// Parameters of a chain just under 2^log constraints, `count` witnesses
/// of it and their r and s.
struct Partitions {
    srs: cuzk_prover::srs::Srs,
    witnesses: Vec<cuzk_prover::synth::PartitionWitness>,
    r: Vec<Scalar>,
    s: Vec<Scalar>,
}

fn partitions(log: u32, count: usize, seed: u64) -> Partitions {
    let steps = Chain::for_log(log, None).steps;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let t = std::time::Instant::now();
    let (srs, _) = cuzk_setup::generate(
        Chain {
            x: None,
            steps,
            break_at: None,
        },
        &mut rng,
    )
    .expect("parameters");
    eprintln!("2^{log}: parameters in {:.1} s", t.elapsed().as_secs_f64());
    let witnesses = (0..count)
        .map(|_| {
            synthesize(Chain {
                x: Some(Scalar::random(&mut rng)),
                steps,
                break_at: None,
            })
            .expect("synthesis")
            .witness
        })
        .collect();
    let r = (0..count).map(|_| Scalar::random(&mut rng)).collect();
    let s = (0..count).map(|_| Scalar::random(&mut rng)).collect();
    Partitions {
        srs,
        witnesses,
        r,
        s,
    }
}

/// `count` partitions of a chain just under 2^log constraints, the SRS
/// through `tier`.
fn check(gpu: &CudaBackend, tier: &DeviceTier, log: u32, count: usize) {
    let Partitions {
        srs,
        witnesses,
        r,
        s,
    } = partitions(log, count, u64::from(log));
    let n = witnesses[0].num_constraints();
    assert!(n > 1 << (log - 1) && n <= 1 << log, "{n} constraints");
    let label = format!("2^{log} x{count}");
    let key = format!("chain 2^{log} seed {log}");
    let expected = common::compare(
        &label,
        gpu,
        tier,
        &key,
        witnesses.clone(),
        &srs.as_srs_ref(),
        &r,
        &s,
    );
    // Again on the warm context (device buffers already allocated).
    let mut again = witnesses;
    let t = std::time::Instant::now();
    let (proofs, stats) = common::prove_on(
        gpu,
        tier,
        &key,
        &mut again,
        &srs.as_srs_ref(),
        &r,
        &s,
        &mut |_| {},
    )
    .expect("second GPU proof");
    common::print_stats(&format!("{label} gpu again"), &stats, t.elapsed());
    let bytes: Vec<_> = proofs.iter().map(|p| p.to_bytes()).collect();
    assert!(bytes == expected, "{label}: the second GPU proof differs");
    // The witness MSMs of 2^17 points or more take the 0/1 split (zeros
    // dropped, ones batch-added, Pippenger over the rest), on device points
    // and on streamed ones alike: it must have seen all three kinds of
    // scalar, and every aux scalar of L at least once.
    if n / 2 >= cuzk_cuda::SPLIT01_MIN_POINTS {
        let sh = stats.shape;
        assert!(
            sh.zeros > 0 && sh.ones > 0 && sh.others > 0,
            "{label}: split shape {sh:?}"
        );
        // L alone covers every aux scalar: about one per constraint here
        // (x_i and its boolean per step of two constraints).
        let aux = count * (n / 2);
        assert!(
            sh.zeros + sh.ones + sh.others >= aux,
            "{label}: {sh:?} for {aux} aux"
        );
    }
    // The next SRS gets the device.
    tier.forget(&key);
}

#[test]
fn synthetic_circuits_equal_cpu_proofs() {
    let Some(gpu) = common::gpu() else { return };
    check(&gpu, &gpu.tier, 16, 2);
    // Freed buffers are allocated again; a second backend on the same
    // device shares the context.
    gpu.release_buffers().expect("freeing the device buffers");
    let other = CudaBackend::new(0).expect("a second backend on device 0");
    check(&other, &DeviceTier::new(), 16, 1);
    check(&gpu, &gpu.tier, 20, 1);
    // Streamed first, on the device second (`compare` runs the other
    // placement).
    let streamed = CudaBackend::with_placement(0, SrsPlacement::Never).expect("streamed backend");
    let tier = DeviceTier::new();
    check(&streamed, &tier, 16, 1);
    check(&streamed, &tier, 20, 1);
    // Two partitions sharing each streamed pass (gpus.partitions_per_pass
    // is 2 by default).
    check(&streamed, &tier, 20, 2);
    // Streamed in small tiles: every MSM (H's batches, the split's tiles)
    // crosses many tile boundaries, with both tiles refilled many times.
    for tile in [4096u64, 1 << 15] {
        let tuning = cuzk_cuda::GpuTuning {
            stream_tile_points: tile,
            ..Default::default()
        };
        let tiled = streamed.clone().with_tuning(&tuning).expect("tuning");
        eprintln!("streamed in tiles of {tile} points");
        check(&tiled, &tier, 16, 1);
        check(&tiled, &tier, 20, 2);
    }
    streamed
        .with_tuning(&cuzk_cuda::GpuTuning::default())
        .expect("tuning back");
}

/// A `vram_limit` and `[gpus.tuning]` apply to the device: lifted (the
/// tuning back to its defaults) when the test that set them ends, also
/// when it fails.
struct Lift(CudaBackend);

impl Drop for Lift {
    fn drop(&mut self) {
        let _ = self
            .0
            .clone()
            .with_memory(None, cuzk_cuda::DEFAULT_VRAM_MARGIN)
            .and_then(|b| b.with_tuning(&cuzk_cuda::GpuTuning::default()));
    }
}

/// A card too small for the whole SRS beside a partition keeps the
/// sections that fit (the witness sections first when partitions do not
/// share passes) and streams the others
/// from page-locked host memory: the proofs are the CPU backend's.
#[test]
fn a_partly_resident_srs_gives_the_cpu_proofs() {
    use cuzk_prover::{SrsPreparation, WitnessSize};
    let Some(gpu) = common::gpu() else { return };
    let log = 16;
    let mut rng = ChaCha8Rng::seed_from_u64(1616);
    let (srs, _) = cuzk_setup::generate(Chain::for_log(log, None), &mut rng).expect("parameters");
    let srs = srs.as_srs_ref();
    let w = synthesize(Chain::for_log(log, Some(Scalar::random(&mut rng))))
        .expect("synthesis")
        .witness;
    let size = WitnessSize {
        constraints: w.num_constraints(),
        inputs: w.input.len(),
        aux: w.aux.len(),
    };
    let r = [Scalar::random(&mut rng)];
    let s = [Scalar::random(&mut rng)];
    let (cpu, _) = CpuBackend
        .prove(&mut [w.clone()], &srs, &r, &s)
        .expect("CPU proof");
    // Room for a partition at the a-only tier (two vectors and aux), the
    // next partition's aux, the streaming headroom (3 GiB) and one of the
    // two largest witness sections (L's or A's points, which differ by the
    // inputs), not for the whole SRS: that one stays, the rest streams.
    gpu.release_buffers().expect("release");
    let (free, total) = gpu.memory().expect("memory");
    let n = size.constraints.next_power_of_two() as u64;
    let partition = (2 * n + 2 * size.aux as u64) * 32 + size.aux as u64 / 8 + (3 << 30);
    let (l_bytes, a_bytes) = (srs.l.len() as u64 * 96, srs.a.len() as u64 * 96);
    let limit = total - free + partition + l_bytes.max(a_bytes) + (1 << 20);
    let _lift = Lift(gpu.clone());
    // One partition a pass: the witness sections go before H.
    let limited = gpu
        .clone()
        .with_memory(Some(limit), cuzk_cuda::DEFAULT_VRAM_MARGIN)
        .expect("vram_limit")
        .with_partitions_per_pass(1);
    let handle = match limited.prepare_srs(&srs, &size).expect("prepare") {
        SrsPreparation::Ready {
            srs,
            bytes,
            resident,
        } => {
            assert!(
                bytes == l_bytes || bytes == a_bytes,
                "one witness section on the device: {bytes} bytes (l {l_bytes}, a {a_bytes})"
            );
            let one = if bytes == l_bytes {
                Section::L
            } else {
                Section::A
            };
            assert_eq!(resident, [one], "the section said resident");
            srs
        }
        _ => panic!("a partly resident SRS is ready"),
    };
    let mut ws = [w];
    let on = srs.on_device(&handle);
    let (gpu_proofs, stats) = limited
        .prove(&mut ws, &on, &r, &s)
        .expect("GPU proof, partly resident");
    common::print_stats("partly resident 2^16", &stats, std::time::Duration::ZERO);
    // H, B_G1, B_G2 and one of L and A (their aux parts) come from the
    // host.
    let streamed: u64 = (srs.h.len() + srs.l.len().max(srs.a.len()) + srs.b_g1.len()) as u64 * 96
        + srs.b_g2.len() as u64 * 192;
    assert!(stats.streamed_bytes > 0, "sections were streamed");
    assert!(
        stats.streamed_bytes <= streamed,
        "{} bytes streamed, at most {streamed}",
        stats.streamed_bytes
    );
    assert_eq!(gpu_proofs[0].to_bytes(), cpu[0].to_bytes());
    drop(handle);
}

/// A device holds one prepared SRS: another is `Occupied` (said without
/// waiting for the device lock) until the first handle is dropped, and a
/// backend that streams prepares nothing.
#[test]
fn one_prepared_srs_per_device() {
    use cuzk_prover::{SrsPreparation, WitnessSize};
    let Some(gpu) = common::gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let (a, _) = cuzk_setup::generate(Chain::for_log(12, None), &mut rng).expect("parameters");
    let (b, _) = cuzk_setup::generate(Chain::for_log(13, None), &mut rng).expect("parameters");
    let size = WitnessSize {
        constraints: 1 << 13,
        inputs: 2,
        aux: 1 << 13,
    };
    let first = match gpu.prepare_srs(&a.as_srs_ref(), &size).expect("prepare a") {
        SrsPreparation::Ready {
            srs,
            bytes,
            resident,
        } => {
            assert_eq!(bytes, cuzk_cuda::srs_device_bytes(&a.as_srs_ref()));
            use cuzk_prover::srs::Section::*;
            assert_eq!(resident, [H, L, A, BG1, BG2], "every section resident");
            srs
        }
        _ => panic!("a small SRS fits on the device"),
    };
    assert!(matches!(
        gpu.prepare_srs(&b.as_srs_ref(), &size).expect("prepare b"),
        SrsPreparation::Occupied
    ));
    // Said at once, even while a partition holds the device lock (a
    // CRITICAL partition asking must not wait for its kernels to end).
    let held = gpu.hold_device();
    let (tx, rx) = std::sync::mpsc::channel();
    let answer = std::thread::scope(|s| {
        s.spawn(|| {
            let answer = gpu.prepare_srs(&b.as_srs_ref(), &size);
            let _ = tx.send(matches!(answer, Ok(SrsPreparation::Occupied)));
        });
        let answer = rx.recv_timeout(std::time::Duration::from_secs(10));
        // Let a caller that did wait finish before the scope ends.
        drop(held);
        answer
    });
    assert_eq!(
        answer,
        Ok(true),
        "prepare_srs waited for the device lock to say Occupied"
    );
    drop(first);
    assert!(matches!(
        gpu.prepare_srs(&b.as_srs_ref(), &size).expect("prepare b"),
        SrsPreparation::Ready { .. }
    ));
    let streamed = CudaBackend::with_placement(0, SrsPlacement::Never).expect("backend");
    assert!(matches!(
        streamed
            .prepare_srs(&a.as_srs_ref(), &size)
            .expect("prepare"),
        SrsPreparation::Host
    ));
}

/// A larger size, for timings: `-- --ignored synthetic_2_pow_24`.
#[test]
#[ignore = "large: about 2 minutes on 16 cores"]
fn synthetic_2_pow_24() {
    let Some(gpu) = common::gpu() else { return };
    check(&gpu, &gpu.tier, 24, 1);
}

#[test]
fn a_missing_device_and_a_wrong_srs_are_errors() {
    let Some(gpu) = common::gpu() else { return };
    match CudaBackend::new(4096) {
        Err(CudaError::NoDevice { device: 4096, .. }) => {}
        other => panic!("expected NoDevice, got {other:?}"),
    }
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let (srs, _) = cuzk_setup::generate(
        Chain {
            x: None,
            steps: 600,
            break_at: None,
        },
        &mut rng,
    )
    .expect("parameters");
    let mut w = vec![
        synthesize(Chain {
            x: Some(Scalar::ONE),
            steps: 700,
            break_at: None,
        })
        .expect("synthesis")
        .witness,
    ];
    match gpu.prove(&mut w, &srs.as_srs_ref(), &[Scalar::ONE], &[Scalar::ONE]) {
        Err(ProverError::Srs(m)) => eprintln!("refused as expected: {m}"),
        Err(e) => panic!("expected an SRS error, got {e}"),
        Ok(_) => panic!("a proof with the wrong SRS"),
    }
}

/// Proves one 2^16 chain partition on `gpu` and returns the proof bytes and
/// the staging counts of this call, or the error.
#[cfg(feature = "lab")]
fn prove_staged(
    gpu: &CudaBackend,
    srs: &cuzk_prover::srs::Srs,
    w: &cuzk_prover::synth::PartitionWitness,
) -> Result<([u8; 192], cuzk_cuda::StagingCounts), ProverError> {
    let mut batch = vec![w.clone()];
    let before = gpu.staging_counts();
    let (proofs, _) = gpu.prove(
        &mut batch,
        &srs.as_srs_ref(),
        &[Scalar::from(3u64)],
        &[Scalar::from(5u64)],
    )?;
    Ok((proofs[0].to_bytes(), gpu.staging_counts() - before))
}

/// Memory tiers: an allocation failure (the test hook) makes the partition
/// fall back a tier, then another, and still give the CPU's proof; a third
/// failure is an out-of-memory error that leaves the context usable; a
/// `vram_limit` just above what the a-only tier needs makes the backend
/// choose that tier by itself.
#[cfg(feature = "lab")]
#[test]
fn staging_tiers_fall_back_and_give_the_same_proof() {
    use cuzk_cuda::StagingTier;
    let Some(gpu) = common::gpu() else { return };
    let steps = (1usize << 15) - 4;
    let mut rng = ChaCha8Rng::seed_from_u64(99);
    let (srs, _) = cuzk_setup::generate(
        Chain {
            x: None,
            steps,
            break_at: None,
        },
        &mut rng,
    )
    .expect("parameters");
    let w = synthesize(Chain {
        x: Some(Scalar::random(&mut rng)),
        steps,
        break_at: None,
    })
    .expect("synthesis")
    .witness;
    let mut cpu_w = vec![w.clone()];
    let (cpu, _) = CpuBackend
        .prove(
            &mut cpu_w,
            &srs.as_srs_ref(),
            &[Scalar::from(3u64)],
            &[Scalar::from(5u64)],
        )
        .expect("CPU proof");
    let expected = cpu[0].to_bytes();

    // Streamed SRS: the device holds only this test's scratch buffers.
    let gpu = CudaBackend::with_placement(gpu.device(), SrsPlacement::Never).expect("backend");
    let (bytes, st) = prove_staged(&gpu, &srs, &w).expect("GPU proof");
    assert_eq!(bytes, expected, "tier all");
    assert_eq!(
        (st.all, st.a_only, st.none, st.fallbacks),
        (1, 0, 0, 0),
        "{st:?}"
    );

    for (fail, want) in [(1, (0, 1, 0, 1)), (2, (0, 0, 1, 2))] {
        gpu.release_buffers().expect("release");
        gpu.fail_next_allocs(fail);
        let (bytes, st) = prove_staged(&gpu, &srs, &w).expect("GPU proof after a fallback");
        assert_eq!(bytes, expected, "{fail} injected failure(s)");
        assert_eq!((st.all, st.a_only, st.none, st.fallbacks), want, "{st:?}");
    }

    gpu.release_buffers().expect("release");
    gpu.fail_next_allocs(3);
    match prove_staged(&gpu, &srs, &w) {
        Err(e) => assert!(e.to_string().contains("out of device memory"), "{e}"),
        Ok(_) => panic!("three injected failures should exhaust the tiers"),
    }
    let (bytes, st) = prove_staged(&gpu, &srs, &w).expect("the context survives");
    assert_eq!(bytes, expected);
    assert_eq!(st.all, 1, "{st:?}");

    // vram_limit: room for the a-only tier, not for all three vectors.
    gpu.release_buffers().expect("release");
    let (free, total) = gpu.memory().expect("memory");
    let margin = 64 << 20;
    let (n, aux) = (w.a.len().next_power_of_two(), w.aux.len());
    // The MSM driver's own scratch figure, as the backend sizes tiers.
    let temp = gpu
        .stages()
        .and_then(|mut st| st.msm_scratch(n.max(aux), true))
        .expect("MSM scratch");
    let limit = total - free + StagingTier::AOnly.need(n, aux, temp) + margin;
    assert!(StagingTier::All.need(n, aux, temp) > StagingTier::AOnly.need(n, aux, temp));
    let limited = gpu
        .clone()
        .with_memory(Some(limit), margin)
        .expect("vram_limit");
    let (bytes, st) = prove_staged(&limited, &srs, &w).expect("GPU proof under vram_limit");
    assert_eq!(bytes, expected, "under vram_limit");
    assert_eq!(st.a_only, 1, "{st:?}");
    gpu.clone()
        .with_memory(None, cuzk_cuda::DEFAULT_VRAM_MARGIN)
        .expect("limit lifted");
}

/// Two workers on one device at once (each call takes its own context): an
/// allocation failure injected into one worker's partition makes that
/// partition fall back a tier and still give the CPU's proof, while every
/// partition of the other worker takes the top tier and gives its own.
#[cfg(feature = "lab")]
#[test]
fn an_injected_failure_in_one_worker_leaves_the_other_alone() {
    let Some(gpu) = common::gpu() else { return };
    let log = 18;
    let mut rng = ChaCha8Rng::seed_from_u64(1818);
    let (srs, _) = cuzk_setup::generate(Chain::for_log(log, None), &mut rng).expect("parameters");
    let srs = srs.as_srs_ref();
    let count = 6;
    let witnesses: Vec<_> = (0..count)
        .map(|_| {
            synthesize(Chain::for_log(log, Some(Scalar::random(&mut rng))))
                .expect("synthesis")
                .witness
        })
        .collect();
    let r: Vec<Scalar> = (0..count).map(|_| Scalar::random(&mut rng)).collect();
    let s: Vec<Scalar> = (0..count).map(|_| Scalar::random(&mut rng)).collect();
    let (cpu, _) = CpuBackend
        .prove(&mut witnesses.clone(), &srs, &r, &s)
        .expect("CPU proofs");
    let expected: Vec<_> = cpu.iter().map(|p| p.to_bytes()).collect();

    let gpu = CudaBackend::with_placement(gpu.device(), SrsPlacement::Always).expect("backend");
    let tier = DeviceTier::new();
    // Fresh buffers, so that each worker's first allocation is its a|b|c.
    gpu.release_buffers().expect("release");
    gpu.fail_next_allocs(1);
    let before = gpu.staging_counts();
    let start = std::sync::Barrier::new(2);
    let results: Vec<Vec<_>> = std::thread::scope(|sc| {
        let handles: Vec<_> = (0..2)
            .map(|t| {
                let (gpu, tier, srs, start) = (&gpu, &tier, &srs, &start);
                let (witnesses, r, s) = (&witnesses, &r, &s);
                sc.spawn(move || {
                    start.wait();
                    (t..count)
                        .step_by(2)
                        .map(|i| {
                            let mut one = vec![witnesses[i].clone()];
                            let (p, _) = common::prove_on(
                                gpu,
                                tier,
                                "chain 2^18",
                                &mut one,
                                srs,
                                &r[i..=i],
                                &s[i..=i],
                                &mut |_| {},
                            )
                            .unwrap_or_else(|e| panic!("worker {t}, partition {i}: {e}"));
                            (t, i, p[0].to_bytes())
                        })
                        .collect()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("worker thread"))
            .collect()
    });
    for (t, i, bytes) in results.into_iter().flatten() {
        assert_eq!(bytes, expected[i], "worker {t}, partition {i}");
    }
    // The backend counts tiers over both workers: one partition met the
    // failure and fell back to a only, every other took the top tier.
    let st = gpu.staging_counts() - before;
    eprintln!("tiers over both workers: {st:?}");
    assert_eq!(
        (st.all, st.a_only, st.none, st.fallbacks),
        (count as u32 - 1, 1, 0, 1),
        "{st:?}"
    );
    tier.forget("chain 2^18");
}

/// Partitions sharing a pass over the streamed sections (tiles of 4096
/// points, so each section crosses many tiles): the proofs are the CPU
/// backend's and those of one partition at a time, and L, A and B are
/// copied to the device once for the group, not once per partition; so
/// with each tile's others through Pippenger as they are gathered
/// (`split_tile_others`), and so with each section's others beside the
/// next section's tiles (`overlap_others`); then with B_G1 resident.
#[test]
fn partitions_sharing_a_streamed_pass_copy_each_section_once() {
    let Some(gpu) = common::gpu() else { return };
    let log = 18;
    let count = 3;
    let Partitions {
        srs,
        witnesses,
        r,
        s,
    } = partitions(log, count, 1818);
    let srs = srs.as_srs_ref();
    let (cpu, _) = CpuBackend
        .prove(&mut witnesses.clone(), &srs, &r, &s)
        .expect("CPU proofs");
    let cpu: Vec<_> = cpu.iter().map(|p| p.to_bytes()).collect();
    let tuning = cuzk_cuda::GpuTuning {
        stream_tile_points: 4096,
        overlap_others: false,
        ..Default::default()
    };
    let streamed = |k: usize, tuning: &cuzk_cuda::GpuTuning| {
        CudaBackend::with_placement(0, SrsPlacement::Never)
            .expect("streamed backend")
            .with_tuning(tuning)
            .expect("tuning")
            .with_partitions_per_pass(k)
    };
    let run = |k: usize, tuning: &cuzk_cuda::GpuTuning| {
        let (proofs, stats) = streamed(k, tuning)
            .prove(&mut witnesses.clone(), &srs, &r, &s)
            .unwrap_or_else(|e| panic!("{k} per pass: {e}"));
        common::print_stats(
            &format!("2^{log} x{count}, {k} per pass"),
            &stats,
            std::time::Duration::ZERO,
        );
        let bytes: Vec<_> = proofs.iter().map(|p| p.to_bytes()).collect();
        assert!(
            bytes == cpu,
            "{k} per pass, {tuning:?}: the proofs differ from the CPU's"
        );
        stats.streamed_bytes
    };
    let alone = run(1, &tuning);
    let shared = run(count, &tuning);
    let tile_others = cuzk_cuda::GpuTuning {
        split_tile_others: true,
        ..tuning.clone()
    };
    assert_eq!(run(1, &tile_others), alone, "tile by tile, alone");
    assert_eq!(run(count, &tile_others), shared, "tile by tile, shared");
    // Each section's others through Pippenger on side streams while the
    // next section's tiles are copied (`overlap_others`); twice, so the
    // second group reuses the contexts' slots and side streams.
    let overlap = cuzk_cuda::GpuTuning {
        overlap_others: true,
        ..tuning.clone()
    };
    assert_eq!(run(count, &overlap), shared, "others overlapped, shared");
    let twice = streamed(count, &overlap);
    for round in 0..2 {
        let (proofs, _) = twice
            .prove(&mut witnesses.clone(), &srs, &r, &s)
            .unwrap_or_else(|e| panic!("overlapped, round {round}: {e}"));
        let bytes: Vec<_> = proofs.iter().map(|p| p.to_bytes()).collect();
        assert!(bytes == cpu, "overlapped, round {round}: the proofs differ");
    }
    let bi = witnesses[0].b_input_density.count();
    let ni = witnesses[0].input.len();
    let h = srs.h.len() as u64 * 96;
    let witness_sections = (srs.l.len() + srs.a.len() - ni + srs.b_g1.len() - bi) as u64 * 96
        + (srs.b_g2.len() - bi) as u64 * 192;
    let n = count as u64;
    assert_eq!(alone, n * (h + witness_sections), "one partition at a time");
    assert_eq!(shared, n * h + witness_sections, "one pass for the group");
    resident_b_g1_after_a(&gpu, &srs, &witnesses, (&r, &s), &cpu, &overlap);
}

/// A and B_G1 on the device, L, H and B_G2 streamed, the group sharing
/// each pass with `overlap_others`: B's scalars, picked to their own
/// vector (it fits at this size), keep B_G1's resident MSM for after A's
/// in-place pick (`msm_stage_queued`'s late B_G1); the proofs are the
/// CPU's and only the streamed sections cross the bus. (The chain's G1
/// sections differ by a few points, so the room cannot single B_G1 out:
/// prepared as for one partition a pass, the witness sections weigh more
/// than H and A with B_G1 is the best pair.)
fn resident_b_g1_after_a(
    gpu: &CudaBackend,
    srs: &cuzk_prover::backend::SrsRef<'_>,
    witnesses: &[cuzk_prover::synth::PartitionWitness],
    (r, s): (&[Scalar], &[Scalar]),
    cpu: &[[u8; 192]],
    tuning: &cuzk_cuda::GpuTuning,
) {
    use cuzk_prover::{SrsPreparation, WitnessSize};
    let w = &witnesses[0];
    let size = WitnessSize {
        constraints: w.num_constraints(),
        inputs: w.input.len(),
        aux: w.aux.len(),
    };
    let [h, l, a, b_g1] =
        [srs.h.len(), srs.l.len(), srs.a.len(), srs.b_g1.len()].map(|p| p as u64 * 96);
    let b_g2 = srs.b_g2.len() as u64 * 192;
    // Room for the partition prepare_srs counts and two G1 sections with
    // some slack, not for three.
    let room = a + b_g1 + (8 << 20);
    assert!(
        room < l + a + b_g1.min(h),
        "two G1 sections, not three: h {h} l {l} a {a} b_g1 {b_g1}"
    );
    gpu.release_buffers().expect("release");
    let (free, total) = gpu.memory().expect("memory");
    let (n, aux) = (size.constraints as u64, size.aux as u64);
    let partition = (2 * n + 2 * aux) * 32 + aux / 8 + (3 << 30);
    let _lift = Lift(gpu.clone());
    let limited = gpu
        .clone()
        .with_memory(
            Some(total - free + partition + room),
            cuzk_cuda::DEFAULT_VRAM_MARGIN,
        )
        .expect("vram_limit")
        .with_tuning(tuning)
        .expect("tuning")
        .with_partitions_per_pass(1);
    let handle = match limited.prepare_srs(srs, &size).expect("prepare") {
        SrsPreparation::Ready { srs, resident, .. } => {
            assert_eq!(
                resident,
                [Section::A, Section::BG1],
                "A and B_G1 resident (h {h} l {l} a {a} b_g1 {b_g1} b_g2 {b_g2})"
            );
            srs
        }
        _ => panic!("a partly resident SRS is ready"),
    };
    let count = witnesses.len();
    let limited = limited.with_partitions_per_pass(count);
    let on = srs.on_device(&handle);
    let (proofs, stats) = limited
        .prove(&mut witnesses.to_vec(), &on, r, s)
        .expect("GPU proofs, A and B_G1 resident");
    common::print_stats(
        "A and B_G1 resident, shared",
        &stats,
        std::time::Duration::ZERO,
    );
    let bytes: Vec<_> = proofs.iter().map(|p| p.to_bytes()).collect();
    assert!(
        bytes == cpu,
        "A and B_G1 resident, shared: the proofs differ from the CPU's"
    );
    let bi = w.b_input_density.count() as u64;
    assert_eq!(
        stats.streamed_bytes,
        count as u64 * h + l + b_g2 - bi * 192,
        "H for each partition, L and B_G2 once for the group"
    );
    drop(handle);
}

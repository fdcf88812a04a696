//! Small synthetic circuits: parameters from `cuzk_setup::generate` and
//! `cuzk_setup::generate_streaming` equal bellperson's byte for byte, and
//! bellperson proves and verifies with them; products computed off the CPU
//! (the `Accelerator` hook) give the same bytes, and wrong ones are caught.

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use bellperson::groth16::{
    create_random_proof, generate_random_parameters, prepare_verifying_key, verify_proof,
    Parameters,
};
use blstrs::{Bls12, Scalar};
use std::sync::Mutex;

use cuzk_prover::srs::{read_vk, write_params, ParamsFile, SubgroupCheck};
use cuzk_setup::{
    generate, generate_streaming, generate_streaming_from, no_progress, Accelerator, Blank,
    Progress, SetupError, Stage, ToxicWaste,
};
use ff::{Field, PrimeField};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

/// `x^(2^k)` by squarings, a boolean `b`, and public inputs
/// `out = x^(2^k) + b`, `y = 3x`, `z = b`; `w` appears only in C, `v` only
/// in B (so the a and b queries lose points at infinity).
#[derive(Clone)]
struct Squares {
    x: Option<Scalar>,
    b: Option<bool>,
    k: usize,
    /// Allocate a variable no constraint uses.
    unconstrained: bool,
}

impl Squares {
    fn outputs(x: Scalar, b: bool, k: usize) -> Vec<Scalar> {
        let mut cur = x;
        for _ in 0..k {
            cur = cur.square();
        }
        let b = if b { Scalar::ONE } else { Scalar::ZERO };
        vec![cur + b, x * Scalar::from(3u64), b, Scalar::from(7u64) * x]
    }
}

impl Circuit<Scalar> for Squares {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let one = CS::one();
        let x_val = self.x;
        let x = cs.alloc(|| "x", || x_val.ok_or(SynthesisError::AssignmentMissing))?;
        let (mut cur, mut cur_val) = (x, x_val);
        for i in 0..self.k {
            let next_val = cur_val.map(|v| v.square());
            let next = cs.alloc(
                || format!("sq {i}"),
                || next_val.ok_or(SynthesisError::AssignmentMissing),
            )?;
            cs.enforce(
                || format!("sq {i} c"),
                |lc| lc + cur,
                |lc| lc + cur,
                |lc| lc + next,
            );
            (cur, cur_val) = (next, next_val);
        }
        let b_val = self.b.map(|b| if b { Scalar::ONE } else { Scalar::ZERO });
        let b = cs.alloc(|| "b", || b_val.ok_or(SynthesisError::AssignmentMissing))?;
        cs.enforce(|| "bool", |lc| lc + b, |lc| lc + one - b, |lc| lc);
        if self.unconstrained {
            cs.alloc(|| "free", || Ok(Scalar::ONE))?;
        }

        let out_val = cur_val.zip(b_val).map(|(c, b)| c + b);
        let out = cs.alloc_input(
            || "out",
            || out_val.ok_or(SynthesisError::AssignmentMissing),
        )?;
        cs.enforce(|| "out", |lc| lc + cur + b, |lc| lc + one, |lc| lc + out);

        let y_val = x_val.map(|x| x * Scalar::from(3u64));
        let y = cs.alloc_input(|| "y", || y_val.ok_or(SynthesisError::AssignmentMissing))?;
        cs.enforce(
            || "y",
            |lc| lc + x,
            |lc| lc + (Scalar::from(3u64), one),
            |lc| lc + y,
        );

        let z = cs.alloc_input(|| "z", || b_val.ok_or(SynthesisError::AssignmentMissing))?;
        cs.enforce(|| "z", |lc| lc + one, |lc| lc + b, |lc| lc + z);

        // w = 7x appears only in C; v = 7x only in B (and as an input).
        let w_val = x_val.map(|x| Scalar::from(7u64) * x);
        let w = cs.alloc(|| "w", || w_val.ok_or(SynthesisError::AssignmentMissing))?;
        cs.enforce(
            || "w",
            |lc| lc + (Scalar::from(7u64), one),
            |lc| lc + x,
            |lc| lc + w,
        );
        let v = cs.alloc_input(|| "v", || w_val.ok_or(SynthesisError::AssignmentMissing))?;
        cs.enforce(|| "v", |lc| lc, |lc| lc + v - w, |lc| lc);
        Ok(())
    }
}

fn blank(k: usize) -> Squares {
    Squares {
        x: None,
        b: None,
        k,
        unconstrained: false,
    }
}

fn bellperson_bytes(params: &Parameters<Bls12>) -> Vec<u8> {
    let mut v = Vec::new();
    params.write(&mut v).expect("write to Vec");
    v
}

#[test]
fn equals_bellperson_and_proves() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Sizes around powers of two (the domain size is the constraint count
    // rounded up): 11, 14, 21, 70 and 311 constraints.
    for (k, seed) in [(0usize, 1u64), (3, 2), (10, 3), (59, 4), (300, 5)] {
        let (srs, stats) = generate(blank(k), &mut ChaCha20Rng::seed_from_u64(seed)).expect("ours");
        assert_eq!(stats.inputs, 5);
        assert_eq!(stats.constraints, k + 6 + 5);

        let theirs = generate_random_parameters::<Bls12, _, _>(
            blank(k),
            &mut ChaCha20Rng::seed_from_u64(seed),
        )
        .expect("bellperson");
        let c = srs.counts();
        assert_eq!(c.h, theirs.h.len(), "k={k}");
        assert_eq!(c.l, theirs.l.len());
        assert_eq!(c.a, theirs.a.len());
        assert_eq!(c.b_g1, theirs.b_g1.len());
        assert_eq!(c.b_g2, theirs.b_g2.len());
        assert_eq!(c.ic, theirs.vk.ic.len());
        // v is in no A row and w in no B row: the queries really filter.
        assert!(c.a < c.ic + c.l && c.b_g1 < c.ic + c.l);

        let path = dir.path().join(format!("k{k}.params"));
        write_params(&srs, &path).expect("write");
        let ours = std::fs::read(&path).expect("read back");
        assert!(ours == bellperson_bytes(&theirs), "k={k}: files differ");

        let file = ParamsFile::open(&path).expect("ParamsFile");
        assert_eq!(file.counts(), c);
        file.decode(SubgroupCheck::Full).expect("decode");

        // Prove with bellperson from our file; verify with our vk.
        let params = Parameters::<Bls12>::read(std::fs::File::open(&path).expect("open"), true)
            .expect("bellperson reads our file");
        let pvk = prepare_verifying_key(&params.vk);
        let mut rng = ChaCha20Rng::seed_from_u64(100 + seed);
        for (x, b) in [
            (Scalar::from(5u64), true),
            (Scalar::random(&mut rng), false),
        ] {
            let circuit = Squares {
                x: Some(x),
                b: Some(b),
                k,
                unconstrained: false,
            };
            let proof = create_random_proof(circuit, &params, &mut rng).expect("prove");
            let mut inputs = Squares::outputs(x, b, k);
            assert!(
                verify_proof(&pvk, &proof, &inputs).expect("verify"),
                "k={k}"
            );
            inputs[1] += Scalar::ONE;
            assert!(
                !verify_proof(&pvk, &proof, &inputs).expect("verify"),
                "k={k}"
            );
        }
    }
}

#[test]
fn unconstrained_variable_is_refused_like_bellperson() {
    let circuit = Squares {
        unconstrained: true,
        ..blank(2)
    };
    let err = generate(circuit.clone(), &mut ChaCha20Rng::seed_from_u64(9)).expect_err("refused");
    assert!(
        matches!(err, SetupError::UnconstrainedVariable { index } if index == 4),
        "{err}"
    );
    assert!(matches!(
        generate_random_parameters::<Bls12, _, _>(circuit, &mut ChaCha20Rng::seed_from_u64(9)),
        Err(SynthesisError::UnconstrainedVariable)
    ));
}

#[test]
fn synthesis_errors_propagate() {
    struct Failing;
    impl Circuit<Scalar> for Failing {
        fn synthesize<CS: ConstraintSystem<Scalar>>(
            self,
            _: &mut CS,
        ) -> Result<(), SynthesisError> {
            Err(SynthesisError::Unsatisfiable)
        }
    }
    let err = generate(Failing, &mut ChaCha20Rng::seed_from_u64(1)).expect_err("fails");
    assert!(matches!(
        err,
        SetupError::Synthesis(SynthesisError::Unsatisfiable)
    ));
    // The scalar field is BLS12-381's.
    assert_eq!(Scalar::NUM_BITS, 255);
}

/// The file names in `dir`.
fn listing(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn streamed_equals_bellperson_with_ordered_progress() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (k, seed) in [(0usize, 21u64), (3, 22), (10, 23), (300, 24)] {
        let (params, vk) = (dir.path().join("s.params"), dir.path().join("s.vk"));
        let tw = ToxicWaste::random(&mut ChaCha20Rng::seed_from_u64(seed));
        let reports = Mutex::new(Vec::<Progress>::new());
        let record = |p: &Progress| reports.lock().expect("lock").push(*p);
        let stats = generate_streaming(|| blank(k), &tw, &params, &vk, &record).expect("stream");
        assert_eq!(stats.constraints, k + 6 + 5);
        assert_eq!(stats.inputs, 5);

        let theirs = generate_random_parameters::<Bls12, _, _>(
            blank(k),
            &mut ChaCha20Rng::seed_from_u64(seed),
        )
        .expect("bellperson");
        let ours = std::fs::read(&params).expect("read");
        assert!(ours == bellperson_bytes(&theirs), "k={k}: files differ");
        assert_eq!(stats.params_bytes, ours.len() as u64);
        let file = ParamsFile::open(&params).expect("ParamsFile");
        assert_eq!(std::fs::read(&vk).expect("vk"), file.vk_bytes());
        read_vk(&vk).expect("vk decodes");
        assert_eq!(listing(dir.path()), ["s.params", "s.vk"]);

        // Stages in order, points counted up to the file's total.
        let reports = reports.into_inner().expect("lock");
        let stages: Vec<Stage> = reports.iter().map(|p| p.stage).collect();
        assert!(stages.windows(2).all(|w| w[0] <= w[1]), "{stages:?}");
        assert_eq!(stages.first(), Some(&Stage::Count));
        assert_eq!(stages.last(), Some(&Stage::Done));
        for s in [Stage::Evaluate, Stage::H, Stage::L, Stage::BG2] {
            assert!(stages.contains(&s), "{s:?} reported");
        }
        let last = reports.last().expect("reports");
        let c = file.counts();
        let points = (c.ic + c.h + c.l + c.a + c.b_g1 + c.b_g2) as u64;
        assert_eq!((last.points_done, last.points_total), (points, points));
        assert!(reports
            .windows(2)
            .all(|w| w[0].points_done <= w[1].points_done));
        let evaluated = reports
            .iter()
            .rfind(|p| p.stage == Stage::Evaluate)
            .expect("evaluate reported");
        assert_eq!(evaluated.stage_done, stats.constraints as u64);
    }
}

#[test]
fn streaming_refuses_like_the_in_memory_generator_and_leaves_no_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (params, vk) = (dir.path().join("u.params"), dir.path().join("u.vk"));
    let circuit = Squares {
        unconstrained: true,
        ..blank(2)
    };
    let tw = ToxicWaste::random(&mut ChaCha20Rng::seed_from_u64(9));
    let err = generate_streaming(|| circuit.clone(), &tw, &params, &vk, &no_progress)
        .expect_err("refused");
    assert!(
        matches!(err, SetupError::UnconstrainedVariable { index } if index == 4),
        "{err}"
    );
    assert!(listing(dir.path()).is_empty(), "{:?}", listing(dir.path()));

    let zero_delta = ToxicWaste {
        delta: Scalar::ZERO,
        ..tw
    };
    let err = generate_streaming(|| blank(2), &zero_delta, &params, &vk, &no_progress)
        .expect_err("degenerate");
    assert!(matches!(err, SetupError::Degenerate), "{err}");
    assert!(listing(dir.path()).is_empty());

    // An unwritable place fails before any work, naming the path.
    let missing = dir.path().join("no/such/dir/x.params");
    let err = generate_streaming(|| blank(2), &tw, &missing, &vk, &no_progress)
        .expect_err("no directory");
    assert!(matches!(err, SetupError::Io { .. }), "{err}");
    assert!(err.to_string().contains("no/such/dir"), "{err}");
}

/// Products on this CPU through the [`Accelerator`] hook, in Jacobian form
/// with whatever Z blstrs leaves (as a GPU's come); `skew` multiplies by
/// `s + skew` instead (a device that computes wrong products).
struct CpuProducts {
    bases: Mutex<Option<(blstrs::G1Projective, blstrs::G2Projective)>>,
    skew: u64,
}

impl CpuProducts {
    fn new(skew: u64) -> Self {
        CpuProducts {
            bases: Mutex::new(None),
            skew,
        }
    }

    fn bases(&self) -> Result<(blstrs::G1Projective, blstrs::G2Projective), String> {
        (*self.bases.lock().expect("lock")).ok_or_else(|| "no tables".to_string())
    }
}

impl Accelerator for CpuProducts {
    fn name(&self) -> String {
        "this CPU (a test)".into()
    }

    fn load(
        &self,
        g1: &cuzk_setup::fixed_base::FixedBaseTable<cuzk_setup::curve::G1>,
        g2: &cuzk_setup::fixed_base::FixedBaseTable<cuzk_setup::curve::G2>,
    ) -> Result<(), String> {
        // The tables' first points are 1 * base; blst's and blstrs' layouts
        // are the same.
        let (b1, b2) = (g1.points()[0], g2.points()[0]);
        let b1: blstrs::G1Affine = unsafe { std::mem::transmute(b1) };
        let b2: blstrs::G2Affine = unsafe { std::mem::transmute(b2) };
        *self.bases.lock().expect("lock") = Some((b1.into(), b2.into()));
        Ok(())
    }

    fn g1(&self, scalars: &[Scalar], out: &mut [blst::blst_p1]) -> Result<(), String> {
        let (base, _) = self.bases()?;
        for (o, s) in out.iter_mut().zip(scalars) {
            let p = base * (*s + Scalar::from(self.skew));
            *o = unsafe { std::mem::transmute::<blstrs::G1Projective, blst::blst_p1>(p) };
        }
        Ok(())
    }

    fn g2(&self, scalars: &[Scalar], out: &mut [blst::blst_p2]) -> Result<(), String> {
        let (_, base) = self.bases()?;
        for (o, s) in out.iter_mut().zip(scalars) {
            let p = base * (*s + Scalar::from(self.skew));
            *o = unsafe { std::mem::transmute::<blstrs::G2Projective, blst::blst_p2>(p) };
        }
        Ok(())
    }
}

#[test]
fn products_off_the_cpu_give_the_same_bytes_and_wrong_ones_stop_the_generation() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tw = ToxicWaste::random(&mut ChaCha20Rng::seed_from_u64(31));
    let file = |name: &str| dir.path().join(name);
    // k = 300: the a and b sections lose points at infinity (zero scalars
    // are filtered before any product).
    let (k, seed_params) = (300, file("cpu.params"));
    generate_streaming(
        || blank(k),
        &tw,
        &seed_params,
        &file("cpu.vk"),
        &no_progress,
    )
    .expect("on the CPU");
    let good = CpuProducts::new(0);
    let stats = generate_streaming_from(
        &Blank(|| blank(k)),
        &tw,
        &file("off.params"),
        &file("off.vk"),
        &no_progress,
        Some(&good),
    )
    .expect("off the CPU");
    assert!(stats.g1_muls > 0 && stats.g2_muls > 0);
    for ext in ["params", "vk"] {
        let (a, b) = (file(&format!("cpu.{ext}")), file(&format!("off.{ext}")));
        assert!(
            std::fs::read(&a).expect("cpu") == std::fs::read(&b).expect("off"),
            ".{ext} files differ"
        );
    }

    let wrong = CpuProducts::new(1);
    let err = generate_streaming_from(
        &Blank(|| blank(k)),
        &tw,
        &file("bad.params"),
        &file("bad.vk"),
        &no_progress,
        Some(&wrong),
    )
    .expect_err("a wrong product is caught");
    assert!(
        matches!(&err, SetupError::Accelerator { name, .. } if name.contains("a test")),
        "{err}"
    );
    assert!(err.to_string().contains("differs from this CPU's"), "{err}");
    assert_eq!(
        listing(dir.path()),
        ["cpu.params", "cpu.vk", "off.params", "off.vk"]
    );
}

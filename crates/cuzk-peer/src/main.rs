//! `cuzk-peer`: stock supraseal-c2 (crates.io 0.1.2, the GPU prover behind
//! bellperson's `cuda-supraseal` feature, which Curio's reference daemon
//! uses) proving one partition of a fixture proof, for `cuzk-lab
//! peer-bench`, which runs it as a child and compares its proof with ours.
//!
//! The witness is ours (the engine's synthesis of that partition), the
//! `.params` file the fixtures' own, r = 7 and s = 11 (peer-bench proves
//! with the same). It proves once untimed (the SRS goes to the device,
//! buffers are allocated), then `--runs` times, each timed from a witness
//! in host memory to the proof, and prints one JSON line ([`Report`]).
//!
//! A binary of its own because supraseal-c2 and cuzk's CUDA backend both
//! compile sppark's kernels, whose symbols clash at link time.

use anyhow::Result;
use clap::Parser;
use cuzk_bench::select::FixtureArgs;
use cuzk_core::ProofKind;
use serde::Serialize;

#[derive(Parser, Debug)]
#[command(
    about = "supraseal-c2 proving one partition of a fixture proof (for cuzk-lab peer-bench)"
)]
struct Cli {
    /// porep, snap, window-post or winning-post.
    #[arg(long, value_parser = parse_kind, default_value = "porep")]
    kind: ProofKind,
    /// The partition proved.
    #[arg(long, default_value_t = 0)]
    partition: usize,
    /// Timed proofs (after one untimed).
    #[arg(long, default_value_t = 3)]
    runs: usize,
    #[command(flatten)]
    fixtures: FixtureArgs,
}

fn parse_kind(s: &str) -> Result<ProofKind, String> {
    ProofKind::parse(s)
        .ok_or_else(|| format!("unknown kind {s:?}: use porep, snap, window-post or winning-post"))
}

/// What the peer measured, one JSON line on stdout.
#[derive(Debug, Default, Serialize)]
pub struct Report {
    pub prover: String,
    pub constraints: usize,
    pub synthesis_ms: f64,
    pub srs_load_ms: f64,
    /// Each timed call, ms.
    pub wall_ms: Vec<f64>,
    /// The proof, 192 bytes compressed (bellperson's encoding), hex.
    pub proof_hex: String,
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    if cli.runs == 0 {
        anyhow::bail!("--runs must be at least 1");
    }
    let report = prove(&cli)?;
    println!("{}", serde_json::to_string(&report)?);
    Ok(())
}

#[cfg(not(feature = "supraseal"))]
fn prove(_cli: &Cli) -> Result<Report> {
    anyhow::bail!(
        "cuzk-peer was built without supraseal-c2: rebuild it with `--features supraseal` (see its Cargo.toml)"
    )
}

#[cfg(feature = "supraseal")]
fn prove(cli: &Cli) -> Result<Report> {
    use std::time::Instant;

    use blstrs::{G1Affine, G2Affine, Scalar};
    use cuzk_core::params::param_files;
    use cuzk_core::prover::proof_circuits;
    use group::prime::PrimeCurveAffine;

    /// A proof as supraseal writes it: blst affine points, in this order.
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct RawProof {
        a: G1Affine,
        b: G2Affine,
        c: G1Affine,
    }
    let ms = |t: Instant| t.elapsed().as_secs_f64() * 1000.0;

    let sel = cli.fixtures.selection();
    let (_, req) = cuzk_bench::commands::fixture_request(&sel, cli.kind)?;
    let circuits = proof_circuits(&req)?;
    let source = circuits.source();
    if cli.partition >= source.partitions() {
        anyhow::bail!(
            "--partition {}: the proof has {}",
            cli.partition,
            source.partitions()
        );
    }
    let params = param_files(req.proof_type)?.params;
    let t = Instant::now();
    let (w, _) = cuzk_core::r1cs_manager::synthesize_on_host(&sel.params, source, cli.partition)?;
    let synthesis_ms = ms(t);

    let t = Instant::now();
    let srs = supraseal_c2::SRS::try_new(params.clone(), true)
        .map_err(|e| anyhow::anyhow!("supraseal-c2 SRS from {}: {e}", params.display()))?;
    let srs_load_ms = ms(t);
    let mut proof = [RawProof {
        a: G1Affine::identity(),
        b: G2Affine::identity(),
        c: G1Affine::identity(),
    }];
    let (r, s) = (Scalar::from(7u64), Scalar::from(11u64));
    let mut call = || {
        supraseal_c2::generate_groth16_proof(
            &[w.a.as_ptr()],
            &[w.b.as_ptr()],
            &[w.c.as_ptr()],
            w.a.len(),
            &[w.input.as_ptr()],
            &[w.aux.as_ptr()],
            w.input.len(),
            w.aux.len(),
            w.a_aux_density.words(),
            w.b_input_density.words(),
            w.b_aux_density.words(),
            w.a_aux_density.count(),
            w.b_input_density.count(),
            w.b_aux_density.count(),
            1,
            &[r],
            &[s],
            &mut proof,
            &srs,
        )
    };
    call();
    let mut wall_ms = Vec::new();
    for _ in 0..cli.runs {
        let t = Instant::now();
        call();
        wall_ms.push(ms(t));
    }
    let p = proof[0];
    let mut bytes = p.a.to_compressed().to_vec();
    bytes.extend_from_slice(&p.b.to_compressed());
    bytes.extend_from_slice(&p.c.to_compressed());
    Ok(Report {
        prover: "supraseal-c2 0.1.2".into(),
        constraints: w.a.len(),
        synthesis_ms,
        srs_load_ms,
        wall_ms,
        proof_hex: hex::encode(bytes),
    })
}

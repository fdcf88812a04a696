//! `gen-params`: fast local (INSECURE) Groth16 parameters for a sector
//! size's circuits, optionally timed side by side with bellperson's
//! generator (the one filecoin-proofs uses).

use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Result};
use cuzk_setup::{generate_filecoin, time_bellperson, FilecoinCircuit};

/// The circuits of `size` named by `kind` (`all` or a proof kind).
pub fn circuits(size: cuzk_fixtures::SectorSize, kind: &str) -> Result<Vec<FilecoinCircuit>> {
    let all = cuzk_fixtures::circuits(size);
    let pick = |f: fn(&FilecoinCircuit) -> bool| all.into_iter().filter(f).collect::<Vec<_>>();
    Ok(match kind {
        "all" => all.to_vec(),
        "porep" => pick(|c| matches!(c, FilecoinCircuit::Seal(_))),
        "snap" => pick(|c| matches!(c, FilecoinCircuit::Update(_))),
        "window-post" => pick(|c| matches!(c, FilecoinCircuit::Window(_))),
        "winning-post" => pick(|c| matches!(c, FilecoinCircuit::Winning(_))),
        other => bail!("unknown kind {other:?}: use all, porep, snap, window-post or winning-post"),
    })
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Generates (or, without `force`, keeps) each circuit's files in `dir`.
pub fn run(
    circuits: &[FilecoinCircuit],
    dir: &Path,
    seed: Option<u64>,
    force: bool,
    compare: bool,
) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    eprintln!(
        "WARNING: these Groth16 parameters are INSECURE (seeded toxic waste), for local testing only."
    );
    for &circuit in circuits {
        let seed = seed.unwrap_or_else(|| cuzk_fixtures::params_seed(circuit));
        let t = Instant::now();
        let out = generate_filecoin(circuit, dir, seed, force || compare)?;
        let wall = t.elapsed();
        let Some(st) = out.stats else {
            println!("{circuit}: kept existing {}", out.params.display());
            continue;
        };
        println!(
            "{circuit}: constraints={} inputs={} aux={} domain=2^{} g1_muls={} g2_muls={} \
             total_ms={:.0} cpu_ms={:.0}",
            st.constraints,
            st.inputs,
            st.aux,
            st.domain_log,
            st.g1_muls,
            st.g2_muls,
            ms(wall),
            ms(st.cpu)
        );
        println!(
            "  stages_ms synthesis={:.0} scalars={:.0} tables={:.0} h={:.0} ic_l={:.0} a_b_g1={:.0} b_g2={:.0}",
            ms(st.synthesis),
            ms(st.scalars),
            ms(st.tables),
            ms(st.h),
            ms(st.ic_l),
            ms(st.a_b_g1),
            ms(st.b_g2)
        );
        println!("  wrote {} and {}", out.params.display(), out.vk.display());
        if compare {
            eprintln!("  timing bellperson's generator on the same circuit (slow)...");
            let theirs = time_bellperson(circuit, seed)?;
            println!(
                "  bellperson total_ms={:.0} cpu_ms={:.0}",
                ms(theirs.wall),
                ms(theirs.cpu)
            );
            println!(
                "  speedup_vs_bellperson wall={:.1} cpu={:.1}",
                theirs.wall.as_secs_f64() / wall.as_secs_f64(),
                theirs.cpu.as_secs_f64() / st.cpu.as_secs_f64()
            );
        }
    }
    Ok(())
}

//! `gen-params`: fast local (INSECURE) Groth16 parameters for a sector
//! size's circuits, optionally timed side by side with bellperson's
//! generator (the one filecoin-proofs uses).

use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use cuzk_setup::{
    generate_filecoin_from, time_bellperson, Accelerator, FilecoinCircuit, GeneratedFiles,
};

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

/// How `run` generates.
#[derive(Clone, Copy, Debug, Default)]
pub struct How {
    /// RNG seed [default: the fixtures' seed of each circuit].
    pub seed: Option<u64>,
    /// Regenerate complete files.
    pub force: bool,
    /// Also time bellperson's generator.
    pub compare: bool,
    /// Matrices from the recorded constraint system ([`recorded_system`]).
    pub recorded: bool,
    /// The fixed-base products on this CUDA device.
    pub gpu: Option<usize>,
}

/// The shape name the daemon keeps `circuit`'s recorded system under.
pub fn shape_of(circuit: FilecoinCircuit) -> String {
    match circuit {
        FilecoinCircuit::Seal(p) => cuzk_circuits::porep_shape(p),
        FilecoinCircuit::Window(p) | FilecoinCircuit::Winning(p) => cuzk_circuits::post_shape(p),
        FilecoinCircuit::Update(p) => cuzk_circuits::snap_shape(p),
    }
}

/// The constraint system recorded for `circuit`'s shape under
/// `<dir>/r1cs`, where the daemon on parameter directory `dir` keeps it.
pub fn recorded_system(circuit: FilecoinCircuit, dir: &Path) -> Result<cuzk_r1cs::CompiledCs> {
    let (key, path) = cuzk_core::r1cs_manager::recorded_file(dir, &shape_of(circuit));
    if !path.exists() {
        bail!(
            "{circuit}: no recorded constraint system at {} (record one with `cuzk-lab \
             synth-bench --child record`, or leave out --recorded)",
            path.display()
        );
    }
    cuzk_r1cs::load(&path, &key).with_context(|| format!("{circuit}: {}", path.display()))
}

/// Generates (or, without `force`, keeps) each circuit's files in `dir`.
pub fn run(circuits: &[FilecoinCircuit], dir: &Path, how: How) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    eprintln!(
        "WARNING: these Groth16 parameters are INSECURE (seeded toxic waste), for local testing only."
    );
    let accel = how.gpu.map(crate::gpu_products::on_device).transpose()?;
    let accel = accel.as_deref();
    for &circuit in circuits {
        let seed = how
            .seed
            .unwrap_or_else(|| cuzk_fixtures::params_seed(circuit));
        let force = how.force || how.compare;
        let recorded = match how.recorded && (force || !cuzk_setup::params_complete(circuit, dir)?)
        {
            true => Some(recorded_system(circuit, dir)?),
            false => None,
        };
        let t = Instant::now();
        let out = match &recorded {
            Some(cs) => generate_checked(circuit, cs, dir, seed, accel)?,
            None => generate_with_bar(circuit, None, dir, seed, force, accel)?,
        };
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
        println!(
            "  params_bytes={} peak_rss_mib={} count_ms={:.0}",
            st.params_bytes,
            st.peak_rss.map_or("?".into(), |b| (b >> 20).to_string()),
            ms(st.count)
        );
        println!("  wrote {} and {}", out.params.display(), out.vk.display());
        if how.compare {
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

/// Generates from the recording `cs` while one more thread counts the
/// blank circuit (a pass without linear combinations, hidden behind the
/// points); a recording of another shape (a stale file, another circuit's)
/// is refused after the fact and the files it made are removed.
fn generate_checked(
    circuit: FilecoinCircuit,
    cs: &cuzk_r1cs::CompiledCs,
    dir: &Path,
    seed: u64,
    accel: Option<&dyn Accelerator>,
) -> Result<GeneratedFiles> {
    let (out, counted) = std::thread::scope(|s| {
        let count = s.spawn(|| circuit.shape());
        let out = generate_with_bar(circuit, Some(cs), dir, seed, true, accel);
        (out, count.join())
    });
    let out = out?;
    let counted = counted
        .map_err(|_| anyhow::anyhow!("{circuit}: counting the blank circuit panicked"))??;
    let recorded = cuzk_setup::Matrices::shape(cs)?;
    if counted != recorded {
        for f in [&out.params, &out.vk] {
            let _ = std::fs::remove_file(f);
        }
        bail!(
            "{circuit}: the recorded constraint system {} has {recorded:?} but the circuit \
             {counted:?}; its parameters were removed (record it again)",
            cs.key
        );
    }
    Ok(out)
}

/// `generate_filecoin_from` with a bar of points written (rate, ETA) once
/// the section sizes are known, a spinner before.
fn generate_with_bar(
    circuit: FilecoinCircuit,
    recorded: Option<&cuzk_r1cs::CompiledCs>,
    dir: &Path,
    seed: u64,
    force: bool,
    accel: Option<&dyn Accelerator>,
) -> Result<GeneratedFiles> {
    let first = match recorded {
        Some(_) => "reading the recorded constraint system",
        None => "synthesizing the blank circuit",
    };
    let spinner = crate::progress::spinner(format!("{circuit}: {first}"));
    let bar = std::sync::Mutex::new(None::<indicatif::ProgressBar>);
    let out = generate_filecoin_from(
        circuit,
        recorded,
        dir,
        seed,
        force,
        &|p| {
            if p.points_total == 0 {
                spinner.set_message(format!("{circuit}: {}", p.stage));
                return;
            }
            let mut bar = bar.lock().unwrap_or_else(|e| e.into_inner());
            let bar = bar.get_or_insert_with(|| {
                spinner.finish_and_clear();
                crate::progress::bar(p.points_total)
            });
            bar.set_message(format!("{circuit}: {}", p.stage));
            bar.set_position(p.points_done);
        },
        accel,
    );
    spinner.finish_and_clear();
    if let Some(bar) = bar.into_inner().unwrap_or_else(|e| e.into_inner()) {
        bar.finish_and_clear();
    }
    Ok(out?)
}

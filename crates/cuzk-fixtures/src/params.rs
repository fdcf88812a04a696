//! Insecure local Groth16 parameters for a sector size's four circuits.
//!
//! Generated with cuzk-setup's fast generator from fixed seeds, into the
//! process' parameter cache, under the names filecoin-proofs looks for. The
//! toxic waste is known: these parameters are for tests only.

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use cuzk_setup::{generate_filecoin_with, FilecoinCircuit};
use tracing::{info, warn};

use crate::{Progress, SectorSize};

/// The seed of each circuit's parameters (regenerated files are identical).
pub fn seed(circuit: FilecoinCircuit) -> u64 {
    0xc0_2c00_0000
        + match circuit {
            FilecoinCircuit::Seal(_) => 1,
            FilecoinCircuit::Update(_) => 2,
            FilecoinCircuit::Winning(_) => 3,
            FilecoinCircuit::Window(_) => 4,
        }
}

fn name(circuit: FilecoinCircuit) -> &'static str {
    match circuit {
        FilecoinCircuit::Seal(_) => "porep",
        FilecoinCircuit::Update(_) => "snap",
        FilecoinCircuit::Winning(_) => "winning-post",
        FilecoinCircuit::Window(_) => "window-post",
    }
}

/// The four circuits of `size`, cheapest first.
pub fn circuits(size: SectorSize) -> [FilecoinCircuit; 4] {
    [
        FilecoinCircuit::Window(size.window_proof()),
        FilecoinCircuit::Winning(size.winning_proof()),
        FilecoinCircuit::Update(size.update_proof()),
        FilecoinCircuit::Seal(size.seal_proof()),
    ]
}

/// Rough generation time on 2 cores.
fn estimate_secs(size: SectorSize, circuit: FilecoinCircuit) -> u64 {
    // Seconds at 2 KiB; larger sizes scale with their constraint counts.
    let base = match circuit {
        FilecoinCircuit::Seal(_) => 50,
        FilecoinCircuit::Update(_) => 30,
        FilecoinCircuit::Winning(_) => 3,
        FilecoinCircuit::Window(_) => 1,
    };
    let scale = match (size, circuit) {
        (SectorSize::S2KiB, _) => 1,
        (_, FilecoinCircuit::Seal(_)) => 2 * (size.bytes().ilog2() as u64 - 10),
        (SectorSize::S8MiB, _) => 6,
        (SectorSize::S512MiB, _) => 35,
        _ => 80,
    };
    base * scale
}

/// Whether complete `.params` and `.vk` files of every circuit of `size` are
/// in `dir`.
pub(crate) fn complete(size: SectorSize, dir: &Path) -> bool {
    circuits(size).into_iter().all(|c| {
        cuzk_setup::param_file_names(c, dir)
            .is_ok_and(|(_, params, vk)| params.is_file() && vk.is_file())
    })
}

/// Generates `circuit`'s files in `dir` (keeping a complete pair) on a
/// thread of its own, turning the generator's reports into
/// [`Progress::Advanced`] (points written of all).
fn generate_reporting(
    circuit: FilecoinCircuit,
    dir: &Path,
    step: &str,
    progress: &mut dyn FnMut(Progress),
) -> Result<cuzk_setup::GeneratedFiles, cuzk_setup::SetupError> {
    let (tx, rx) = std::sync::mpsc::channel::<cuzk_setup::Progress>();
    std::thread::scope(|scope| {
        let worker = scope.spawn(move || {
            generate_filecoin_with(circuit, dir, seed(circuit), false, &move |p| {
                let _ = tx.send(*p);
            })
        });
        for p in rx {
            if p.points_total > 0 {
                progress(Progress::Advanced {
                    step: step.to_string(),
                    done: p.points_done,
                    total: p.points_total,
                });
            }
        }
        worker
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// Makes sure `.params` and `.vk` exist in `dir` for every circuit of
/// `size`, generating the missing ones.
pub(crate) fn ensure_params(
    size: SectorSize,
    dir: &Path,
    progress: &mut dyn FnMut(Progress),
) -> Result<()> {
    for circuit in circuits(size) {
        let step = format!("{size} parameters {}", name(circuit));
        let (_, params, vk) = cuzk_setup::param_file_names(circuit, dir)?;
        let existed = params.is_file() && vk.is_file();
        if !existed {
            // cuzk-setup warns that the parameters are insecure.
            progress(Progress::Started {
                step: step.clone(),
                estimate_secs: estimate_secs(size, circuit),
            });
        }
        let t = Instant::now();
        // Keeps a complete existing pair; (re)generates anything else.
        let out = generate_reporting(circuit, dir, &step, progress)
            .with_context(|| format!("generating {} parameters", name(circuit)))?;
        match out.stats {
            None => progress(Progress::Reused { step }),
            Some(stats) => {
                if existed {
                    warn!(circuit = %circuit, "incomplete parameter files were regenerated");
                }
                info!(
                    circuit = %circuit,
                    secs = t.elapsed().as_secs_f64(),
                    constraints = stats.constraints,
                    "parameters written"
                );
                progress(Progress::Done {
                    step,
                    secs: t.elapsed().as_secs_f64(),
                });
            }
        }
    }
    std::fs::write(
        dir.join("INSECURE-TEST-PARAMETERS.txt"),
        "The Groth16 parameters in this directory were generated locally by cuzk \
         (cuzk-bench gen-fixtures / gen-params) from fixed seeds.\nThey are INSECURE \
         and for testing only: never use them to prove anything that matters.\n",
    )?;
    Ok(())
}

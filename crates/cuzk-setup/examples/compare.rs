//! Times cuzk-setup against bellperson's generator on the 2 KiB Filecoin
//! circuits, in one process.
//!
//! ```text
//! cargo run --release -p cuzk-setup --example compare -- \
//!     [--out DIR] [--bellperson] [--same-as DIR] [window|winning|snap|porep ...]
//! ```
//!
//! Writes our files to `--out` (default `/tmp/cuzk-setup-compare`, always
//! regenerated), with the seeds cuzk-fixtures used for its files made by
//! filecoin-proofs' generator; `--same-as DIR` then checks ours are
//! byte-identical to the same-named files in `DIR`. `--bellperson` also runs
//! bellperson's generator on each circuit (same seed, nothing written).

use std::path::PathBuf;
use std::time::Duration;

use cuzk_setup::{cpu_time, generate_filecoin, time_bellperson, FilecoinCircuit};
use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof};

fn circuit(name: &str) -> Option<(FilecoinCircuit, u64)> {
    // Seeds: cuzk-fixtures' `0xc0_2c00_0000 + n`.
    let base = 0xc0_2c00_0000u64;
    Some(match name {
        "porep" => (
            FilecoinCircuit::Seal(RegisteredSealProof::StackedDrg2KiBV1_1),
            base + 1,
        ),
        "snap" => (
            FilecoinCircuit::Update(RegisteredUpdateProof::StackedDrg2KiBV1),
            base + 2,
        ),
        "winning" => (
            FilecoinCircuit::Winning(RegisteredPoStProof::StackedDrgWinning2KiBV1),
            base + 3,
        ),
        "window" => (
            FilecoinCircuit::Window(RegisteredPoStProof::StackedDrgWindow2KiBV1_2),
            base + 4,
        ),
        _ => return None,
    })
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

fn files_equal(a: &std::path::Path, b: &std::path::Path) -> std::io::Result<bool> {
    use std::io::Read;
    let (mut fa, mut fb) = (std::fs::File::open(a)?, std::fs::File::open(b)?);
    if fa.metadata()?.len() != fb.metadata()?.len() {
        return Ok(false);
    }
    let (mut ba, mut bb) = (vec![0u8; 1 << 20], vec![0u8; 1 << 20]);
    loop {
        let n = fa.read(&mut ba)?;
        if n == 0 {
            return Ok(true);
        }
        fb.read_exact(&mut bb[..n])?;
        if ba[..n] != bb[..n] {
            return Ok(false);
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut out = PathBuf::from("/tmp/cuzk-setup-compare");
    let mut same_as: Option<PathBuf> = None;
    let mut bellperson = false;
    let mut names = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--out" => out = args.next().ok_or("--out needs a directory")?.into(),
            "--same-as" => same_as = Some(args.next().ok_or("--same-as needs a directory")?.into()),
            "--bellperson" => bellperson = true,
            _ => names.push(a),
        }
    }
    if names.is_empty() {
        names = ["window", "winning", "snap", "porep"]
            .map(String::from)
            .to_vec();
    }
    println!(
        "threads: {}, load: {}",
        rayon::current_num_threads(),
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    for name in names {
        let (c, seed) = circuit(&name).ok_or_else(|| format!("unknown circuit {name}"))?;
        let files = generate_filecoin(c, &out, seed, true)?;
        let s = files.stats.ok_or("no stats")?;
        println!(
            "{name}: {} constraints, {} inputs, {} aux, {} matrix entries, domain 2^{}, \
             {} G1 + {} G2 muls (windows {}/{})",
            s.constraints,
            s.inputs,
            s.aux,
            s.matrix_entries,
            s.domain_log,
            s.g1_muls,
            s.g2_muls,
            s.g1_window,
            s.g2_window
        );
        println!(
            "{name}: ours {:.1} s wall, {:.1} s CPU [synthesis {:.1}, scalars {:.1}, tables {:.1}, \
             h {:.1}, ic+l {:.1}, a+b_g1 {:.1}, b_g2 {:.1}]",
            secs(s.total),
            secs(s.cpu),
            secs(s.synthesis),
            secs(s.scalars),
            secs(s.tables),
            secs(s.h),
            secs(s.ic_l),
            secs(s.a_b_g1),
            secs(s.b_g2)
        );
        if let Some(dir) = &same_as {
            for path in [&files.params, &files.vk] {
                let name = path.file_name().ok_or("no file name")?;
                let other = dir.join(name);
                let same = files_equal(path, &other)?;
                println!("{name:?}: identical to {}: {same}", other.display());
            }
        }
        if bellperson {
            let cpu0 = cpu_time();
            let t = time_bellperson(c, seed)?;
            println!(
                "{name}: bellperson {:.1} s wall, {:.1} s CPU; ours is {:.1}x faster (wall), \
                 {:.1}x (CPU) [process CPU {:.1} s]",
                secs(t.wall),
                secs(t.cpu),
                secs(t.wall) / secs(s.total),
                secs(t.cpu) / secs(s.cpu),
                secs(cpu_time() - cpu0)
            );
        }
    }
    Ok(())
}

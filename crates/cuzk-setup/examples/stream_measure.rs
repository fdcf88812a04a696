//! Wall time, CPU time and peak memory of the streaming generator against
//! the in-memory one, side by side in one run, each in a child process of
//! its own (so each peak RSS is its own).
//!
//! ```text
//! nice cargo run --release -p cuzk-setup --example stream_measure -- \
//!     [--out DIR] MODE:KIND-SIZE ...
//! ```
//!
//! `MODE` is `stream` (`generate_filecoin`, the streaming generator),
//! `mem` (`generate_in_memory`, then `write_params` and `write_vk`: the
//! generator before streaming) or `shape` (the counting pass alone, with
//! the memory and file size it implies); `KIND` is `porep`, `snap`, `window` or
//! `winning`; `SIZE` is `2k`, `8m`, `512m`, `32g` or `64g`. Example:
//! `mem:porep-2k stream:porep-2k stream:porep-8m stream:snap-8m`. Files go
//! to a fresh directory under `--out` (default: the system temp dir),
//! deleted after each child; the streamed and in-memory files of one
//! circuit are compared (same seed) before they are.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use cuzk_prover::srs::{write_params, write_vk};
use cuzk_setup::{
    cpu_time, generate_filecoin_with, generate_in_memory, peak_rss, FilecoinCircuit, Progress,
    SetupStats,
};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn circuit(spec: &str) -> Res<FilecoinCircuit> {
    let (kind, size) = spec.split_once('-').ok_or("KIND-SIZE")?;
    let bytes: u64 = match size {
        "2k" => 2 << 10,
        "8m" => 8 << 20,
        "512m" => 512 << 20,
        "32g" => 32 << 30,
        "64g" => 64 << 30,
        _ => return Err(format!("unknown size {size}").into()),
    };
    let [window, winning, snap, porep] = FilecoinCircuit::all_for_sector_size(bytes)?;
    Ok(match kind {
        "porep" => porep,
        "snap" => snap,
        "window" => window,
        "winning" => winning,
        _ => return Err(format!("unknown kind {kind}").into()),
    })
}

/// cuzk-fixtures' seeds.
fn seed(c: FilecoinCircuit) -> u64 {
    0xc0_2c00_0000
        + match c {
            FilecoinCircuit::Seal(_) => 1,
            FilecoinCircuit::Update(_) => 2,
            FilecoinCircuit::Winning(_) => 3,
            FilecoinCircuit::Window(_) => 4,
        }
}

fn gib(b: u64) -> f64 {
    b as f64 / (1u64 << 30) as f64
}

/// Runs one generation in this process and prints its `RESULT` line.
fn child(mode: &str, spec: &str, dir: &Path) -> Res<()> {
    let c = circuit(spec)?;
    let (wall, cpu) = (Instant::now(), cpu_time());
    if mode == "shape" {
        let shape = c.shape()?;
        println!(
            "SHAPE {spec} constraints={} inputs={} aux={} domain=2^{} \
             streaming_bulk_gib={:.2} params_max_gib={:.2} count_s={:.1} peak_rss_gib={:.2}",
            shape.constraints,
            shape.inputs,
            shape.aux,
            shape.domain_size().unwrap_or(0).trailing_zeros(),
            gib(shape.streaming_bytes()),
            gib(shape.params_bytes_max()),
            wall.elapsed().as_secs_f64(),
            gib(peak_rss().unwrap_or(0)),
        );
        return Ok(());
    }
    let stats: SetupStats = match mode {
        "stream" => {
            let last = std::sync::Mutex::new((cuzk_setup::Stage::Count, 0u64));
            let report = |p: &Progress| {
                let tenth = (p.points_done * 10)
                    .checked_div(p.points_total)
                    .unwrap_or(0);
                let mut last = last.lock().expect("lock");
                if (p.stage, tenth) != *last {
                    eprintln!(
                        "  [{spec}] {:>8} {:>6.1} s  points {}/{}",
                        p.stage.name(),
                        wall.elapsed().as_secs_f64(),
                        p.points_done,
                        p.points_total
                    );
                    *last = (p.stage, tenth);
                }
            };
            let files = generate_filecoin_with(c, dir, seed(c), true, &report)?;
            files.stats.ok_or("no stats")?
        }
        "mem" => {
            let (srs, stats) = generate_in_memory(c, seed(c))?;
            let (params, vk) = (dir.join("mem.params"), dir.join("mem.vk"));
            write_params(&srs, &params)?;
            write_vk(&srs.vk, &vk)?;
            stats
        }
        _ => return Err(format!("unknown mode {mode}").into()),
    };
    let (wall, cpu) = (wall.elapsed(), cpu_time().saturating_sub(cpu));
    let s = |d: std::time::Duration| d.as_secs_f64();
    println!(
        "RESULT {mode}:{spec} wall_s={:.1} cpu_s={:.1} peak_rss_gib={:.2} constraints={} \
         aux={} entries={} domain=2^{} g1={} g2={} | count={:.1} synthesis={:.1} \
         scalars={:.1} tables={:.1} h={:.1} ic_l={:.1} a_b_g1={:.1} b_g2={:.1}",
        s(wall),
        s(cpu),
        gib(peak_rss().unwrap_or(0)),
        stats.constraints,
        stats.aux,
        stats.matrix_entries,
        stats.domain_log,
        stats.g1_muls,
        stats.g2_muls,
        s(stats.count),
        s(stats.synthesis),
        s(stats.scalars),
        s(stats.tables),
        s(stats.h),
        s(stats.ic_l),
        s(stats.a_b_g1),
        s(stats.b_g2),
    );
    Ok(())
}

/// The one `.params` file in `dir` (the streamed or in-memory output).
fn params_in(dir: &Path) -> Res<PathBuf> {
    for e in std::fs::read_dir(dir)? {
        let p = e?.path();
        if p.extension().is_some_and(|x| x == "params") {
            return Ok(p);
        }
    }
    Err(format!("no .params in {}", dir.display()).into())
}

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--child") {
        let [_, mode, spec, dir] = args.as_slice() else {
            return Err("--child MODE SPEC DIR".into());
        };
        return child(mode, spec, Path::new(dir));
    }
    let mut out = std::env::temp_dir();
    let mut specs = Vec::new();
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--out" => out = it.next().ok_or("--out DIR")?.into(),
            _ => specs.push(a),
        }
    }
    println!(
        "threads: {}, load: {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    let exe = std::env::current_exe()?;
    // Per circuit: the files of the first run, to compare the second with.
    let mut kept: Vec<(String, tempfile::TempDir)> = Vec::new();
    for spec in specs {
        let (mode, c) = spec.split_once(':').ok_or("MODE:KIND-SIZE")?;
        let dir = tempfile::tempdir_in(&out)?;
        let status = Command::new(&exe)
            .args(["--child", mode, c])
            .arg(dir.path())
            .status()?;
        if !status.success() {
            return Err(format!("{spec}: {status}").into());
        }
        if mode == "shape" {
            continue;
        }
        if let Some(i) = kept.iter().position(|(k, _)| k == c) {
            let (_, other) = kept.remove(i);
            let same =
                std::fs::read(params_in(dir.path())?)? == std::fs::read(params_in(other.path())?)?;
            println!("{c}: streamed and in-memory .params identical: {same}");
        } else {
            kept.push((c.to_string(), dir));
        }
    }
    Ok(())
}

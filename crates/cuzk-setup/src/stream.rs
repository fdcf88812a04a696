//! Streaming parameter generation: any circuit size in bounded memory.
//!
//! [`generate_streaming`] writes the same `.params` / `.vk` bytes as
//! [`generate_with`](crate::generate_with) followed by `write_params`, but
//! never holds the matrices or a whole section:
//!
//! 1. [`Shape::of`] counts variables and constraints (no linear combinations);
//! 2. the Lagrange basis at `tau` over the domain (`m` scalars);
//! 3. [`evaluating::evaluate`] synthesizes again, adding each matrix entry's
//!    `coeff * L_j(tau)` into per-variable accumulators; the basis is freed;
//! 4. a scan counts the non-zero `a_i(tau)` and `b_i(tau)` (the a and b
//!    section sizes) and refuses an unconstrained aux variable (a zero l
//!    scalar) before any point is computed;
//! 5. the sections are computed [`CHUNK_G1`] / [`CHUNK_G2`] points at a time
//!    (the h scalars `tau^i (tau^m - 1) / delta` per chunk, never stored)
//!    with the fixed-base tables, and handed to a writer thread.
//!
//! Memory: `3 (inputs + aux)` scalars of accumulators, the basis (`m`
//! scalars) during the second pass, the two tables, and a few chunks.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::time::{Duration, Instant};

use bellpepper_core::Circuit;
use blstrs::{G1Affine, G2Affine, Scalar};
use cuzk_prover::ntt::Domain;
use cuzk_prover::srs::{write_vk, Section, SrsError, VerifyingKeyPoints};
use ff::Field;
use group::Curve as _;
use rayon::prelude::*;

use crate::accelerator::{mul_accelerated, Accelerated, Accelerator};
use crate::assembly::Evaluations;
use crate::counting::Shape;
use crate::curve::{G1, G2};
use crate::evaluating;
use crate::fixed_base::FixedBaseTable;
use crate::generate::{fill_powers, mul_all};
use crate::progress::{peak_rss, Progress, Stage};
use crate::writer::ParamsWriter;
use crate::{cpu_time, SetupError, SetupStats, ToxicWaste};

/// G1 points computed and written at a time (96 MiB of encoded points).
pub const CHUNK_G1: usize = 1 << 20;
/// G2 points computed and written at a time (96 MiB of encoded points).
pub const CHUNK_G2: usize = 1 << 19;

/// Generates `circuit`'s parameters from `tw` and writes them to `params`
/// (through a temporary file renamed into place) and then `vk`, with the
/// bytes [`generate_with`](crate::generate_with) and `write_params` /
/// `write_vk` would write. `blank()` makes the circuit, once per
/// synthesis pass (twice).
pub fn generate_streaming<C, F>(
    blank: F,
    tw: &ToxicWaste,
    params: &Path,
    vk: &Path,
    progress: &(dyn Fn(&Progress) + Sync),
) -> Result<SetupStats, SetupError>
where
    C: Circuit<Scalar>,
    F: Fn() -> C,
{
    generate_streaming_from(&Blank(blank), tw, params, vk, progress, None)
}

/// Where a generator reads the constraint matrices: the shape (step 1)
/// and the per-variable evaluations at `tau` (step 3).
pub trait Matrices {
    fn shape(&self) -> Result<Shape, SetupError>;
    /// `lagrange[j] = L_j(tau)` for every constraint `j` (the input
    /// constraints last); `on_progress(done)` now and then.
    fn evaluate(
        &self,
        shape: &Shape,
        lagrange: &[Scalar],
        on_progress: &(dyn Fn(usize) + Sync),
    ) -> Result<evaluating::Evaluated, SetupError>;
}

/// A blank circuit's matrices: synthesized once to count, once to evaluate.
pub struct Blank<F>(pub F);

impl<C: Circuit<Scalar>, F: Fn() -> C> Matrices for Blank<F> {
    fn shape(&self) -> Result<Shape, SetupError> {
        Shape::of((self.0)())
    }

    fn evaluate(
        &self,
        shape: &Shape,
        lagrange: &[Scalar],
        on_progress: &(dyn Fn(usize) + Sync),
    ) -> Result<evaluating::Evaluated, SetupError> {
        evaluating::evaluate((self.0)(), shape, lagrange, on_progress)
    }
}

/// [`generate_streaming`] with the matrices from `matrices`, such as a
/// recorded constraint system ([`crate::recorded`]) in place of the blank
/// circuit's two synthesis passes, and the fixed-base products of the h,
/// l, a and b sections computed by `accel` when given (a GPU). The same
/// bytes for the same matrices.
pub fn generate_streaming_from(
    matrices: &dyn Matrices,
    tw: &ToxicWaste,
    params: &Path,
    vk: &Path,
    progress: &(dyn Fn(&Progress) + Sync),
    accel: Option<&dyn Accelerator>,
) -> Result<SetupStats, SetupError> {
    let (start, cpu_start) = (Instant::now(), cpu_time());
    let mut stats = SetupStats::default();
    let (gamma_inv, delta_inv) = tw.inverses()?;
    // Created first, so an unwritable directory fails before hours of work.
    let writer = ParamsWriter::create(params)?;
    let report = Reporter::new(progress);

    report.stage(Stage::Count, 0, 0);
    let t = Instant::now();
    let shape = matrices.shape()?;
    stats.count = t.elapsed();
    (stats.constraints, stats.inputs, stats.aux) = (shape.constraints, shape.inputs, shape.aux);
    tracing::debug!(?shape, elapsed = ?stats.count, "shape of the matrices");

    report.stage(Stage::Lagrange, 0, 0);
    let t = Instant::now();
    let domain = Domain::for_len(shape.constraints)?;
    let m = domain.size();
    stats.domain_log = domain.log_size();
    let mut basis = vec![Scalar::ZERO; m];
    fill_powers(&mut basis, tw.tau, 0, Scalar::ONE);
    domain.intt(&mut basis);
    drop(domain);
    let lagrange = t.elapsed();

    report.stage(Stage::Evaluate, 0, shape.constraints as u64);
    let t = Instant::now();
    let total = shape.constraints as u64;
    let on_constraints = |done: usize| report.stage(Stage::Evaluate, done as u64, total);
    let evaluated = matrices.evaluate(&shape, &basis, &on_constraints)?;
    drop(basis);
    stats.synthesis = t.elapsed();
    stats.matrix_entries = evaluated.entries;
    tracing::debug!(entries = stats.matrix_entries, elapsed = ?stats.synthesis, "evaluated");

    report.stage(Stage::Scan, 0, 0);
    let t = Instant::now();
    let ev = evaluated.evaluations;
    let sizes = scan(&ev, shape.inputs, tw, delta_inv)?;
    let ic_scalars: Vec<Scalar> = (0..shape.inputs)
        .into_par_iter()
        .map(|i| (tw.beta * ev.at[i] + tw.alpha * ev.bt[i] + ev.ct[i]) * gamma_inv)
        .collect();
    stats.scalars = lagrange + t.elapsed();

    let h_len = m - 1;
    for (section, count) in [
        (Section::Ic, shape.inputs),
        (Section::H, h_len),
        (Section::L, shape.aux),
        (Section::A, sizes.a),
        (Section::BG1, sizes.b),
    ] {
        if u32::try_from(count).is_err() {
            return Err(SrsError::TooManyPoints { section, count }.into());
        }
    }
    stats.g1_muls = h_len + shape.inputs + shape.aux + sizes.a + sizes.b;
    stats.g2_muls = sizes.b;
    report.set_points_total((stats.g1_muls + stats.g2_muls) as u64);
    report.stage(Stage::Tables, 0, 0);
    let t = Instant::now();
    stats.g1_window = FixedBaseTable::<G1>::best_window(stats.g1_muls);
    stats.g2_window = FixedBaseTable::<G2>::best_window(stats.g2_muls);
    let (g1_table, g2_table) = rayon::join(
        || FixedBaseTable::<G1>::new(&tw.g1, stats.g1_window),
        || FixedBaseTable::<G2>::new(&tw.g2, stats.g2_window),
    );
    if let Some(a) = accel {
        a.load(&g1_table, &g2_table)
            .map_err(|message| SetupError::Accelerator {
                name: a.name(),
                message,
            })?;
        tracing::info!(on = %a.name(), "fixed-base products off the CPU");
    }
    stats.tables = t.elapsed();

    let plan = Plan {
        tw,
        ev,
        inputs: shape.inputs,
        m,
        delta_inv,
        sizes,
        g1_table: &g1_table,
        g2_table: &g2_table,
        accel,
        report: &report,
    };
    let (vk_points, written) = write_sections(writer, params, plan, ic_scalars, &mut stats)?;
    stats.params_bytes = written;
    write_vk(&vk_points, vk)?;
    report.stage(Stage::Done, 0, 0);
    stats.total = start.elapsed();
    stats.cpu = cpu_time().saturating_sub(cpu_start);
    stats.peak_rss = peak_rss();
    tracing::debug!(?stats, "streamed parameters");
    Ok(stats)
}

/// Section sizes that depend on the evaluations.
#[derive(Clone, Copy, Debug)]
struct Sizes {
    /// Non-zero `a_i(tau)`.
    a: usize,
    /// Non-zero `b_i(tau)`.
    b: usize,
}

/// Counts the non-zero a and b evaluations and checks that every aux
/// variable's l scalar is non-zero.
fn scan(
    ev: &Evaluations,
    inputs: usize,
    tw: &ToxicWaste,
    delta_inv: Scalar,
) -> Result<Sizes, SetupError> {
    let nonzero = |v: &[Scalar]| v.par_iter().filter(|s| !bool::from(s.is_zero())).count();
    let (a, b) = rayon::join(|| nonzero(&ev.at), || nonzero(&ev.bt));
    let unconstrained = (inputs..ev.at.len()).into_par_iter().find_first(|&i| {
        let s = (tw.beta * ev.at[i] + tw.alpha * ev.bt[i] + ev.ct[i]) * delta_inv;
        bool::from(s.is_zero())
    });
    match unconstrained {
        Some(i) => Err(SetupError::UnconstrainedVariable { index: i - inputs }),
        None => Ok(Sizes { a, b }),
    }
}

/// What the section writers share.
struct Plan<'a> {
    tw: &'a ToxicWaste,
    ev: Evaluations,
    inputs: usize,
    m: usize,
    delta_inv: Scalar,
    sizes: Sizes,
    g1_table: &'a FixedBaseTable<G1>,
    g2_table: &'a FixedBaseTable<G2>,
    accel: Option<&'a dyn Accelerator>,
    report: &'a Reporter<'a>,
}

/// A message to the writer thread.
enum Msg {
    Bytes(Vec<u8>),
    /// Everything was sent: sync and rename.
    Finish,
}

/// Computes every section in order, sending the bytes to a writer thread;
/// returns the verifying key and the bytes written.
fn write_sections(
    writer: ParamsWriter,
    params: &Path,
    plan: Plan<'_>,
    ic_scalars: Vec<Scalar>,
    stats: &mut SetupStats,
) -> Result<(VerifyingKeyPoints, u64), SetupError> {
    std::thread::scope(|s| {
        let (tx, rx) = sync_channel::<Msg>(1);
        let handle = s.spawn(move || write_all(writer, rx));
        let sent = send_sections(&tx, plan, ic_scalars, stats);
        if sent.is_ok() {
            // Only a complete file is renamed into place.
            let _ = tx.send(Msg::Finish);
        }
        drop(tx);
        let written = match handle.join() {
            Ok(r) => r,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        match (sent, written) {
            (Ok(vk), Ok(written)) => Ok((vk, written)),
            (Err(Stop::Failed(e)), _) => Err(e),
            (_, Err(e)) => Err(e),
            (Err(Stop::Writer), Ok(_)) => Err(SetupError::Io {
                path: params.to_path_buf(),
                source: std::io::Error::other("the writer thread stopped early"),
            }),
        }
    })
}

/// The writer thread: appends every buffer, finishes on [`Msg::Finish`],
/// drops (and so removes) the temporary file when the sender goes first.
fn write_all(mut writer: ParamsWriter, rx: Receiver<Msg>) -> Result<u64, SetupError> {
    for msg in rx {
        match msg {
            Msg::Bytes(b) => writer.write(&b)?,
            Msg::Finish => {
                let written = writer.written();
                writer.finish()?;
                return Ok(written);
            }
        }
    }
    Ok(0)
}

/// Why the sections stopped before the end.
enum Stop {
    /// The writer thread stopped (its error is the one to report).
    Writer,
    /// Computing the points failed.
    Failed(SetupError),
}

/// Sends vk, h, l, a, b_g1 and b_g2.
fn send_sections(
    tx: &SyncSender<Msg>,
    plan: Plan<'_>,
    ic_scalars: Vec<Scalar>,
    stats: &mut SetupStats,
) -> Result<VerifyingKeyPoints, Stop> {
    let Plan {
        tw,
        ev,
        inputs,
        m,
        delta_inv,
        sizes,
        g1_table,
        g2_table,
        accel,
        report,
    } = plan;
    let send = |b: Vec<u8>| tx.send(Msg::Bytes(b)).map_err(|_| Stop::Writer);
    let timed = |d: &mut Duration, t: Instant| *d += t.elapsed();

    let t = Instant::now();
    report.stage(Stage::Vk, 0, inputs as u64);
    let vk = verifying_key(tw, mul_all::<G1>(g1_table, &ic_scalars));
    report.points(Stage::Vk, inputs as u64, inputs as u64, inputs as u64);
    send(vk.to_bytes())?;
    timed(&mut stats.ic_l, t);

    let t = Instant::now();
    let coeff = (tw.tau.pow_vartime([m as u64]) - Scalar::ONE) * delta_inv;
    let tau = tw.tau;
    let h = Chunked::new(Stage::H, m - 1, CHUNK_G1, accel);
    h.send::<G1>(tx, g1_table, report, |start, out| {
        fill_powers(out, tau, start as u64, coeff);
    })?;
    timed(&mut stats.h, t);

    let t = Instant::now();
    let Evaluations { at, bt, ct } = ev;
    let aux = at.len() - inputs;
    let l = Chunked::new(Stage::L, aux, CHUNK_G1, accel);
    l.send::<G1>(tx, g1_table, report, |start, out| {
        let i0 = inputs + start;
        out.par_iter_mut().enumerate().for_each(|(k, o)| {
            let i = i0 + k;
            *o = (tw.beta * at[i] + tw.alpha * bt[i] + ct[i]) * delta_inv;
        });
    })?;
    drop(ct);
    timed(&mut stats.ic_l, t);

    let t = Instant::now();
    Chunked::new(Stage::A, sizes.a, CHUNK_G1, accel)
        .send_nonzero::<G1>(tx, g1_table, report, &at)?;
    drop(at);
    Chunked::new(Stage::BG1, sizes.b, CHUNK_G1, accel)
        .send_nonzero::<G1>(tx, g1_table, report, &bt)?;
    timed(&mut stats.a_b_g1, t);
    let t = Instant::now();
    Chunked::new(Stage::BG2, sizes.b, CHUNK_G2, accel)
        .send_nonzero::<G2>(tx, g2_table, report, &bt)?;
    timed(&mut stats.b_g2, t);
    Ok(vk)
}

fn verifying_key(tw: &ToxicWaste, ic: Vec<G1Affine>) -> VerifyingKeyPoints {
    let g1 = tw.g1.to_affine();
    let g2 = tw.g2.to_affine();
    VerifyingKeyPoints {
        alpha_g1: (g1 * tw.alpha).to_affine(),
        beta_g1: (g1 * tw.beta).to_affine(),
        beta_g2: (g2 * tw.beta).to_affine(),
        gamma_g2: (g2 * tw.gamma).to_affine(),
        delta_g1: (g1 * tw.delta).to_affine(),
        delta_g2: (g2 * tw.delta).to_affine(),
        ic,
    }
}

/// One point section written in chunks: its stage, point count, chunk
/// size and what computes its products (this CPU when `None`).
struct Chunked<'a> {
    stage: Stage,
    len: usize,
    chunk: usize,
    accel: Option<&'a dyn Accelerator>,
}

impl<'a> Chunked<'a> {
    fn new(stage: Stage, len: usize, chunk: usize, accel: Option<&'a dyn Accelerator>) -> Self {
        Chunked {
            stage,
            len,
            chunk,
            accel,
        }
    }

    /// Sends the count, then `fill(start, scalars)`'s scalars times the
    /// base, chunk by chunk.
    fn send<C>(
        &self,
        tx: &SyncSender<Msg>,
        table: &FixedBaseTable<C>,
        report: &Reporter<'_>,
        mut fill: impl FnMut(usize, &mut [Scalar]),
    ) -> Result<(), Stop>
    where
        C: Accelerated,
        C::BlstrsAffine: Encode + Default + PartialEq,
    {
        self.begin(tx, report)?;
        let mut scalars = vec![Scalar::ZERO; self.chunk.min(self.len)];
        for start in (0..self.len).step_by(self.chunk) {
            let n = self.chunk.min(self.len - start);
            fill(start, &mut scalars[..n]);
            self.points(tx, table, report, &scalars[..n], start)?;
        }
        Ok(())
    }

    /// Sends the count, then the non-zero `values` times the base.
    fn send_nonzero<C>(
        &self,
        tx: &SyncSender<Msg>,
        table: &FixedBaseTable<C>,
        report: &Reporter<'_>,
        values: &[Scalar],
    ) -> Result<(), Stop>
    where
        C: Accelerated,
        C::BlstrsAffine: Encode + Default + PartialEq,
    {
        self.begin(tx, report)?;
        let mut scalars = Vec::with_capacity(self.chunk.min(self.len));
        let mut done = 0;
        for v in values.iter().filter(|v| !bool::from(v.is_zero())) {
            scalars.push(*v);
            if scalars.len() == self.chunk {
                self.points(tx, table, report, &scalars, done)?;
                done += scalars.len();
                scalars.clear();
            }
        }
        if !scalars.is_empty() {
            self.points(tx, table, report, &scalars, done)?;
            done += scalars.len();
        }
        debug_assert_eq!(done, self.len, "{} count", self.stage);
        Ok(())
    }

    fn begin(&self, tx: &SyncSender<Msg>, report: &Reporter<'_>) -> Result<(), Stop> {
        report.stage(self.stage, 0, self.len as u64);
        // Counts were checked to fit before any point was computed.
        let count = u32::try_from(self.len).map_err(|_| Stop::Writer)?;
        tx.send(Msg::Bytes(count.to_be_bytes().to_vec()))
            .map_err(|_| Stop::Writer)
    }

    /// Multiplies, encodes and sends one chunk whose first point is `start`.
    fn points<C>(
        &self,
        tx: &SyncSender<Msg>,
        table: &FixedBaseTable<C>,
        report: &Reporter<'_>,
        scalars: &[Scalar],
        start: usize,
    ) -> Result<(), Stop>
    where
        C: Accelerated,
        C::BlstrsAffine: Encode + Default + PartialEq,
    {
        let points = match self.accel {
            Some(a) => mul_accelerated::<C>(a, table, scalars).map_err(Stop::Failed)?,
            None => mul_all::<C>(table, scalars),
        };
        let mut bytes = vec![0u8; points.len() * C::BlstrsAffine::BYTES];
        bytes
            .par_chunks_mut(C::BlstrsAffine::BYTES)
            .zip(points.par_iter())
            .for_each(|(o, p)| p.encode(o));
        drop(points);
        tx.send(Msg::Bytes(bytes)).map_err(|_| Stop::Writer)?;
        let done = (start + scalars.len()) as u64;
        report.points(self.stage, done, self.len as u64, scalars.len() as u64);
        Ok(())
    }
}

/// Uncompressed point encoding, as in `.params` files.
trait Encode: Copy + Send + Sync {
    const BYTES: usize;
    fn encode(&self, out: &mut [u8]);
}

impl Encode for G1Affine {
    const BYTES: usize = 96;
    fn encode(&self, out: &mut [u8]) {
        out.copy_from_slice(&self.to_uncompressed());
    }
}

impl Encode for G2Affine {
    const BYTES: usize = 192;
    fn encode(&self, out: &mut [u8]) {
        out.copy_from_slice(&self.to_uncompressed());
    }
}

/// Keeps the file-wide point count and calls the progress callback.
struct Reporter<'a> {
    callback: &'a (dyn Fn(&Progress) + Sync),
    points_done: AtomicU64,
    points_total: AtomicU64,
}

impl<'a> Reporter<'a> {
    fn new(callback: &'a (dyn Fn(&Progress) + Sync)) -> Self {
        Reporter {
            callback,
            points_done: AtomicU64::new(0),
            points_total: AtomicU64::new(0),
        }
    }

    fn set_points_total(&self, total: u64) {
        self.points_total.store(total, Ordering::Relaxed);
    }

    fn stage(&self, stage: Stage, stage_done: u64, stage_total: u64) {
        (self.callback)(&Progress {
            stage,
            stage_done,
            stage_total,
            points_done: self.points_done.load(Ordering::Relaxed),
            points_total: self.points_total.load(Ordering::Relaxed),
        });
    }

    /// `new_points` more points written; the stage is at `done` of `total`.
    fn points(&self, stage: Stage, done: u64, total: u64, new_points: u64) {
        self.points_done.fetch_add(new_points, Ordering::Relaxed);
        self.stage(stage, done, total);
    }
}

//! Prometheus metrics of the engine, in one registry per engine.
//!
//! Served as text by the `GetMetrics` RPC.

use std::time::Duration;

use prometheus::{
    Encoder, Gauge, HistogramOpts, HistogramVec, IntCounterVec, IntGaugeVec, Opts, Registry,
    TextEncoder,
};

use crate::job::JobStatus;
use crate::kinds::ProofKind;

/// The engine's metric families.
pub struct Metrics {
    registry: Registry,
    submitted: IntCounterVec,
    finished: IntCounterVec,
    rejected: IntCounterVec,
    queue_depth: IntGaugeVec,
    running: IntGaugeVec,
    stage_seconds: HistogramVec,
    uptime: Gauge,
}

/// Stages timed per job.
#[derive(Clone, Copy, Debug)]
pub enum Stage {
    QueueWait,
    SrsLoad,
    Synthesis,
    Compute,
    Prove,
    Verify,
    Total,
}

impl Stage {
    fn as_str(self) -> &'static str {
        match self {
            Stage::QueueWait => "queue_wait",
            Stage::SrsLoad => "srs_load",
            Stage::Synthesis => "synthesis",
            Stage::Compute => "compute",
            Stage::Prove => "prove",
            Stage::Verify => "verify",
            Stage::Total => "total",
        }
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let registry = Registry::new();
        let submitted = IntCounterVec::new(
            Opts::new("cuzk_jobs_submitted_total", "Jobs accepted, by proof kind"),
            &["kind"],
        )
        .expect("valid metric");
        let finished = IntCounterVec::new(
            Opts::new(
                "cuzk_jobs_finished_total",
                "Jobs ended, by proof kind and outcome (completed, failed, cancelled)",
            ),
            &["kind", "outcome"],
        )
        .expect("valid metric");
        let rejected = IntCounterVec::new(
            Opts::new(
                "cuzk_requests_rejected_total",
                "Requests refused before queueing, by reason",
            ),
            &["reason"],
        )
        .expect("valid metric");
        let queue_depth = IntGaugeVec::new(
            Opts::new("cuzk_queue_depth", "Jobs waiting for a prover, by proof kind"),
            &["kind"],
        )
        .expect("valid metric");
        let running = IntGaugeVec::new(
            Opts::new("cuzk_jobs_running", "Jobs being proved, by proof kind"),
            &["kind"],
        )
        .expect("valid metric");
        let stage_seconds = HistogramVec::new(
            HistogramOpts::new(
                "cuzk_job_stage_seconds",
                "Time per job stage (queue_wait, srs_load, synthesis, compute, prove, verify, total), by proof kind",
            )
            .buckets(vec![
                0.01, 0.05, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0,
                1800.0,
            ]),
            &["kind", "stage"],
        )
        .expect("valid metric");
        let uptime = Gauge::new("cuzk_uptime_seconds", "Seconds since the engine started")
            .expect("valid metric");
        for c in [
            Box::new(submitted.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(finished.clone()),
            Box::new(rejected.clone()),
            Box::new(queue_depth.clone()),
            Box::new(running.clone()),
            Box::new(stage_seconds.clone()),
            Box::new(uptime.clone()),
        ] {
            registry.register(c).expect("metric names are unique");
        }
        for kind in ProofKind::ALL {
            queue_depth.with_label_values(&[kind.as_str()]).set(0);
            running.with_label_values(&[kind.as_str()]).set(0);
        }
        Metrics {
            registry,
            submitted,
            finished,
            rejected,
            queue_depth,
            running,
            stage_seconds,
            uptime,
        }
    }

    pub fn job_submitted(&self, kind: ProofKind) {
        self.submitted.with_label_values(&[kind.as_str()]).inc();
        self.queue_depth.with_label_values(&[kind.as_str()]).inc();
    }

    pub fn job_left_queue(&self, kind: ProofKind) {
        self.queue_depth.with_label_values(&[kind.as_str()]).dec();
    }

    pub fn job_started(&self, kind: ProofKind) {
        self.running.with_label_values(&[kind.as_str()]).inc();
    }

    pub fn job_stopped_running(&self, kind: ProofKind) {
        self.running.with_label_values(&[kind.as_str()]).dec();
    }

    pub fn job_finished(&self, kind: ProofKind, status: JobStatus) {
        self.finished
            .with_label_values(&[kind.as_str(), status.as_str()])
            .inc();
    }

    pub fn stage(&self, kind: ProofKind, stage: Stage, d: Duration) {
        self.stage_seconds
            .with_label_values(&[kind.as_str(), stage.as_str()])
            .observe(d.as_secs_f64());
    }

    pub fn rejected(&self, reason: &str) {
        self.rejected.with_label_values(&[reason]).inc();
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self, uptime: Duration) -> String {
        self.uptime.set(uptime.as_secs_f64());
        let mut buf = Vec::new();
        TextEncoder::new()
            .encode(&self.registry.gather(), &mut buf)
            .expect("text encoding into a Vec cannot fail");
        String::from_utf8(buf).expect("prometheus text is UTF-8")
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

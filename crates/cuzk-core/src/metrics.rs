//! Prometheus metrics of the engine, in one registry per engine, and the
//! prover backends' own metrics ([`cuzk_prover::ProverBackend::metrics`],
//! read at every scrape and labelled by backend): the engine names no
//! device-specific metric itself.
//!
//! Served as text by the `GetMetrics` RPC and `GET /metrics`.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use cuzk_prover::{BackendMetric, MetricKind};

use prometheus::core::Collector;
use prometheus::{
    CounterVec, Encoder, Gauge, HistogramOpts, HistogramVec, IntCounterVec, IntGaugeVec, Opts,
    Registry, TextEncoder,
};

use crate::job::{JobStatus, JobTimings};
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
    partition_seconds: HistogramVec,
    partitions: IntGaugeVec,
    budget_bytes: IntGaugeVec,
    worker_busy: CounterVec,
    /// The backends' own samples at the last scrape, by backend name.
    backends: Mutex<BTreeMap<String, Vec<BackendMetric>>>,
    superseded: IntCounterVec,
    recovered: IntCounterVec,
    journal_errors: IntCounterVec,
    out_of_service: IntGaugeVec,
    memory_retries: IntCounterVec,
    uptime: Gauge,
}

const BUCKETS: [f64; 14] = [
    0.01, 0.05, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0,
];

/// A metric family `made` from this file's constant names and labels, and
/// registered in `registry`: a failure of either is a bug in these
/// definitions (every engine, so every engine test, makes them).
fn registered<T: Collector + Clone + 'static>(
    registry: &Registry,
    made: prometheus::Result<T>,
) -> T {
    let metric = made.expect("the engine's metric definitions are valid");
    registry
        .register(Box::new(metric.clone()))
        .expect("the engine's metric names are unique");
    metric
}

impl Metrics {
    pub fn new() -> Metrics {
        let registry = Registry::new();
        let submitted = registered(
            &registry,
            IntCounterVec::new(
                Opts::new("cuzk_jobs_submitted_total", "Jobs accepted, by proof kind"),
                &["kind"],
            ),
        );
        let finished = registered(
            &registry,
            IntCounterVec::new(
                Opts::new(
                    "cuzk_jobs_finished_total",
                    "Jobs ended, by proof kind and outcome (completed, failed, cancelled)",
                ),
                &["kind", "outcome"],
            ),
        );
        let rejected = registered(
            &registry,
            IntCounterVec::new(
                Opts::new(
                    "cuzk_requests_rejected_total",
                    "Requests refused before queueing, by reason",
                ),
                &["reason"],
            ),
        );
        let queue_depth = registered(
            &registry,
            IntGaugeVec::new(
                Opts::new(
                    "cuzk_queue_depth",
                    "Jobs waiting for a prover, by proof kind",
                ),
                &["kind"],
            ),
        );
        let running = registered(
            &registry,
            IntGaugeVec::new(
                Opts::new("cuzk_jobs_running", "Jobs being proved, by proof kind"),
                &["kind"],
            ),
        );
        let stage_seconds = registered(&registry, HistogramVec::new(
            HistogramOpts::new(
                "cuzk_job_stage_seconds",
                "Time per job stage (queue_wait, srs_load, synthesis, compute, prove, verify, total), by proof kind",
            )
            .buckets(BUCKETS.to_vec()),
            &["kind", "stage"],
        ));
        let partition_seconds = registered(
            &registry,
            HistogramVec::new(
                HistogramOpts::new(
                    "cuzk_partition_stage_seconds",
                    "Time per partition stage (synthesis, prove), by proof kind",
                )
                .buckets(BUCKETS.to_vec()),
                &["kind", "stage"],
            ),
        );
        let partitions = registered(
            &registry,
            IntGaugeVec::new(
                Opts::new(
                    "cuzk_partitions",
                    "Partitions in a pipeline stage (ready: synthesized, waiting for a prover)",
                ),
                &["stage"],
            ),
        );
        let budget_bytes = registered(
            &registry,
            IntGaugeVec::new(
                Opts::new(
                    "cuzk_memory_budget_bytes",
                    "Host memory budget: bytes reserved (used) and the limit",
                ),
                &["state"],
            ),
        );
        let worker_busy = registered(
            &registry,
            CounterVec::new(
                Opts::new(
                    "cuzk_worker_busy_seconds_total",
                    "Seconds workers spent on partitions, by pool (synthesis, prove)",
                ),
                &["pool"],
            ),
        );
        let superseded = registered(
            &registry,
            IntCounterVec::new(
                Opts::new(
                    "cuzk_requests_superseded_total",
                    "Requests whose request_id named a job with another payload, by kind and \
                 whether that job had finished (replaced) or not (cancelled)",
                ),
                &["kind", "old_job"],
            ),
        );
        let recovered = registered(
            &registry,
            IntCounterVec::new(
                Opts::new(
                    "cuzk_jobs_recovered_total",
                    "Jobs read back from the journal at start, by kind and what became of them \
                 (finished: answered as they ended; requeued; failed: not recoverable)",
                ),
                &["kind", "as"],
            ),
        );
        let journal_errors = registered(
            &registry,
            IntCounterVec::new(
                Opts::new(
                    "cuzk_journal_errors_total",
                    "Job journal writes that failed, by operation",
                ),
                &["op"],
            ),
        );
        let out_of_service = registered(
            &registry,
            IntGaugeVec::new(
                Opts::new(
                    "cuzk_device_out_of_service",
                    "1 for a device taken out of service after it failed, by backend",
                ),
                &["backend"],
            ),
        );
        let memory_retries = registered(
            &registry,
            IntCounterVec::new(
                Opts::new(
                    "cuzk_partition_memory_retries_total",
                    "Partitions proved again after their device ran out of memory, by kind",
                ),
                &["kind"],
            ),
        );
        let uptime = registered(
            &registry,
            Gauge::new("cuzk_uptime_seconds", "Seconds since the engine started"),
        );
        for kind in ProofKind::ALL {
            queue_depth.with_label_values(&[kind.as_str()]).set(0);
            running.with_label_values(&[kind.as_str()]).set(0);
        }
        partitions.with_label_values(&["ready"]).set(0);
        Metrics {
            registry,
            submitted,
            finished,
            rejected,
            queue_depth,
            running,
            stage_seconds,
            partition_seconds,
            partitions,
            budget_bytes,
            worker_busy,
            backends: Mutex::new(BTreeMap::new()),
            superseded,
            recovered,
            journal_errors,
            out_of_service,
            memory_retries,
            uptime,
        }
    }

    /// Device `backend` failed and is out of service.
    pub fn device_out_of_service(&self, backend: &str) {
        self.out_of_service.with_label_values(&[backend]).set(1);
    }

    /// A partition of `kind` goes back to be proved again: its device ran
    /// out of memory.
    pub fn memory_retry(&self, kind: ProofKind) {
        self.memory_retries
            .with_label_values(&[kind.as_str()])
            .inc();
    }

    /// A request id reused with another payload; `old_job` is "finished"
    /// or "unfinished".
    pub fn superseded(&self, kind: ProofKind, old_job: &str) {
        self.superseded
            .with_label_values(&[kind.as_str(), old_job])
            .inc();
    }

    /// A job read back from the journal.
    pub fn recovered(&self, kind: ProofKind, what: &str) {
        self.recovered
            .with_label_values(&[kind.as_str(), what])
            .inc();
    }

    /// A journal write that failed.
    pub fn journal_error(&self, op: &str) {
        self.journal_errors.with_label_values(&[op]).inc();
    }

    pub fn job_submitted(&self, kind: ProofKind) {
        self.submitted.with_label_values(&[kind.as_str()]).inc();
    }

    /// Jobs not started / started, per kind (set before each render).
    pub fn queues(&self, kind: ProofKind, pending: u32, running: u32) {
        self.queue_depth
            .with_label_values(&[kind.as_str()])
            .set(pending.into());
        self.running
            .with_label_values(&[kind.as_str()])
            .set(running.into());
    }

    pub fn partitions(&self, stage: &str, n: usize) {
        self.partitions.with_label_values(&[stage]).set(n as i64);
    }

    pub fn partition_stage(&self, kind: ProofKind, stage: &str, d: Duration) {
        self.partition_seconds
            .with_label_values(&[kind.as_str(), stage])
            .observe(d.as_secs_f64());
    }

    pub fn budget(&self, used: u64, limit: u64) {
        self.budget_bytes
            .with_label_values(&["used"])
            .set(used as i64);
        self.budget_bytes
            .with_label_values(&["limit"])
            .set(limit as i64);
    }

    pub fn worker_busy(&self, pool: &str, d: Duration) {
        self.worker_busy
            .with_label_values(&[pool])
            .inc_by(d.as_secs_f64());
    }

    /// The samples of backend `backend`'s own metrics, replacing the
    /// previous scrape's.
    pub fn backend(&self, backend: &str, samples: Vec<BackendMetric>) {
        self.backends
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(backend.to_string(), samples);
    }

    /// The backends' samples as metric families, one per name.
    fn backend_families(&self) -> Vec<prometheus::proto::MetricFamily> {
        use prometheus::proto::{Counter, Gauge, LabelPair, Metric, MetricFamily, MetricType};
        let backends = self.backends.lock().unwrap_or_else(|p| p.into_inner());
        let mut families: BTreeMap<&str, MetricFamily> = BTreeMap::new();
        for (backend, samples) in backends.iter() {
            for m in samples {
                let family = families.entry(m.name).or_insert_with(|| {
                    let mut f = MetricFamily::default();
                    f.set_name(m.name.to_string());
                    f.set_help(m.help.to_string());
                    f.set_field_type(match m.kind {
                        MetricKind::Counter => MetricType::COUNTER,
                        MetricKind::Gauge => MetricType::GAUGE,
                    });
                    f
                });
                let label = |name: &str, value: &str| {
                    let mut l = LabelPair::default();
                    l.set_name(name.to_string());
                    l.set_value(value.to_string());
                    l
                };
                let mut labels = vec![label("backend", backend)];
                labels.extend(m.labels.iter().map(|(n, v)| label(n, v)));
                labels.sort_by(|a, b| a.name().cmp(b.name()));
                let mut sample = Metric::default();
                sample.set_label(labels);
                match m.kind {
                    MetricKind::Counter => {
                        let mut c = Counter::default();
                        c.set_value(m.value);
                        sample.set_counter(c);
                    }
                    MetricKind::Gauge => {
                        let mut g = Gauge::default();
                        g.set_value(m.value);
                        sample.set_gauge(g);
                    }
                }
                family.mut_metric().push(sample);
            }
        }
        families.into_values().collect()
    }

    /// Observes every stage of a finished job.
    pub fn job_timings(&self, kind: ProofKind, t: &JobTimings) {
        for (stage, d) in [
            ("queue_wait", t.queue_wait),
            ("srs_load", t.srs_load),
            ("synthesis", t.synthesis),
            ("compute", t.compute),
            ("prove", t.prove),
            ("verify", t.verify),
            ("total", t.total),
        ] {
            self.stage_seconds
                .with_label_values(&[kind.as_str(), stage])
                .observe(d.as_secs_f64());
        }
    }

    pub fn job_finished(&self, kind: ProofKind, status: JobStatus) {
        self.finished
            .with_label_values(&[kind.as_str(), status.as_str()])
            .inc();
    }

    pub fn rejected(&self, reason: &str) {
        self.rejected.with_label_values(&[reason]).inc();
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self, uptime: Duration) -> String {
        self.uptime.set(uptime.as_secs_f64());
        let mut families = self.registry.gather();
        families.extend(self.backend_families());
        families.sort_by(|a, b| a.name().cmp(b.name()));
        let mut buf = Vec::new();
        TextEncoder::new()
            .encode(&families, &mut buf)
            .expect("text encoding into a Vec cannot fail");
        String::from_utf8(buf).expect("prometheus text is UTF-8")
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(
        name: &'static str,
        kind: MetricKind,
        labels: &[(&'static str, &str)],
        value: f64,
    ) -> BackendMetric {
        BackendMetric {
            name,
            help: "a backend's own metric",
            kind,
            labels: labels.iter().map(|(n, v)| (*n, v.to_string())).collect(),
            value,
        }
    }

    #[test]
    fn backend_metrics_are_exported_with_the_backend_label() {
        let m = Metrics::new();
        m.backend(
            "accel:0",
            vec![
                sample(
                    "x_partitions_total",
                    MetricKind::Counter,
                    &[("tier", "all")],
                    2.0,
                ),
                sample(
                    "x_partitions_total",
                    MetricKind::Counter,
                    &[("tier", "a_only")],
                    1.0,
                ),
                sample("x_busy_seconds", MetricKind::Gauge, &[], 1.5),
            ],
        );
        m.backend("cpu", vec![]);
        let text = m.render(Duration::from_secs(1));
        for line in [
            "# TYPE x_partitions_total counter",
            "# TYPE x_busy_seconds gauge",
            r#"x_partitions_total{backend="accel:0",tier="all"} 2"#,
            r#"x_partitions_total{backend="accel:0",tier="a_only"} 1"#,
            r#"x_busy_seconds{backend="accel:0"} 1.5"#,
            "cuzk_uptime_seconds 1",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "missing {line:?} in:\n{text}"
            );
        }
        // A later scrape replaces the samples.
        m.backend(
            "accel:0",
            vec![sample("x_busy_seconds", MetricKind::Gauge, &[], 2.0)],
        );
        let text = m.render(Duration::from_secs(2));
        assert!(
            text.contains(r#"x_busy_seconds{backend="accel:0"} 2"#),
            "{text}"
        );
        assert!(!text.contains("x_partitions_total"), "{text}");
    }
}

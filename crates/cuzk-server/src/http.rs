//! The HTTP status endpoint (`daemon.status_listen`): `GET /status` as JSON
//! and `GET /metrics` in the Prometheus text format; over TLS and behind the
//! bearer token when the daemon has them (see [`crate::access`]).

use std::sync::Arc;

use axum::http::header::{AUTHORIZATION, CONTENT_TYPE};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
use cuzk_core::engine::WorkerTask;
use cuzk_core::{Engine, EngineStatus};
use serde::Serialize;
use tokio::net::TcpListener;
use tracing::warn;

/// `GET /status`.
#[derive(Debug, Serialize)]
pub struct StatusJson {
    pub uptime_seconds: u64,
    /// One per device: `cpu`, or `cuda:<n>`.
    pub backends: Vec<String>,
    pub devices: Vec<DeviceJson>,
    /// Backends whose device failed and was taken out of service.
    pub out_of_service: Vec<OutOfServiceJson>,
    pub jobs: JobsJson,
    pub queues: Vec<QueueJson>,
    pub partitions: PartitionsJson,
    pub workers: WorkersJson,
    pub budget: BudgetJson,
    pub srs: Vec<SrsJson>,
    /// Resident compiled constraint systems.
    pub constraint_systems: Vec<ConstraintSystemJson>,
}

/// A resident compiled constraint system.
#[derive(Debug, Serialize)]
pub struct ConstraintSystemJson {
    pub shape: String,
    pub bytes: u64,
    pub constraints: u64,
    pub uses: u64,
}

/// A backend taken out of service, and why.
#[derive(Debug, Serialize)]
pub struct OutOfServiceJson {
    pub backend: String,
    pub reason: String,
}

/// An accelerator, as its backend reports it.
#[derive(Debug, Serialize)]
pub struct DeviceJson {
    pub backend: String,
    pub ordinal: u32,
    pub name: String,
    pub memory_total_bytes: u64,
    pub memory_free_bytes: u64,
    /// Seconds in kernel regions since the daemon started (GPU backends).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub busy_seconds: Option<f64>,
    /// Why it was taken out of service, if it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub out_of_service: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct JobsJson {
    pub completed: u64,
    pub failed: u64,
    pub cancelled: u64,
    /// Journaled jobs still to restore after the start (null: restored).
    pub restoring: Option<usize>,
}

#[derive(Debug, Serialize)]
pub struct QueueJson {
    pub kind: String,
    pub pending: u32,
    pub in_progress: u32,
}

/// Partitions in flight, by stage.
#[derive(Debug, Serialize)]
pub struct PartitionsJson {
    /// Claimed by a synthesis worker that waits for memory.
    pub waiting_for_memory: u32,
    pub synthesizing: usize,
    pub ready: u32,
    pub proving: usize,
}

#[derive(Debug, Serialize)]
pub struct TaskJson {
    /// The backend (prover workers only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
    pub job_id: String,
    pub kind: String,
    pub partition: usize,
}

#[derive(Debug, Serialize)]
pub struct WorkersJson {
    pub synthesis: Vec<Option<TaskJson>>,
    pub prove: Vec<Option<TaskJson>>,
}

#[derive(Debug, Serialize)]
pub struct BudgetJson {
    pub used_bytes: u64,
    pub limit_bytes: u64,
    pub peak_bytes: u64,
}

#[derive(Debug, Serialize)]
pub struct SrsJson {
    pub circuit_id: String,
    pub tier: String,
    pub bytes: u64,
    pub in_use: u32,
    pub idle_seconds: Option<u64>,
    pub loads: u32,
    /// Backends holding a copy on their device, with its bytes.
    pub on_devices: Vec<SrsDeviceJson>,
}

#[derive(Debug, Serialize)]
pub struct SrsDeviceJson {
    pub backend: String,
    pub bytes: u64,
    /// The sections on the device (`h`, `l`, `a`, `b_g1`, `b_g2`); the
    /// others are streamed from host memory for every partition.
    pub resident_sections: Vec<String>,
}

fn task(t: &Option<WorkerTask>) -> Option<TaskJson> {
    t.as_ref().map(|t| TaskJson {
        backend: None,
        job_id: t.job_id.clone(),
        kind: t.kind.as_str().to_string(),
        partition: t.partition,
    })
}

impl From<&EngineStatus> for StatusJson {
    fn from(s: &EngineStatus) -> StatusJson {
        StatusJson {
            uptime_seconds: s.uptime.as_secs(),
            backends: s.backends.clone(),
            devices: s
                .devices
                .iter()
                .zip(&s.backends)
                .zip(&s.out_of_service)
                .filter_map(|((d, b), out)| {
                    d.as_ref().map(|d| DeviceJson {
                        backend: b.clone(),
                        ordinal: d.ordinal,
                        name: d.name.clone(),
                        memory_total_bytes: d.memory_total,
                        memory_free_bytes: d.memory_free,
                        busy_seconds: d.busy.map(|b| b.as_secs_f64()),
                        out_of_service: out.clone(),
                    })
                })
                .collect(),
            out_of_service: s
                .backends
                .iter()
                .zip(&s.out_of_service)
                .filter_map(|(b, out)| {
                    Some(OutOfServiceJson {
                        backend: b.clone(),
                        reason: out.clone()?,
                    })
                })
                .collect(),
            jobs: JobsJson {
                completed: s.completed,
                failed: s.failed,
                cancelled: s.cancelled,
                restoring: s.restoring_jobs,
            },
            queues: s
                .queues
                .iter()
                .map(|q| QueueJson {
                    kind: q.kind.as_str().to_string(),
                    pending: q.pending,
                    in_progress: q.in_progress,
                })
                .collect(),
            partitions: PartitionsJson {
                waiting_for_memory: s.waiting_for_memory,
                synthesizing: (s.synthesis_workers.iter().flatten().count())
                    .saturating_sub(s.waiting_for_memory as usize),
                ready: s.ready_partitions,
                proving: s.prover_workers.iter().flatten().count(),
            },
            workers: WorkersJson {
                synthesis: s.synthesis_workers.iter().map(task).collect(),
                prove: s
                    .prover_workers
                    .iter()
                    .zip(&s.prover_devices)
                    .map(|(t, d)| {
                        task(t).map(|mut t| {
                            t.backend = s.backends.get(*d).cloned();
                            t
                        })
                    })
                    .collect(),
            },
            budget: BudgetJson {
                used_bytes: s.budget_used,
                limit_bytes: s.budget_limit,
                peak_bytes: s.budget_peak,
            },
            srs: s
                .srs
                .iter()
                .map(|e| SrsJson {
                    circuit_id: e.circuit_id.clone(),
                    tier: e.tier.as_str().to_string(),
                    bytes: e.bytes,
                    in_use: e.in_use,
                    idle_seconds: e.idle_secs,
                    loads: e.loads,
                    on_devices: e
                        .on_devices
                        .iter()
                        .map(|d| SrsDeviceJson {
                            backend: d.backend.clone(),
                            bytes: d.bytes,
                            resident_sections: d.resident.iter().map(|s| s.to_string()).collect(),
                        })
                        .collect(),
                })
                .collect(),
            constraint_systems: s
                .constraint_systems
                .iter()
                .map(|e| ConstraintSystemJson {
                    shape: e.shape.clone(),
                    bytes: e.bytes,
                    constraints: e.constraints,
                    uses: e.uses,
                })
                .collect(),
        }
    }
}

/// The routes; with a token, a request without `authorization: Bearer
/// <token>` gets 401.
pub fn router(engine: Engine, token: Option<Arc<str>>) -> Router {
    let status_engine = engine.clone();
    let routes = Router::new()
        .route(
            "/status",
            get(move || {
                let e = status_engine.clone();
                async move { Json(StatusJson::from(&e.status())) }
            }),
        )
        .route(
            "/metrics",
            get(move || {
                let e = engine.clone();
                async move {
                    (
                        [(CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")],
                        e.metrics_text(),
                    )
                        .into_response()
                }
            }),
        );
    let Some(token) = token else {
        return routes;
    };
    routes.route_layer(axum::middleware::from_fn(
        move |req: axum::extract::Request, next: axum::middleware::Next| {
            let token = token.clone();
            async move {
                let header = req
                    .headers()
                    .get(AUTHORIZATION)
                    .and_then(|v| v.to_str().ok());
                match crate::access::check_bearer(header, &token) {
                    Ok(()) => next.run(req).await,
                    Err(m) => (StatusCode::UNAUTHORIZED, m).into_response(),
                }
            }
        },
    ))
}

/// A bound status listener: plain TCP or TLS.
pub enum StatusListener {
    Plain(TcpListener),
    Tls(crate::tls::TlsListener),
}

impl StatusListener {
    /// `http://ip:port` or `https://ip:port`.
    pub fn address(&self) -> Option<String> {
        use axum::serve::Listener as _;
        match self {
            StatusListener::Plain(l) => l.local_addr().ok().map(|a| format!("http://{a}")),
            StatusListener::Tls(l) => l.local_addr().ok().map(|a| format!("https://{a}")),
        }
    }
}

/// Serves the routes on `listener` until the task is dropped.
pub async fn serve(listener: StatusListener, engine: Engine, token: Option<Arc<str>>) {
    let app = router(engine, token);
    let result = match listener {
        StatusListener::Plain(l) => axum::serve(l, app).await,
        StatusListener::Tls(l) => axum::serve(l, app).await,
    };
    if let Err(e) = result {
        warn!("status endpoint stopped: {e}");
    }
}

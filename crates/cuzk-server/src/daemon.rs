//! Running the daemon: parameter cache, engine, gRPC server, and the
//! graceful stop on a shutdown signal.

use std::future::Future;
use std::sync::Arc;

use cuzk_core::budget::MemoryBudget;
use cuzk_core::journal::{Journal, Opened};
use cuzk_core::r1cs_manager::ConstraintSystems;
use cuzk_core::srs_manager::ParamsLoader;
use cuzk_core::{Engine, EngineParts, FilecoinProofs, SrsManager};
use cuzk_proto::ProvingEngineServer;
use tokio_stream::wrappers::{TcpListenerStream, UnixListenerStream};
use tracing::{info, warn};

use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Identity, ServerTlsConfig};

use crate::access::{Access, AccessError};
use crate::config::Config;
use crate::connections::limited;
use crate::http::StatusListener;
use crate::listen::{Bound, ListenAddr};
use crate::service::ProvingService;

/// Extra room in the gRPC message limit for the fields besides the vanilla proofs.
const MESSAGE_OVERHEAD: usize = 16 << 20;

/// Why the daemon could not run.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error("daemon.listen: {0}")]
    Listen(#[from] crate::listen::BadListenAddr),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Params(#[from] cuzk_core::params::ParameterCacheConflict),
    #[error(transparent)]
    Config(#[from] cuzk_core::config::ConfigError),
    #[error("gpus.backend: {0}")]
    Backend(#[from] crate::backends::BackendError),
    #[error("daemon.status_listen: {0}")]
    Status(String),
    #[error("gRPC server failed: {0}")]
    Serve(#[from] tonic::transport::Error),
    #[error(transparent)]
    Journal(#[from] cuzk_core::journal::JournalError),
    #[error("starting the engine: {0}")]
    Start(String),
    #[error(transparent)]
    Access(#[from] AccessError),
    #[error("TLS: {0}")]
    Tls(String),
}

/// The async runtime the daemon runs on (cuzk-daemon's, and the benches'
/// in-process daemons').
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
}

/// Opens the job journal unless `daemon.journal = false`, taking the
/// state directory's lock (off the reactor: it reads files).
async fn open_journal(config: &Config) -> Result<Option<Opened>, DaemonError> {
    if !config.daemon.journal {
        return Ok(None);
    }
    let dir = config.daemon.resolved_state_dir();
    let retention = config.engine.job_retention;
    let reserve = config.daemon.journal_disk_reserve.as_u64();
    tokio::task::spawn_blocking(move || {
        let mut opened = Journal::open(&dir, retention)?;
        opened.journal.set_disk_reserve(reserve);
        if let Some(aside) = &opened.set_aside {
            warn!(
                moved_to = %aside.display(),
                salvage = opened.salvage.len(),
                "started with a new job journal: the old one failed its integrity check \
                 (the requests its payloads still hold are queued again)"
            );
        }
        Ok(Some(opened))
    })
    .await
    .map_err(|e| DaemonError::Start(e.to_string()))?
}

/// Starts the engine, on the journal `opened` when there is one (its
/// unfinished jobs are restored in the background, so the listeners serve
/// meanwhile).
fn start_engine(config: &Config, parts: EngineParts, opened: Option<Opened>) -> Engine {
    let engine_config = config.engine.clone();
    match opened {
        Some(opened) => Engine::start_restoring(engine_config, parts, opened),
        None => {
            info!("daemon.journal = false: jobs live in memory only");
            Engine::start(engine_config, parts)
        }
    }
}

/// Binds `daemon.status_listen` (TLS when the daemon has a certificate)
/// after checking the address may be served.
async fn bind_status(
    config: &Config,
    access: &Access,
) -> Result<Option<StatusListener>, DaemonError> {
    let addr = config.daemon.status_listen.trim();
    if addr.is_empty() {
        return Ok(None);
    }
    let l = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| DaemonError::Status(format!("{addr}: {e}")))?;
    access.check_exposure("daemon.status_listen", l.local_addr().ok(), &config.daemon)?;
    Ok(Some(match &access.tls {
        Some((cert, key)) => {
            let tls = crate::tls::server_config(cert, key)
                .map_err(|e| DaemonError::Tls(e.to_string()))?;
            StatusListener::Tls(crate::tls::TlsListener::new(
                l,
                tls,
                config.daemon.handshake_timeout,
            ))
        }
        None => StatusListener::Plain(l),
    }))
}

/// A daemon that is bound and ready to serve.
pub struct Daemon {
    engine: Engine,
    bound: Bound,
    /// The bound HTTP status listener, when configured.
    status: Option<StatusListener>,
    access: Access,
    config: Config,
}

impl Daemon {
    /// Fixes the parameter cache, starts the engine (Filecoin circuits, the
    /// prover backends of `[gpus]`, the memory budget and SRS manager of the
    /// config) and
    /// binds the listen address.
    pub async fn start(config: Config) -> Result<Daemon, DaemonError> {
        let backends = crate::backends::from_config(&config.gpus)?;
        let parts = Self::parts(&config, backends)?;
        Self::start_with(config, parts).await
    }

    /// The engine's parts as the config says, proving on `backends`.
    pub fn parts(
        config: &Config,
        backends: Vec<Arc<dyn cuzk_prover::ProverBackend>>,
    ) -> Result<EngineParts, DaemonError> {
        let limit = config.memory.resolve()?;
        let reserve = config.memory.resolve_critical_reserve(limit)?;
        let budget = MemoryBudget::with_critical_reserve(limit, reserve);
        let loader = ParamsLoader::new(config.params.check_subgroup, config.srs.warm_dir.clone());
        let srs = SrsManager::new(
            Arc::new(loader),
            budget.clone(),
            config.srs.eviction_min_idle,
        );
        let r1cs = Arc::new(ConstraintSystems::new(
            Some(cuzk_core::r1cs_manager::dir_for(
                &config.params.resolved_cache_dir(),
            )),
            budget.clone(),
        ));
        Ok(EngineParts {
            system: Arc::new(FilecoinProofs),
            backends,
            srs,
            budget,
            r1cs,
        })
    }

    /// As [`Daemon::start`], with the engine's parts given.
    pub async fn start_with(config: Config, parts: EngineParts) -> Result<Daemon, DaemonError> {
        let listen = ListenAddr::parse(&config.daemon.listen)?;
        let params = config.params.resolved_cache_dir();
        cuzk_core::params::init_parameter_cache(&params)?;
        info!(dir = %params.display(), "Groth16 parameter cache");
        let access = Access::load(&config.daemon)?;
        // The state dir's lock before any listener: a second daemon on the
        // same state dir stops here, its listeners never bound.
        let opened = open_journal(&config).await?;
        let bound = Bound::bind(&listen)
            .await
            .map_err(|source| DaemonError::Bind {
                addr: config.daemon.listen.clone(),
                source,
            })?;
        let rest = async {
            access.check_exposure("daemon.listen", bound.tcp_addr(), &config.daemon)?;
            bind_status(&config, &access).await
        };
        let status = match rest.await {
            Ok(r) => r,
            Err(e) => {
                bound.remove_socket();
                return Err(e);
            }
        };
        let engine = tokio::task::spawn_blocking({
            let config = config.clone();
            move || start_engine(&config, parts, opened)
        })
        .await
        .map_err(|e| DaemonError::Start(e.to_string()))?;
        Ok(Daemon {
            engine,
            bound,
            status,
            access,
            config,
        })
    }

    /// The address clients connect to (`https://` when served over TLS).
    pub fn client_address(&self) -> String {
        let a = self.bound.client_address();
        match (&self.access.tls, &self.bound) {
            (Some(_), Bound::Tcp(..)) => a.replacen("http://", "https://", 1),
            _ => a,
        }
    }

    /// The engine behind the service.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The HTTP status address (`http://ip:port` or `https://ip:port`),
    /// when configured.
    pub fn status_address(&self) -> Option<String> {
        self.status.as_ref().and_then(StatusListener::address)
    }

    /// Serves until `shutdown` resolves, then stops gracefully: new jobs are
    /// refused, queued jobs fail, running jobs get `daemon.shutdown_grace`,
    /// and in-flight RPCs are answered before the server returns.
    pub async fn serve(self, shutdown: impl Future<Output = ()> + Send) -> Result<(), DaemonError> {
        let Daemon {
            engine,
            bound,
            status,
            access,
            config,
        } = self;
        let limit = config.engine.max_vanilla_bytes.as_u64() as usize + MESSAGE_OVERHEAD;
        let service = InterceptedService::new(
            ProvingEngineServer::new(ProvingService::new(engine.clone()))
                .max_decoding_message_size(limit)
                .max_encoding_message_size(limit),
            access.interceptor(),
        );
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let stop = async {
            let _ = stop_rx.await;
        };
        info!(
            address = %bound,
            tls = access.tls.is_some(),
            token = access.token.is_some(),
            "serving cuzk.v1.ProvingEngine"
        );
        let mut builder =
            crate::connections::with_keepalive(tonic::transport::Server::builder(), &config.daemon);
        if let Some((cert, key)) = &access.tls {
            let tls = ServerTlsConfig::new()
                .identity(Identity::from_pem(cert, key))
                .timeout(config.daemon.handshake_timeout);
            builder = builder
                .tls_config(tls)
                .map_err(|e| DaemonError::Tls(e.to_string()))?;
        }
        let max = config.daemon.max_connections;
        let router = builder.add_service(service);
        let unix_path = match &bound {
            Bound::Unix(_, p) => Some(p.clone()),
            Bound::Tcp(..) => None,
        };
        let server = match bound {
            Bound::Tcp(l, _) => tokio::spawn(
                router.serve_with_incoming_shutdown(limited(TcpListenerStream::new(l), max), stop),
            ),
            Bound::Unix(l, _) => tokio::spawn(
                router.serve_with_incoming_shutdown(limited(UnixListenerStream::new(l), max), stop),
            ),
        };
        let status_task = status.map(|l| {
            info!(address = ?l.address(), "serving GET /status and GET /metrics");
            tokio::spawn(crate::http::serve(l, engine.clone(), access.token.clone()))
        });
        shutdown.await;
        info!(grace = ?config.daemon.shutdown_grace, "shutdown requested: refusing new jobs");
        engine.shutdown(config.daemon.shutdown_grace).await;
        let _ = stop_tx.send(());
        let result = match server.await {
            Ok(r) => r.map_err(DaemonError::from),
            Err(e) => {
                warn!("server task ended abnormally: {e}");
                Ok(())
            }
        };
        if let Some(t) = status_task {
            t.abort();
        }
        if let Some(p) = unix_path {
            let _ = std::fs::remove_file(p);
        }
        info!("daemon stopped");
        result
    }
}

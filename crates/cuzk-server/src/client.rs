//! Connecting a client to a daemon over TCP (plain or TLS) or a unix
//! socket, with the daemon's bearer token when it has one.

use std::path::Path;

use cuzk_proto::ProvingEngineClient;
use hyper_util::rt::TokioIo;
use tokio::net::UnixStream;
use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::interceptor::InterceptedService;
use tonic::service::Interceptor;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Uri};
use tonic::{Request, Status};

/// Largest reply a client accepts (proofs and status are small).
const MAX_REPLY: usize = 64 << 20;

/// A connected client (adds the token, if any, to every call).
pub type Client = ProvingEngineClient<InterceptedService<Channel, Bearer>>;

/// How to reach a daemon that has TLS or a token.
#[derive(Clone, Debug, Default)]
pub struct ClientOptions {
    /// Sent as `authorization: Bearer <token>`.
    pub token: Option<String>,
    /// PEM CA certificate to trust for the daemon's TLS certificate; with
    /// it, `host:port` and `http://` addresses are dialled over TLS.
    pub tls_ca: Option<Vec<u8>>,
}

/// Why a client could not be set up or connect.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("{0}: {1}")]
    File(String, std::io::Error),
    #[error("the token file {0} is empty")]
    EmptyToken(String),
    #[error("the token is not valid in a header")]
    BadToken,
    #[error(transparent)]
    Transport(#[from] tonic::transport::Error),
}

impl ClientOptions {
    /// Reads a token file and a CA file (either may be absent).
    pub fn from_files(
        token_file: Option<&Path>,
        tls_ca: Option<&Path>,
    ) -> Result<ClientOptions, ConnectError> {
        let read =
            |p: &Path| std::fs::read(p).map_err(|e| ConnectError::File(p.display().to_string(), e));
        let token = match token_file {
            Some(p) => {
                let t = String::from_utf8_lossy(&read(p)?).trim().to_string();
                if t.is_empty() {
                    return Err(ConnectError::EmptyToken(p.display().to_string()));
                }
                Some(t)
            }
            None => None,
        };
        Ok(ClientOptions {
            token,
            tls_ca: tls_ca.map(read).transpose()?,
        })
    }
}

/// Adds `authorization: Bearer <token>` to each call (nothing without one).
#[derive(Clone)]
pub struct Bearer(Option<MetadataValue<Ascii>>);

impl Interceptor for Bearer {
    fn call(&mut self, mut req: Request<()>) -> Result<Request<()>, Status> {
        if let Some(v) = &self.0 {
            req.metadata_mut().insert("authorization", v.clone());
        }
        Ok(req)
    }
}

/// Connects to `addr`: `http://host:port`, `https://host:port`,
/// `host:port` or `unix:///path`, without TLS trust roots or a token.
pub async fn connect(addr: &str) -> Result<Client, ConnectError> {
    connect_with(addr, &ClientOptions::default()).await
}

/// Connects to `addr` with `opts`.
pub async fn connect_with(addr: &str, opts: &ClientOptions) -> Result<Client, ConnectError> {
    let channel = if let Some(path) = addr.strip_prefix("unix://") {
        let path = path.to_string();
        // The URI is required by the API but unused: the connector dials the socket.
        Endpoint::from_static("http://localhost")
            .connect_with_connector(tower::service_fn(move |_: Uri| {
                let path = path.clone();
                async move { Ok::<_, std::io::Error>(TokioIo::new(UnixStream::connect(path).await?)) }
            }))
            .await?
    } else {
        let bare = addr
            .strip_prefix("http://")
            .or_else(|| addr.strip_prefix("https://"))
            .unwrap_or(addr);
        let tls = opts.tls_ca.is_some() || addr.starts_with("https://");
        let uri = format!("{}://{bare}", if tls { "https" } else { "http" });
        let mut endpoint = Endpoint::from_shared(uri)?;
        if tls {
            let mut config = ClientTlsConfig::new();
            if let Some(ca) = &opts.tls_ca {
                config = config.ca_certificate(Certificate::from_pem(ca));
            }
            endpoint = endpoint.tls_config(config)?;
        }
        endpoint.connect().await?
    };
    let token = match &opts.token {
        Some(t) => Some(
            format!("Bearer {t}")
                .parse::<MetadataValue<Ascii>>()
                .map_err(|_| ConnectError::BadToken)?,
        ),
        None => None,
    };
    Ok(
        ProvingEngineClient::with_interceptor(channel, Bearer(token))
            .max_decoding_message_size(MAX_REPLY)
            .max_encoding_message_size(usize::MAX),
    )
}

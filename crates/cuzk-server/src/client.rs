//! Connecting a client to a daemon over TCP or a unix socket.

use cuzk_proto::ProvingEngineClient;
use hyper_util::rt::TokioIo;
use tokio::net::UnixStream;
use tonic::transport::{Channel, Endpoint, Uri};

/// Largest reply a client accepts (proofs and status are small).
const MAX_REPLY: usize = 64 << 20;

/// Connects to `addr`: `http://host:port`, `host:port` or `unix:///path`.
pub async fn connect(addr: &str) -> Result<ProvingEngineClient<Channel>, tonic::transport::Error> {
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
        let uri = if addr.contains("://") {
            addr.to_string()
        } else {
            format!("http://{addr}")
        };
        Endpoint::from_shared(uri)?.connect().await?
    };
    Ok(ProvingEngineClient::new(channel)
        .max_decoding_message_size(MAX_REPLY)
        .max_encoding_message_size(usize::MAX))
}

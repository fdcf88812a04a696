//! How client commands reach the daemon: the `--token-file` and `--tls-ca`
//! given once on the command line, for every connection.

use std::sync::OnceLock;

use anyhow::Result;
use cuzk_server::{Client, ClientOptions};

static OPTIONS: OnceLock<ClientOptions> = OnceLock::new();

/// Sets the options from the command line (once, before any connection).
pub fn init(token_file: Option<&std::path::Path>, tls_ca: Option<&std::path::Path>) -> Result<()> {
    let opts = ClientOptions::from_files(token_file, tls_ca)?;
    let _ = OPTIONS.set(opts);
    Ok(())
}

/// Connects to `addr` with the command line's token and CA.
pub async fn connect(addr: &str) -> Result<Client, cuzk_server::client::ConnectError> {
    let opts = OPTIONS.get().cloned().unwrap_or_default();
    cuzk_server::connect_with(addr, &opts).await
}

//! cuzk-server: the `cuzk.v1.ProvingEngine` gRPC service over a cuzk-core
//! engine.
//!
//! [`service`] answers the RPCs, [`convert`] maps messages and errors between
//! the wire and the engine, [`listen`] binds TCP or unix sockets, [`daemon`]
//! runs a whole daemon (engine + server + graceful stop) for the
//! `cuzk-daemon` binary and for in-process use, [`http`] serves `/status`
//! and `/metrics`, and [`client`] connects clients to it.

pub mod backends;
pub mod client;
pub mod convert;
pub mod daemon;
pub mod http;
pub mod listen;
pub mod service;

pub use client::connect;
pub use daemon::{Daemon, DaemonError};
pub use listen::ListenAddr;
pub use service::ProvingService;

//! cuzk-server: the `cuzk.v1.ProvingEngine` gRPC service over a cuzk-core
//! engine.
//!
//! [`config`] is the daemon's whole TOML file (the engine's sections and the
//! GPU backend's `[gpus]`), [`backends`] turns `[gpus]` into prover
//! backends, [`service`] answers the RPCs, [`convert`] maps messages and errors between
//! the wire and the engine, [`listen`] binds TCP or unix sockets, [`daemon`]
//! runs a whole daemon (engine + server + graceful stop) for the
//! `cuzk-daemon` binary and for in-process use, [`http`] serves `/status`
//! and `/metrics` ([`tls`] for it), [`access`] decides who may connect (TLS
//! and a bearer token off loopback), and [`client`] connects clients.

pub mod access;
pub mod backends;
pub mod client;
pub mod config;
pub mod connections;
pub mod convert;
pub mod daemon;
pub mod http;
pub mod listen;
pub mod service;
pub mod tls;

pub use client::{connect, connect_with, Client, ClientOptions};
pub use config::Config;
pub use daemon::{runtime, Daemon, DaemonError};
pub use listen::ListenAddr;
pub use service::ProvingService;

//! The `cuzk.v1` gRPC contract: the `ProvingEngine` service, its messages and
//! enums, generated from `proto/cuzk/v1/proving.proto` (wire compatible with
//! Curio's cuzk client), plus a few conversions used by server and clients.

/// Generated code for package `cuzk.v1`.
pub mod v1 {
    tonic::include_proto!("cuzk.v1");
}

pub use v1::proving_engine_client::ProvingEngineClient;
pub use v1::proving_engine_server::{ProvingEngine, ProvingEngineServer};

//! Generates the gRPC code from `proto/cuzk/v1/proving.proto` with a vendored
//! `protoc`, so no system protobuf compiler is needed.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protoc = protoc_bin_vendored::protoc_bin_path()?;
    // prost-build reads PROTOC; this sets it for this build script only.
    std::env::set_var("PROTOC", protoc);
    println!("cargo:rerun-if-changed=proto/cuzk/v1/proving.proto");
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_protos(&["proto/cuzk/v1/proving.proto"], &["proto"])?;
    Ok(())
}

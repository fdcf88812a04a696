//! With the `supraseal` feature, tells the linker where CUDA's
//! `libcudart_static.a` is (supraseal-c2 asks for it by name only):
//! `$CUDA_LIB_DIR`, else beside `$NVCC` or the `nvcc` on `PATH`, as
//! cuzk-cuda's build does.

use std::env;
use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-env-changed=CUDA_LIB_DIR");
    println!("cargo:rerun-if-env-changed=NVCC");
    if env::var_os("CARGO_FEATURE_SUPRASEAL").is_none() {
        return;
    }
    let mut dirs = Vec::new();
    if let Some(d) = env::var_os("CUDA_LIB_DIR") {
        dirs.push(PathBuf::from(d));
    }
    let nvcc = env::var_os("NVCC").map(PathBuf::from).or_else(|| {
        env::split_paths(&env::var_os("PATH")?)
            .map(|d| d.join("nvcc"))
            .find(|p| p.is_file())
    });
    if let Some(nvcc) = nvcc {
        let nvcc = std::fs::canonicalize(&nvcc).unwrap_or(nvcc);
        if let Some(root) = nvcc.parent().and_then(Path::parent) {
            for sub in ["lib64", "lib", "targets/x86_64-linux/lib"] {
                let d = root.join(sub);
                if d.join("libcudart_static.a").is_file() {
                    dirs.push(d);
                }
            }
        }
    }
    for d in dirs {
        println!("cargo:rustc-link-search=native={}", d.display());
    }
}

//! Builds the CUDA code when the `cuda` feature is on; does nothing otherwise.
//!
//! nvcc is `$NVCC`, else `nvcc` on `PATH`, else `/usr/local/cuda/bin/nvcc`
//! (`scripts/install-cuda-toolchain.sh` installs one from pip and prints the
//! `NVCC` to use). Headers come from the sppark crate (`DEP_SPPARK_ROOT`) and
//! the blst crate (`DEP_BLST_C_SRC`, `DEP_BLST_BINDINGS`); cudart is linked
//! statically from the toolkit's `lib64`, `lib` or `targets/*/lib`
//! (or `$CUDA_LIB_DIR`). With the `lab` feature the CUDA code is built
//! with `CUZK_LAB`, which adds the functions only cuzk-lab and the GPU
//! tests call.
//!
//! Under `cargo clippy` (cargo then names `clippy-driver` as the workspace
//! wrapper) nothing is linked, so the CUDA code is not compiled: a clippy run
//! checks the Rust side in seconds instead of minutes of nvcc.

use std::env;
use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=cuda");
    println!("cargo:rerun-if-env-changed=NVCC");
    println!("cargo:rerun-if-env-changed=CUDA_LIB_DIR");
    println!("cargo:rerun-if-env-changed=CUZK_CUDA_ARCHS");
    println!("cargo:rerun-if-env-changed=RUSTC_WORKSPACE_WRAPPER");
    if env::var_os("CARGO_FEATURE_CUDA").is_none() || under_clippy() {
        return;
    }

    let nvcc = find_nvcc().unwrap_or_else(|| {
        panic!(
            "the `cuda` feature needs nvcc: set NVCC, put nvcc on PATH or install \
             /usr/local/cuda (scripts/install-cuda-toolchain.sh)"
        )
    });
    let sppark = PathBuf::from(env_or_panic("DEP_SPPARK_ROOT"));
    let blst_src = PathBuf::from(env_or_panic("DEP_BLST_C_SRC"));
    let blst_bindings = PathBuf::from(env_or_panic("DEP_BLST_BINDINGS"));

    // cc-rs takes nvcc from $NVCC (and only then knows it is nvcc).
    env::set_var("NVCC", &nvcc);
    let mut nv = cc::Build::new();
    nv.cuda(true)
        // -G (device debug code) would make the kernels many times slower.
        .debug(false)
        .warnings(false)
        .flag("-std=c++17")
        .flag("-O3")
        // One nvcc thread per CPU for the per-architecture compilations
        // below (each takes ~5 minutes of one core).
        .flag("--threads=0")
        .flag("-Xcompiler")
        .flag("-fPIC")
        .define("FEATURE_BLS12_381", None)
        .define("__ADX__", None)
        .define("TAKE_RESPONSIBILITY_FOR_ERROR_MESSAGE", None)
        .include(&sppark)
        .include(&blst_src)
        .include(&blst_bindings)
        .include("cuda");
    if env::var_os("CARGO_FEATURE_LAB").is_some() {
        nv.define("CUZK_LAB", None);
    }
    // `CUZK_CUDA_ARCHS=90` (comma-separated) narrows the native code for
    // quicker builds while iterating on one card; the default covers A100,
    // L4/L40/RTX 40xx and H100/H200.
    let archs = env::var("CUZK_CUDA_ARCHS").unwrap_or_else(|_| "80,89,90".into());
    for arch in archs.split(',').map(str::trim).filter(|a| !a.is_empty()) {
        nv.flag("-gencode")
            .flag(format!("arch=compute_{arch},code=sm_{arch}"));
    }
    // PTX for newer GPUs than the native code above.
    nv.flag("-gencode").flag("arch=compute_90,code=compute_90");
    nv.file("cuda/cuzk_cuda.cu");
    // sppark's device table (`select_gpu`, `ngpus`): sppark's own build
    // compiles it when it finds nvcc itself (and then says TARGET=cuda).
    if env::var("DEP_SPPARK_TARGET").as_deref() != Ok("cuda") {
        nv.file(sppark.join("util").join("all_gpus.cpp"));
    }
    nv.compile("cuzk_cuda");

    for dir in cuda_lib_dirs(&nvcc) {
        println!("cargo:rustc-link-search=native={}", dir.display());
    }
    println!("cargo:rustc-link-lib=static=cudart_static");
    for lib in ["dl", "rt", "pthread"] {
        println!("cargo:rustc-link-lib={lib}");
    }
}

/// Whether cargo runs clippy: it checks, never links, so needs no objects.
fn under_clippy() -> bool {
    env::var_os("RUSTC_WORKSPACE_WRAPPER")
        .map(PathBuf::from)
        .and_then(|w| w.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .is_some_and(|stem| stem == "clippy-driver")
}

fn env_or_panic(name: &str) -> String {
    env::var(name).unwrap_or_else(|_| panic!("{name} is not set (is the dependency built?)"))
}

fn find_nvcc() -> Option<PathBuf> {
    if let Some(v) = env::var_os("NVCC") {
        let p = PathBuf::from(&v);
        if p.components().count() > 1 {
            return p.is_file().then_some(p);
        }
        return which(&p);
    }
    which(Path::new("nvcc")).or_else(|| {
        let p = PathBuf::from("/usr/local/cuda/bin/nvcc");
        p.is_file().then_some(p)
    })
}

fn which(name: &Path) -> Option<PathBuf> {
    let path = env::var_os("PATH")?;
    env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Where libcudart_static.a may be: `$CUDA_LIB_DIR`, then next to nvcc.
fn cuda_lib_dirs(nvcc: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(d) = env::var_os("CUDA_LIB_DIR") {
        dirs.push(PathBuf::from(d));
    }
    let nvcc = std::fs::canonicalize(nvcc).unwrap_or_else(|_| nvcc.to_path_buf());
    if let Some(root) = nvcc.parent().and_then(Path::parent) {
        let arch = env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_else(|_| "x86_64".into());
        for sub in [
            PathBuf::from("lib64"),
            PathBuf::from("lib"),
            Path::new("targets")
                .join(format!("{arch}-linux"))
                .join("lib"),
        ] {
            let d = root.join(sub);
            if d.join("libcudart_static.a").is_file() {
                dirs.push(d);
            }
        }
    }
    dirs
}

//! Link options of the `netmirror` binary.

fn main() {
    // Relative relocations in the packed RELR form (binutils ≥ 2.38, glibc ≥ 2.36): the dynamic
    // loader applies the binary's ~12k relocations from a compact table, about a tenth of a
    // short command's CPU less than with RELA entries. Only on Linux GNU targets, where both
    // the linker and the loader know the form; elsewhere the default stays.
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bin=netmirror=-Wl,-z,pack-relative-relocs");
    }
    symbol_order();
    println!("cargo:rerun-if-changed=build.rs");
}

/// Has the linker put the functions of `symbol-order.txt` (what `route show`, `addr`, `link`
/// and `rule` run, written by `cargo xtask symbol-order`) first in the release binary's code,
/// together: the kernel maps a binary's code 64 KiB around each page a process touches, so
/// code spread over the whole `.text` made `route show` map 3.2 of its 4.9 MiB; packed, it
/// maps about 0.8 MiB (peak RSS 6.5 → 4.0 MiB). Names the binary no longer has are skipped
/// without a word: the order then only loses its effect for them.
///
/// Only where the linker is the LLD that rustc ≥ 1.90 uses by default on x86_64 Linux GNU
/// (the option is LLD's, GNU ld refuses it): not when a linker, a linker flavour or
/// `-fuse-ld` is chosen.
fn symbol_order() {
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    println!("cargo:rerun-if-changed=symbol-order.txt");
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    let flags = var("CARGO_ENCODED_RUSTFLAGS");
    let default_linker = var("TARGET") == "x86_64-unknown-linux-gnu"
        && std::env::var_os("RUSTC_LINKER").is_none()
        && !flags.contains("linker")
        && !flags.contains("fuse-ld");
    if var("PROFILE") != "release" || !default_linker {
        return;
    }
    let file = std::path::Path::new(&var("CARGO_MANIFEST_DIR")).join("symbol-order.txt");
    if file.is_file() {
        println!(
            "cargo:rustc-link-arg-bin=netmirror=-Wl,--symbol-ordering-file={}",
            file.display()
        );
        println!("cargo:rustc-link-arg-bin=netmirror=-Wl,--no-warn-symbol-ordering");
    }
}

//! `tessera-tools`: the inspection commands (`echo`, `pub`, `ls`, `typeof`, `spy`) and the interoperability suite's `shape`, which
//! `tessera SUB ...` runs from here so that the measured `tessera` binary does not carry them.

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    std::process::exit(tessera_cli::dispatch_tools(&argv));
}

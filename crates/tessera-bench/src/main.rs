//! The `tessera-bench` binary: the benchmark environment (see the `tessera_bench` library).
//! `tessera bench ARGS` runs this binary with ARGS.

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let prog = args.first().map(String::as_str).unwrap_or("tessera-bench");
    let code = tessera_bench::main(prog, &args[1.min(args.len())..]);
    std::process::exit(code);
}

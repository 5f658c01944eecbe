//! The benchmark environment (`tessera-bench`, also run as `tessera bench`): plans, runs,
//! measures and reports pub/sub experiments — the seeds' DDS Benchmark Environment, side by side
//! with Cyclone DDS.
//!
//! It is a crate of its own so that the measured `tessera` binary (`tessera perf`) does not
//! carry the charts, fonts, scenario parser and progress bars. `tessera bench ARGS` replaces
//! itself with the `tessera-bench` binary beside it, and this binary starts the `tessera`
//! beside it for every Tessera worker ([`sibling_tessera`]).
//!
//! - [`scenario`]: scenario files (TOML) and the built-in presets, expanded into points.
//! - [`runner`]: runs the points, interleaved, each in namespaces made for it ([`hosts`]),
//!   driving `tessera perf`, `ddsperf`, Fast DDS's `fastdds-perf` ([`fastdds`], built on
//!   demand), the raw UDP floor ([`floor`], `tessera-bench udp`) and the Tessera-only
//!   [`worker`] (`tessera-bench worker`); reads their output ([`parse`]) and their /proc
//!   figures ([`procmon`]).
//! - [`stats`]: HdrHistogram summaries; [`results`]: the result model (`results.json`).
//! - [`report`]: results.json/csv, report.md, report.html with charts, the terminal table.
//! - [`compare`] two result directories; [`ab`]: two builds measured run after run;
//!   [`expect`] criteria for regression checks.
//! - [`env`](mod@env): the environment captured with every result.

pub mod ab;
pub mod compare;
pub mod cpuwin;
pub mod cyclonec;
pub mod env;
pub mod expect;
pub mod fastdds;
pub mod floor;
pub mod hosts;
pub mod parse;
pub mod procmon;
pub mod report;
pub mod results;
pub mod runner;
pub mod rustpeers;
pub mod scenario;
pub mod shm_floor;
pub mod stats;
pub mod stream;
pub mod worker;

use std::path::PathBuf;

/// Exit status: success (and every `--expect` criterion met).
pub const EXIT_OK: i32 = 0;
/// Exit status: an `--expect` criterion failed, or no point succeeded.
pub const EXIT_FAILED: i32 = 1;
/// Exit status: the run could not start or finish (namespaces, report).
pub const EXIT_ERROR: i32 = 2;
/// Exit status: bad command line or scenario.
pub const EXIT_USAGE: i32 = 3;

/// Usage text of `tessera-bench` (`prog` is how it was invoked: `tessera-bench` or
/// `tessera bench`).
pub fn usage(prog: &str) -> String {
    let mut presets = String::new();
    for (name, what, _) in scenario::PRESETS {
        presets.push_str(&format!("  {name:<12} {what}\n"));
    }
    format!(
        "usage: {prog} [PRESET | SCENARIO.toml] [OPTIONS]\n\
         \x20      {prog} compare DIR_A DIR_B [--threshold PCT]\n\
         \x20      {prog} ab --a DIR_A --b DIR_B [--runs N] [--out DIR] SCENARIO [OPTIONS]\n\
         \x20          (two builds' `tessera`, runs alternated A B B A ..., medians and p-values)\n\
         \x20      {prog} cleanup\n\
         \x20      {prog} perf --consistency atomic ARGS   (tessera perf, ATOMIC endpoints)\n\
         \n\
         Runs pub/sub experiments side by side (Tessera, Cyclone DDS via ddsperf, Fast DDS via\n\
         fastdds-perf, mixed pairs, the raw UDP floor), each point in network namespaces made\n\
         for it, and writes\n\
         bench-results/<test-id>/ with results.json, results.csv, report.md and report.html.\n\
         \n\
         PRESETS (default: quick):\n{presets}\
         \n\
         OPTIONS:\n\
         \x20 --out DIR          result directory (default bench-results/<test-id>)\n\
         \x20 --hosts N          run on N namespace hosts on a virtual LAN (default 1)\n\
         \x20 --loss PCT         drop PCT % of UDP frames (each IP fragment) on every host's input\n\
         \x20 --link-mbit R      limit every host's egress to R Mbit/s (tc tbf)\n\
         \x20 --rounds N         repetitions of every cell (interleaved)\n\
         \x20 --pairs LIST       e.g. tessera,cyclone,udp,tessera>cyclone,cyclone>tessera,\n\
         \x20                    fastdds,fastdds-udp,tessera>fastdds,fastdds>tessera,\n\
         \x20                    tessera-shm,tessera-shm-spin,shm,shm-spin (shared memory),\n\
         \x20                    tessera-loan,tessera-loan-spin (shared memory, loans)\n\
         \x20                    tessera-atomic (ATOMIC consistency, with itself only)\n\
         \x20                    rustdds,dust_dds,zenoh,tessera>rustdds,rustdds>tessera\n\
         \x20                    cyclone-c,tessera>cyclone-c,cyclone-c>tessera (C worker)\n\
         \x20 --expect CRIT      fail (exit 1) unless CRIT holds, e.g. 'rtt_ratio<=1.0',\n\
         \x20                    'throughput_ratio>=1.0', 'tessera.lost==0', 'failed==0'\n\
         \x20 --no-progress      no progress bar\n\
         \x20 --tessera PATH     measure this tessera binary (default: the one beside this)\n\
         \x20 --print-scenario   print the preset's TOML and exit\n\
         \n\
         cleanup removes namespaces and links a killed run left behind (names tb-*).\n\
         Needs root (network namespaces). ddsperf comes from Debian's cyclonedds-tools;\n\
         fastdds-perf is compiled with g++ against libfastrtps-dev when a Fast DDS pair runs,\n\
         cyclone-perf with idlc and cc against cyclonedds-dev when a cyclone-c pair runs;\n\
         the RustDDS, dust_dds and Zenoh workers with cargo in workers/*/ when their pairs run.\n"
    )
}

/// Runs the benchmark environment with `args` (the words after `tessera-bench`, or after
/// `tessera bench`); returns the exit status.
pub fn main(prog: &str, args: &[String]) -> i32 {
    match args.first().map(String::as_str) {
        // `tessera perf` in a build with ATOMIC consistency (the `tessera-atomic` pair).
        Some("perf") => return tessera_cli::perf::main(&format!("{prog} perf"), &args[1..]),
        Some("udp") => return floor::main(&args[1..]),
        Some("shm") => return shm_floor::main(&args[1..]),
        Some("worker") => return worker::main(&args[1..]),
        Some("compare") => return compare_main(prog, &args[1..]),
        Some("ab") => return ab::main(prog, &args[1..]),
        Some("cleanup") => {
            let (ns, links) = hosts::cleanup_stale();
            println!("removed {ns} namespaces and {links} links");
            return EXIT_OK;
        }
        Some("help" | "-h" | "--help") => {
            print!("{}", usage(prog));
            return EXIT_OK;
        }
        _ => {}
    }
    match run_main(prog, args) {
        Ok(code) => code,
        Err(CliError::Usage(msg)) => {
            eprintln!("{prog}: {msg}\n");
            eprint!("{}", usage(prog));
            EXIT_USAGE
        }
        Err(CliError::Run(e)) => {
            eprintln!("{prog}: {e:#}");
            EXIT_ERROR
        }
    }
}

enum CliError {
    Usage(String),
    Run(anyhow::Error),
}

fn run_main(prog: &str, args: &[String]) -> Result<i32, CliError> {
    let bench_exe = runner::current_exe().map_err(CliError::Run)?;
    let mut opts = runner::RunOptions {
        out_dir: None,
        hosts: None,
        loss_pct: None,
        link_mbit: None,
        rounds: None,
        pairs: None,
        expect: Vec::new(),
        progress: true,
        tessera_exe: sibling_tessera(&bench_exe),
        bench_exe,
        ddsperf: env::find_ddsperf(),
        command_line: format!("{prog} {}", args.join(" ")).trim().to_string(),
    };
    let mut scenario_name: Option<String> = None;
    let mut print_scenario = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| CliError::Usage(format!("{name} needs a value")))
        };
        let num = |name: &str, v: String| {
            v.parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x >= 0.0)
                .ok_or_else(|| CliError::Usage(format!("{name}: {v:?} is not a number >= 0")))
        };
        match a.as_str() {
            "--out" => opts.out_dir = Some(PathBuf::from(value("--out")?)),
            "--hosts" => {
                let v = num("--hosts", value("--hosts")?)?;
                if !(1.0..=64.0).contains(&v) || v.fract() != 0.0 {
                    return Err(CliError::Usage("--hosts must be 1..=64".into()));
                }
                opts.hosts = Some(v as u32);
            }
            "--loss" => {
                let v = num("--loss", value("--loss")?)?;
                if v >= 100.0 {
                    return Err(CliError::Usage("--loss must be below 100".into()));
                }
                opts.loss_pct = Some(v);
            }
            "--link-mbit" => {
                let v = num("--link-mbit", value("--link-mbit")?)?;
                if v == 0.0 {
                    return Err(CliError::Usage("--link-mbit must be > 0".into()));
                }
                opts.link_mbit = Some(v);
            }
            "--rounds" => {
                let v = num("--rounds", value("--rounds")?)?;
                if !(1.0..=1000.0).contains(&v) || v.fract() != 0.0 {
                    return Err(CliError::Usage("--rounds must be 1..=1000".into()));
                }
                opts.rounds = Some(v as u32);
            }
            "--pairs" => {
                let list: Vec<String> = value("--pairs")?
                    .split(',')
                    .map(|s| s.trim().to_string())
                    .collect();
                opts.pairs = Some(scenario::parse_pairs(&list).map_err(CliError::Usage)?);
            }
            "--expect" => {
                let c = expect::Criterion::parse(&value("--expect")?)
                    .map_err(|e| CliError::Usage(e.to_string()))?;
                opts.expect.push(c);
            }
            "--no-progress" => opts.progress = false,
            "--tessera" => {
                let path = PathBuf::from(value("--tessera")?);
                if !path.is_file() {
                    return Err(CliError::Usage(format!(
                        "--tessera: {} is not a file",
                        path.display()
                    )));
                }
                opts.tessera_exe = path;
            }
            "--print-scenario" => print_scenario = true,
            s if s.starts_with('-') => return Err(CliError::Usage(format!("unknown option {s}"))),
            s => {
                if scenario_name.replace(s.to_string()).is_some() {
                    return Err(CliError::Usage("give one preset or scenario file".into()));
                }
            }
        }
    }
    let name = scenario_name.unwrap_or_else(|| "quick".to_string());
    let scenario = scenario::Scenario::load(&name).map_err(|e| CliError::Usage(e.to_string()))?;
    if print_scenario {
        print!("{}", scenario.text);
        return Ok(EXIT_OK);
    }
    if !is_root() {
        return Err(CliError::Run(anyhow::anyhow!(
            "{prog} needs root: every point runs in network namespaces it creates"
        )));
    }
    let started = std::time::Instant::now();
    let outcome = runner::run(scenario, &opts).map_err(CliError::Run)?;
    let rs = &outcome.results;
    println!("{}", report::terminal_summary(rs));
    for n in &rs.notes {
        println!("note: {n}");
    }
    let failed = rs.points.iter().filter(|p| !p.ok).count();
    // A failed point's reason is in results.json and the report; print it here too, so a log
    // that keeps only the terminal output (CI) still says why.
    for p in rs.points.iter().filter(|p| !p.ok) {
        println!(
            "failed: {} {} round {}: {}",
            p.experiment,
            report::pair_display(&p.pair),
            p.round,
            p.error.as_deref().unwrap_or("no reason given")
        );
    }
    println!(
        "\n{} points ({} failed) in {:.0} s; report: {}",
        rs.points.len(),
        failed,
        started.elapsed().as_secs_f64(),
        outcome.dir.join("report.html").display()
    );
    let mut code = if rs.points.iter().any(|p| p.ok) || rs.points.is_empty() {
        EXIT_OK
    } else {
        EXIT_FAILED
    };
    for o in &outcome.expectations {
        println!(
            "expect {}: {} ({})",
            o.criterion,
            if o.ok { "met" } else { "NOT MET" },
            o.detail
        );
        if !o.ok {
            code = EXIT_FAILED;
        }
    }
    Ok(code)
}

fn compare_main(prog: &str, args: &[String]) -> i32 {
    let mut dirs = Vec::new();
    let mut threshold = 5.0;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--threshold" {
            match it.next().and_then(|v| v.parse::<f64>().ok()) {
                Some(t) if t >= 0.0 => threshold = t,
                _ => {
                    eprintln!("{prog} compare: --threshold needs a percentage");
                    return EXIT_USAGE;
                }
            }
        } else {
            dirs.push(PathBuf::from(a));
        }
    }
    let [a, b] = dirs.as_slice() else {
        eprintln!("usage: {prog} compare DIR_A DIR_B [--threshold PCT]");
        return EXIT_USAGE;
    };
    let load = |d: &PathBuf| compare::load(d).map_err(|e| format!("{}: {e}", d.display()));
    match (load(a), load(b)) {
        (Ok(ra), Ok(rb)) => {
            let rows = compare::compare(&ra, &rb, threshold);
            print!(
                "{}",
                compare::render(&rows, &a.display().to_string(), &b.display().to_string())
            );
            EXIT_OK
        }
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("{prog} compare: {e}");
            EXIT_ERROR
        }
    }
}

/// The `tessera` binary the runner starts as `tessera perf` for every Tessera worker: the one
/// installed next to `bench_exe` (cargo builds both into the same directory).
pub fn sibling_tessera(bench_exe: &std::path::Path) -> PathBuf {
    bench_exe.with_file_name("tessera")
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

//! `tessera idl FILE.idl... [-I DIR]... [-o DIR] [--ros2-names]` (also runnable as `tessera-idl`): compiles
//! OMG IDL to Rust (see the `tessera_idl` crate docs). Without `-o` the code goes to standard
//! output; with it, each FILE.idl becomes DIR/FILE.rs. Exit status: 0, 1 on an IDL error
//! (printed as `file:line:col: message`), 3 on bad arguments.

use std::path::PathBuf;

fn usage(prog: &str) -> String {
    format!(
        "usage: {prog} FILE.idl... [-I DIR]... [-o DIR] [--ros2-names]\n\
         \n\
         Compiles OMG IDL to Rust types with #[derive(TopicType)].\n\
         \x20 -I DIR   search DIR for #include files (after the including file's directory)\n\
         \x20 -o DIR   write DIR/<file stem>.rs for each input instead of printing the code\n\
         \x20 --ros2-names  register types under ROS 2's DDS names (pkg::msg::dds_::Type_)\n"
    )
}

fn main() {
    let mut args = std::env::args();
    let prog = args.next().unwrap_or_else(|| "tessera-idl".into());
    let mut files = Vec::new();
    let mut includes: Vec<PathBuf> = Vec::new();
    let mut out_dir: Option<PathBuf> = None;
    let mut opts = tessera_idl::Options::default();
    while let Some(a) = args.next() {
        match a.as_str() {
            "-h" | "--help" => {
                print!("{}", usage(&prog));
                return;
            }
            "--ros2-names" => opts.ros2_names = true,
            "-I" | "-o" => {
                let Some(v) = args.next() else {
                    eprint!("{prog}: {a} needs a directory\n{}", usage(&prog));
                    std::process::exit(3);
                };
                if a == "-I" {
                    includes.push(v.into());
                } else {
                    out_dir = Some(v.into());
                }
            }
            s if s.starts_with("-I") && s.len() > 2 => includes.push(s[2..].into()),
            s if s.starts_with('-') => {
                eprint!("{prog}: unknown option {s}\n{}", usage(&prog));
                std::process::exit(3);
            }
            _ => files.push(PathBuf::from(a)),
        }
    }
    if files.is_empty() {
        eprint!("{}", usage(&prog));
        std::process::exit(3);
    }
    for f in &files {
        let code = match tessera_idl::compile_file_with(f, &includes, opts) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(1);
            }
        };
        match &out_dir {
            None => print!("{code}"),
            Some(d) => {
                let stem = f.file_stem().map_or("idl".into(), |s| s.to_string_lossy());
                let out = d.join(format!("{stem}.rs"));
                if let Err(e) = std::fs::write(&out, code) {
                    eprintln!("{}: {e}", out.display());
                    std::process::exit(1);
                }
            }
        }
    }
}

//! The controller of the ATOMIC fault harness (see the `tessera_jepsen` crate docs).
//!
//!   tessera-jepsen run [--members 3|5] [--seed S] [--duration SECONDS] [--schedules N]
//!                      [--nemesis kill,pause,partition,restart,loss,clock] [--rate HZ]
//!                      [--out DIR] [--lifespan SECONDS]
//!   tessera-jepsen schedule --members N --seed S [--duration SECONDS] [--nemesis LIST]
//!   tessera-jepsen check DIR
//!
//! `run` needs root (network namespaces, nftables). It makes one namespace host per member on
//! a private bridge (names unique per run, deleted on exit and on Ctrl-C), plays the seeded
//! schedule, heals, lets the group quiesce, stops the members, merges their histories and
//! checks them. `--schedules N` runs seeds S, S+1, ... S+N-1 in a row. Exit status 1 when any
//! violation was found. `schedule` only prints the schedule a seed gives; `check` checks the
//! member histories (`*.history`) a run left in DIR again. `--lifespan` gives the members'
//! writers a LIFESPAN.
//!
//! The `clock` nemesis preloads libfaketime (Debian package `libfaketime`) into every member;
//! `run` refuses without it, and checks first that a preloaded process's wall clock jumps and
//! its monotonic clock does not.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use tessera_atomic::check::check;
use tessera_bench::hosts::{self, LinkShaping, Topology};
use tessera_bench::procmon::{Capture, Proc};
use tessera_bench::results::Implementation;
use tessera_jepsen::clock;
use tessera_jepsen::history::{self, MemberHistory};
use tessera_jepsen::nft::{self, HostRules};
use tessera_jepsen::schedule::{Action, Fault, Nemesis, Schedule};

struct Opts {
    members: usize,
    seed: u64,
    duration: u64,
    schedules: u64,
    nemeses: Vec<Nemesis>,
    rate: f64,
    out: PathBuf,
    /// The members' writers' LIFESPAN, seconds (none by default).
    lifespan: Option<String>,
}

fn parse(args: &[String]) -> Result<Opts> {
    let mut o = Opts {
        members: 3,
        seed: 1,
        duration: 60,
        schedules: 1,
        nemeses: Nemesis::ALL.to_vec(),
        rate: 10.0,
        out: std::env::temp_dir().join("tessera-jepsen"),
        lifespan: None,
    };
    let mut it = args.iter();
    while let Some(k) = it.next() {
        let v = it.next().with_context(|| format!("{k} needs a value"))?;
        match k.as_str() {
            "--members" => o.members = v.parse()?,
            "--seed" => o.seed = v.parse()?,
            "--duration" => o.duration = v.parse()?,
            "--schedules" => o.schedules = v.parse()?,
            "--nemesis" => o.nemeses = Nemesis::parse_list(v).map_err(anyhow::Error::msg)?,
            "--rate" => o.rate = v.parse()?,
            "--out" => o.out = v.into(),
            "--lifespan" => {
                v.parse::<f64>()
                    .ok()
                    .filter(|s| *s > 0.0 && s.is_finite())
                    .context("--lifespan: seconds > 0")?;
                o.lifespan = Some(v.clone());
            }
            _ => bail!("unknown argument {k} (see the usage in --help)"),
        }
    }
    if !(1..=9).contains(&o.members) {
        bail!("--members: 1 to 9");
    }
    if o.duration < 10 {
        bail!("--duration: at least 10 s (5 s of warm-up come first)");
    }
    Ok(o)
}

const USAGE: &str = "usage:
  tessera-jepsen run [--members 3|5] [--seed S] [--duration SECONDS] [--schedules N]
                     [--nemesis kill,pause,partition,restart,loss,clock] [--rate HZ]
                     [--out DIR] [--lifespan SECONDS]
  tessera-jepsen schedule [--members N] [--seed S] [--duration SECONDS] [--nemesis LIST]
  tessera-jepsen check DIR";

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // `run --help` and the like: the usage, not an option missing its value.
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}");
        return Ok(());
    }
    match args.first().map(String::as_str) {
        Some("run") => {
            let o = parse(&args[1..])?;
            hosts::install_interrupt_handler()?;
            let faketime = if o.nemeses.contains(&Nemesis::Clock) {
                Some(clock_preflight(&o)?)
            } else {
                None
            };
            let mut bad = Vec::new();
            for seed in o.seed..o.seed + o.schedules {
                let t0 = Instant::now();
                let (violations, exits, unseen) = run_one(&o, seed, faketime.as_deref())?;
                let mut notes = String::new();
                if exits > 0 {
                    notes += &format!(", {exits} member(s) exited on their own");
                }
                if unseen > 0 {
                    notes += &format!(", {unseen} clock step(s) not seen by their member");
                }
                println!(
                    "== seed {seed}: {violations} violation(s){notes} ({:.0} s)",
                    t0.elapsed().as_secs_f64()
                );
                if violations > 0 || exits > 0 || unseen > 0 {
                    bad.push(seed);
                }
            }
            println!(
                "== {} schedule(s) of {} s with {} members: {} with violations, member exits or \
                 unseen clock steps{}",
                o.schedules,
                o.duration,
                o.members,
                bad.len(),
                if bad.is_empty() {
                    String::new()
                } else {
                    format!(" (seeds {bad:?})")
                }
            );
            std::process::exit(if bad.is_empty() { 0 } else { 1 });
        }
        Some("schedule") => {
            let o = parse(&args[1..])?;
            print!(
                "{}",
                Schedule::generate(o.members, o.seed, o.duration * 1000, &o.nemeses)
            );
            Ok(())
        }
        Some("check") => {
            let dir = PathBuf::from(args.get(1).context(USAGE)?);
            let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
                .with_context(|| format!("reading {}", dir.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "history"))
                .collect();
            files.sort();
            let mut parsed = Vec::new();
            for f in &files {
                let name = f.file_stem().unwrap_or_default().to_string_lossy();
                parsed.push(history::parse_member(&name, &std::fs::read_to_string(f)?)?);
            }
            let violations = report(&parsed, &dir)?;
            println!("== {violations} violation(s)");
            std::process::exit(if violations == 0 { 0 } else { 1 });
        }
        _ => bail!("{USAGE}"),
    }
}

/// The member binary, next to this one.
fn member_bin() -> Result<PathBuf> {
    let bin = std::env::current_exe()?.with_file_name("tessera-jepsen-member");
    if !bin.exists() {
        bail!(
            "{} not found (cargo build -p tessera-jepsen)",
            bin.display()
        );
    }
    Ok(bin)
}

/// Finds libfaketime and checks that it moves a member's wall clock and not its monotonic one;
/// a clock nemesis that did nothing would pass every run.
fn clock_preflight(o: &Opts) -> Result<PathBuf> {
    let lib = clock::find_library().map_err(anyhow::Error::msg)?;
    std::fs::create_dir_all(&o.out).with_context(|| format!("creating {}", o.out.display()))?;
    clock::verify(&lib, &member_bin()?, &o.out)
        .map_err(|e| anyhow::anyhow!("the clock nemesis does not work here: {e}"))?;
    println!(
        "== clock: {} jumps a member's wall clock, not its monotonic clock",
        lib.display()
    );
    Ok(lib)
}

/// One process incarnation of a member.
struct Incarnation {
    name: String,
    proc: Proc,
    history: PathBuf,
    control: PathBuf,
    /// Killed, or stopped for a restart: not up at the end.
    gone: bool,
}

impl Incarnation {
    fn signal_file(&self, ext: &str, content: &str) -> Result<()> {
        let mut p = self.control.as_os_str().to_owned();
        p.push(ext);
        std::fs::write(&p, content).with_context(|| format!("writing {p:?}"))
    }

    fn deliveries(&self) -> usize {
        std::fs::read_to_string(&self.history)
            .map(|t| t.lines().filter(|l| l.starts_with("deliver ")).count())
            .unwrap_or(0)
    }
}

/// The run's hosts and processes.
struct Run<'a> {
    o: &'a Opts,
    topo: Topology,
    dir: PathBuf,
    member_bin: PathBuf,
    /// Per member, its incarnations in start order (the last one is the current one).
    members: Vec<Vec<Incarnation>>,
    /// Per host, the active network faults' rules, by fault id.
    rules: Vec<BTreeMap<usize, HostRules>>,
    /// Members that exited without being told to (a crash, or a failed start): the run's
    /// premise (the live ones stay up) does not hold, so it is reported apart.
    exits: Vec<String>,
    /// libfaketime, preloaded into every member when the schedule may jump clocks.
    faketime: Option<&'a Path>,
}

impl Run<'_> {
    /// Member `m`'s clock offset, read by libfaketime in each of its incarnations: the clock
    /// belongs to the member's host, not to one process.
    fn clock_file(&self, m: usize) -> PathBuf {
        self.dir.join(format!("m{m}.faketime"))
    }

    fn set_clock(&self, m: usize, offset_s: i64) -> Result<()> {
        let f = self.clock_file(m);
        clock::set_offset(&f, offset_s).with_context(|| format!("writing {}", f.display()))
    }

    fn start_member(&mut self, m: usize) -> Result<()> {
        let inc = self.members[m].len();
        let name = format!("m{m}.{inc}");
        let history = self.dir.join(format!("{name}.history"));
        let control = self.dir.join(format!("{name}.ctl"));
        // Writer ids: unique per incarnation, never 0.
        let writer_id = (m as u64 + 1) * 1000 + inc as u64;
        let mut cmd = self.topo.command(m, &self.member_bin);
        // Shared memory would cross the hosts (one /dev/shm): UDP only.
        cmd.env("TESSERA_TRANSPORTS", "udp4")
            .env(
                "RUST_LOG",
                std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".into()),
            )
            .arg("--history")
            .arg(&history)
            .arg("--control")
            .arg(&control)
            .args(["--writer-id", &writer_id.to_string()])
            .args(["--rate", &self.o.rate.to_string()]);
        if let Some(l) = &self.o.lifespan {
            cmd.args(["--lifespan", l]);
        }
        if let Some(lib) = self.faketime {
            clock::preload(&mut cmd, lib, &self.clock_file(m));
        }
        let proc = Proc::spawn(
            cmd,
            &name,
            Implementation::Tessera,
            Capture::File(self.dir.join(format!("{name}.out"))),
        )
        .with_context(|| format!("starting {name}"))?;
        self.members[m].push(Incarnation {
            name,
            proc,
            history,
            control,
            gone: false,
        });
        Ok(())
    }

    fn current(&mut self, m: usize) -> &mut Incarnation {
        self.members[m]
            .last_mut()
            .expect("every member has an incarnation")
    }

    fn apply_rules(&self, host: usize) -> Result<()> {
        let mut all = HostRules::default();
        for r in self.rules[host].values() {
            all.drop_from.extend(&r.drop_from);
            all.loss_pct = all.loss_pct.max(r.loss_pct);
        }
        let ns = &self.topo.hosts()[host].name;
        let mut child = std::process::Command::new("ip")
            .args(["netns", "exec", ns, "nft", "-f", "-"])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .context("running nft (Debian package nftables)")?;
        use std::io::Write as _;
        child
            .stdin
            .take()
            .expect("piped")
            .write_all(nft::script(&all).as_bytes())?;
        let st = child.wait()?;
        if !st.success() {
            bail!("nft in {ns} failed ({st})");
        }
        Ok(())
    }

    fn set_rules(&mut self, host: usize, id: usize, r: HostRules) -> Result<()> {
        self.rules[host].insert(id, r);
        self.apply_rules(host)
    }

    fn clear_rules(&mut self, id: usize) -> Result<()> {
        for host in 0..self.rules.len() {
            if self.rules[host].remove(&id).is_some() {
                self.apply_rules(host)?;
            }
        }
        Ok(())
    }

    /// Under fault `id`, `host` drops everything from the hosts of `from`.
    fn cut(&mut self, id: usize, host: usize, from: &[usize]) -> Result<()> {
        let drop_from = from.iter().map(|&m| self.topo.hosts()[m].addr).collect();
        let r = HostRules {
            drop_from,
            loss_pct: 0,
        };
        self.set_rules(host, id, r)
    }

    fn start_fault(&mut self, id: usize, f: &Fault) -> Result<()> {
        match f {
            Fault::Kill { member } => {
                let inc = self.current(*member);
                inc.proc.kill();
                inc.gone = true;
            }
            Fault::Pause { member } => self.signal(*member, libc::SIGSTOP)?,
            Fault::Restart { member } => {
                let inc = self.current(*member);
                inc.signal_file(".stop", "leave")?;
                inc.gone = true;
                if inc.proc.wait_timeout(Duration::from_secs(10)).is_none() {
                    eprintln!("{} did not stop within 10 s: killed", inc.name);
                    inc.proc.kill();
                }
                self.start_member(*member)?;
            }
            Fault::Partition { minority } => {
                let n = self.o.members;
                let rest: Vec<usize> = (0..n).filter(|m| !minority.contains(m)).collect();
                for &a in minority {
                    self.cut(id, a, &rest)?;
                }
                for &b in &rest {
                    self.cut(id, b, minority)?;
                }
            }
            Fault::OneWay { member, from } => self.cut(id, *member, from)?,
            Fault::LossBurst { member, pct } => {
                let r = HostRules {
                    drop_from: Default::default(),
                    loss_pct: *pct,
                };
                self.set_rules(*member, id, r)?;
            }
            Fault::ClockJump { member, offset_s } => self.set_clock(*member, *offset_s)?,
        }
        Ok(())
    }

    fn heal_fault(&mut self, id: usize, f: &Fault) -> Result<()> {
        match f {
            Fault::Kill { member } => self.start_member(*member)?,
            Fault::Pause { member } => self.signal(*member, libc::SIGCONT)?,
            Fault::Restart { .. } => {}
            Fault::Partition { .. } | Fault::OneWay { .. } | Fault::LossBurst { .. } => {
                self.clear_rules(id)?
            }
            Fault::ClockJump { member, .. } => self.set_clock(*member, 0)?,
        }
        Ok(())
    }

    /// Signals a member's current incarnation, unless it exited on its own.
    fn signal(&mut self, member: usize, sig: i32) -> Result<()> {
        let inc = self.current(member);
        if !inc.gone {
            inc.proc.signal(sig)?;
        }
        Ok(())
    }

    /// Notes members that exited on their own since the last look; they are gone from then on.
    fn note_exits(&mut self) {
        for v in &mut self.members {
            let Some(inc) = v.last_mut().filter(|i| !i.gone) else {
                continue;
            };
            if let Some(code) = inc.proc.wait_timeout(Duration::ZERO) {
                inc.gone = true;
                let out = inc.proc.output();
                let first = out.lines().next().unwrap_or("");
                let msg = format!("{} exited on its own ({code}): {first}", inc.name);
                println!("  {msg}");
                self.exits.push(msg);
            }
        }
    }

    fn live(&self) -> impl Iterator<Item = &Incarnation> {
        self.members
            .iter()
            .filter_map(|v| v.last())
            .filter(|i| !i.gone)
    }
}

/// Runs one seeded schedule; returns the number of violations, of members that exited on
/// their own and of clock steps the members did not see.
fn run_one(o: &Opts, seed: u64, faketime: Option<&Path>) -> Result<(usize, usize, usize)> {
    let schedule = Schedule::generate(o.members, seed, o.duration * 1000, &o.nemeses);
    println!(
        "== seed {seed}: {} members, {} s, nemeses {:?}, schedule:\n{schedule}",
        o.members, o.duration, o.nemeses
    );
    let run_id = hosts::new_run_id();
    let dir = o.out.join(format!("seed-{seed}-{run_id}"));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let member_bin = member_bin()?;
    // Its own name prefix: the bench's cleanup of stale `tb-*` hosts never takes a run's.
    let topo = Topology::lan_with(hosts::JEPSEN, &run_id, o.members, &LinkShaping::default())?;
    let mut run = Run {
        o,
        topo,
        dir: dir.clone(),
        member_bin,
        members: (0..o.members).map(|_| Vec::new()).collect(),
        rules: vec![BTreeMap::new(); o.members],
        exits: Vec::new(),
        faketime,
    };
    let result = play(&mut run, &schedule);
    // Whatever happened: no process, namespace or link outlives the run.
    for v in &mut run.members {
        for inc in v.iter_mut() {
            let _ = inc.proc.signal(libc::SIGCONT);
            inc.proc.kill();
        }
    }
    run.topo.teardown();
    result?;

    let mut parsed = Vec::new();
    for v in &run.members {
        for inc in v {
            let text = std::fs::read_to_string(&inc.history).unwrap_or_default();
            parsed.push(history::parse_member(&inc.name, &text)?);
        }
    }
    let unseen = clock_steps_unseen(&run, &schedule);
    Ok((report(&parsed, &dir)?, run.exits.len(), unseen))
}

/// Plays the schedule, heals, quiesces and stops the members cleanly.
fn play(run: &mut Run<'_>, schedule: &Schedule) -> Result<()> {
    for m in 0..run.o.members {
        if run.faketime.is_some() {
            run.set_clock(m, 0)?;
        }
        run.start_member(m)?;
    }
    let t0 = Instant::now();
    for step in &schedule.steps {
        let at = t0 + Duration::from_millis(step.at_ms);
        if let Some(d) = at.checked_duration_since(Instant::now()) {
            thread::sleep(d);
        }
        run.note_exits();
        let secs = t0.elapsed().as_secs_f64();
        let fault = schedule.faults[step.id].clone();
        match &step.action {
            Action::Start(f) => {
                println!("  [{secs:6.1}s] #{} {f}", step.id);
                run.start_fault(step.id, f)?;
            }
            Action::Heal => {
                println!("  [{secs:6.1}s] #{} heal", step.id);
                run.heal_fault(step.id, &fault)?;
            }
        }
    }
    let end = t0 + Duration::from_secs(run.o.duration);
    if let Some(d) = end.checked_duration_since(Instant::now()) {
        thread::sleep(d);
    }
    // Everything healed by now (the schedule heals each fault by its end). Let the writers
    // run on a healed network a little, then stop writing and wait for every live member to
    // have delivered the same number of samples, unchanged for 2 s (at most 60 s).
    thread::sleep(Duration::from_secs(3));
    run.note_exits();
    for inc in run.live() {
        inc.signal_file(".quiet", "")?;
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last: Vec<usize> = Vec::new();
    let mut stable_since = Instant::now();
    loop {
        thread::sleep(Duration::from_millis(500));
        let counts: Vec<usize> = run.live().map(Incarnation::deliveries).collect();
        if counts != last {
            last = counts.clone();
            stable_since = Instant::now();
        }
        let equal = counts.windows(2).all(|w| w[0] == w[1]);
        if equal && stable_since.elapsed() >= Duration::from_secs(2) {
            break;
        }
        if Instant::now() > deadline {
            println!("  quiesce: members still differ after 60 s: {counts:?}");
            break;
        }
    }
    println!(
        "  [{:6.1}s] quiesced; stopping the members",
        t0.elapsed().as_secs_f64()
    );
    for inc in run.live() {
        inc.signal_file(".stop", "end")?;
    }
    for v in &mut run.members {
        if let Some(inc) = v.last_mut().filter(|i| !i.gone) {
            if inc.proc.wait_timeout(Duration::from_secs(15)).is_none() {
                println!("  {} did not stop within 15 s: killed", inc.name);
                inc.proc.kill();
            }
        }
    }
    if run.faketime.is_some() {
        for inc in run.members.iter().flatten() {
            clock::remove_leftovers(inc.proc.pid());
        }
    }
    Ok(())
}

/// Matches each clock jump of the schedule, and its way back, with a `clock step` its member
/// printed; prints what each member saw and returns how many steps none did. A jump that
/// never reached its member would make the run pass for nothing.
fn clock_steps_unseen(run: &Run<'_>, schedule: &Schedule) -> usize {
    let mut unseen = 0;
    for (m, incarnations) in run.members.iter().enumerate() {
        let mut seen: Vec<f64> = incarnations
            .iter()
            .flat_map(|inc| {
                inc.proc
                    .output()
                    .lines()
                    .filter_map(|l| l.strip_prefix("clock step ")?.trim().parse().ok())
                    .collect::<Vec<f64>>()
            })
            .collect();
        let mut wanted = Vec::new();
        for f in &schedule.faults {
            if let Fault::ClockJump { member, offset_s } = f {
                if *member == m {
                    wanted.extend([*offset_s, -offset_s]);
                }
            }
        }
        if wanted.is_empty() && seen.is_empty() {
            continue;
        }
        let shown: Vec<String> = seen.iter().map(|x| format!("{x:+.1}")).collect();
        let mut missing = Vec::new();
        for want in wanted {
            match seen.iter().position(|x| (x - want as f64).abs() < 1.0) {
                Some(i) => {
                    seen.swap_remove(i);
                }
                None => missing.push(format!("{want:+}")),
            }
        }
        println!(
            "  clock steps m{m} saw: [{}] s{}",
            shown.join(" "),
            if missing.is_empty() {
                String::new()
            } else {
                format!("; NOT SEEN: [{}] s", missing.join(" "))
            }
        );
        unseen += missing.len();
    }
    unseen
}

/// Prints the counts and every violation; returns how many there were.
fn report(parsed: &[MemberHistory], dir: &Path) -> Result<usize> {
    let h = history::merge(parsed);
    let c = history::counts(&h);
    println!(
        "  writes: {} ok, {} failed, {} indeterminate",
        c.ok, c.failed, c.indeterminate
    );
    let per: Vec<String> = parsed
        .iter()
        .map(|m| {
            format!(
                "{}={}{}",
                m.member,
                m.deliveries.len(),
                if m.ended { "" } else { "(gone)" }
            )
        })
        .collect();
    println!("  deliveries: {}", per.join(" "));
    let max = parsed.iter().map(|m| m.deliveries.len()).max().unwrap_or(0);
    if max > 8_000 {
        println!("  warning: {max} deliveries: near the 10,000-entry snapshot interval, where positions stop matching log indices");
    }
    let v = check(&h);
    for x in &v {
        println!("  VIOLATION {x:?}");
    }
    println!("  histories: {}", dir.display());
    Ok(v.len())
}

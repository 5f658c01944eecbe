//! Namespaces ("hosts") and worker processes of `tessera bench`: creation, traffic between
//! hosts, shaping, teardown (also on panic), reaping, rusage and stale cleanup.
//!
//! Tests that make namespaces need root and print SKIP otherwise. They run one at a time (a
//! lock), because `cleanup_stale` removes every `tb-*` namespace. UDP traffic comes from this
//! test binary itself, re-run inside a host as a helper (`helper_process` with `TB_HELPER`).

use std::net::{Ipv4Addr, UdpSocket};
use std::process::Command;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tessera_bench::hosts::{self, LinkShaping, Topology};
use tessera_bench::procmon::{Capture, Proc};
use tessera_bench::results::Implementation;

static LOCK: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        println!("SKIP: needs root (network namespaces)");
    }
    root
}

fn run_to_end(topo: &Topology, host: usize, program: &str, args: &[&str]) -> (i32, String) {
    let mut cmd = topo.command(host, program);
    cmd.args(args);
    let mut p = Proc::spawn(cmd, program, Implementation::Udp, Capture::Lines).unwrap();
    let code = p
        .wait_timeout(Duration::from_secs(20))
        .expect("command finishes");
    (code, p.output())
}

fn netns_exists(name: &str) -> bool {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .any(|l| l.split_whitespace().next() == Some(name))
}

fn links_of(run_id: &str) -> Vec<String> {
    hosts::list_links()
        .into_iter()
        .filter(|l| l.starts_with(&format!("tb{run_id}")))
        .collect()
}

/// Not a test: the helper run inside a host (does nothing without `TB_HELPER`).
#[test]
fn helper_process() {
    let Ok(role) = std::env::var("TB_HELPER") else {
        return;
    };
    if role == "interrupt" {
        interrupt_helper();
    }
    let port: u16 = std::env::var("TB_PORT").unwrap().parse().unwrap();
    match role.as_str() {
        "recv" => {
            let sock = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, port)).unwrap();
            sock.set_read_timeout(Some(Duration::from_millis(100)))
                .unwrap();
            // libtest may have printed "test helper_process ... " without a newline.
            println!("\nready");
            let mut buf = [0u8; 2048];
            let mut count = 0u64;
            let start = Instant::now();
            let mut last = None::<Instant>;
            loop {
                match sock.recv_from(&mut buf) {
                    Ok(_) => {
                        count += 1;
                        last = Some(Instant::now());
                    }
                    Err(_) => {
                        let idle = match last {
                            Some(t) => t.elapsed() > Duration::from_millis(700),
                            None => start.elapsed() > Duration::from_secs(8),
                        };
                        if idle {
                            break;
                        }
                    }
                }
            }
            println!("\ncount {count}");
        }
        "send" => {
            let addr: Ipv4Addr = std::env::var("TB_ADDR").unwrap().parse().unwrap();
            let n: u32 = std::env::var("TB_COUNT").unwrap().parse().unwrap();
            let sock = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).unwrap();
            for i in 0..n {
                sock.send_to(&i.to_le_bytes(), (addr, port)).unwrap();
                if i % 50 == 49 {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            println!("sent {n}");
        }
        other => panic!("unknown helper {other}"),
    }
    std::process::exit(0);
}

/// Makes a host with a `sleep 60` in it, reports both, and waits for a signal.
fn interrupt_helper() -> ! {
    hosts::install_interrupt_handler().unwrap();
    hosts::install_interrupt_handler().unwrap(); // idempotent
    let topo = Topology::single(&hosts::new_run_id()).unwrap();
    let mut cmd = topo.command(0, "sleep");
    cmd.arg("60");
    let p = Proc::spawn(cmd, "sleeper", Implementation::Udp, Capture::Lines).unwrap();
    println!("\nnetns {}", topo.hosts()[0].name);
    println!("pid {}", p.pid());
    println!("ready");
    std::thread::sleep(Duration::from_secs(30));
    std::process::exit(0);
}

fn helper(topo: &Topology, host: usize, env: &[(&str, String)]) -> Proc {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = topo.command(host, exe);
    cmd.args([
        "helper_process",
        "--exact",
        "--nocapture",
        "--test-threads=1",
    ]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    Proc::spawn(cmd, "helper", Implementation::Udp, Capture::Lines).unwrap()
}

/// Sends `n` datagrams from host `from` to host `to`; returns how many arrived.
fn udp_transfer(topo: &Topology, from: usize, to: usize, n: u32) -> u64 {
    let port = "7411".to_string();
    let mut rx = helper(
        topo,
        to,
        &[("TB_HELPER", "recv".into()), ("TB_PORT", port.clone())],
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while !rx.lines().iter().any(|(_, l)| l.ends_with("ready")) {
        assert!(
            Instant::now() < deadline,
            "receiver not ready: {}",
            rx.output()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut tx = helper(
        topo,
        from,
        &[
            ("TB_HELPER", "send".into()),
            ("TB_PORT", port),
            ("TB_ADDR", topo.hosts()[to].addr.to_string()),
            ("TB_COUNT", n.to_string()),
        ],
    );
    assert_eq!(
        tx.wait_timeout(Duration::from_secs(20)),
        Some(0),
        "{}",
        tx.output()
    );
    assert_eq!(
        rx.wait_timeout(Duration::from_secs(20)),
        Some(0),
        "{}",
        rx.output()
    );
    rx.lines()
        .iter()
        .find_map(|(_, l)| l.rsplit_once("count ").map(|(_, c)| c.parse().unwrap()))
        .unwrap_or_else(|| panic!("no count in {}", rx.output()))
}

#[test]
fn single_host_has_only_loopback() {
    let _g = serial();
    if !is_root() {
        return;
    }
    let id = hosts::new_run_id();
    let mut topo = Topology::single(&id).unwrap();
    let name = topo.hosts()[0].name.clone();
    assert_eq!(name, format!("tb-{id}-h0"));
    assert_eq!(topo.hosts().len(), 1);
    assert_eq!(topo.hosts()[0].iface, "lo");
    assert_eq!(topo.hosts()[0].addr, Ipv4Addr::LOCALHOST);
    assert!(netns_exists(&name));

    let (code, links) = run_to_end(&topo, 0, "ip", &["-o", "link"]);
    assert_eq!(code, 0, "{links}");
    let links: Vec<&str> = links.lines().collect();
    assert_eq!(links.len(), 1, "only lo: {links:?}");
    assert!(links[0].contains(" lo: "), "{links:?}");
    assert!(
        links[0].contains("UP") && links[0].contains("MULTICAST"),
        "{links:?}"
    );

    let (code, addrs) = run_to_end(&topo, 0, "ip", &["-o", "addr"]);
    assert_eq!(code, 0);
    assert!(addrs.lines().all(|l| l.contains(" lo ")), "{addrs}");
    assert!(addrs.contains("127.0.0.1"), "{addrs}");

    let (_, routes) = run_to_end(&topo, 0, "ip", &["route", "show", "table", "main"]);
    assert!(routes.contains("224.0.0.0/4 dev lo"), "{routes}");

    let (_, env) = run_to_end(&topo, 0, "env", &[]);
    assert!(env.contains("TESSERA_IN_NETNS=1"));
    assert!(env.contains("TESSERA_INTERFACE=lo"));
    assert!(env.contains("NetworkInterface name=\"lo\" multicast=\"true\""));

    topo.teardown();
    assert!(!netns_exists(&name));
    topo.teardown(); // idempotent
                     // A command for a deleted host fails to spawn rather than running outside.
    let cmd = topo.command(0, "true");
    assert!(Proc::spawn(cmd, "x", Implementation::Udp, Capture::Lines).is_err());
}

#[test]
fn lan_carries_udp_and_limits_rate() {
    let _g = serial();
    if !is_root() {
        return;
    }
    let id = hosts::new_run_id();
    let shaping = LinkShaping {
        loss_pct: 0.0,
        rate_mbit: Some(100.0),
    };
    let mut topo = Topology::lan(&id, 3, &shaping).unwrap();
    assert_eq!(topo.hosts().len(), 3);
    let names: Vec<String> = topo.hosts().iter().map(|h| h.name.clone()).collect();
    for (i, h) in topo.hosts().iter().enumerate() {
        assert_eq!(h.iface, "eth0");
        assert_eq!(h.addr.octets()[3] as usize, i + 1);
        assert!(netns_exists(&h.name));
    }
    assert_eq!(
        links_of(&id).len(),
        4,
        "bridge + 3 veths: {:?}",
        links_of(&id)
    );

    let (code, qdisc) = run_to_end(&topo, 1, "tc", &["qdisc", "show", "dev", "eth0"]);
    assert_eq!(code, 0, "{qdisc}");
    assert!(
        qdisc.contains("tbf") && qdisc.contains("100Mbit"),
        "{qdisc}"
    );
    let (_, routes) = run_to_end(&topo, 2, "ip", &["route"]);
    assert!(routes.contains("224.0.0.0/4 dev eth0"), "{routes}");

    assert_eq!(udp_transfer(&topo, 0, 2, 20), 20);
    assert_eq!(udp_transfer(&topo, 2, 1, 20), 20);

    let has_ping = Command::new("sh")
        .args(["-c", "command -v ping"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if has_ping {
        let addr = topo.hosts()[1].addr.to_string();
        let (code, out) = run_to_end(&topo, 0, "ping", &["-c1", "-W5", &addr]);
        assert_eq!(code, 0, "{out}");
    } else {
        println!("ping not installed; UDP checks only");
    }

    topo.teardown();
    for n in &names {
        assert!(!netns_exists(n), "{n} left behind");
    }
    assert!(links_of(&id).is_empty(), "{:?}", links_of(&id));
}

#[test]
fn lan_loss_drops_about_half() {
    let _g = serial();
    if !is_root() {
        return;
    }
    let id = hosts::new_run_id();
    let shaping = LinkShaping {
        loss_pct: 50.0,
        rate_mbit: None,
    };
    let topo = Topology::lan(&id, 2, &shaping).unwrap();
    let got = udp_transfer(&topo, 0, 1, 1000);
    println!("received {got} of 1000 at 50 % loss");
    assert!(
        (350..=650).contains(&got),
        "received {got} of 1000 at 50 % loss"
    );
    drop(topo);
    assert!(links_of(&id).is_empty());
}

#[test]
fn drop_during_panic_tears_down() {
    let _g = serial();
    if !is_root() {
        return;
    }
    let id = hosts::new_run_id();
    let name = format!("tb-{id}-h0");
    let id2 = id.clone();
    let r = std::panic::catch_unwind(move || {
        let _t = Topology::lan(&id2, 1, &LinkShaping::default()).unwrap();
        assert!(netns_exists(&format!("tb-{id2}-h0")));
        panic!("boom");
    });
    assert!(r.is_err());
    assert!(!netns_exists(&name));
    assert!(links_of(&id).is_empty());
}

#[test]
fn invalid_arguments_are_refused() {
    assert!(matches!(
        Topology::single("Not-OK"),
        Err(hosts::HostError::InvalidRunId(_))
    ));
    let bad = LinkShaping {
        loss_pct: 120.0,
        rate_mbit: None,
    };
    assert!(matches!(
        Topology::lan("abc123", 2, &bad),
        Err(hosts::HostError::Invalid(_))
    ));
    assert!(matches!(
        Topology::lan("abc123", 0, &LinkShaping::default()),
        Err(hosts::HostError::Invalid(_))
    ));
}

#[test]
fn dropped_child_is_killed_and_reaped() {
    let mut cmd = Command::new("sleep");
    cmd.arg("60");
    let p = Proc::spawn(cmd, "sleeper", Implementation::Udp, Capture::Lines).unwrap();
    let pid = p.pid();
    assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());
    let t = Instant::now();
    drop(p);
    assert!(t.elapsed() < Duration::from_secs(5));
    // Reaped: not even a zombie is left.
    assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
}

#[test]
fn busy_child_uses_user_cpu() {
    let mut cmd = Command::new("sh");
    cmd.args(["-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done"]);
    let mut p = Proc::spawn(cmd, "busy", Implementation::Tessera, Capture::Lines).unwrap();
    assert!(p.stats().is_none());
    let mut live = None;
    while p.wait_timeout(Duration::from_millis(100)).is_none() {
        live = tessera_bench::procmon::sample(p.pid()).or(live);
    }
    assert_eq!(p.exit_code(), Some(0));
    let st = p.stats().unwrap();
    assert_eq!(st.role, "busy");
    assert_eq!(st.implementation, Implementation::Tessera);
    assert!(st.cpu_user_s > 0.0, "{st:?}");
    assert!(st.cpu_pct > 0.0 && st.cpu_pct < 250.0, "{st:?}");
    assert!(st.peak_rss_kib > 0);
    if let Some(s) = live {
        assert!(s.rss_kib > 0);
    }
}

#[test]
fn cleanup_stale_removes_leftovers() {
    let _g = serial();
    if !is_root() {
        return;
    }
    let name = "tb-zzzzzz-h0";
    let link = "tbzzzzzzbr";
    let _ = Command::new("ip").args(["netns", "add", name]).status();
    let _ = Command::new("ip")
        .args(["link", "add", link, "type", "bridge"])
        .status();
    assert!(netns_exists(name));
    // A live topology of this process survives.
    let live = Topology::single(&hosts::new_run_id()).unwrap();
    let (netns, links) = hosts::cleanup_stale();
    assert!(netns >= 1 && links >= 1, "{netns} {links}");
    assert!(!netns_exists(name));
    assert!(!hosts::list_links().iter().any(|l| l == link));
    assert!(netns_exists(&live.hosts()[0].name));
}

#[test]
fn interrupt_kills_children_and_deletes_namespaces() {
    let _g = serial();
    if !is_root() {
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let mut cmd = Command::new(exe);
    cmd.args([
        "helper_process",
        "--exact",
        "--nocapture",
        "--test-threads=1",
    ])
    .env("TB_HELPER", "interrupt");
    let mut p = Proc::spawn(cmd, "interrupt", Implementation::Udp, Capture::Lines).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !p.lines().iter().any(|(_, l)| l == "ready") {
        assert!(
            Instant::now() < deadline,
            "helper not ready: {}",
            p.output()
        );
        assert!(
            p.wait_timeout(Duration::from_millis(5)).is_none(),
            "{}",
            p.output()
        );
    }
    let lines = p.lines();
    let field = |key: &str| {
        lines
            .iter()
            .find_map(|(_, l)| l.strip_prefix(key).map(str::to_string))
            .unwrap()
    };
    let netns = field("netns ");
    let sleeper: u32 = field("pid ").parse().unwrap();
    assert!(netns_exists(&netns));
    p.signal(libc::SIGTERM).unwrap();
    assert_eq!(
        p.wait_timeout(Duration::from_secs(20)),
        Some(130),
        "{}",
        p.output()
    );
    assert!(
        p.output()
            .contains("interrupted: cleaned up 1 namespaces, 1 processes"),
        "{}",
        p.output()
    );
    assert!(!netns_exists(&netns));
    // The sleeper is gone (or a zombie waiting for init).
    let stat = std::fs::read_to_string(format!("/proc/{sleeper}/stat")).unwrap_or_default();
    assert!(stat.is_empty() || stat.contains(") Z "), "{stat}");
}

#[test]
fn a_clashing_run_id_fails_without_harming_the_first() {
    let _g = serial();
    if !is_root() {
        return;
    }
    let id = hosts::new_run_id();
    let first = Topology::lan(&id, 2, &LinkShaping::default()).unwrap();
    assert!(Topology::single(&id).is_err());
    assert!(Topology::lan(&id, 2, &LinkShaping::default()).is_err());
    assert!(netns_exists(&first.hosts()[0].name));
    assert_eq!(links_of(&id).len(), 3);
    assert_eq!(udp_transfer(&first, 0, 1, 5), 5);
}

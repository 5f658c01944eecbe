//! Tests of the command-line grammar. The error strings were checked against ddsperf 0.10.2.

use super::*;

fn p(args: &[&str]) -> Result<PerfConfig, ArgsError> {
    let v: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    parse("ddsperf", &v)
}

fn ok(args: &[&str]) -> PerfConfig {
    p(args).unwrap_or_else(|e| panic!("{args:?}: {e:?}"))
}

fn invalid_msg(args: &[&str]) -> String {
    match p(args) {
        Err(ArgsError::Invalid(m)) => m,
        other => panic!("{args:?}: expected Invalid, got {other:?}"),
    }
}

fn usage_diag(args: &[&str]) -> Option<String> {
    match p(args) {
        Err(ArgsError::Usage { diagnostic }) => diagnostic,
        other => panic!("{args:?}: expected Usage, got {other:?}"),
    }
}

#[test]
fn defaults_of_each_mode() {
    let c = ok(&["ping"]);
    assert_eq!(c.ping, PingInterval::AsFastAsPossible);
    assert_eq!(c.pingpong_trigger, Trigger::Listener);
    assert_eq!(c.sub, None);
    assert_eq!(c.pub_rate, PubRate::Off);
    assert!(!c.publishes());
    assert!(!c.has_data_reader());
    assert_eq!(c.topic, TopicKind::KS);
    assert_eq!(c.payload_size(), 12);
    assert!(c.reliable && c.ignore_local);
    assert_eq!(c.history, History::KeepAll);
    assert_eq!(c.duration, None);

    let c = ok(&["pong"]);
    assert_eq!(c.ping, PingInterval::Never);
    assert_eq!(c.pingpong_trigger, Trigger::Listener);

    let c = ok(&["sub"]);
    assert_eq!(c.sub, Some(SubMode::Listener));
    assert!(c.has_data_reader());

    let c = ok(&["pub"]);
    assert_eq!(c.pub_rate, PubRate::Unlimited);
    assert_eq!(c.burst, 1);
    assert_eq!(c.ping_fraction, 0);
    assert!(c.publishes());
}

#[test]
fn ping_variants() {
    assert_eq!(
        ok(&["ping", "100Hz"]).ping,
        PingInterval::Period(10_000_000)
    );
    assert_eq!(ok(&["ping", "100"]).ping, PingInterval::Period(10_000_000));
    assert_eq!(ok(&["ping", "1kHz"]).ping, PingInterval::Period(1_000_000));
    assert_eq!(ok(&["ping", "3"]).ping, PingInterval::Period(333_333_333));
    assert_eq!(ok(&["ping", "1.5kHz"]).ping, PingInterval::Period(666_667));
    assert_eq!(
        ok(&["ping", "10 Hz"]).ping,
        PingInterval::Period(100_000_000)
    );
    assert_eq!(ok(&["ping", "0Hz"]).ping, PingInterval::Never);
    assert_eq!(ok(&["ping", "inf"]).ping, PingInterval::AsFastAsPossible);
    assert_eq!(ok(&["ping", "infHz"]).ping, PingInterval::AsFastAsPossible);
    assert_eq!(ok(&["ping", "infkHz"]).ping, PingInterval::AsFastAsPossible);
    assert_eq!(ok(&["ping", "1e10"]).ping, PingInterval::AsFastAsPossible);
    let c = ok(&["ping", "10Hz", "size", "1k", "waitset"]);
    assert_eq!(c.ping, PingInterval::Period(100_000_000));
    assert_eq!(c.baggage, 1024 - 12);
    assert_eq!(c.payload_size(), 1024);
    assert_eq!(c.pingpong_trigger, Trigger::Waitset);
    assert!(c.pingpong_uses_waitset());
    assert_eq!(ok(&["ping", "wait"]).pingpong_trigger, Trigger::Waitset);
    assert_eq!(ok(&["ping", "lis"]).pingpong_trigger, Trigger::Listener);
    assert_eq!(
        ok(&["ping", "waitset", "listener"]).pingpong_trigger,
        Trigger::Listener
    );
    assert_eq!(ok(&["sanity"]).ping, PingInterval::Period(1_000_000_000));
}

#[test]
fn ping_rejects() {
    assert_eq!(invalid_msg(&["ping", "foo"]), "foo: undefined ping mode");
    assert_eq!(invalid_msg(&["ping", "wa"]), "wa: undefined ping mode");
    assert_eq!(invalid_msg(&["ping", "nanHz"]), "nanHz: invalid ping rate");
    assert_eq!(invalid_msg(&["ping", "+-1"]), "+-1: undefined ping mode");
    assert_eq!(
        invalid_msg(&["ping", "10MHz"]),
        "10MHz: undefined ping mode"
    );
    assert_eq!(
        invalid_msg(&["ping", "size"]),
        "argument missing in size specification"
    );
    assert_eq!(
        invalid_msg(&["ping", "size", "1.5k"]),
        "1.5k: invalid size specification"
    );
    // A negative rate looks like an option to getopt.
    assert_eq!(
        usage_diag(&["ping", "-5Hz"]),
        Some("ddsperf: invalid option -- '5'".into())
    );
}

#[test]
fn pong_and_trigger_sharing() {
    assert_eq!(ok(&["pong", "waitset"]).pingpong_trigger, Trigger::Waitset);
    assert_eq!(ok(&["pong", "wai"]).pingpong_trigger, Trigger::Waitset);
    // The later mode resets the shared trigger.
    assert_eq!(
        ok(&["ping", "waitset", "pong"]).pingpong_trigger,
        Trigger::Listener
    );
    assert_eq!(
        ok(&["pong", "waitset", "ping"]).pingpong_trigger,
        Trigger::Listener
    );
    assert_eq!(invalid_msg(&["pong", "bar"]), "bar: undefined pong mode");
    assert_eq!(
        invalid_msg(&["pong", "polling"]),
        "polling: undefined pong mode"
    );
    // -L with pinging forces waitsets; -L alone or pong alone does not.
    assert!(ok(&["-L", "ping"]).pingpong_uses_waitset());
    assert!(!ok(&["-L", "pong"]).pingpong_uses_waitset());
    assert!(!ok(&["ping"]).pingpong_uses_waitset());
}

#[test]
fn sub_variants() {
    assert_eq!(ok(&["sub", "waitset"]).sub, Some(SubMode::Waitset));
    assert_eq!(ok(&["sub", "polling"]).sub, Some(SubMode::Polling));
    assert_eq!(ok(&["sub", "poll"]).sub, Some(SubMode::Polling));
    assert_eq!(ok(&["sub", "listener"]).sub, Some(SubMode::Listener));
    assert_eq!(ok(&["sub", "polling", "sub"]).sub, Some(SubMode::Listener));
    assert_eq!(
        invalid_msg(&["sub", "bogus"]),
        "bogus: undefined subscription mode"
    );
    assert_eq!(
        invalid_msg(&["sub", "po"]),
        "po: undefined subscription mode"
    );
}

#[test]
fn pub_variants() {
    let c = ok(&["pub", "20kHz"]);
    assert_eq!(c.pub_rate, PubRate::Hz(20_000.0));
    assert_eq!(ok(&["pub", "inf"]).pub_rate, PubRate::Unlimited);
    assert_eq!(ok(&["pub", "infkHz"]).pub_rate, PubRate::Unlimited);
    assert_eq!(ok(&["pub", "0"]).pub_rate, PubRate::Off);
    assert_eq!(ok(&["pub", "0Hz"]).pub_rate, PubRate::Off);
    assert_eq!(ok(&["pub", "10 Hz"]).pub_rate, PubRate::Hz(10.0));
    let c = ok(&["pub", "100Hz", "burst", "10", "size", "2MiB", "1%"]);
    assert_eq!(c.pub_rate, PubRate::Hz(100.0));
    assert_eq!(c.burst, 10);
    assert_eq!(c.baggage, 2 * 1_048_576 - 12);
    assert_eq!(c.ping_fraction, (f64::from(u32::MAX) * 0.01 + 0.5) as u32);
    assert_eq!(ok(&["pub", "100%"]).ping_fraction, u32::MAX);
    assert_eq!(ok(&["pub", "0%"]).ping_fraction, 0);
    assert_eq!(ok(&["pub", "burst", "0"]).burst, 0);
    for (s, bytes) in [
        ("100", 100),
        ("100B", 100),
        ("1k", 1024),
        ("1kB", 1024),
        ("1KiB", 1024),
        ("1M", 1_048_576),
        ("1MB", 1_048_576),
        ("1MiB", 1_048_576),
        ("12", 12),
        ("0", 12),
    ] {
        assert_eq!(ok(&["pub", "size", s]).payload_size(), bytes, "{s}");
    }
    // The last size wins, across modes.
    assert_eq!(
        ok(&["ping", "size", "100", "pub", "size", "200"]).payload_size(),
        200
    );
    // A second pub resets rate, burst and fraction.
    let c = ok(&["pub", "10Hz", "burst", "3", "5%", "pub"]);
    assert_eq!(
        (c.pub_rate, c.burst, c.ping_fraction),
        (PubRate::Unlimited, 1, 0)
    );
}

#[test]
fn pub_rejects() {
    assert_eq!(
        invalid_msg(&["pub", "bogus"]),
        "bogus: unrecognised publish specification"
    );
    assert_eq!(
        invalid_msg(&["pub", "size"]),
        "argument missing in size specification"
    );
    assert_eq!(
        invalid_msg(&["pub", "size", "12x"]),
        "12x: invalid size specification"
    );
    assert_eq!(
        invalid_msg(&["pub", "size", "11"]),
        "size 11 invalid: too small to allow for overhead"
    );
    assert_eq!(
        invalid_msg(&["pub", "size", "1"]),
        "size 1 invalid: too small to allow for overhead"
    );
    assert_eq!(
        invalid_msg(&["pub", "burst", "2k"]),
        "2k: invalid burst specification"
    );
    assert_eq!(
        invalid_msg(&["pub", "burst"]),
        "argument missing in burst specification"
    );
    assert_eq!(
        invalid_msg(&["pub", "101%"]),
        "101%: ping fraction out of range"
    );
    assert_eq!(ok(&["pub", "nan%"]).ping_fraction, 0);
    assert_eq!(
        invalid_msg(&["pub", "1kHz", "ping", "10%"]),
        "10%: undefined ping mode"
    );
    assert_eq!(
        invalid_msg(&["pub", "10", "5", "size"]),
        "argument missing in size specification"
    );
}

#[test]
fn top_level_rejects_and_usage() {
    assert_eq!(usage_diag(&[]), None);
    assert_eq!(usage_diag(&["help"]), None);
    assert_eq!(usage_diag(&["-h"]), None);
    assert_eq!(usage_diag(&["-D", "1", "help"]), None);
    assert_eq!(usage_diag(&["--help"]), None);
    assert_eq!(usage_diag(&["-K", "3", "ping"]), None);
    assert_eq!(
        usage_diag(&["-x"]),
        Some("ddsperf: invalid option -- 'x'".into())
    );
    assert_eq!(
        usage_diag(&["-D"]),
        Some("ddsperf: option requires an argument -- 'D'".into())
    );
    assert_eq!(
        usage_diag(&["--bogus", "pub"]),
        Some("ddsperf: unrecognized option '--bogus'".into())
    );
    assert_eq!(invalid_msg(&["foo"]), "foo: undefined mode string");
    assert_eq!(invalid_msg(&["help", "pub"]), "help: undefined mode string");
    assert_eq!(
        invalid_msg(&["pub", "1Hz", "--", "-D1"]),
        "-D1: unrecognised publish specification"
    );
    // "sanity" is only special on its own.
    assert_eq!(
        invalid_msg(&["sanity", "pub"]),
        "sanity: undefined mode string"
    );
}

#[test]
fn options() {
    let c = ok(&[
        "-1",
        "-c",
        "-D",
        "2.5",
        "-i",
        "7",
        "-n",
        "4",
        "-u",
        "-k",
        "5",
        "-l",
        "-L",
        "-T",
        "K32",
        "-X",
        "-R",
        "1700000000000000000",
        "--json",
        "sub",
    ]);
    assert!(c.sub_every_second && c.collect_cpu_stats && c.sub_latency && c.extended_stats);
    assert_eq!(c.duration, Some(2.5));
    assert_eq!(c.duration_ns(), Some(2_500_000_000));
    assert_eq!(c.domain_id, Some(7));
    assert_eq!(c.nkeyvals, 4);
    assert!(!c.reliable && !c.ignore_local);
    assert_eq!(c.history, History::KeepLast(5));
    assert!(!c.loss_is_error());
    assert_eq!(c.topic, TopicKind::K32);
    assert_eq!(c.time_ref, Some(1_700_000_000_000_000_000));
    assert!(c.json);

    // Grouping, attached arguments, permutation.
    let c = ok(&["-uD10", "pub", "1Hz", "-TOU", "-k", "all"]);
    assert!(!c.reliable);
    assert_eq!(c.duration, Some(10.0));
    assert_eq!(c.topic, TopicKind::OU);
    assert_eq!(c.pub_rate, PubRate::Hz(1.0));
    assert_eq!(c.history, History::KeepAll);
    let c = ok(&["pub", "1Hz", "-D", "1"]);
    assert_eq!(c.duration, Some(1.0));
    let c = ok(&["-D1", "--", "pub", "1Hz"]);
    assert_eq!(c.pub_rate, PubRate::Hz(1.0));

    assert_eq!(ok(&["-D", "0", "pub"]).duration, None);
    assert_eq!(ok(&["-D", "-3", "pub"]).duration, None);
    assert_eq!(ok(&["-D", "abc", "pub"]).duration, None);
    assert_eq!(ok(&["-k", "-2", "pub"]).history, History::KeepAll);
    assert_eq!(ok(&["-k", "0", "pub"]).history, History::KeepAll);
    assert_eq!(ok(&["-n", "0", "pub"]).nkeyvals, 1);
    assert_eq!(ok(&["-i", "abc", "pub"]).domain_id, Some(0));
    // Keyless but not OU: -n is accepted.
    assert_eq!(ok(&["-T", "UK16", "-n", "3", "pub"]).nkeyvals, 3);
    for k in TopicKind::ALL {
        assert_eq!(ok(&["-T", k.suffix(), "sub"]).topic, k);
    }
}

#[test]
fn option_rejects() {
    assert_eq!(invalid_msg(&["-T", "XX", "pub"]), "-T XX: unknown topic");
    assert_eq!(invalid_msg(&["-T", "ks", "pub"]), "-T ks: unknown topic");
    assert_eq!(
        invalid_msg(&["-T", "OU", "-n", "2", "pub"]),
        "-n 2 invalid: topic OU has no key"
    );
    assert_eq!(
        invalid_msg(&["-T", "OU", "pub", "size", "100"]),
        "size 100 invalid: only topic KS has a sequence"
    );
    assert_eq!(
        invalid_msg(&["-R", "abc", "pub"]),
        "-R abc: invalid reference time"
    );
    assert_eq!(
        invalid_msg(&["-R", "12x", "pub"]),
        "-R 12x: invalid reference time"
    );
    assert_eq!(
        invalid_msg(&["-d", "lo:abc", "pub"]),
        "-d lo:abc: expected DEVICE:BANDWIDTH"
    );
    assert_eq!(
        invalid_msg(&["-d", ":1e9", "pub"]),
        "-d :1e9: expected DEVICE:BANDWIDTH"
    );
    // Option errors are reported before mode errors.
    assert_eq!(invalid_msg(&["foo", "-T", "XX"]), "-T XX: unknown topic");
}

#[test]
fn size_zero_with_other_topic_is_fine() {
    // `size 0` means "minimum", which is not a size at all, so other topics accept it.
    let c = ok(&["-T", "K32", "pub", "size", "0"]);
    assert_eq!(c.baggage, 0);
    assert_eq!(c.payload_size(), 32);
}

#[test]
fn netload_option() {
    assert_eq!(
        ok(&["-d", "lo:1e9", "pub"]).netload,
        Some(NetloadSpec {
            device: "lo".into(),
            bandwidth: 1e9
        })
    );
    assert_eq!(
        ok(&["-d", "lo", "pub"]).netload,
        Some(NetloadSpec {
            device: "lo".into(),
            bandwidth: 0.0
        })
    );
    assert_eq!(
        ok(&["-d", "a:b:100", "pub"]).netload,
        Some(NetloadSpec {
            device: "a:b".into(),
            bandwidth: 100.0
        })
    );
}

#[test]
fn criteria() {
    let c = ok(&[
        "-Q",
        "minmatch:2",
        "-Q",
        "roundtrips:10",
        "-Q",
        "samples:1000",
        "-Qmaxwait:3",
        "-Q",
        "initwait:1.5",
        "-Q",
        "rss:10%",
        "-Q",
        "rss:5",
        "pub",
    ]);
    assert_eq!(c.criteria.min_match, 2);
    assert_eq!(c.criteria.min_roundtrips, 10);
    assert_eq!(c.criteria.min_samples, 1000);
    assert_eq!(c.criteria.max_wait, Some(3.0));
    assert_eq!(c.max_wait_ns(), Some(3_000_000_000));
    assert_eq!(c.criteria.init_wait, Some(1.5));
    assert_eq!(c.init_wait_ns(), Some(1_500_000_000));
    assert_eq!(
        c.criteria.rss,
        Some(RssCriterion {
            factor: 1.1,
            term: 5.0 * 1_048_576.0
        })
    );
    assert_eq!(ok(&["-Q", "maxwait:0", "pub"]).criteria.max_wait, None);
    assert_eq!(ok(&["-Q", "initwait:-1", "pub"]).criteria.init_wait, None);
    for bad in [
        "foo:1",
        "minmatch:x",
        "minmatch:1x",
        "samples:",
        "rss:x",
        "rss:5MB",
        "maxwait",
    ] {
        assert_eq!(
            invalid_msg(&["-Q", bad, "pub"]),
            format!("-Q {bad}: invalid success criterium")
        );
    }
}

#[test]
fn usage_text_mentions_every_option() {
    let u = usage_text("tessera perf");
    assert!(u.starts_with("tessera perf help"));
    for opt in [
        "-L",
        "-T",
        "-n",
        "-u",
        "-k",
        "-c",
        "-d",
        "-D",
        "-Q",
        "-R",
        "-1",
        "-X",
        "-l",
        "-i",
        "--json",
        "--warmup",
        "--loan",
        "ping",
        "pong",
        "sub",
        "pub",
        "EXIT STATUS",
    ] {
        assert!(u.contains(opt), "{opt}");
    }
}

#[test]
fn warmup_option() {
    assert_eq!(ok(&["ping"]).warmup, None);
    assert_eq!(ok(&["ping"]).warmup_ns(), None);
    let c = ok(&["--warmup", "1.5", "ping"]);
    assert_eq!(c.warmup, Some(1.5));
    assert_eq!(c.warmup_ns(), Some(1_500_000_000));
    let c = ok(&["ping", "--warmup=0.25", "--json"]);
    assert_eq!(c.warmup_ns(), Some(250_000_000));
    assert!(c.json);
    assert_eq!(ok(&["--warmup", "0", "ping"]).warmup_ns(), None);
    for bad in [
        &["--warmup", "x", "ping"][..],
        &["--warmup=-1", "ping"],
        &["--warmup=inf", "ping"],
    ] {
        assert!(invalid_msg(bad).contains("--warmup"), "{bad:?}");
    }
    assert!(usage_diag(&["ping", "--warmup"]).is_some());
}

#[test]
fn count_option() {
    assert_eq!(ok(&["ping"]).count, None);
    assert_eq!(ok(&["--count", "10000", "ping"]).count, Some(10000));
    assert_eq!(ok(&["ping", "--count=5"]).count, Some(5));
    for bad in [
        &["--count", "0", "ping"][..],
        &["--count=x", "ping"],
        &["--count=-3"],
    ] {
        assert!(invalid_msg(bad).contains("--count"), "{bad:?}");
    }
    assert!(usage_diag(&["ping", "--count"]).is_some());
}

#[test]
fn loan_option() {
    assert_eq!(ok(&["ping"]).loan, None);
    let c = ok(&["--loan", "64k", "ping", "size", "65536"]);
    assert_eq!(c.loan, Some(65536));
    assert_eq!(c.payload_size(), 65536);
    assert_eq!(
        c.baggage, 65536,
        "the size word is kept, not turned into baggage"
    );
    // Each mode, the long form, and every size of the list.
    assert_eq!(ok(&["pong", "--loan=4M"]).payload_size(), 4 << 20);
    assert_eq!(ok(&["--loan", "16", "sub"]).loan, Some(16));
    assert_eq!(
        ok(&["--loan", "1M", "pub", "size", "1M"]).loan,
        Some(1 << 20)
    );
    for &size in crate::perf::loan::LOAN_SIZES {
        assert_eq!(ok(&["--loan", &size.to_string(), "pong"]).loan, Some(size));
    }
    // A size without a loan type, or a `size` that disagrees, is a clear error.
    let m = invalid_msg(&["--loan", "100", "ping"]);
    assert!(
        m.contains("no loan type of that size") && m.contains("4194304"),
        "{m}"
    );
    let m = invalid_msg(&["--loan", "16", "ping", "size", "64k"]);
    assert!(m.contains("size 65536 invalid with --loan 16"), "{m}");
    assert!(invalid_msg(&["--loan", "x", "ping"]).contains("--loan"));
    // The type and the key count are fixed by the loan type.
    assert!(invalid_msg(&["--loan", "16", "-TOU", "ping"]).contains("-T OU"));
    assert!(invalid_msg(&["--loan", "16", "-n", "4", "pub"]).contains("-n 4"));
    assert!(usage_diag(&["ping", "--loan"]).is_some());
}

#[test]
fn consistency_option() {
    assert!(!ok(&["ping"]).atomic);
    assert!(ok(&["--consistency", "atomic", "ping"]).atomic);
    assert!(ok(&["pong", "--consistency=atomic"]).atomic);
    assert!(!ok(&["--consistency", "eventual", "sub"]).atomic);
    let m = invalid_msg(&["--consistency", "strong", "ping"]);
    assert!(m.contains("--consistency strong invalid"), "{m}");
    // A consensus log is reliable: best-effort and loans are refused with a reason.
    let m = invalid_msg(&["--consistency", "atomic", "-u", "pub"]);
    assert!(m.contains("reliable"), "{m}");
    let m = invalid_msg(&["--consistency", "atomic", "--loan", "16", "ping"]);
    assert!(m.contains("--loan"), "{m}");
    assert!(usage_diag(&["ping", "--consistency"]).is_some());
}

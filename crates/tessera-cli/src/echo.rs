//! `tessera echo TOPIC` and `tessera pub TOPIC VALUE`: print or publish samples of a topic
//! whose type is learnt from a remote endpoint over XTypes (TypeLookup), like
//! `cyclonedds subscribe` / `cyclonedds publish`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tessera::qos::{
    data_representation, DataReaderQos, DataRepresentation, DataWriterQos, Reliability, TopicQos,
};
use tessera::{DomainParticipant, DynamicType, DynamicValue, InstanceState};

/// Exit status for bad arguments (as `tessera perf`).
pub const EXIT_BAD_ARGS: i32 = 3;
/// Exit status when the topic's type could not be learnt, or publishing failed.
pub const EXIT_FAILED: i32 = 1;

/// How long `tessera pub` waits after its writer matched before the first sample.
const MATCH_SETTLE: Duration = Duration::from_millis(500);

/// Options shared by both commands.
#[derive(Debug, Clone, PartialEq)]
pub struct Common {
    /// The topic.
    pub topic: String,
    /// `-d`: the domain.
    pub domain: u32,
    /// `-w`: how long to wait for the type.
    pub wait: Duration,
    /// `--best-effort`: best-effort endpoints (default reliable).
    pub best_effort: bool,
}

/// `tessera echo` options.
#[derive(Debug, Clone, PartialEq)]
pub struct EchoArgs {
    /// Shared options.
    pub common: Common,
    /// `--json`: one JSON object a line.
    pub json: bool,
    /// `-n`: stop after this many samples.
    pub count: Option<u64>,
    /// `-t`: stop after this long.
    pub duration: Option<Duration>,
}

/// `tessera pub` options.
#[derive(Debug, Clone, PartialEq)]
pub struct PubArgs {
    /// Shared options.
    pub common: Common,
    /// The value, JSON; `$i` is replaced by the sample's number (from 0).
    pub value: String,
    /// `-n`: how many samples.
    pub count: u64,
    /// `-r`: samples per second.
    pub rate: f64,
}

/// Usage of `tessera echo`.
pub fn echo_usage(prog: &str) -> String {
    format!(
        "usage: {prog} TOPIC [--json] [-n COUNT] [-t SECONDS] [-d DOMAIN] [-w SECONDS] [--best-effort]\n\
         \n\
         Prints the samples of TOPIC, one a line, its type learnt from a remote writer or\n\
         reader over XTypes (TypeLookup).\n\
         \x20 --json          JSON instead of text\n\
         \x20 -n COUNT        stop after COUNT samples\n\
         \x20 -t SECONDS      stop after SECONDS\n\
         \x20 -d DOMAIN       domain id (default 0)\n\
         \x20 -w SECONDS      how long to wait for the type (default 10)\n\
         \x20 --best-effort   a best-effort reader (default reliable)\n"
    )
}

/// Usage of `tessera pub`.
pub fn pub_usage(prog: &str) -> String {
    format!(
        "usage: {prog} TOPIC VALUE [-n COUNT] [-r RATE] [-d DOMAIN] [-w SECONDS] [--best-effort]\n\
         \n\
         Publishes VALUE (JSON, `$i` replaced by the sample's number) on TOPIC, its type learnt\n\
         from a remote reader or writer over XTypes (TypeLookup). Members left out take their\n\
         defaults.\n\
         \x20 -n COUNT        samples to write (default 1)\n\
         \x20 -r RATE         samples per second (default 10)\n\
         \x20 -d DOMAIN       domain id (default 0)\n\
         \x20 -w SECONDS      how long to wait for the type and a reader (default 10)\n\
         \x20 --best-effort   a best-effort writer (default reliable)\n"
    )
}

fn seconds(s: &str) -> Result<Duration, String> {
    s.parse::<f64>()
        .ok()
        .filter(|x| x.is_finite() && *x >= 0.0)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| format!("bad duration {s}"))
}

/// Parses what both commands take; the others go to `extra`, which returns whether it used
/// the option (and its value, taken from the iterator).
fn parse_common(
    args: &[String],
    positional: usize,
    mut extra: impl FnMut(&str, &mut dyn FnMut() -> Result<String, String>) -> Result<bool, String>,
) -> Result<(Common, Vec<String>), String> {
    let mut pos = Vec::new();
    let mut domain = 0;
    let mut wait = Duration::from_secs(10);
    let mut best_effort = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().cloned().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "-d" => domain = val()?.parse().map_err(|_| "bad domain".to_string())?,
            "-w" => wait = seconds(&val()?)?,
            "--best-effort" => best_effort = true,
            o if extra(o, &mut val)? => {}
            o if o.starts_with('-') && o.len() > 1 => return Err(format!("unknown option {o}")),
            _ => pos.push(a.clone()),
        }
    }
    if pos.len() != positional {
        return Err(format!(
            "expected {positional} arguments, got {}",
            pos.len()
        ));
    }
    Ok((
        Common {
            topic: pos[0].clone(),
            domain,
            wait,
            best_effort,
        },
        pos,
    ))
}

/// Parses `tessera echo`'s arguments.
pub fn parse_echo(args: &[String]) -> Result<EchoArgs, String> {
    let (mut json, mut count, mut duration) = (false, None, None);
    let (common, _) = parse_common(args, 1, |o, val| {
        match o {
            "--json" => json = true,
            "-n" => count = Some(val()?.parse().map_err(|_| "bad count".to_string())?),
            "-t" => duration = Some(seconds(&val()?)?),
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    Ok(EchoArgs {
        common,
        json,
        count,
        duration,
    })
}

/// Parses `tessera pub`'s arguments.
pub fn parse_pub(args: &[String]) -> Result<PubArgs, String> {
    let (mut count, mut rate) = (1u64, 10.0f64);
    let (common, pos) = parse_common(args, 2, |o, val| {
        match o {
            "-n" => count = val()?.parse().map_err(|_| "bad count".to_string())?,
            "-r" => {
                rate = val()?
                    .parse()
                    .ok()
                    .filter(|r: &f64| r.is_finite() && *r > 0.0)
                    .ok_or("bad rate")?
            }
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    Ok(PubArgs {
        common,
        value: pos[1].clone(),
        count,
        rate,
    })
}

/// The participant and the type of the topic.
fn discover(c: &Common) -> Result<(DomainParticipant, Arc<DynamicType>), String> {
    let p = DomainParticipant::new(c.domain).map_err(|e| e.to_string())?;
    let ty = p
        .discover_type(&c.topic, c.wait)
        .map_err(|e| format!("no type for {}: {e}", c.topic))?;
    eprintln!("{}: type {}", c.topic, ty.name());
    Ok((p, ty))
}

fn reliability(c: &Common) -> Reliability {
    if c.best_effort {
        Reliability::best_effort()
    } else {
        Reliability::reliable(Duration::from_secs(1))
    }
}

/// Runs `tessera echo`.
pub fn echo_main(prog: &str, args: &[String]) -> i32 {
    command(prog, args, parse_echo, echo_usage, run_echo)
}

/// Parses, prints the usage on bad arguments, runs, and maps the outcome to an exit status.
fn command<A>(
    prog: &str,
    args: &[String],
    parse: fn(&[String]) -> Result<A, String>,
    usage: fn(&str) -> String,
    run: fn(&A) -> Result<(), String>,
) -> i32 {
    let a = match parse(args) {
        Ok(a) => a,
        Err(e) => {
            eprint!("{e}\n{}", usage(prog));
            return EXIT_BAD_ARGS;
        }
    };
    match run(&a) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("{prog}: {e}");
            EXIT_FAILED
        }
    }
}

fn run_echo(a: &EchoArgs) -> Result<(), String> {
    let (p, ty) = discover(&a.common)?;
    let topic = p
        .create_dynamic_topic(&a.common.topic, ty.clone(), TopicQos::default())
        .map_err(|e| e.to_string())?;
    // Either representation is accepted, as Cyclone's readers do.
    let qos = DataReaderQos::default()
        .with_reliability(reliability(&a.common))
        .with_data_representation(DataRepresentation(vec![
            data_representation::XCDR2,
            data_representation::XCDR,
        ]));
    let reader = p
        .create_subscriber(Default::default())
        .and_then(|s| s.create_dynamic_datareader(&topic, qos))
        .map_err(|e| e.to_string())?;
    let end = a.duration.map(|d| Instant::now() + d);
    let mut seen = 0u64;
    loop {
        for s in reader.take(256).map_err(|e| e.to_string())? {
            match &s.data {
                Some(v) if a.json => println!("{}", v.to_json(&ty)),
                Some(v) => println!("{}", v.to_text(&ty)),
                None if s.info.instance_state != InstanceState::Alive => {
                    println!("-- {:?}", s.info.instance_state)
                }
                None => continue,
            }
            seen += 1;
            if a.count.is_some_and(|n| seen >= n) {
                return Ok(());
            }
        }
        if end.is_some_and(|e| Instant::now() >= e) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Runs `tessera pub`.
pub fn pub_main(prog: &str, args: &[String]) -> i32 {
    command(prog, args, parse_pub, pub_usage, run_pub)
}

/// The value of sample `i`: the template with `$i` replaced, parsed for `ty`.
pub fn value_of(ty: &DynamicType, template: &str, i: u64) -> Result<DynamicValue, String> {
    let text = template.replace("$i", &i.to_string());
    let json = serde_json::from_str(&text).map_err(|e| format!("VALUE is not JSON: {e}"))?;
    DynamicValue::from_json(ty, &json).map_err(|e| e.to_string())
}

fn run_pub(a: &PubArgs) -> Result<(), String> {
    let (p, ty) = discover(&a.common)?;
    // Check the value before anything is announced.
    value_of(&ty, &a.value, 0)?;
    let topic = p
        .create_dynamic_topic(&a.common.topic, ty.clone(), TopicQos::default())
        .map_err(|e| e.to_string())?;
    let repr = if ty.prefers_xcdr2() {
        data_representation::XCDR2
    } else {
        data_representation::XCDR
    };
    let qos = DataWriterQos::default()
        .with_reliability(reliability(&a.common))
        .with_data_representation(DataRepresentation(vec![repr]));
    let writer = p
        .create_publisher(Default::default())
        .and_then(|s| s.create_dynamic_datawriter(&topic, qos))
        .map_err(|e| e.to_string())?;
    let deadline = Instant::now() + a.common.wait;
    while writer.untyped().matched_subscriptions().is_empty() {
        if Instant::now() >= deadline {
            return Err(format!("no reader of {} matched", a.common.topic));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    // Our reader matched when its announcement reached us; the remote reader matches our
    // writer when ours reaches it, and a volatile reader that has not yet done so misses the
    // first samples. Give the announcement a moment.
    std::thread::sleep(MATCH_SETTLE);
    let period = Duration::from_secs_f64(1.0 / a.rate);
    let start = Instant::now();
    for i in 0..a.count {
        let v = value_of(&ty, &a.value, i)?;
        writer.write(&v).map_err(|e| e.to_string())?;
        println!("{}", v.to_text(&ty));
        let next = start + period.mul_f64((i + 1) as f64);
        if i + 1 < a.count {
            std::thread::sleep(next.saturating_duration_since(Instant::now()));
        }
    }
    if !a.common.best_effort {
        let _ = writer
            .untyped()
            .wait_for_acknowledgments(Duration::from_secs(5));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn parses_echo_and_pub() {
        let e = parse_echo(&args("Square --json -n 5 -d 3 -w 2.5")).unwrap();
        assert_eq!(e.common.topic, "Square");
        assert_eq!(e.common.domain, 3);
        assert_eq!(e.common.wait, Duration::from_millis(2500));
        assert!(e.json);
        assert_eq!(e.count, Some(5));
        let p = parse_pub(&args("Square {\"x\":$i} -n 3 -r 2 --best-effort")).unwrap();
        assert_eq!(p.value, "{\"x\":$i}");
        assert_eq!((p.count, p.rate, p.common.best_effort), (3, 2.0, true));
        assert!(parse_echo(&args("")).is_err());
        assert!(parse_echo(&args("A B")).is_err());
        assert!(parse_echo(&args("A --bogus")).is_err());
        assert!(parse_pub(&args("A")).is_err());
        assert!(parse_pub(&args("A 1 -r 0")).is_err());
    }

    #[test]
    fn values_from_a_template() {
        let ty = DynamicType::from_desc(tessera::rtps::xtypes::shape_type()).unwrap();
        let v = value_of(&ty, r#"{"color": "RED", "x": $i}"#, 7).unwrap();
        assert_eq!(
            v.to_text(&ty),
            "ShapeType(color='RED', x=7, y=0, shapesize=0, additional_payload_size=[])"
        );
        assert!(value_of(&ty, r#"{"colour": "RED"}"#, 0).is_err());
        assert!(value_of(&ty, "{", 0).is_err());
    }
}

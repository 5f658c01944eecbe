//! `tessera typeof TOPIC`: the IDL of a topic's type, fetched over XTypes.
//!
//! ```text
//! tessera typeof TOPIC [-d DOMAIN] [--wait SECS]
//! ```
//!
//! Joins the domain as `tessera ls` does, waits (up to `--wait` seconds, 5 by default) for a
//! writer or reader of TOPIC that announces type information, fetches the complete TypeObject
//! of each distinct type announced, and its dependencies, over the TypeLookup service
//! (`DomainParticipant::find_type`), and prints them as IDL
//! (`tessera_rtps::xtypes::idl_print`). Endpoints without type information are counted, with
//! their type names. Exit status 0 when a type was printed, 1 when none could be.

use std::time::{Duration, Instant};

use tessera::rtps::xtypes::idl_print::to_idl;
use tessera::rtps::xtypes::{TypeIdentifier, TypeObject};
use tessera::{DomainParticipant, InstanceState};

use crate::ls::{parse_wait, start, walk_args, EXIT_FAILED};

/// Parsed options.
#[derive(Debug, Clone, PartialEq)]
pub struct TypeofArgs {
    /// The topic.
    pub topic: String,
    /// The domain id.
    pub domain: u32,
    /// How long to wait for an endpoint and its type.
    pub wait: Duration,
}

/// The usage text.
pub fn usage(prog: &str) -> String {
    format!(
        "usage: {prog} TOPIC [-d DOMAIN] [--wait SECS]\n\
         \n\
         Prints the IDL of TOPIC's type, fetched from its writers and readers over XTypes.\n\
         \x20 -d, --domain N   domain id (default: TESSERA_DOMAIN, ROS_DOMAIN_ID, or 0)\n\
         \x20 -w, --wait SECS  how long to wait for the topic and its type (default 5)\n"
    )
}

/// Parses the arguments after `typeof`.
pub fn parse(args: &[String]) -> Result<TypeofArgs, String> {
    let (mut topic, mut wait) = (None, Duration::from_secs(5));
    let domain = walk_args(args, |a, value| {
        match a {
            "-w" | "--wait" => wait = parse_wait(&value()?)?,
            s if s.starts_with('-') => return Err(format!("unknown argument {s}")),
            s if topic.is_none() => topic = Some(s.to_string()),
            s => return Err(format!("one topic only ({s})")),
        }
        Ok(())
    })?;
    Ok(TypeofArgs {
        topic: topic.ok_or("which topic?")?,
        domain,
        wait,
    })
}

/// What the endpoints of a topic announced about its type.
#[derive(Debug, Default)]
struct Announced {
    /// Distinct (complete, minimal) identifiers, with their type names.
    types: Vec<(TypeIdentifier, TypeIdentifier, String)>,
    /// Type names of endpoints without type information.
    without: Vec<String>,
}

fn announced(p: &DomainParticipant, topic: &str) -> Announced {
    let b = p.get_builtin_subscriber();
    let mut out = Announced::default();
    let mut note = |name: &str, ti: Option<&tessera::rtps::xtypes::TypeInformation>| match ti {
        Some(ti) => {
            let c = ti.complete.typeid_with_size.type_id.clone();
            if !out.types.iter().any(|t| t.0 == c) {
                let m = ti.minimal.typeid_with_size.type_id.clone();
                out.types.push((c, m, name.to_string()));
            }
        }
        None => out.without.push(name.to_string()),
    };
    let alive = |st: InstanceState| st == InstanceState::Alive;
    for s in b.publication_reader().read(100_000).unwrap_or_default() {
        if let Some(d) = s
            .data
            .filter(|d| d.topic_name == topic && alive(s.info.instance_state))
        {
            note(&d.type_name, d.type_information.as_deref());
        }
    }
    for s in b.subscription_reader().read(100_000).unwrap_or_default() {
        if let Some(d) = s
            .data
            .filter(|d| d.topic_name == topic && alive(s.info.instance_state))
        {
            note(&d.type_name, d.type_information.as_deref());
        }
    }
    out
}

/// The IDL of a type: the complete objects if the peers serve them, else the minimal ones.
fn fetch_idl(
    p: &DomainParticipant,
    complete: &TypeIdentifier,
    minimal: &TypeIdentifier,
    until: Instant,
) -> Option<String> {
    for id in [complete, minimal] {
        let left = until.saturating_duration_since(Instant::now());
        if let Ok(objects) = p.find_type(id, left.max(Duration::from_millis(500))) {
            let find = |i: &TypeIdentifier| -> Option<TypeObject> {
                objects.iter().find(|o| o.identifier() == *i).cloned()
            };
            return Some(to_idl(&objects[0], &find));
        }
    }
    None
}

/// `tessera typeof ARGS`; returns the exit status.
pub fn main(prog: &str, args: &[String]) -> i32 {
    let (a, p) = match start(prog, args, usage, parse, |a: &TypeofArgs| a.domain) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let until = Instant::now() + a.wait;
    let mut seen = announced(&p, &a.topic);
    while seen.types.is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
        seen = announced(&p, &a.topic);
    }
    // Other endpoints discovered in the same burst come within a moment.
    std::thread::sleep(
        Duration::from_millis(200).min(until.saturating_duration_since(Instant::now())),
    );
    seen = announced(&p, &a.topic);
    let mut printed = 0;
    for (complete, minimal, name) in &seen.types {
        match fetch_idl(&p, complete, minimal, until) {
            Some(idl) => {
                println!("// {}: type {name}", a.topic);
                print!("{idl}");
                printed += 1;
            }
            None => eprintln!(
                "{prog}: {}: type {name} announced, but no peer served its TypeObject",
                a.topic
            ),
        }
    }
    if !seen.without.is_empty() {
        seen.without.sort();
        seen.without.dedup();
        eprintln!(
            "{prog}: {}: endpoints without type information (type {})",
            a.topic,
            seen.without.join(", ")
        );
    }
    if printed > 0 {
        0
    } else {
        if seen.types.is_empty() && seen.without.is_empty() {
            eprintln!("{prog}: no writer or reader of {} found", a.topic);
        }
        EXIT_FAILED
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let a = parse(&s(&["Square", "-d", "3", "-w", "1"])).unwrap();
        assert_eq!(a.topic, "Square");
        assert_eq!(a.domain, 3);
        assert_eq!(a.wait, Duration::from_secs(1));
        assert!(parse(&s(&["-d", "3"])).is_err());
        assert!(parse(&s(&["A", "B"])).is_err());
        assert!(parse(&s(&["A", "--bogus"])).is_err());
    }
}

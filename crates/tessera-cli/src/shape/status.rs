//! The listener lines of the reference application, printed from polled status counts.

/// The listener callbacks the reference application prints, per side: matched (and what
/// matched), incompatible QoS, deadline missed.
type Callbacks = [&'static str; 4];
pub(super) const WRITER_CALLBACKS: Callbacks = [
    "on_publication_matched",
    "readers",
    "on_offered_incompatible_qos",
    "on_offered_deadline_missed",
];
pub(super) const READER_CALLBACKS: Callbacks = [
    "on_subscription_matched",
    "writers",
    "on_requested_incompatible_qos",
    "on_requested_deadline_missed",
];

/// The status total counts already reported.
#[derive(Default)]
pub(super) struct Seen {
    matched: i32,
    incompatible: i32,
    deadline_missed: i32,
}

impl Seen {
    /// Prints a listener line for each status whose total count grew since the last call.
    pub(super) fn report(
        &mut self,
        topic: &str,
        names: Callbacks,
        (matched, current): (i32, i32),
        (incompatible, policy): (i32, u32),
        deadline_missed: i32,
    ) {
        let line = |callback: &str, details: String| {
            println!("{callback}() topic: '{topic}'  type: 'ShapeType' : {details}");
        };
        if matched > self.matched {
            self.matched = matched;
            line(
                names[0],
                format!("matched {} {current} (change = 1)", names[1]),
            );
        }
        if incompatible > self.incompatible {
            self.incompatible = incompatible;
            line(names[2], format!("policy id {policy}"));
        }
        if deadline_missed > self.deadline_missed {
            self.deadline_missed = deadline_missed;
            line(names[3], format!("total count {deadline_missed}"));
        }
    }
}

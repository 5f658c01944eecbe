//! The subscribing side (`-S`): one reader per topic (content-filtered with `-c` or `--cft`),
//! read passes with coherent or ordered access, and the sample and instance-state lines.

use crate::stop;

use tessera::qos::{
    DataReaderQos, Deadline, Ownership, PresentationAccessScope, SubscriberQos, TimeBasedFilter,
};
use tessera::{DataReader, DomainParticipant, InstanceHandle, InstanceState, Sample, StateMasks};

use super::qos::{history, partition, presentation, reliability, representation, topic_qos};
use super::status::{Seen, READER_CALLBACKS};
use super::{nth_name, pause, sample_line, ShapeArgs, ShapeType};

struct ReaderState {
    topic: String,
    reader: DataReader<ShapeType>,
    /// The color of each instance seen with data (to name instances whose samples carry
    /// none) and the last instance state printed for it.
    colors: Vec<(InstanceHandle, String, InstanceState)>,
    seen: Seen,
}

impl ReaderState {
    fn report_statuses(&mut self) {
        let m = self.reader.subscription_matched_status();
        let i = self.reader.requested_incompatible_qos_status();
        let d = self.reader.requested_deadline_missed_status();
        self.seen.report(
            &self.topic,
            READER_CALLBACKS,
            (m.total_count, m.current_count),
            (i.total_count, i.last_policy_id),
            d.total_count,
        );
    }

    fn color_of(&self, h: InstanceHandle) -> &str {
        self.colors
            .iter()
            .find(|(k, _, _)| *k == h)
            .map_or("(unknown)", |(_, c, _)| c.as_str())
    }

    fn print(&mut self, samples: Vec<Sample<ShapeType>>) {
        // A dispose or unregister that arrives while data of the instance is still unread
        // comes as the state of those samples, not as a sample of its own: print each
        // instance's state once each time it changes, after the data lines of this pass.
        let mut changed: Vec<(InstanceHandle, InstanceState)> = Vec::new();
        for s in samples {
            let h = s.info.instance_handle;
            if let Some(d) = &s.data {
                if !self.colors.iter().any(|(k, _, _)| *k == h) {
                    self.colors.push((h, d.color.clone(), InstanceState::Alive));
                }
                println!("{}", sample_line(&self.topic, d));
            }
            match changed.iter_mut().find(|(k, _)| *k == h) {
                Some((_, last)) => *last = s.info.instance_state,
                None => changed.push((h, s.info.instance_state)),
            }
        }
        for (h, state) in changed {
            let last = self.colors.iter_mut().find(|(k, _, _)| *k == h);
            match last {
                Some((_, _, last)) if *last == state => continue,
                Some((_, _, last)) => *last = state,
                None => {}
            }
            let name = match state {
                InstanceState::NotAliveDisposed => "NOT_ALIVE_DISPOSED_INSTANCE_STATE",
                InstanceState::NotAliveNoWriters => "NOT_ALIVE_NO_WRITERS_INSTANCE_STATE",
                InstanceState::Alive => continue,
            };
            println!("{:<10} {:<10} {name}", self.topic, self.color_of(h));
        }
    }

    /// The next `n` samples in arrival order (GROUP ordered access: one run of
    /// `Subscriber::get_datareaders`).
    fn read_run(&mut self, a: &ShapeArgs, n: usize, masks: StateMasks) -> Result<(), String> {
        let got = if a.use_read {
            self.reader.read_with(n, masks)
        } else {
            self.reader.take_with(n, masks)
        }
        .map_err(|e| format!("read failed: {e}"))?;
        self.print(got);
        Ok(())
    }

    /// One read pass: every instance in turn, or everything at once with `--take-read`.
    fn read_pass(&mut self, a: &ShapeArgs) -> Result<(), String> {
        let masks = if a.use_read {
            StateMasks::NOT_READ
        } else {
            StateMasks::ANY
        };
        if a.take_read {
            let got = if a.use_read {
                self.reader.read_with(usize::MAX, masks)
            } else {
                self.reader.take_with(usize::MAX, masks)
            }
            .map_err(|e| format!("read failed: {e}"))?;
            self.print(got);
            return Ok(());
        }
        let mut previous: Option<InstanceHandle> = None;
        loop {
            let got = if a.use_read {
                self.reader.read_next_instance(previous, usize::MAX, masks)
            } else {
                self.reader.take_next_instance(previous, usize::MAX, masks)
            }
            .map_err(|e| format!("read failed: {e}"))?;
            let Some(last) = got.last() else {
                return Ok(());
            };
            previous = Some(last.info.instance_handle);
            self.print(got);
        }
    }
}

pub(super) fn subscribe(a: &ShapeArgs) -> Result<(), String> {
    let p = DomainParticipant::new(a.domain).map_err(|e| format!("create participant: {e}"))?;
    let subscriber = p
        .create_subscriber(SubscriberQos {
            partition: partition(a),
            presentation: presentation(a),
            ..SubscriberQos::default()
        })
        .map_err(|e| format!("create subscriber: {e}"))?;
    let mut qos = DataReaderQos::default()
        .with_reliability(reliability(a))
        .with_durability(a.durability)
        .with_data_representation(representation(a));
    if let Some(h) = history(a) {
        qos = qos.with_history(h);
    }
    if let Some(d) = a.deadline {
        qos = qos.with_deadline(Deadline { period: d });
    }
    if let Some(t) = a.time_filter {
        qos = qos.with_time_based_filter(TimeBasedFilter {
            minimum_separation: t,
        });
    }
    if a.strength >= 0 {
        qos = qos.with_ownership(Ownership::Exclusive);
    }
    let mut readers = Vec::new();
    for k in 0..a.topics {
        let name = nth_name(&a.topic, k);
        println!("Create topic: {name}");
        let topic = p
            .create_topic::<ShapeType>(&name, topic_qos(a))
            .map_err(|e| format!("failed to create topic: {e}"))?;
        let filter = match (&a.color, &a.cft) {
            (Some(c), _) => Some(("color = %0".to_string(), vec![format!("'{c}'")])),
            (None, Some(expr)) => Some((expr.clone(), Vec::new())),
            (None, None) => None,
        };
        let reader = match filter {
            Some((expr, params)) => {
                let cft = p
                    .create_contentfilteredtopic(&format!("{name}_filtered"), &topic, &expr, params)
                    .map_err(|e| format!("failed to create content filtered topic: {e}"))?;
                println!("Create reader for topic: {name}_filtered filter: {expr}");
                subscriber.create_datareader(&cft, qos.clone())
            }
            None => {
                println!("Create reader for topic: {name}");
                subscriber.create_datareader(&topic, qos.clone())
            }
        }
        .map_err(|e| format!("failed to create reader: {e}"))?;
        readers.push(ReaderState {
            topic: name,
            reader,
            colors: Vec::new(),
            seen: Seen::default(),
        });
    }
    let mut iteration: u64 = 0;
    while !stop::requested() && a.iterations.is_none_or(|n| iteration < n) {
        if a.coherent {
            println!("Reading coherent sets, iteration {iteration}");
        }
        if a.ordered {
            println!("Reading with ordered access, iteration {iteration}");
        }
        let bracket = a.coherent || a.ordered;
        if bracket {
            subscriber
                .begin_access()
                .map_err(|e| format!("begin_access failed: {e}"))?;
        }
        for r in readers.iter_mut() {
            r.report_statuses();
        }
        if a.ordered && a.access_scope == PresentationAccessScope::Group {
            // GROUP ordered access: the readers in the order of the samples across topics,
            // each for its run of samples.
            let masks = if a.use_read {
                StateMasks::NOT_READ
            } else {
                StateMasks::ANY
            };
            let runs = subscriber
                .get_datareaders(masks)
                .map_err(|e| format!("get_datareaders failed: {e}"))?;
            for run in runs {
                if let Some(r) = readers.iter_mut().find(|r| r.reader.guid() == run.reader) {
                    r.read_run(a, run.samples, masks)?;
                }
            }
        } else {
            for r in readers.iter_mut() {
                r.read_pass(a)?;
            }
        }
        if bracket {
            subscriber
                .end_access()
                .map_err(|e| format!("end_access failed: {e}"))?;
        }
        iteration += 1;
        pause(a.read_period);
    }
    Ok(())
}

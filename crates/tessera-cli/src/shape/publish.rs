//! The publishing side (`-P`): one writer per topic, shapes moving in the drawing area,
//! optional coherent sets, and the final instance state.

use std::time::Duration;

use crate::stop;

use tessera::qos::{
    DataWriterQos, Deadline, Lifespan, Ownership, OwnershipStrength, PublisherQos,
    WriterDataLifecycle,
};
use tessera::{DataWriter, DomainParticipant};

use super::qos::{history, partition, presentation, reliability, representation, topic_qos};
use super::status::{Seen, WRITER_CALLBACKS};
use super::{nth_name, pause, sample_line, FinalState, ShapeArgs, ShapeType};

/// Where the shapes move (the reference application's drawing area).
pub(super) const AREA_WIDTH: i32 = 240;
pub(super) const AREA_HEIGHT: i32 = 270;

struct WriterState {
    topic: String,
    writer: DataWriter<ShapeType>,
    seen: Seen,
}

impl WriterState {
    fn report_statuses(&mut self) {
        let m = self.writer.publication_matched_status();
        let i = self.writer.offered_incompatible_qos_status();
        let d = self.writer.offered_deadline_missed_status();
        self.seen.report(
            &self.topic,
            WRITER_CALLBACKS,
            (m.total_count, m.current_count),
            (i.total_count, i.last_policy_id),
            d.total_count,
        );
    }
}

/// A shape bouncing in the drawing area.
pub(super) struct Motion {
    pub(super) x: i32,
    pub(super) y: i32,
    dx: i32,
    dy: i32,
}

impl Motion {
    pub(super) fn new(seed: u32) -> Motion {
        // A small deterministic spread is enough: the suite checks sizes and order, not paths.
        let s = seed.wrapping_mul(2_654_435_761);
        Motion {
            x: (s % 200) as i32,
            y: ((s >> 8) % 200) as i32,
            dx: 1 + (s % 5) as i32,
            dy: 1 + ((s >> 4) % 5) as i32,
        }
    }

    pub(super) fn step(&mut self, size: i32) {
        let (max_x, max_y) = (AREA_WIDTH - size.max(0), AREA_HEIGHT - size.max(0));
        self.x += self.dx;
        self.y += self.dy;
        if self.x < 0 || self.x > max_x {
            self.dx = -self.dx;
            self.x = self.x.clamp(0, max_x.max(0));
        }
        if self.y < 0 || self.y > max_y {
            self.dy = -self.dy;
            self.y = self.y.clamp(0, max_y.max(0));
        }
    }
}

pub(super) fn publish(a: &ShapeArgs) -> Result<(), String> {
    let p = DomainParticipant::new(a.domain).map_err(|e| format!("create participant: {e}"))?;
    let publisher = p
        .create_publisher(PublisherQos {
            partition: partition(a),
            presentation: presentation(a),
            ..PublisherQos::default()
        })
        .map_err(|e| format!("create publisher: {e}"))?;
    let mut qos = DataWriterQos::default()
        .with_reliability(reliability(a))
        .with_durability(a.durability)
        .with_data_representation(representation(a));
    if let Some(h) = history(a) {
        qos = qos.with_history(h);
    }
    if let Some(d) = a.deadline {
        qos = qos.with_deadline(Deadline { period: d });
    }
    if let Some(l) = a.lifespan {
        qos = qos.with_lifespan(Lifespan { duration: l });
    }
    if a.final_state == Some(FinalState::Unregister) {
        // Unregistering is to leave the instance NOT_ALIVE_NO_WRITERS, not to dispose it
        // (the DDS default disposes an instance its writer unregisters).
        qos = qos.with_writer_data_lifecycle(WriterDataLifecycle {
            autodispose_unregistered_instances: false,
        });
    }
    if a.strength >= 0 {
        qos = qos
            .with_ownership(Ownership::Exclusive)
            .with_ownership_strength(OwnershipStrength(a.strength));
    }
    let color = a.color.clone().unwrap_or_else(|| "BLUE".into());
    let mut writers = Vec::new();
    for k in 0..a.topics {
        let name = nth_name(&a.topic, k);
        println!("Create topic: {name}");
        let topic = p
            .create_topic::<ShapeType>(&name, topic_qos(a))
            .map_err(|e| format!("failed to create topic: {e}"))?;
        println!("Create writer for topic: {name} color: {color}");
        let writer = publisher
            .create_datawriter(&topic, qos.clone())
            .map_err(|e| format!("failed to create writer: {e}"))?;
        writers.push(WriterState {
            topic: name,
            writer,
            seen: Seen::default(),
        });
    }
    let colors: Vec<String> = (0..a.instances).map(|k| nth_name(&color, k)).collect();
    let mut motions: Vec<Motion> = (0..a.instances).map(Motion::new).collect();
    let payload: Vec<u8> = if a.payload > 0 {
        let mut v = vec![0u8; a.payload];
        if let Some(last) = v.last_mut() {
            *last = 255;
        }
        v
    } else {
        Vec::new()
    };
    let mut counter: i32 = 0;
    let mut iteration: u64 = 0;
    while !stop::requested() && a.iterations.is_none_or(|n| iteration < n) {
        for w in writers.iter_mut() {
            w.report_statuses();
        }
        let size = if a.size == 0 {
            counter = counter.wrapping_add(1);
            a.size_modulo.map_or(counter, |m| (counter - 1) % m + 1)
        } else {
            a.size
        };
        let sets = a.coherent_sample_count;
        let presenting = (a.coherent || a.ordered) && sets != 0;
        if presenting && iteration % sets == 0 {
            println!("Started Coherent Set");
            if a.coherent {
                if let Err(e) = publisher.begin_coherent_changes() {
                    eprintln!("begin_coherent_changes failed: {e}");
                }
            }
        }
        for w in &writers {
            for (c, m) in colors.iter().zip(motions.iter_mut()) {
                m.step(if a.size == 0 { 0 } else { size });
                let s = ShapeType {
                    color: c.clone(),
                    x: m.x,
                    y: m.y,
                    shapesize: size,
                    additional_payload_size: payload.clone(),
                };
                match w.writer.write(&s) {
                    Ok(()) if a.print_writes => println!("{}", sample_line(&w.topic, &s)),
                    Ok(()) => {}
                    Err(e) => eprintln!("write failed: {e}"),
                }
            }
        }
        if presenting && iteration % sets == sets - 1 {
            println!("Finished Coherent Set");
            if a.coherent {
                if let Err(e) = publisher.end_coherent_changes() {
                    eprintln!("end_coherent_changes failed: {e}");
                }
            }
        }
        iteration += 1;
        pause(a.write_period);
    }
    if let Some(f) = a.final_state {
        for w in &writers {
            for c in &colors {
                let key = ShapeType {
                    color: c.clone(),
                    x: 0,
                    y: 0,
                    shapesize: 0,
                    additional_payload_size: Vec::new(),
                };
                let r = match f {
                    FinalState::Unregister => w.writer.unregister_instance(&key),
                    FinalState::Dispose => w.writer.dispose(&key),
                };
                if let Err(e) = r {
                    eprintln!("final instance state: {e}");
                }
            }
        }
        // Give the last DATA(u/d) time to leave before the participant goes away; keep
        // reporting statuses meanwhile, as the reference application does.
        pause(Duration::from_millis(500));
    }
    while !stop::requested() {
        for w in writers.iter_mut() {
            w.report_statuses();
        }
        pause(a.write_period);
    }
    Ok(())
}

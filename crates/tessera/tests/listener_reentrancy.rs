//! Listeners run on the receive thread; one that creates, deletes or writes entities must not
//! deadlock against the runtime's own tables.

mod support;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{watchdog, Keyed, Transport};
use tessera::qos::{DataReaderQos, DataWriterQos, History, Reliability, TopicQos};
use tessera::{DataReader, DataReaderListener, DataWriter, DomainParticipant, Topic};

fn reliable() -> DataReaderQos {
    DataReaderQos::default()
        .with_reliability(Reliability::reliable(Duration::from_secs(1)))
        .with_history(History::KeepAll)
}

fn topic(p: &DomainParticipant, name: &str) -> Topic<Keyed> {
    p.create_topic::<Keyed>(name, TopicQos::default()).unwrap()
}

fn writer(p: &DomainParticipant, name: &str) -> DataWriter<Keyed> {
    p.create_publisher(Default::default())
        .unwrap()
        .create_datawriter(&topic(p, name), DataWriterQos::default())
        .unwrap()
}

fn reader(p: &DomainParticipant, name: &str) -> DataReader<Keyed> {
    p.create_subscriber(Default::default())
        .unwrap()
        .create_datareader(&topic(p, name), reliable())
        .unwrap()
}

/// Writes to `w` until `done` holds.
fn drive(w: &DataWriter<Keyed>, mut done: impl FnMut() -> bool) {
    let mut i = 0;
    while !done() {
        if w.matched_subscriptions().len() == 1 {
            w.write(&Keyed { id: i % 4, seq: i }).unwrap();
            i += 1;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

struct Creates {
    p: DomainParticipant,
    made: Mutex<Vec<(DataReader<Keyed>, DataWriter<Keyed>)>>,
    done: AtomicBool,
}

impl DataReaderListener<Keyed> for Creates {
    fn on_data_available(&self, r: &DataReader<Keyed>) {
        let _ = r.take(64);
        if !self.done.load(Ordering::Acquire) {
            let pair = (reader(&self.p, "LR_made"), writer(&self.p, "LR_made"));
            self.made.lock().push(pair);
            self.done.store(true, Ordering::Release);
        }
    }
}

fn listener_creates_a_reader_and_a_writer(t: Transport) {
    // Declared first, dropped last: a hang in deleting the participants counts too.
    let _watchdog = watchdog(20, "a listener that makes, deletes or writes entities");
    let ps = t.participants(2);
    let w = writer(&ps[0], "LR_create");
    let r = reader(&ps[1], "LR_create");
    let l = Arc::new(Creates {
        p: ps[1].clone(),
        made: Mutex::new(Vec::new()),
        done: AtomicBool::new(false),
    });
    r.set_listener(Some(l.clone()));
    drive(&w, || l.done.load(Ordering::Acquire));
    let made = l.made.lock();
    // The entities made in the listener work: they match each other.
    let (mr, mw) = &made[0];
    support::wait_until(5, "local match", || {
        mw.matched_subscriptions().contains(&mr.guid())
    });
}

struct Deletes {
    me: Mutex<Option<DataReader<Keyed>>>,
    done: AtomicBool,
}

impl DataReaderListener<Keyed> for Deletes {
    fn on_data_available(&self, _r: &DataReader<Keyed>) {
        // The last handle of its own reader goes here: the reader is deleted on this thread.
        if let Some(me) = self.me.lock().take() {
            drop(me);
            self.done.store(true, Ordering::Release);
        }
    }
}

fn listener_deletes_its_own_reader(t: Transport) {
    // Declared first, dropped last: a hang in deleting the participants counts too.
    let _watchdog = watchdog(20, "a listener that makes, deletes or writes entities");
    let ps = t.participants(2);
    let w = writer(&ps[0], "LR_delete");
    let r = reader(&ps[1], "LR_delete");
    let l = Arc::new(Deletes {
        me: Mutex::new(None),
        done: AtomicBool::new(false),
    });
    r.set_listener(Some(l.clone()));
    *l.me.lock() = Some(r);
    drive(&w, || l.done.load(Ordering::Acquire));
    support::wait_until(5, "unmatch", || w.matched_subscriptions().is_empty());
}

struct Writes {
    w: DataWriter<Keyed>,
    writes: AtomicUsize,
}

impl DataReaderListener<Keyed> for Writes {
    fn on_data_available(&self, r: &DataReader<Keyed>) {
        for s in r.take(64).unwrap() {
            if let Some(d) = s.data {
                // On a receive thread a write never waits: Ok, or an error at once.
                let t = Instant::now();
                let _ = self.w.write(&d);
                assert!(t.elapsed() < Duration::from_millis(500));
                self.writes.fetch_add(1, Ordering::AcqRel);
            }
        }
    }
}

fn listener_writes_an_echo(t: Transport) {
    // Declared first, dropped last: a hang in deleting the participants counts too.
    let _watchdog = watchdog(20, "a listener that makes, deletes or writes entities");
    let ps = t.participants(2);
    let w = writer(&ps[0], "LR_ping");
    let r = reader(&ps[1], "LR_ping");
    let echo_r = reader(&ps[0], "LR_pong");
    let l = Arc::new(Writes {
        w: writer(&ps[1], "LR_pong"),
        writes: AtomicUsize::new(0),
    });
    r.set_listener(Some(l.clone()));
    let mut echoed = 0;
    drive(&w, || {
        echoed += echo_r.take(64).unwrap().len();
        echoed >= 3 && l.writes.load(Ordering::Acquire) >= 3
    });
}

per_transport!(
    listener_creates_a_reader_and_a_writer,
    listener_deletes_its_own_reader,
    listener_writes_an_echo
);

//! Setting up and tearing down a run: the participant with its publisher and subscriber,
//! setup errors, and `run_typed`, which creates one sample type's topics, endpoints and
//! threads around the main loop.

use super::*;

/// A DDS call failed while setting up: print it ddsperf-style and give exit status 2.
fn dds_error(what: &str, e: tessera::Error) -> i32 {
    println!("{what}: {e}");
    let _ = std::io::stdout().flush();
    EXIT_DDS_ERROR
}

macro_rules! tryd {
    ($what:expr, $e:expr) => {
        match $e {
            Ok(v) => v,
            Err(e) => return dds_error($what, e),
        }
    };
}

/// The type-independent start of a run: the participant (with ddsperf's user data), its
/// publisher and subscriber, with the signals blocked first.
pub(super) struct Base {
    pub(super) t_process: i64,
    pub(super) pid: u32,
    hostname: String,
    sigset: Option<libc::sigset_t>,
    participant: DomainParticipant,
    pub(super) own_guid: [u8; 16],
    publisher: Publisher,
    subscriber: Subscriber,
}

impl Base {
    /// Creates the participant and its publisher and subscriber; `Err` holds the exit status
    /// after the error was printed.
    pub(super) fn new(cfg: &PerfConfig) -> Result<Base, i32> {
        let t_process = now_ns();
        let pid = sysinfo::pid();
        let hostname = sysinfo::hostname();
        let sigset = block_signals();
        let pqos = DomainParticipantQos::default().with_user_data(UserData(user_data(
            cfg.has_data_reader(),
            pid,
            &hostname,
        )));
        let participant = DomainParticipant::with_qos(
            cfg.domain_id.unwrap_or(0),
            pqos,
            // ddsperf ignores its own participant's endpoints unless -L.
            ParticipantConfig {
                ignore_local: cfg.ignore_local,
                ..Default::default()
            },
        )
        .map_err(|e| dds_error("dds_create_participant", e))?;
        let publisher = participant
            .create_publisher(PublisherQos::default())
            .map_err(|e| dds_error("dds_create_publisher", e))?;
        let subscriber = participant
            .create_subscriber(SubscriberQos::default())
            .map_err(|e| dds_error("dds_create_subscriber", e))?;
        Ok(Base {
            t_process,
            pid,
            hostname,
            sigset,
            own_guid: participant.guid().to_bytes(),
            participant,
            publisher,
            subscriber,
        })
    }
}

pub(super) fn run_typed<T: PerfIo>(cfg: &PerfConfig, base: Base) -> i32 {
    let (pid, sigset, own_guid) = (base.pid, base.sigset, base.own_guid);
    let (hostname, participant) = (&base.hostname, &base.participant);
    let (publisher, subscriber) = (&base.publisher, &base.subscriber);
    // Topics.
    let rel = reliability(cfg);
    let cons = consistency(cfg);
    let tqos = TopicQos::default()
        .with_reliability(rel)
        .with_consistency(cons);
    let cpu_topic = tryd!(
        "dds_create_topic(CPUStats)",
        participant.create_topic::<CpuStats>(
            CPU_STATS_TOPIC,
            TopicQos::default().with_reliability(Reliability::reliable(Duration::from_millis(100)))
        )
    );
    let data_topic = tryd!(
        "dds_create_topic(data)",
        participant.create_topic::<T>(
            &T::topic_name(TopicRole::Data, cfg.reliable, cfg.topic),
            tqos.clone()
        )
    );
    let ping_topic = tryd!(
        "dds_create_topic(ping)",
        participant.create_topic::<T>(
            &T::topic_name(TopicRole::Ping, cfg.reliable, cfg.topic),
            tqos.clone()
        )
    );
    let pong_topic = tryd!(
        "dds_create_topic(pong)",
        participant.create_topic::<T>(
            &T::topic_name(TopicRole::Pong, cfg.reliable, cfg.topic),
            tqos.clone()
        )
    );

    // QoS of the endpoints.
    let pp_wqos = DataWriterQos::default()
        .with_reliability(rel)
        .with_consistency(cons)
        .with_history(QosHistory::KeepLast(1));
    let pp_rqos = DataReaderQos::default()
        .with_reliability(rel)
        .with_consistency(cons)
        .with_history(QosHistory::KeepLast(1));
    let data_wqos = DataWriterQos::default()
        .with_reliability(rel)
        .with_consistency(cons)
        .with_history(data_history(cfg))
        .with_resource_limits(data_limits());
    let data_rqos = DataReaderQos::default()
        .with_reliability(rel)
        .with_consistency(cons)
        .with_history(data_history(cfg))
        .with_resource_limits(data_limits());

    // CPU statistics.
    let cpu_writer = tryd!(
        "dds_create_writer(CPUStats)",
        publisher.create_datawriter(
            &cpu_topic,
            DataWriterQos::default()
                .with_reliability(Reliability::reliable(Duration::from_millis(100)))
                .with_history(QosHistory::KeepLast(1))
        )
    );
    let cpu_reader = if cfg.collect_cpu_stats {
        Some(tryd!(
            "dds_create_reader(CPUStats)",
            subscriber.create_datareader(
                &cpu_topic,
                DataReaderQos::default()
                    .with_reliability(Reliability::reliable(Duration::from_millis(100)))
                    .with_history(QosHistory::KeepLast(1))
            )
        ))
    } else {
        None
    };

    // Ping reader and writer, data reader (sub) and writer (always), pong reader.
    let ping_reader = tryd!(
        "dds_create_reader(ping)",
        subscriber.create_datareader(&ping_topic, pp_rqos)
    );
    let ping_writer = tryd!(
        "dds_create_writer(ping)",
        publisher.create_datawriter(&ping_topic, pp_wqos.clone())
    );
    ping_writer.set_batching(batches_pings(&pp_wqos));
    let data_reader = if cfg.has_data_reader() {
        Some(tryd!(
            "dds_create_reader(data)",
            subscriber.create_datareader(&data_topic, data_rqos.clone())
        ))
    } else {
        None
    };
    let data_writer = tryd!(
        "dds_create_writer(data)",
        publisher.create_datawriter(&data_topic, data_wqos)
    );
    data_writer.set_batching(true);
    let pong_subscriber = tryd!(
        "dds_create_subscriber(pong)",
        participant.create_subscriber(
            SubscriberQos::default().with_partition(Partition(vec![guid_partition(&own_guid)]))
        )
    );
    let pong_reader = tryd!(
        "dds_create_reader(pong)",
        pong_subscriber.create_datareader(&pong_topic, data_rqos)
    );

    // Shared state.
    let (matched_tx, matched_rx) = crossbeam_channel::bounded::<()>(1);
    let own_handle = handle_of(&own_guid);
    let shared = Shared::new(cfg, &base, matched_tx.clone());
    let ctx = Arc::new(Ctx {
        shared,
        ping_writer: ping_writer.clone(),
        pong_writers: RwLock::new(FastHashMap::default()),
        data_writer: data_writer.clone(),
    });
    if let Some(set) = sigset {
        let (stop, guard) = (ctx.stop.clone(), ctx.guard.clone());
        spawn_signal_thread(set, move || {
            stop.store(true, Ordering::Release);
            guard.set_trigger_value(true);
        });
    }

    // Listeners: matches always go to the discovery thread; ping/pong data is handled in the
    // listener unless the waitset trigger is selected.
    let pp_listener = !cfg.pingpong_uses_waitset();
    let reader_listener = |role, handle_data| {
        Arc::new(ReaderListener {
            ctx: ctx.clone(),
            role,
            handle_data,
            buf: Mutex::new(SampleBuffer::new()),
        })
    };
    ping_reader.set_listener(Some(reader_listener(ReaderRole::Ping, pp_listener)));
    pong_reader.set_listener(Some(reader_listener(ReaderRole::Pong, pp_listener)));
    ping_writer.set_listener(Some(Arc::new(WriterListener {
        matched: matched_tx.clone(),
    })));
    data_writer.set_listener(Some(Arc::new(WriterListener {
        matched: matched_tx.clone(),
    })));
    if let Some(r) = &data_reader {
        // Data handling starts after `initwait` (`Ctx::data_on`).
        r.set_listener(Some(reader_listener(
            ReaderRole::Data,
            cfg.sub == Some(SubMode::Listener),
        )));
    }

    // Our own participant (ddsperf sees itself through the built-in topic; Tessera's
    // discovery events only cover remote participants).
    let own_ud = user_data(cfg.has_data_reader(), pid, hostname);
    let tdisc = now_ns();
    let own = lock(&ctx.peers).on_participant(own_handle, own_guid, &own_ud, tdisc);
    if let Some(own) = own {
        ctx.emit(&own.line);
        if let Some(partition) = own.pong_partition {
            // Only with -L. Tessera does not match endpoints of one participant with each
            // other, so this writer never matches; it is created for fidelity.
            let publisher = tryd!(
                "dds_create_publisher(pong)",
                participant.create_publisher(
                    PublisherQos::default().with_partition(Partition(vec![partition]))
                )
            );
            let w = tryd!(
                "dds_create_writer(pong)",
                publisher.create_datawriter(&pong_topic, pp_wqos.clone())
            );
            w.set_batching(batches_pings(&pp_wqos));
            ctx.add_pong_writer(prefix_of(&own_guid), w);
            lock(&ctx.ping).peers_changed(1, tdisc);
        }
    }

    // Discovery thread.
    let events = participant.participant_events();
    let disc = Discovery {
        ops: Box::new(DiscoveryTyped {
            ctx: ctx.clone(),
            participant: participant.clone(),
            pong_topic: pong_topic.clone(),
            pong_qos: pp_wqos,
            sources: MatchSources {
                data_writer: data_writer.clone(),
                data_reader: data_reader.clone(),
                ping_reader: ping_reader.clone(),
                pong_reader: pong_reader.clone(),
            },
            matched_tx,
        }),
        seen: HashSet::new(),
    };
    let disc_thread = std::thread::Builder::new()
        .name("discovery".into())
        .spawn(move || disc.run(events, matched_rx));
    let disc_thread = match disc_thread {
        Ok(t) => t,
        Err(e) => return dds_error("thread", tessera::Error::Io(e)),
    };

    let mut aborted = ctx.init_wait();

    let mut threads: Vec<JoinHandle<()>> = Vec::new();
    if !aborted {
        match start_threads(&ctx, &data_reader, &data_writer, &ping_reader, &pong_reader) {
            Ok(t) => threads = t,
            Err(e) => return dds_error("thread", tessera::Error::Io(e)),
        }
    }

    let mut code = 0;
    let mut tref = None;
    if !aborted {
        let r = main_loop(&ctx, &*ctx, hostname, &cpu_writer, cpu_reader.as_ref());
        aborted = r.aborted;
        tref = Some(r.tref);
        code = finish(&ctx, aborted, r.rss);
    } else {
        code = code.max(finish(&ctx, true, None));
    }

    // Tear down: stop threads, remove listeners (they hold the shared state), drop entities.
    ctx.request_stop();
    for t in threads {
        let _ = t.join();
    }
    if let Some(tref) = tref {
        linger(&ctx, &data_writer, tref);
    }
    let _ = disc_thread.join();
    ping_reader.set_listener(None);
    pong_reader.set_listener(None);
    if let Some(r) = &data_reader {
        r.set_listener(None);
    }
    ping_writer.set_listener(None);
    data_writer.set_listener(None);
    drop(ctx.remove_pong_writers(None));
    let _ = lock(&ctx.out).flush();
    code
}

use super::*;
use tessera::rtps::types::{EntityId, Guid, GuidPrefix};

fn guid(n: u8, kind: u8) -> Guid {
    Guid::new(GuidPrefix([n; 12]), EntityId::new(u32::from(n), kind))
}

fn writer(n: u8, f: impl FnOnce(&mut WriterSideQos)) -> Arc<DiscoveredWriterData> {
    let mut w = DiscoveredWriterData::new(guid(n, 0x02), "T", "Ty");
    f(&mut w.qos);
    Arc::new(w)
}

fn reader(n: u8, f: impl FnOnce(&mut ReaderSideQos)) -> Arc<DiscoveredReaderData> {
    let mut r = DiscoveredReaderData::new(guid(n, 0x07), "T", "Ty");
    f(&mut r.qos);
    Arc::new(r)
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn going_out_every_term_is_one_that_each_writer_behind_keeps() {
    let a = writer(1, |q| {
        q.deadline.period = ms(100);
        q.liveliness = Liveliness {
            kind: LivelinessKind::ManualByTopic,
            lease_duration: ms(500),
        };
        q.ownership = Ownership::Exclusive;
        q.ownership_strength = OwnershipStrength(3);
        q.destination_order = DestinationOrder::BySourceTimestamp;
        q.lifespan.duration = ms(50);
        q.durability = Durability::Transient;
        q.history = History::KeepLast(8);
    });
    let b = writer(2, |q| {
        q.deadline.period = ms(300);
        q.liveliness = Liveliness {
            kind: LivelinessKind::ManualByParticipant,
            lease_duration: ms(2000),
        };
        q.ownership = Ownership::Exclusive;
        q.ownership_strength = OwnershipStrength(9);
        q.destination_order = DestinationOrder::BySourceTimestamp;
        q.lifespan.duration = ms(80);
        q.durability = Durability::TransientLocal;
    });
    let q = RouteQos::to_network(&[a, b]);
    assert_eq!(q.writer.deadline.period, ms(300));
    assert_eq!(q.reader.deadline.period, ms(300));
    assert_eq!(
        q.writer.liveliness.kind,
        LivelinessKind::ManualByParticipant
    );
    assert_eq!(q.writer.liveliness.lease_duration, ms(2000));
    assert_eq!(q.reader.liveliness, q.writer.liveliness);
    assert!(q.asserts_liveliness());
    assert_eq!(q.reader.ownership, Ownership::Exclusive);
    assert_eq!(q.writer.ownership_strength, OwnershipStrength(9));
    assert_eq!(
        q.writer.destination_order,
        DestinationOrder::BySourceTimestamp
    );
    assert_eq!(q.writer.lifespan.duration, ms(80));
    assert_eq!(q.writer.durability, Durability::Transient);
    assert_eq!(q.writer.history, History::KeepLast(8));
    assert_eq!(q.reader.durability, Durability::TransientLocal);
}

#[test]
fn going_out_one_default_writer_makes_the_route_plain() {
    let strict = writer(1, |q| {
        q.deadline.period = ms(100);
        q.ownership = Ownership::Exclusive;
        q.destination_order = DestinationOrder::BySourceTimestamp;
        q.liveliness.kind = LivelinessKind::ManualByTopic;
        q.lifespan.duration = ms(10);
    });
    let plain = writer(2, |_| {});
    let q = RouteQos::to_network(&[strict, plain]);
    assert_eq!(q.writer.deadline, Deadline::default());
    assert_eq!(q.reader.ownership, Ownership::Shared);
    assert_eq!(q.writer.ownership_strength, OwnershipStrength(0));
    assert_eq!(
        q.writer.destination_order,
        DestinationOrder::ByReceptionTimestamp
    );
    assert_eq!(q.writer.liveliness.kind, LivelinessKind::Automatic);
    assert!(!q.asserts_liveliness());
    assert_eq!(q.writer.lifespan, Lifespan::default());
    assert_eq!(q.reader.durability, Durability::Volatile);
    assert_eq!(q.writer.durability, Durability::Volatile);
}

#[test]
fn coming_in_the_proxy_asks_the_least_and_the_writer_offers_the_most_asked() {
    let strict = reader(1, |q| {
        q.deadline.period = ms(100);
        q.liveliness = Liveliness {
            kind: LivelinessKind::ManualByTopic,
            lease_duration: ms(400),
        };
        q.ownership = Ownership::Exclusive;
        q.destination_order = DestinationOrder::BySourceTimestamp;
        q.durability = Durability::Transient;
    });
    let lax = reader(2, |q| {
        q.deadline.period = ms(900);
        q.liveliness.lease_duration = ms(3000);
        q.ownership = Ownership::Exclusive;
    });
    let remote = writer(3, |q| {
        q.ownership_strength = OwnershipStrength(4);
        q.durability = Durability::Transient;
        q.history = History::KeepLast(5);
        q.lifespan.duration = ms(700);
    });
    let q = RouteQos::from_network(&[strict, lax], &[remote]);
    assert_eq!(q.reader.deadline.period, ms(900));
    assert_eq!(q.writer.deadline.period, ms(100));
    assert_eq!(q.reader.liveliness.kind, LivelinessKind::Automatic);
    assert_eq!(q.reader.liveliness.lease_duration, ms(3000));
    assert_eq!(q.writer.liveliness.kind, LivelinessKind::ManualByTopic);
    assert_eq!(q.writer.liveliness.lease_duration, ms(400));
    assert_eq!(q.reader.ownership, Ownership::Exclusive);
    assert_eq!(q.writer.ownership_strength, OwnershipStrength(4));
    assert_eq!(
        q.reader.destination_order,
        DestinationOrder::ByReceptionTimestamp
    );
    assert_eq!(
        q.writer.destination_order,
        DestinationOrder::BySourceTimestamp
    );
    assert_eq!(q.reader.durability, Durability::Volatile);
    assert_eq!(q.writer.durability, Durability::Transient);
    assert_eq!(q.writer.history, History::KeepLast(5));
    assert_eq!(q.writer.lifespan.duration, ms(700));
}

#[test]
fn coming_in_a_durable_reader_without_a_durable_remote_writer_keeps_sixteen() {
    let r = reader(1, |q| q.durability = Durability::TransientLocal);
    let q = RouteQos::from_network(&[r], &[]);
    assert_eq!(q.writer.durability, Durability::TransientLocal);
    assert_eq!(q.writer.history, History::KeepLast(DEFAULT_DURABLE_DEPTH));
    assert_eq!(q.reader.durability, Durability::TransientLocal);
}

#[test]
fn the_assert_period_is_a_quarter_lease_within_bounds() {
    let mut q = RouteQos::defaults();
    q.writer.liveliness.lease_duration = ms(400);
    assert_eq!(q.assert_period(), ms(100));
    q.writer.liveliness.lease_duration = ms(4);
    assert_eq!(q.assert_period(), ms(10));
    q.writer.liveliness.lease_duration = Duration::from_secs(3600);
    assert_eq!(q.assert_period(), Duration::from_secs(1));
}

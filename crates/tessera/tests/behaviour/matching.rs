//! Matching: topic name, type name, partitions (with wildcards), and incompatible QoS reported
//! on both sides. A "no match" is asserted only after a later endpoint of the same participants
//! matched (SEDP is reliable and in order, so the earlier announcement was processed).

use crate::harness::*;
use crate::per_transport;
use tessera::qos::{
    DataReaderQos, DataWriterQos, Durability, Partition, PublisherQos, QosPolicyId, SubscriberQos,
};

fn topic_and_type_names_must_both_agree(t: Transport) {
    let ps = t.participants(2);
    let other_topic = reader::<Keyed>(&ps[1], "M_other", DataReaderQos::default());
    let other_type = reader::<Blob>(&ps[1], "M_name", DataReaderQos::default());
    let w = writer::<Keyed>(&ps[0], "M_name", DataWriterQos::default());
    let r = reader::<Keyed>(&ps[1], "M_name", DataReaderQos::default());
    matched(&w, &r);
    settle(t);
    assert_eq!(w.publication_matched_status().current_count, 1);
    assert_eq!(other_topic.subscription_matched_status().total_count, 0);
    assert_eq!(other_type.subscription_matched_status().total_count, 0);
}

fn partitions_match_by_name_and_wildcard(t: Transport) {
    let ps = t.participants(2);
    let sub = |names: &[&str]| {
        SubscriberQos::default().with_partition(Partition::new(names.iter().copied()))
    };
    let in_parts =
        |names: &[&str]| reader_in::<Keyed>(&ps[1], "M_part", sub(names), DataReaderQos::default());
    let default = reader::<Keyed>(&ps[1], "M_part", DataReaderQos::default());
    let other = in_parts(&["other"]);
    let exact = in_parts(&["sensors"]);
    let wildcard = in_parts(&["sen*"]);
    let w = writer_in::<Keyed>(
        &ps[0],
        "M_part",
        PublisherQos::default().with_partition(Partition::new(["sensors"])),
        DataWriterQos::default(),
    );
    // The control: a writer in the default partition matches only the default reader.
    let w_default = writer::<Keyed>(&ps[0], "M_part", DataWriterQos::default());
    matched(&w, &exact);
    matched(&w, &wildcard);
    matched(&w_default, &default);
    settle(t);
    assert_eq!(
        w.publication_matched_status().current_count,
        2,
        "sensors: exact and sen*"
    );
    assert_eq!(
        w_default.publication_matched_status().current_count,
        1,
        "default only"
    );
    assert_eq!(other.subscription_matched_status().total_count, 0);
    assert_eq!(exact.subscription_matched_status().current_count, 1);
    assert_eq!(default.subscription_matched_status().current_count, 1);
}

fn incompatible_qos_is_reported_on_both_sides(t: Transport) {
    let ps = t.participants(2);
    // Best effort offered, reliable requested.
    let w_be = writer::<Keyed>(
        &ps[0],
        "M_incompatible",
        DataWriterQos::default().with_reliability(tessera::qos::Reliability::best_effort()),
    );
    let r_rel = reader::<Keyed>(
        &ps[1],
        "M_incompatible",
        DataReaderQos::default().with_reliability(reliable()),
    );
    wait_until(10, "both sides to report RELIABILITY", || {
        w_be.offered_incompatible_qos_status().total_count == 1
            && r_rel.requested_incompatible_qos_status().total_count == 1
    });
    let offered = w_be.offered_incompatible_qos_status();
    assert_eq!(offered.last_policy_id, QosPolicyId::Reliability as u32);
    let requested = r_rel.requested_incompatible_qos_status();
    assert_eq!(requested.last_policy_id, QosPolicyId::Reliability as u32);
    assert_eq!(w_be.publication_matched_status().total_count, 0);
    assert_eq!(r_rel.subscription_matched_status().total_count, 0);

    // Volatile offered, transient-local requested.
    let w_vol = writer::<Keyed>(&ps[0], "M_durability", DataWriterQos::default());
    let r_tl = reader::<Keyed>(
        &ps[1],
        "M_durability",
        DataReaderQos::default()
            .with_reliability(reliable())
            .with_durability(Durability::TransientLocal),
    );
    wait_until(10, "both sides to report DURABILITY", || {
        w_vol.offered_incompatible_qos_status().total_count == 1
            && r_tl.requested_incompatible_qos_status().total_count == 1
    });
    assert_eq!(
        w_vol.offered_incompatible_qos_status().last_policy_id,
        QosPolicyId::Durability as u32
    );
    assert_eq!(
        r_tl.requested_incompatible_qos_status().last_policy_id,
        QosPolicyId::Durability as u32
    );
    assert_eq!(w_vol.publication_matched_status().total_count, 0);
}

per_transport!(all:
    topic_and_type_names_must_both_agree,
    partitions_match_by_name_and_wildcard,
    incompatible_qos_is_reported_on_both_sides,
);

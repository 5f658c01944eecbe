//! The QoS policies that the options select, shared by the publishing and subscribing sides.

use std::time::Duration;

use tessera::qos::{
    data_representation, DataRepresentation, History, Partition, Presentation, Reliability,
    TopicQos,
};

use super::ShapeArgs;

pub(super) fn topic_qos(a: &ShapeArgs) -> TopicQos {
    TopicQos::default().with_data_representation(representation(a))
}

pub(super) fn representation(a: &ShapeArgs) -> DataRepresentation {
    DataRepresentation(vec![if a.representation == 1 {
        data_representation::XCDR
    } else {
        data_representation::XCDR2
    }])
}

pub(super) fn reliability(a: &ShapeArgs) -> Reliability {
    if a.reliable {
        Reliability::reliable(Duration::from_millis(100))
    } else {
        Reliability::best_effort()
    }
}

pub(super) fn history(a: &ShapeArgs) -> Option<History> {
    match a.depth {
        None => None,
        Some(d) if d <= 0 => Some(History::KeepAll),
        Some(d) => Some(History::KeepLast(d as u32)),
    }
}

pub(super) fn presentation(a: &ShapeArgs) -> Presentation {
    Presentation {
        access_scope: a.access_scope,
        coherent_access: a.coherent,
        ordered_access: a.ordered,
    }
}

pub(super) fn partition(a: &ShapeArgs) -> Partition {
    a.partition
        .as_ref()
        .map_or_else(Partition::default, |p| Partition::new([p.as_str()]))
}

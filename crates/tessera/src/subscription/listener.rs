//! Reader listeners: the typed trait applications implement and the type-erased form the
//! reader endpoint calls.

use super::ReaderEndpoint;
use crate::reader::{DataReader, UntypedDataReader};
use crate::status::{
    IncompatibleQosStatus, LivelinessChangedStatus, RequestedDeadlineMissedStatus,
    SampleLostStatus, SampleRejectedStatus, StatusMask, SubscriptionMatchedStatus,
};
use crate::TopicType;
use std::sync::Arc;

/// Listener for data-reader statuses; called from a runtime thread (the receive thread for
/// data), so keep it short.
pub trait DataReaderListener<T: TopicType>: Send + Sync {
    /// New data arrived.
    fn on_data_available(&self, _reader: &DataReader<T>) {}
    /// A writer matched or unmatched.
    fn on_subscription_matched(&self, _reader: &DataReader<T>, _status: SubscriptionMatchedStatus) {
    }
    /// A writer with incompatible QoS was found.
    fn on_requested_incompatible_qos(
        &self,
        _reader: &DataReader<T>,
        _status: IncompatibleQosStatus,
    ) {
    }
    /// A matched writer's liveliness changed.
    fn on_liveliness_changed(&self, _reader: &DataReader<T>, _status: LivelinessChangedStatus) {}
    /// Samples were lost.
    fn on_sample_lost(&self, _reader: &DataReader<T>, _status: SampleLostStatus) {}
    /// Samples were rejected by resource limits.
    fn on_sample_rejected(&self, _reader: &DataReader<T>, _status: SampleRejectedStatus) {}
    /// An instance received no sample within the DEADLINE period.
    fn on_requested_deadline_missed(
        &self,
        _reader: &DataReader<T>,
        _status: RequestedDeadlineMissedStatus,
    ) {
    }
}

/// A listener as the (type-erased) reader endpoint calls it.
pub(crate) trait EndpointListener: Send + Sync {
    /// The statuses in `mask` changed.
    fn on_status(&self, ep: Arc<ReaderEndpoint>, mask: StatusMask);
}

/// Adapts a typed listener: builds the `DataReader<T>` it is called with.
pub(crate) struct TypedListener<T: TopicType>(pub Arc<dyn DataReaderListener<T>>);

impl<T: TopicType> EndpointListener for TypedListener<T> {
    fn on_status(&self, ep: Arc<ReaderEndpoint>, mask: StatusMask) {
        let l = &self.0;
        let r = DataReader::<T>::from_raw(UntypedDataReader::new(ep, None));
        if mask.intersects(StatusMask::DATA_AVAILABLE) {
            l.on_data_available(&r);
        }
        if mask.intersects(StatusMask::SUBSCRIPTION_MATCHED) {
            l.on_subscription_matched(&r, r.subscription_matched_status());
        }
        if mask.intersects(StatusMask::REQUESTED_INCOMPATIBLE_QOS) {
            l.on_requested_incompatible_qos(&r, r.requested_incompatible_qos_status());
        }
        if mask.intersects(StatusMask::LIVELINESS_CHANGED) {
            l.on_liveliness_changed(&r, r.liveliness_changed_status());
        }
        if mask.intersects(StatusMask::SAMPLE_LOST) {
            l.on_sample_lost(&r, r.sample_lost_status());
        }
        if mask.intersects(StatusMask::SAMPLE_REJECTED) {
            l.on_sample_rejected(&r, r.sample_rejected_status());
        }
        if mask.intersects(StatusMask::REQUESTED_DEADLINE_MISSED) {
            l.on_requested_deadline_missed(&r, r.requested_deadline_missed_status());
        }
    }
}

/// A listener of a type-erased reader (a binding's): told which statuses changed.
pub(crate) struct MaskListener(pub Arc<dyn Fn(StatusMask) + Send + Sync>);

impl EndpointListener for MaskListener {
    fn on_status(&self, _ep: Arc<ReaderEndpoint>, mask: StatusMask) {
        (self.0)(mask);
    }
}

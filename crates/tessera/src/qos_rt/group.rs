//! The shared state of a publisher or subscriber: its QoS, which `set_qos` may change, and its
//! entities, which are announced again when it does (PARTITION and GROUP_DATA are part of
//! every writer's or reader's announcement).

use parking_lot::Mutex;
use std::sync::{Arc, Weak};

/// A publisher's or subscriber's QoS `Q` and its writers' or readers' owners `M`.
pub(crate) struct Group<Q, M> {
    qos: Mutex<Q>,
    members: Mutex<Vec<Weak<M>>>,
}

impl<Q: Clone, M> Group<Q, M> {
    pub fn new(qos: Q) -> Arc<Self> {
        Arc::new(Group {
            qos: Mutex::new(qos),
            members: Mutex::new(Vec::new()),
        })
    }

    /// The QoS now.
    pub fn qos(&self) -> Q {
        self.qos.lock().clone()
    }

    /// Records a new member (deleted ones leave the list as it grows).
    pub fn add(&self, m: &Arc<M>) {
        let mut ms = self.members.lock();
        ms.retain(|w| w.strong_count() > 0);
        ms.push(Arc::downgrade(m));
    }

    /// The live members.
    pub fn members(&self) -> Vec<Arc<M>> {
        self.members
            .lock()
            .iter()
            .filter_map(Weak::upgrade)
            .collect()
    }

    /// Replaces the QoS and returns the live members, to announce again with no lock held.
    pub fn set(&self, qos: Q) -> Vec<Arc<M>> {
        *self.qos.lock() = qos;
        self.members
            .lock()
            .iter()
            .filter_map(Weak::upgrade)
            .collect()
    }
}

impl<Q: std::fmt::Debug, M> std::fmt::Debug for Group<Q, M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Group")
            .field("qos", &*self.qos.lock())
            .field("members", &self.members.lock().len())
            .finish()
    }
}

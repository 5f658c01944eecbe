//! An unbounded queue whose receiver parks at once when it finds it empty.
//!
//! crossbeam-channel's blocking receive spins, then calls `sched_yield` several times, before it
//! parks (its `Backoff`). A member's delivery pump waits on an empty queue after nearly every
//! committed entry, and a proposing thread waits for every commit: in a 3-member ATOMIC
//! ping-pong on a 2-core machine those yields were 9 % of all the CPU, and the pump threads
//! 23 % (perf, 2026-12-02), time the consensus threads then did not get. Here a receiver that
//! finds nothing sleeps on a condition variable, and a sender wakes it only when it sleeps.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Why [`Receiver::recv_timeout`] returned nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RecvTimeoutError {
    /// Nothing came within the time given.
    #[error("timed out waiting on the queue")]
    Timeout,
    /// The queue is empty and every sender is gone.
    #[error("the queue's senders are gone")]
    Disconnected,
}

/// Why [`Receiver::try_recv`] returned nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TryRecvError {
    /// The queue is empty.
    #[error("the queue is empty")]
    Empty,
    /// The queue is empty and every sender is gone.
    #[error("the queue's senders are gone")]
    Disconnected,
}

struct State<T> {
    queue: VecDeque<T>,
    senders: usize,
    /// The receiver is still there (once it is gone, what is sent is dropped: nothing grows).
    receiving: bool,
    /// Threads asleep on `ready` (a send then wakes one; otherwise it costs no syscall). A
    /// count, not a flag: `ConsensusGroup::deliveries` hands the receiver out by reference,
    /// and a flag one waiter cleared would leave another asleep until its timeout.
    sleepers: usize,
}

struct Shared<T> {
    state: Mutex<State<T>>,
    ready: Condvar,
}

impl<T> Shared<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // A panic under this lock leaves the queue consistent (every change is one call).
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The sending side; clones share the queue, and the last one dropped disconnects it.
pub struct Sender<T> {
    shared: Arc<Shared<T>>,
}

/// The receiving side.
pub struct Receiver<T> {
    shared: Arc<Shared<T>>,
}

/// A new queue.
pub fn channel<T>() -> (Sender<T>, Receiver<T>) {
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            queue: VecDeque::new(),
            senders: 1,
            receiving: true,
            sleepers: 0,
        }),
        ready: Condvar::new(),
    });
    (
        Sender {
            shared: shared.clone(),
        },
        Receiver { shared },
    )
}

impl<T> Sender<T> {
    /// Queues `value` and wakes a sleeping receiver. Never blocks; a value sent after
    /// the receiver is gone is dropped.
    pub fn send(&self, value: T) {
        let mut st = self.shared.lock();
        if !st.receiving {
            return;
        }
        st.queue.push_back(value);
        if st.sleepers > 0 {
            drop(st);
            self.shared.ready.notify_one();
        }
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        self.shared.lock().senders += 1;
        Sender {
            shared: self.shared.clone(),
        }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let mut st = self.shared.lock();
        st.senders -= 1;
        if st.senders == 0 {
            drop(st);
            self.shared.ready.notify_all();
        }
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        let mut st = self.shared.lock();
        st.receiving = false;
        // Dropped outside the lock: a value's drop may take locks of its own.
        let queued = std::mem::take(&mut st.queue);
        drop(st);
        drop(queued);
    }
}

impl<T> Receiver<T> {
    /// The next value, waiting up to `timeout` for one.
    pub fn recv_timeout(&self, timeout: Duration) -> Result<T, RecvTimeoutError> {
        let deadline = Instant::now().checked_add(timeout);
        let mut st = self.shared.lock();
        loop {
            if let Some(v) = st.queue.pop_front() {
                return Ok(v);
            }
            if st.senders == 0 {
                return Err(RecvTimeoutError::Disconnected);
            }
            let now = Instant::now();
            let left = match deadline {
                Some(d) if d <= now => return Err(RecvTimeoutError::Timeout),
                Some(d) => d - now,
                // Beyond what `Instant` holds: wait in long steps.
                None => Duration::from_secs(3600),
            };
            st.sleepers += 1;
            st = self
                .shared
                .ready
                .wait_timeout(st, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
            st.sleepers -= 1;
        }
    }

    /// The next value if there is one now.
    pub fn try_recv(&self) -> Result<T, TryRecvError> {
        let mut st = self.shared.lock();
        match st.queue.pop_front() {
            Some(v) => Ok(v),
            None if st.senders == 0 => Err(TryRecvError::Disconnected),
            None => Err(TryRecvError::Empty),
        }
    }

    /// The values queued now, without waiting.
    pub fn try_iter(&self) -> impl Iterator<Item = T> + '_ {
        std::iter::from_fn(|| self.try_recv().ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_come_in_order_and_the_last_sender_disconnects() {
        let (tx, rx) = channel();
        let tx2 = tx.clone();
        tx.send(1);
        tx2.send(2);
        assert_eq!(rx.try_iter().collect::<Vec<_>>(), vec![1, 2]);
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
        assert_eq!(
            rx.recv_timeout(Duration::from_millis(10)),
            Err(RecvTimeoutError::Timeout)
        );
        drop(tx);
        tx2.send(3);
        drop(tx2);
        // What was sent before the disconnection still comes.
        assert_eq!(rx.recv_timeout(Duration::from_secs(1)), Ok(3));
        assert_eq!(
            rx.recv_timeout(Duration::from_secs(1)),
            Err(RecvTimeoutError::Disconnected)
        );
        assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
    }

    #[test]
    fn a_sleeping_receiver_is_woken_by_a_send_and_by_the_last_drop() {
        let (tx, rx) = channel::<u32>();
        let t = std::thread::spawn(move || {
            let first = rx.recv_timeout(Duration::from_secs(30));
            let second = rx.recv_timeout(Duration::from_secs(30));
            (first, second)
        });
        // Wait until the receiver sleeps, so the send must wake it.
        while tx.shared.lock().sleepers == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        let started = Instant::now();
        tx.send(7);
        while tx.shared.lock().sleepers == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        drop(tx);
        let (first, second) = t.join().expect("receiver");
        assert_eq!(first, Ok(7));
        assert_eq!(second, Err(RecvTimeoutError::Disconnected));
        // Woken, not timed out (30 s).
        assert!(started.elapsed() < Duration::from_secs(20));
    }

    #[test]
    fn nothing_is_kept_for_a_receiver_that_is_gone() {
        let (tx, rx) = channel();
        tx.send(vec![0u8; 1024]);
        drop(rx);
        for _ in 0..1000 {
            tx.send(vec![0u8; 1024]);
        }
        assert!(tx.shared.lock().queue.is_empty());
    }

    #[test]
    fn a_timeout_too_large_for_an_instant_still_waits() {
        let (tx, rx) = channel();
        tx.send(1);
        assert_eq!(rx.recv_timeout(Duration::MAX), Ok(1));
    }
}

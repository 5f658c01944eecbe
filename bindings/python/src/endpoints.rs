//! Writers, readers, samples, conditions and wait sets.

use crate::types::{to_py, to_value};
use crate::{err, Detached, TypeInfo};
use parking_lot::Mutex;
use pyo3::exceptions::{PyStopIteration, PyValueError};
use pyo3::prelude::*;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tessera::history::{InstanceState, SampleState, StateMasks, ViewState};
use tessera::{
    DynamicDataReader, DynamicDataWriter, DynamicValue, GuardCondition, StatusMask, WaitSet as Ws,
};

type RustSample = tessera::history::Sample<DynamicValue>;

/// How many samples one `take` under the iterator moves out of the reader: enough to pay for
/// the GIL release once per batch rather than per sample at high rates.
const ITER_BATCH: usize = 256;

fn timeout_of(t: Option<f64>) -> PyResult<Option<Duration>> {
    t.map(|s| {
        Duration::try_from_secs_f64(s)
            .map_err(|e| PyValueError::new_err(format!("timeout {s}: {e}")))
    })
    .transpose()
}

/// Polls `done` every 5 ms (GIL released) until it holds or `timeout` seconds passed;
/// whether it held. For matching, which raises no condition this binding waits on.
fn poll_until(py: Python<'_>, timeout: f64, done: impl Fn() -> bool + Sync) -> PyResult<bool> {
    let deadline = Instant::now() + timeout_of(Some(timeout))?.unwrap_or_default();
    Ok(py.detach(|| loop {
        if done() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }))
}

/// A writer.
#[pyclass(module = "tessera._tessera", frozen)]
pub struct Writer {
    w: Detached<DynamicDataWriter>,
    info: Arc<TypeInfo>,
}

impl Writer {
    pub(crate) fn new(w: DynamicDataWriter, info: Arc<TypeInfo>) -> Self {
        Writer {
            w: Detached::new(w),
            info,
        }
    }
}

#[pymethods]
impl Writer {
    /// Publishes `sample` (a value of the topic's dataclass), stamped now or with
    /// `timestamp_ns`. Blocks (GIL released) when a reliable history is full, up to the
    /// reliability's max blocking time.
    #[pyo3(signature = (sample, timestamp_ns = None))]
    fn write(
        &self,
        py: Python<'_>,
        sample: &Bound<'_, PyAny>,
        timestamp_ns: Option<i64>,
    ) -> PyResult<()> {
        let v = to_value(&self.info.node, sample)?;
        py.detach(|| match timestamp_ns {
            Some(t) => self.w.write_with_timestamp(&v, t),
            None => self.w.write(&v),
        })
        .map_err(err)
    }

    /// Disposes the instance of `sample`'s key.
    fn dispose(&self, py: Python<'_>, sample: &Bound<'_, PyAny>) -> PyResult<()> {
        let v = to_value(&self.info.node, sample)?;
        py.detach(|| self.w.dispose(&v)).map_err(err)
    }

    /// Unregisters the instance of `sample`'s key.
    fn unregister_instance(&self, py: Python<'_>, sample: &Bound<'_, PyAny>) -> PyResult<()> {
        let v = to_value(&self.info.node, sample)?;
        py.detach(|| self.w.unregister_instance(&v)).map_err(err)
    }

    /// How many readers are matched now.
    fn matched_count(&self, py: Python<'_>) -> usize {
        py.detach(|| self.w.untyped().matched_subscriptions().len())
    }

    /// Waits (GIL released) until at least `n` readers are matched; `False` on timeout.
    #[pyo3(signature = (n = 1, timeout = 10.0))]
    fn wait_for_readers(&self, py: Python<'_>, n: usize, timeout: f64) -> PyResult<bool> {
        poll_until(py, timeout, || {
            self.w.untyped().matched_subscriptions().len() >= n
        })
    }

    /// PUBLICATION_MATCHED as `(total_count, current_count)`.
    fn publication_matched(&self, py: Python<'_>) -> (i32, i32) {
        let s = py.detach(|| self.w.untyped().publication_matched_status());
        (s.total_count, s.current_count)
    }

    /// OFFERED_INCOMPATIBLE_QOS's total count: readers that asked for more than it offers.
    fn offered_incompatible_qos(&self, py: Python<'_>) -> i32 {
        py.detach(|| self.w.untyped().offered_incompatible_qos_status())
            .total_count
    }

    /// OFFERED_DEADLINE_MISSED's total count.
    fn offered_deadline_missed(&self, py: Python<'_>) -> i32 {
        py.detach(|| self.w.untyped().offered_deadline_missed_status())
            .total_count
    }

    /// LIVELINESS_LOST's total count.
    fn liveliness_lost(&self, py: Python<'_>) -> i32 {
        py.detach(|| self.w.untyped().liveliness_lost_status())
            .total_count
    }

    /// Waits (GIL released) until every matched reliable reader acknowledged every sample.
    #[pyo3(signature = (timeout = 10.0))]
    fn wait_for_acknowledgments(&self, py: Python<'_>, timeout: f64) -> PyResult<()> {
        let t = timeout_of(Some(timeout))?.unwrap_or_default();
        py.detach(|| self.w.untyped().wait_for_acknowledgments(t))
            .map_err(err)
    }
}

/// The information of a sample (DDS `SampleInfo`); states as strings.
#[pyclass(module = "tessera._tessera", frozen, get_all)]
pub struct SampleInfo {
    /// `"read"` or `"not_read"`.
    sample_state: &'static str,
    /// `"new"` or `"not_new"`.
    view_state: &'static str,
    /// `"alive"`, `"disposed"` or `"no_writers"`.
    instance_state: &'static str,
    /// Whether the sample carries data (else it announces a dispose or unregistration).
    valid_data: bool,
    /// The writer's timestamp, ns since the Unix epoch.
    source_timestamp: i64,
    /// When it was received, ns.
    reception_timestamp: i64,
    /// The instance handle (0: nil).
    instance_handle: u64,
    /// The writer's GUID, 16 bytes.
    publication_handle: [u8; 16],
}

#[pymethods]
impl SampleInfo {
    fn __repr__(&self) -> String {
        format!(
            "SampleInfo(sample_state={:?}, view_state={:?}, instance_state={:?}, valid_data={})",
            self.sample_state,
            self.view_state,
            self.instance_state,
            if self.valid_data { "True" } else { "False" }
        )
    }
}

/// A sample: `data` (an instance of the topic's dataclass, `None` when `info.valid_data` is
/// false) and `info`, built on first access.
#[pyclass(module = "tessera._tessera", frozen)]
pub struct Sample {
    data: Py<PyAny>,
    info: tessera::history::SampleInfo,
}

#[pymethods]
impl Sample {
    #[getter]
    fn data(&self, py: Python<'_>) -> Py<PyAny> {
        self.data.clone_ref(py)
    }

    #[getter]
    fn info(&self) -> SampleInfo {
        let i = &self.info;
        SampleInfo {
            sample_state: match i.sample_state {
                SampleState::Read => "read",
                SampleState::NotRead => "not_read",
            },
            view_state: match i.view_state {
                ViewState::New => "new",
                ViewState::NotNew => "not_new",
            },
            instance_state: match i.instance_state {
                InstanceState::Alive => "alive",
                InstanceState::NotAliveDisposed => "disposed",
                InstanceState::NotAliveNoWriters => "no_writers",
            },
            valid_data: i.valid_data,
            source_timestamp: i.source_timestamp,
            reception_timestamp: i.reception_timestamp,
            instance_handle: i.instance_handle.raw(),
            publication_handle: i.publication_handle,
        }
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!("Sample(data={})", self.data.bind(py).repr()?))
    }
}

fn to_samples(py: Python<'_>, info: &TypeInfo, src: Vec<RustSample>) -> PyResult<Vec<Sample>> {
    src.into_iter().map(|s| convert(py, info, s)).collect()
}

fn convert(py: Python<'_>, info: &TypeInfo, s: RustSample) -> PyResult<Sample> {
    let data = match s.data {
        Some(v) => to_py(py, &info.node, v)?.unbind(),
        None => py.None(),
    };
    Ok(Sample { data, info: s.info })
}

/// A reader.
#[pyclass(module = "tessera._tessera", frozen)]
pub struct Reader {
    r: Detached<DynamicDataReader>,
    info: Arc<TypeInfo>,
    /// Samples in any state: what `take`/`read` with a timeout and the iterators wait for.
    waitset: Arc<Ws>,
}

impl Reader {
    pub(crate) fn new(r: DynamicDataReader, info: Arc<TypeInfo>) -> Self {
        let mut ws = Ws::new();
        ws.attach(&r.untyped().create_readcondition(StateMasks::ANY));
        Reader {
            r: Detached::new(r),
            info,
            waitset: Arc::new(ws),
        }
    }

    /// Waits without the GIL until a sample is there or `timeout` passed; whether one is.
    fn wait_inner(&self, py: Python<'_>, timeout: Option<Duration>) -> PyResult<bool> {
        let ws = self.waitset.clone();
        match py.detach(move || ws.wait(timeout)) {
            Ok(_) => Ok(true),
            Err(tessera::Error::Timeout) => Ok(false),
            Err(e) => Err(err(e)),
        }
    }

    fn access(
        &self,
        py: Python<'_>,
        max: usize,
        timeout: Option<f64>,
        take: bool,
    ) -> PyResult<Vec<Sample>> {
        let timeout = timeout_of(timeout)?;
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            let got = py
                .detach(|| {
                    if take {
                        self.r.take(max)
                    } else {
                        self.r.read(max)
                    }
                })
                .map_err(err)?;
            let now = Instant::now();
            match deadline {
                Some(d) if got.is_empty() && now < d => {
                    self.wait_inner(py, Some(d - now))?;
                }
                _ => return to_samples(py, &self.info, got),
            }
        }
    }
}

#[pymethods]
impl Reader {
    /// Takes up to `max` samples; with `timeout` (seconds), first waits (GIL released) for
    /// one to arrive. An empty list when none came.
    #[pyo3(signature = (max = 256, timeout = None))]
    fn take(&self, py: Python<'_>, max: usize, timeout: Option<f64>) -> PyResult<Vec<Sample>> {
        self.access(py, max, timeout, true)
    }

    /// Like `take`, leaving the samples in the reader (marked read).
    #[pyo3(signature = (max = 256, timeout = None))]
    fn read(&self, py: Python<'_>, max: usize, timeout: Option<f64>) -> PyResult<Vec<Sample>> {
        self.access(py, max, timeout, false)
    }

    /// Waits (GIL released) until a sample is in the reader; `False` on timeout
    /// (`None`: forever).
    #[pyo3(signature = (timeout = None))]
    fn wait(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<bool> {
        self.wait_inner(py, timeout_of(timeout)?)
    }

    /// An iterator taking samples as they come: each `next` waits (GIL released) up to
    /// `timeout` seconds for one (`None`: forever) and ends the iteration when none came.
    #[pyo3(signature = (timeout = None))]
    fn samples(slf: &Bound<'_, Self>, timeout: Option<f64>) -> PyResult<SampleIter> {
        Ok(SampleIter {
            reader: slf.clone().unbind(),
            timeout: timeout_of(timeout)?,
            buf: Mutex::new(VecDeque::new()),
        })
    }

    /// How many writers are matched now.
    fn matched_count(&self, py: Python<'_>) -> usize {
        py.detach(|| self.r.untyped().matched_publications().len())
    }

    /// Waits (GIL released) until at least `n` writers are matched; `False` on timeout.
    #[pyo3(signature = (n = 1, timeout = 10.0))]
    fn wait_for_writers(&self, py: Python<'_>, n: usize, timeout: f64) -> PyResult<bool> {
        poll_until(py, timeout, || {
            self.r.untyped().matched_publications().len() >= n
        })
    }

    /// Installs `callback(mask: int)` (or removes it with `None`), called with the GIL on the
    /// runtime's thread whenever statuses in `mask` change; exceptions it raises are reported
    /// as unraisable (the runtime's thread has no caller to give them to).
    fn set_status_callback(&self, callback: Option<Py<PyAny>>) {
        let l = callback.map(|cb| {
            Arc::new(move |mask: StatusMask| {
                // None once the interpreter is finalizing: the callback is skipped.
                Python::try_attach(|py| {
                    if let Err(e) = cb.call1(py, (mask.0,)) {
                        e.write_unraisable(py, None);
                    }
                });
            }) as Arc<dyn Fn(StatusMask) + Send + Sync>
        });
        self.r.untyped().set_status_listener(l);
    }

    /// A condition true while the reader holds samples in any state.
    fn read_condition(&self) -> Condition {
        Condition {
            cond: self.r.untyped().create_readcondition(StateMasks::ANY),
            guard: None,
        }
    }

    /// A condition true while a status in `mask` changed and was not read.
    fn status_condition(&self, mask: u32) -> Condition {
        Condition {
            cond: self.r.untyped().status_condition(StatusMask(mask)),
            guard: None,
        }
    }

    /// SUBSCRIPTION_MATCHED as `(total_count, current_count)`.
    fn subscription_matched(&self, py: Python<'_>) -> (i32, i32) {
        let s = py.detach(|| self.r.untyped().subscription_matched_status());
        (s.total_count, s.current_count)
    }

    /// REQUESTED_DEADLINE_MISSED's total count.
    fn requested_deadline_missed(&self, py: Python<'_>) -> i32 {
        py.detach(|| self.r.untyped().requested_deadline_missed_status())
            .total_count
    }

    /// SAMPLE_LOST's total count: samples that never reached the reader (a best-effort
    /// writer's numbers it skipped, a reliable writer's it no longer had).
    fn sample_lost(&self, py: Python<'_>) -> i32 {
        py.detach(|| self.r.untyped().sample_lost_status())
            .total_count
    }

    /// REQUESTED_INCOMPATIBLE_QOS's total count: writers that offered less than it asks.
    fn requested_incompatible_qos(&self, py: Python<'_>) -> i32 {
        py.detach(|| self.r.untyped().requested_incompatible_qos_status())
            .total_count
    }

    /// LIVELINESS_CHANGED as `(alive_count, not_alive_count)`.
    fn liveliness_changed(&self, py: Python<'_>) -> (i32, i32) {
        let s = py.detach(|| self.r.untyped().liveliness_changed_status());
        (s.alive_count, s.not_alive_count)
    }

    /// SAMPLE_REJECTED's total count: samples refused by the reader's resource limits.
    fn sample_rejected(&self, py: Python<'_>) -> i32 {
        py.detach(|| self.r.untyped().sample_rejected_status())
            .total_count
    }
}

/// The iterator of `Reader.samples()` (and `for sample in reader`).
#[pyclass(module = "tessera._tessera", frozen)]
pub struct SampleIter {
    reader: Py<Reader>,
    timeout: Option<Duration>,
    buf: Mutex<VecDeque<RustSample>>,
}

#[pymethods]
impl SampleIter {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Sample> {
        let r = self.reader.get();
        let deadline = self.timeout.map(|t| Instant::now() + t);
        loop {
            if let Some(s) = self.buf.lock().pop_front() {
                return convert(py, &r.info, s);
            }
            let got = py.detach(|| r.r.take(ITER_BATCH)).map_err(err)?;
            if !got.is_empty() {
                self.buf.lock().extend(got);
                continue;
            }
            let left = match deadline {
                None => None,
                Some(d) => match d.checked_duration_since(Instant::now()) {
                    Some(l) if !l.is_zero() => Some(l),
                    _ => return Err(PyStopIteration::new_err(())),
                },
            };
            // Wakes at least every 100 ms to let Ctrl-C (a pending signal) through.
            let step = left.map_or(Duration::from_millis(100), |l| {
                l.min(Duration::from_millis(100))
            });
            r.wait_inner(py, Some(step))?;
            py.check_signals()?;
        }
    }
}

/// A condition for a wait set: a reader's read or status condition, or a guard condition
/// (`Condition.guard()`) that the application triggers.
#[pyclass(module = "tessera._tessera", frozen)]
pub struct Condition {
    cond: tessera::Condition,
    guard: Option<GuardCondition>,
}

#[pymethods]
impl Condition {
    /// A new guard condition.
    #[staticmethod]
    fn guard() -> Condition {
        let g = GuardCondition::new();
        Condition {
            cond: g.condition(),
            guard: Some(g),
        }
    }

    /// Whether the condition is true now.
    #[getter]
    fn trigger_value(&self) -> bool {
        self.cond.trigger_value()
    }

    /// Sets a guard condition's value (`ValueError` on other conditions).
    fn set_trigger_value(&self, value: bool) -> PyResult<()> {
        match &self.guard {
            Some(g) => {
                g.set_trigger_value(value);
                Ok(())
            }
            None => Err(PyValueError::new_err(
                "only a guard condition is set by hand",
            )),
        }
    }
}

/// A wait set: blocks (GIL released) until one of its conditions is true.
#[pyclass(module = "tessera._tessera", frozen)]
pub struct WaitSet {
    conditions: Mutex<Vec<Py<Condition>>>,
}

#[pymethods]
impl WaitSet {
    #[new]
    fn new() -> Self {
        WaitSet {
            conditions: Mutex::new(Vec::new()),
        }
    }

    /// Attaches `condition` (once).
    fn attach(&self, py: Python<'_>, condition: Py<Condition>) {
        let mut cs = self.conditions.lock();
        if !cs.iter().any(|c| c.get().cond == condition.get().cond) {
            cs.push(condition.clone_ref(py));
        }
    }

    /// Detaches `condition`.
    fn detach(&self, condition: &Bound<'_, Condition>) {
        self.conditions
            .lock()
            .retain(|c| c.get().cond != condition.get().cond);
    }

    /// Waits until a condition is true, up to `timeout` seconds (`None`: forever); the true
    /// conditions, an empty list on timeout.
    #[pyo3(signature = (timeout = None))]
    fn wait(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Vec<Py<Condition>>> {
        let timeout = timeout_of(timeout)?;
        let attached: Vec<Py<Condition>> = self
            .conditions
            .lock()
            .iter()
            .map(|c| c.clone_ref(py))
            .collect();
        let mut ws = Ws::new();
        for c in &attached {
            ws.attach(&c.get().cond);
        }
        let active = match py.detach(|| ws.wait(timeout)) {
            Ok(a) => a,
            Err(tessera::Error::Timeout) => return Ok(Vec::new()),
            Err(e) => return Err(err(e)),
        };
        Ok(attached
            .into_iter()
            .filter(|c| active.contains(&c.get().cond))
            .collect())
    }
}

//! `tessera._tessera`: the native half of Tessera's Python binding (the `tessera` package wraps
//! it; users import `tessera`, not this).
//!
//! Samples travel as Tessera's dynamic types ([`tessera::DynamicTopic`],
//! [`tessera::DynamicDataWriter`], [`tessera::DynamicDataReader`]): a Python dataclass (or IDL
//! text) becomes a [`TypeDesc`](tessera::rtps::xtypes::model::TypeDesc), so samples are
//! standard XCDR on the wire and the endpoints announce XTypes TypeInformation like any
//! derived Rust type. Conversions between Python objects and [`tessera::DynamicValue`]s are in
//! [`types`], done with the GIL held; every call into the runtime runs with the GIL released
//! (`Python::detach`), the blocking ones (waits, `take` with a timeout, reliable writes that
//! block on a full history) and the short ones alike, because a listener may want the GIL on
//! the thread the runtime calls it from while a Python thread is inside the runtime.

mod endpoints;
mod idl;
mod kinds;
mod qos;
mod types;

use parking_lot::Mutex;
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use std::sync::Arc;
use tessera::{DomainParticipant, DynamicType, Publisher, QosProvider, Subscriber};

pub use endpoints::{Condition, Reader, Sample, SampleInfo, SampleIter, WaitSet, Writer};

create_exception!(
    _tessera,
    DdsError,
    PyException,
    "An error from the DDS runtime."
);
create_exception!(
    _tessera,
    DdsTimeout,
    DdsError,
    "A DDS operation's timeout passed."
);

/// A runtime error as a Python exception: the caller's mistakes as `ValueError`, a timeout as
/// `DdsTimeout`, the rest as `DdsError`.
pub(crate) fn err(e: tessera::Error) -> PyErr {
    use tessera::Error as E;
    match e {
        E::BadParameter(_) | E::InconsistentPolicy(_) => PyValueError::new_err(e.to_string()),
        E::Timeout => DdsTimeout::new_err("timed out"),
        e => DdsError::new_err(e.to_string()),
    }
}

/// A runtime handle that a Python object owns. Dropping the last handle of a participant
/// joins its threads, one of which may be waiting for the GIL to call a listener: so the
/// handle is dropped with the GIL released (objects are deallocated with it held).
pub(crate) struct Detached<T: Send>(Option<T>);

impl<T: Send> Detached<T> {
    pub(crate) fn new(x: T) -> Self {
        Detached(Some(x))
    }
}

impl<T: Send> std::ops::Deref for Detached<T> {
    type Target = T;
    fn deref(&self) -> &T {
        // `None` only inside `drop`.
        self.0
            .as_ref()
            .expect("a Detached handle is present until dropped")
    }
}

impl<T: Send> Drop for Detached<T> {
    fn drop(&mut self) {
        if let Some(x) = self.0.take() {
            Python::attach(|py| py.detach(move || drop(x)));
        }
    }
}

/// A compiled topic type: the dynamic type and how its samples convert.
pub(crate) struct TypeInfo {
    pub(crate) ty: Arc<DynamicType>,
    pub(crate) node: types::Node,
}

/// A loaded set of DDS-XML QoS profiles.
#[pyclass(module = "tessera._tessera", frozen)]
pub struct QosProfiles {
    provider: Arc<QosProvider>,
}

#[pymethods]
impl QosProfiles {
    /// Loads the profiles in the files `paths` and the XML documents `xml` (strings).
    #[new]
    #[pyo3(signature = (paths = Vec::new(), xml = Vec::new()))]
    fn new(paths: Vec<String>, xml: Vec<String>) -> PyResult<Self> {
        let mut p = QosProvider::new();
        for f in &paths {
            p.load_file(f)
                .map_err(|e| PyValueError::new_err(e.to_string()))?;
        }
        for (i, x) in xml.iter().enumerate() {
            p.load_str(&format!("<xml {i}>"), x)
                .map_err(|e| PyValueError::new_err(e.to_string()))?;
        }
        Ok(QosProfiles {
            provider: Arc::new(p),
        })
    }

    /// The profiles the environment names (`TESSERA_QOS_PROFILES`, as the runtime reads it),
    /// or `None` when it names none.
    #[staticmethod]
    fn from_env() -> PyResult<Option<Self>> {
        Ok(QosProvider::from_env()
            .map_err(|e| PyValueError::new_err(e.to_string()))?
            .map(|p| QosProfiles {
                provider: Arc::new(p),
            }))
    }

    /// The `library::profile` names.
    fn profile_names(&self) -> Vec<String> {
        self.provider.profile_names()
    }

    /// Warnings about what the files hold that Tessera ignores (vendor elements).
    fn warnings(&self) -> Vec<String> {
        self.provider
            .warnings()
            .iter()
            .map(|w| w.to_string())
            .collect()
    }
}

/// A topic type compiled from a description tree (see [`types`]).
#[pyclass(module = "tessera._tessera", frozen)]
pub struct TopicType {
    pub(crate) info: Arc<TypeInfo>,
}

#[pymethods]
impl TopicType {
    #[new]
    fn new(tree: &Bound<'_, PyAny>) -> PyResult<Self> {
        let (desc, node) = types::from_tree(tree)?;
        let ty = DynamicType::from_desc(desc).map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(TopicType {
            info: Arc::new(TypeInfo {
                ty: Arc::new(ty),
                node,
            }),
        })
    }

    /// The registered type name.
    #[getter]
    fn name(&self) -> &str {
        self.info.ty.name()
    }

    /// Whether the type has key members.
    #[getter]
    fn keyed(&self) -> bool {
        self.info.ty.is_keyed()
    }
}

/// The structs of IDL `text`, as `[(scoped name, description tree)]`, for Python to make
/// dataclasses of.
#[pyfunction]
#[pyo3(signature = (text, file = "<idl>"))]
fn idl_structs<'py>(py: Python<'py>, text: &str, file: &str) -> PyResult<Bound<'py, PyList>> {
    let structs = idl::structs(text, file).map_err(PyValueError::new_err)?;
    let out = PyList::empty(py);
    for (name, desc) in structs {
        out.append((name, types::desc_to_tree(py, &desc)?))?;
    }
    Ok(out)
}

/// A topic.
#[pyclass(module = "tessera._tessera", frozen)]
pub struct Topic {
    pub(crate) topic: Detached<tessera::DynamicTopic>,
    pub(crate) info: Arc<TypeInfo>,
}

#[pymethods]
impl Topic {
    /// The topic name.
    #[getter]
    fn name(&self) -> &str {
        self.topic.name()
    }

    /// The registered type name.
    #[getter]
    fn type_name(&self) -> &str {
        self.topic.type_name()
    }
}

/// A domain participant with one publisher and one subscriber, which its writers and readers
/// belong to.
#[pyclass(module = "tessera._tessera", frozen)]
pub struct Participant {
    p: Detached<DomainParticipant>,
    publisher: Detached<Publisher>,
    subscriber: Detached<Subscriber>,
    topics: Mutex<Vec<(String, Py<Topic>)>>,
}

#[pymethods]
impl Participant {
    #[new]
    fn new(py: Python<'_>, domain_id: u32) -> PyResult<Self> {
        let p = py
            .detach(|| DomainParticipant::new(domain_id))
            .map_err(err)?;
        let publisher = p.create_publisher(Default::default()).map_err(err)?;
        let subscriber = p.create_subscriber(Default::default()).map_err(err)?;
        Ok(Participant {
            p: Detached::new(p),
            publisher: Detached::new(publisher),
            subscriber: Detached::new(subscriber),
            topics: Mutex::new(Vec::new()),
        })
    }

    /// The domain id.
    #[getter]
    fn domain_id(&self) -> u32 {
        self.p.domain_id()
    }

    /// The topic `name` of type `ty`; the same object for the same name and type.
    fn create_topic(
        &self,
        py: Python<'_>,
        name: &str,
        ty: &Bound<'_, TopicType>,
    ) -> PyResult<Py<Topic>> {
        let info = ty.get().info.clone();
        let mut topics = self.topics.lock();
        if let Some((_, t)) = topics.iter().find(|(n, _)| n == name) {
            if *t.get().info.ty != *info.ty {
                return Err(PyValueError::new_err(format!(
                    "topic {name} exists with type {}",
                    t.get().info.ty.name()
                )));
            }
            return Ok(t.clone_ref(py));
        }
        let topic = py
            .detach(|| {
                self.p
                    .create_dynamic_topic(name, info.ty.clone(), Default::default())
            })
            .map_err(err)?;
        let t = Py::new(
            py,
            Topic {
                topic: Detached::new(topic),
                info,
            },
        )?;
        topics.push((name.to_string(), t.clone_ref(py)));
        Ok(t)
    }

    /// A writer of `topic`: QoS from `profile` in `profiles` (if given), then `qos` keywords.
    #[pyo3(signature = (topic, profiles = None, profile = None, qos = None))]
    fn create_writer(
        &self,
        py: Python<'_>,
        topic: &Bound<'_, Topic>,
        profiles: Option<&Bound<'_, QosProfiles>>,
        profile: Option<&str>,
        qos: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Writer> {
        let t = topic.get();
        let base = profile_qos(profiles, profile, |p, name| {
            p.datawriter_qos_for_topic(name, t.topic.name())
        })?;
        let base = qos::default_writer_repr(base, t.info.ty.prefers_xcdr2());
        let q = qos::writer(base, qos)?;
        let w = py
            .detach(|| self.publisher.create_dynamic_datawriter(&t.topic, q))
            .map_err(err)?;
        Ok(Writer::new(w, t.info.clone()))
    }

    /// A reader of `topic`: QoS as for writers.
    #[pyo3(signature = (topic, profiles = None, profile = None, qos = None))]
    fn create_reader(
        &self,
        py: Python<'_>,
        topic: &Bound<'_, Topic>,
        profiles: Option<&Bound<'_, QosProfiles>>,
        profile: Option<&str>,
        qos: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Reader> {
        let t = topic.get();
        let base = profile_qos(profiles, profile, |p, name| {
            p.datareader_qos_for_topic(name, t.topic.name())
        })?;
        let q = qos::reader(qos::default_reader_repr(base), qos)?;
        let r = py
            .detach(|| self.subscriber.create_dynamic_datareader(&t.topic, q))
            .map_err(err)?;
        Ok(Reader::new(r, t.info.clone()))
    }
}

/// The QoS of `profile` in `profiles` (through `get`), or the default without a profile.
fn profile_qos<T: Default>(
    profiles: Option<&Bound<'_, QosProfiles>>,
    profile: Option<&str>,
    get: impl FnOnce(&QosProvider, &str) -> Result<T, tessera::QosXmlError>,
) -> PyResult<T> {
    match (profiles, profile) {
        (Some(p), Some(name)) => {
            get(&p.get().provider, name).map_err(|e| PyValueError::new_err(e.to_string()))
        }
        (None, Some(_)) => Err(PyValueError::new_err("a profile needs profiles")),
        _ => Ok(T::default()),
    }
}

#[pymodule]
fn _tessera(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<Participant>()?;
    m.add_class::<TopicType>()?;
    m.add_class::<Topic>()?;
    m.add_class::<QosProfiles>()?;
    m.add_class::<Writer>()?;
    m.add_class::<Reader>()?;
    m.add_class::<Sample>()?;
    m.add_class::<SampleInfo>()?;
    m.add_class::<SampleIter>()?;
    m.add_class::<Condition>()?;
    m.add_class::<WaitSet>()?;
    m.add_function(wrap_pyfunction!(idl_structs, m)?)?;
    m.add("DdsError", py.get_type::<DdsError>())?;
    m.add("DdsTimeout", py.get_type::<DdsTimeout>())?;
    Ok(())
}

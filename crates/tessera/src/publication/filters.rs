//! Writer-side content filtering: a writer evaluates the filters that matched remote Tessera
//! readers announced (PID_CONTENT_FILTER_PROPERTY, class `DDSSQL`) and does not send them the
//! samples their filters drop: a reliable one gets a GAP instead, so it does not wait for them
//! (`WriterCore::filter_out`). Readers sharing one filter (same expression and parameters:
//! the same signature) cost one evaluation per sample. Readers still filter for themselves:
//! the writer may know older parameters, or none (a filter it cannot compile is ignored).
//!
//! Cost: a writer no reader announced a filter to pays one atomic load per write.

use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tessera_rtps::cdr::CdrType;
use tessera_rtps::discovery::ContentFilterProperty;
use tessera_rtps::filter::{signature, Filter, DDSSQL};
use tessera_rtps::types::{Guid, VENDOR_TESSERA};

/// The filters of a writer's matched remote readers.
#[derive(Default)]
pub(crate) struct WriterFilters {
    entries: Mutex<Vec<Entry>>,
    /// `entries` is not empty (read by every write).
    on: AtomicBool,
}

struct Entry {
    signature: [u8; 16],
    expression: String,
    params: Vec<String>,
    /// Compiled on first use, against the writer's type: `Some(None)` when it does not
    /// compile (its readers then get every sample).
    compiled: Option<Option<Filter>>,
    readers: Vec<Guid>,
}

impl WriterFilters {
    /// Records reader `reader`'s filter (`None`: it has none, or no longer), replacing what
    /// it announced before; returns whether the writer filters for it. Only Tessera readers'
    /// DDSSQL filters are evaluated.
    pub(crate) fn set(&self, reader: Guid, filter: Option<&ContentFilterProperty>) -> bool {
        let filter = filter
            .filter(|f| f.filter_class_name == DDSSQL && reader.prefix.0[..2] == VENDOR_TESSERA.0);
        if filter.is_none() && !self.on.load(Ordering::Relaxed) {
            return false;
        }
        let mut entries = self.entries.lock();
        let filtering = filter.is_some();
        remove_reader(&mut entries, reader);
        if let Some(f) = filter {
            let sig = signature(&f.filter_expression, &f.expression_parameters);
            match entries.iter_mut().find(|e| e.signature == sig) {
                Some(e) => e.readers.push(reader),
                None => entries.push(Entry {
                    signature: sig,
                    expression: f.filter_expression.clone(),
                    params: f.expression_parameters.clone(),
                    compiled: None,
                    readers: vec![reader],
                }),
            }
        }
        self.on.store(!entries.is_empty(), Ordering::Relaxed);
        filtering
    }

    /// Forgets an unmatched reader.
    pub(crate) fn remove(&self, reader: Guid) {
        if self.on.load(Ordering::Relaxed) {
            let mut entries = self.entries.lock();
            remove_reader(&mut entries, reader);
            self.on.store(!entries.is_empty(), Ordering::Relaxed);
        }
    }

    /// The readers whose filters drop `sample`; `None` when there are none (or no filters).
    pub(crate) fn dropping<T: CdrType>(&self, sample: &T) -> Option<Arc<[Guid]>> {
        if !self.on.load(Ordering::Relaxed) {
            return None;
        }
        let mut out = Vec::new();
        for e in self.entries.lock().iter_mut() {
            let f = e.compiled.get_or_insert_with(|| {
                Filter::new(&e.expression, &T::type_desc(), &e.params)
                    .inspect_err(|err| {
                        tracing::debug!(expression = %e.expression, error = %err,
                            "a reader's content filter does not compile: not filtering for it");
                    })
                    .ok()
            });
            // A filter that cannot evaluate passes everything: the reader decides.
            if let Some(f) = f {
                if !f.matches_sample(sample).unwrap_or(true) {
                    out.extend_from_slice(&e.readers);
                }
            }
        }
        (!out.is_empty()).then(|| out.into())
    }
}

fn remove_reader(entries: &mut Vec<Entry>, reader: Guid) {
    for e in entries.iter_mut() {
        e.readers.retain(|g| *g != reader);
    }
    entries.retain(|e| !e.readers.is_empty());
}

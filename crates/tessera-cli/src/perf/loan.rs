//! `tessera perf --loan SIZE` (a tessera extension): the same modes, topics' roles, report lines
//! and peer protocol, with fixed-size `#[repr(C)]` plain samples written through
//! `DataWriter::loan`/`write_loan` and taken with `take_loaned`, so that between Tessera
//! processes on shared memory the payload is never copied or serialized.
//!
//! [`PerfIo`] is the seam: how the driver takes, writes and answers samples of a type. The
//! ddsperf types go by value (`take_into`, `write_with_timestamp`); the loan types
//! ([`LOAN_SIZES`]) by loan. No loan type is ever held by value: a 4 MiB sample would not fit
//! a thread's stack, so a pong answers a loaned ping with a fresh loan carrying the ping's
//! sequence number and key (the payload is not echoed: copying it would measure a memcpy).

use std::sync::atomic::{AtomicBool, Ordering};

use tessera::{DataReader, DataWriter, Loaned, Plain, Result, Sample, SampleBuffer, TopicType};

use super::protocol::{topic_name, topic_name_with_suffix, TopicKind, TopicRole, FILL_OCTET};
use super::types::{
    Keyed256, Keyed32, KeyedSeq, OneULong, PerfSample, Struct16, Struct256, Struct32k, Struct4k,
    Unkeyed1024, Unkeyed16,
};

/// How the perf driver moves samples of one type.
pub trait PerfIo: PerfSample {
    /// What a take yields (the sample, or a loan of it).
    type Item: Send + Sync + 'static;
    /// What the publishing loop keeps between writes (the sample by value, or nothing).
    type Template: Send;

    /// The sample of a taken item.
    fn data(item: &Self::Item) -> &Self;
    /// Takes up to `max` samples into `buf` (replacing what it held); returns how many.
    fn take(reader: &DataReader<Self>, buf: &mut SampleBuffer<Self::Item>, max: usize) -> usize;
    /// The publisher's reusable state for samples of `baggage` octets of sequence.
    fn template(baggage: u32) -> Self::Template;
    /// Registers the instances with keys `0..n` (keyed by-value types only).
    fn register(w: &DataWriter<Self>, t: &mut Self::Template, n: u32);
    /// Writes a sample with `seq` and `keyval` and source timestamp `ts`.
    fn write_new(
        w: &DataWriter<Self>,
        t: &mut Self::Template,
        seq: u32,
        keyval: u32,
        ts: i64,
    ) -> Result<()>;
    /// Writes `item` back (a pong answering a ping) with timestamp `ts`.
    fn echo(w: &DataWriter<Self>, item: &Self::Item, ts: i64) -> Result<()>;
    /// Writes `item` again with sequence number `seq` (the next ping after a pong).
    fn write_next(w: &DataWriter<Self>, item: &mut Self::Item, seq: u32, ts: i64) -> Result<()>;
    /// The topic of `role`.
    fn topic_name(role: TopicRole, reliable: bool, kind: TopicKind) -> String;
}

/// The ddsperf types: by value, as ddsperf does.
macro_rules! by_value {
    ($($t:ty),*) => {$(
        impl PerfIo for $t {
            type Item = $t;
            type Template = $t;

            fn data(item: &$t) -> &$t {
                item
            }
            fn take(reader: &DataReader<$t>, buf: &mut SampleBuffer<$t>, max: usize) -> usize {
                // Decoded into the samples of earlier takes: their baggage keeps its buffer.
                reader.take_reusing(buf, max)
            }
            fn template(baggage: u32) -> $t {
                <$t>::new_sample(baggage)
            }
            fn register(w: &DataWriter<$t>, t: &mut $t, n: u32) {
                for k in 0..n {
                    t.set_keyval(k);
                    let _ = w.register_instance(t);
                }
                t.set_keyval(0);
            }
            fn write_new(
                w: &DataWriter<$t>,
                t: &mut $t,
                seq: u32,
                keyval: u32,
                ts: i64,
            ) -> Result<()> {
                t.set_seq(seq);
                t.set_keyval(keyval);
                w.write_with_timestamp(t, ts)
            }
            fn echo(w: &DataWriter<$t>, item: &$t, ts: i64) -> Result<()> {
                w.write_with_timestamp(item, ts)
            }
            fn write_next(w: &DataWriter<$t>, item: &mut $t, seq: u32, ts: i64) -> Result<()> {
                item.set_seq(seq);
                w.write_with_timestamp(item, ts)
            }
            fn topic_name(role: TopicRole, reliable: bool, kind: TopicKind) -> String {
                topic_name(role, reliable, kind)
            }
        }
    )*};
}

by_value!(
    KeyedSeq,
    Keyed32,
    Keyed256,
    OneULong,
    Unkeyed16,
    Unkeyed1024,
    Struct16,
    Struct256,
    Struct4k,
    Struct32k
);

/// The line `--loan` prints (once, on stderr) when a sample came serialized rather than by
/// reference: the run then measures copies, not loans.
pub const COPIED_WARNING: &str = "perf --loan: samples arrive copied, not by reference \
     (a peer not on shared memory: TESSERA_TRANSPORTS=shm,udp4 on every side?)";

fn warn_if_copied<T: Plain>(buf: &[Sample<Loaned<T>>]) {
    static WARNED: AtomicBool = AtomicBool::new(false);
    let copied = buf
        .iter()
        .any(|s| s.data.as_ref().is_some_and(|d| !d.is_loaned()));
    if copied && !WARNED.swap(true, Ordering::Relaxed) {
        eprintln!("{COPIED_WARNING}");
    }
}

/// A loan: a fresh slot with the header set (the rest of the slot is left as it is).
fn write_loan<T: LoanSample>(w: &DataWriter<T>, seq: u32, keyval: u32, ts: i64) -> Result<()> {
    let mut l = w.loan()?;
    l.set_header(seq, keyval);
    w.write_loan_with_timestamp(l, ts)
}

/// What the loan types share: a header (`seq`, `keyval`) before the fill.
pub trait LoanSample: PerfSample + Plain {
    /// The sample's size in bytes (the `size` of the command line and the reports).
    const SIZE: u32;
    /// Sets `seq` and `keyval` in place.
    fn set_header(&mut self, seq: u32, keyval: u32);
}

/// One loan type per size: `seq`, `keyval` (not a key: keyed loans would be serialized) and
/// fill up to `$size` bytes.
macro_rules! loan_types {
    ($(($t:ident, $name:literal, $size:expr)),*) => {
        $(
            #[doc = concat!("A plain sample of ", stringify!($size), " bytes for `--loan`.")]
            #[derive(TopicType, Clone, Copy)]
            #[repr(C)]
            #[topic(type_name = $name)]
            pub struct $t {
                /// Sequence number.
                pub seq: u32,
                /// Key value (always 0: the loan types are keyless).
                pub keyval: u32,
                /// Filler.
                pub fill: [u8; $size - 8],
            }

            impl PerfSample for $t {
                /// Builds the sample by value: the driver never calls it for loan types (see
                /// the module docs); it exists because the trait asks for it.
                fn new_sample(_baggage: u32) -> Self {
                    $t { seq: 0, keyval: 0, fill: [FILL_OCTET; $size - 8] }
                }
                fn seq(&self) -> u32 {
                    self.seq
                }
                fn set_seq(&mut self, seq: u32) {
                    self.seq = seq;
                }
                fn keyval(&self) -> u32 {
                    self.keyval
                }
                fn set_keyval(&mut self, k: u32) {
                    self.keyval = k;
                }
                fn size(&self) -> u32 {
                    $size
                }
            }

            impl LoanSample for $t {
                const SIZE: u32 = $size;
                fn set_header(&mut self, seq: u32, keyval: u32) {
                    self.seq = seq;
                    self.keyval = keyval;
                }
            }

            impl PerfIo for $t {
                type Item = Loaned<$t>;
                type Template = ();

                fn data(item: &Loaned<$t>) -> &$t {
                    item
                }
                fn take(
                    reader: &DataReader<$t>,
                    buf: &mut SampleBuffer<Loaned<$t>>,
                    max: usize,
                ) -> usize {
                    match reader.take_loaned(max) {
                        Ok(v) => {
                            *buf = v.into();
                            warn_if_copied(buf);
                            buf.len()
                        }
                        Err(_) => {
                            buf.clear();
                            0
                        }
                    }
                }
                fn template(_baggage: u32) {}
                fn register(_w: &DataWriter<$t>, _t: &mut (), _n: u32) {}
                fn write_new(
                    w: &DataWriter<$t>,
                    _t: &mut (),
                    seq: u32,
                    keyval: u32,
                    ts: i64,
                ) -> Result<()> {
                    write_loan(w, seq, keyval, ts)
                }
                fn echo(w: &DataWriter<$t>, item: &Loaned<$t>, ts: i64) -> Result<()> {
                    write_loan(w, item.seq, item.keyval, ts)
                }
                fn write_next(
                    w: &DataWriter<$t>,
                    item: &mut Loaned<$t>,
                    seq: u32,
                    ts: i64,
                ) -> Result<()> {
                    write_loan(w, seq, item.keyval, ts)
                }
                fn topic_name(role: TopicRole, reliable: bool, _kind: TopicKind) -> String {
                    loan_topic_name(role, reliable, $size)
                }
            }
        )*

        /// The sizes `--loan` accepts, smallest first.
        pub const LOAN_SIZES: &[u32] = &[$($size),*];

        /// Runs `f` with the loan type of `size`; `None` for a size without one.
        pub fn with_loan_type<R>(size: u32, f: impl LoanTypeFn<R>) -> Option<R> {
            match size {
                $($size => Some(f.call::<$t>()),)*
                _ => None,
            }
        }
    };
}

loan_types!(
    (Loan16, "TesseraPerfLoan16", 16),
    (Loan1k, "TesseraPerfLoan1k", 1024),
    (Loan4k, "TesseraPerfLoan4k", 4096),
    (Loan16k, "TesseraPerfLoan16k", 16384),
    (Loan64k, "TesseraPerfLoan64k", 65536),
    (Loan256k, "TesseraPerfLoan256k", 262144),
    (Loan1m, "TesseraPerfLoan1m", 1048576),
    (Loan4m, "TesseraPerfLoan4m", 4194304)
);

/// A generic function over the loan types ([`with_loan_type`]).
pub trait LoanTypeFn<R> {
    /// Calls it for `T`.
    fn call<T: PerfIo + LoanSample>(self) -> R;
}

/// Topic names of the loan types: ddsperf's scheme with `L<size>` for the type suffix, so that
/// loaned runs of different sizes (different types) never meet on one topic.
pub fn loan_topic_name(role: TopicRole, reliable: bool, size: u32) -> String {
    topic_name_with_suffix(role, reliable, &format!("L{size}"))
}

/// A list of [`LOAN_SIZES`] for messages.
pub fn loan_sizes_text() -> String {
    LOAN_SIZES
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    struct SizeOf;
    impl LoanTypeFn<(usize, u32, bool)> for SizeOf {
        fn call<T: PerfIo + LoanSample>(self) -> (usize, u32, bool) {
            (std::mem::size_of::<T>(), T::SIZE, <T as Plain>::LAYOUT != 0)
        }
    }

    #[test]
    fn every_loan_size_has_a_plain_type_of_that_size() {
        for &s in LOAN_SIZES {
            let (mem, size, plain) = with_loan_type(s, SizeOf).unwrap();
            assert_eq!((mem, size, plain), (s as usize, s, true), "size {s}");
        }
        assert!(with_loan_type(100, SizeOf).is_none());
        for s in [16, 4096, 65536, 1 << 20, 4 << 20] {
            assert!(LOAN_SIZES.contains(&s));
        }
    }

    #[test]
    fn loan_topics_differ_by_size_and_from_ddsperf() {
        assert_eq!(
            loan_topic_name(TopicRole::Ping, true, 65536),
            "DDSPerfRPingL65536"
        );
        assert_ne!(
            loan_topic_name(TopicRole::Data, false, 16),
            topic_name(TopicRole::Data, false, TopicKind::UK16)
        );
    }
}

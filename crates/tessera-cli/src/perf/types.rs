//! The ddsperf data types as Tessera topic types, plus [`PerfSample`], the little interface the
//! driver needs on top of them (make a sample, get/set `seq` and `keyval`, the reported size).
//!
//! All types are `@final` structs with the bare IDL names of ddsperf's `ddsperf_types.idl`, so
//! their registered type names and CDR bytes are the same as Cyclone's. The `Struct*` types
//! use arrays of the nested struct instead of ddsperf's 16 (or 8) separately named members: an
//! array of N structs encodes exactly like N consecutive struct members, and no type
//! information is exchanged, so peers cannot tell the difference.

use tessera::TopicType;

use super::protocol::{CpuStatThread, CpuStatsSample, FILL_OCTET};

/// What the perf driver needs from a Data/Ping/Pong sample type.
pub trait PerfSample: TopicType + Clone + Send + Sync + 'static {
    /// A sample as ddsperf publishes it: every octet and `junk` member 0xEE-filled, `seq` and
    /// `keyval` 0, and (only for `KeyedSeq`) `baggage` octets of sequence.
    fn new_sample(baggage: u32) -> Self;
    /// The sequence number.
    fn seq(&self) -> u32;
    /// Sets the sequence number.
    fn set_seq(&mut self, seq: u32);
    /// The key value (0 for keyless types).
    fn keyval(&self) -> u32;
    /// Sets the key value (ignored by keyless types).
    fn set_keyval(&mut self, k: u32);
    /// The size ddsperf reports and counts for this sample (see
    /// [`super::protocol::TopicKind::payload_size`]).
    fn size(&self) -> u32;
}

const FILL_JUNK: i64 = i64::from_ne_bytes([FILL_OCTET; 8]);

/// `OneULong` (`-T OU`): keyless, 4 bytes.
#[derive(TopicType, Debug, Clone, PartialEq)]
#[topic(type_name = "OneULong")]
pub struct OneULong {
    /// Sequence number.
    pub seq: u32,
}

/// `Unkeyed16` (`-T UK16`): keyless, 16 bytes.
#[derive(TopicType, Debug, Clone, PartialEq)]
#[topic(type_name = "Unkeyed16")]
pub struct Unkeyed16 {
    /// Sequence number.
    pub seq: u32,
    /// Filler.
    pub baggage: [u8; 12],
}

/// `Unkeyed1024` (`-T UK1024`): keyless, 1024 bytes.
#[derive(TopicType, Debug, Clone, PartialEq)]
#[topic(type_name = "Unkeyed1024")]
pub struct Unkeyed1024 {
    /// Sequence number.
    pub seq: u32,
    /// Filler.
    pub baggage: [u8; 1020],
}

/// `Keyed32` (`-T K32`).
#[derive(TopicType, Debug, Clone, PartialEq)]
#[topic(type_name = "Keyed32")]
pub struct Keyed32 {
    /// Sequence number.
    pub seq: u32,
    /// Key (must-understand: see `ddsperf_struct!`).
    #[key]
    #[must_understand]
    pub keyval: u32,
    /// Filler.
    pub baggage: [u8; 24],
}

/// `Keyed256` (`-T K256`).
#[derive(TopicType, Debug, Clone, PartialEq)]
#[topic(type_name = "Keyed256")]
pub struct Keyed256 {
    /// Sequence number.
    pub seq: u32,
    /// Key (must-understand: see `ddsperf_struct!`).
    #[key]
    #[must_understand]
    pub keyval: u32,
    /// Filler.
    pub baggage: [u8; 248],
}

/// `KeyedSeq` (`-T KS`, the default): the only type whose size is set with `size N`.
#[derive(TopicType, Debug, Clone, PartialEq)]
#[topic(type_name = "KeyedSeq")]
pub struct KeyedSeq {
    /// Sequence number.
    pub seq: u32,
    /// Key (must-understand: see `ddsperf_struct!`).
    #[key]
    #[must_understand]
    pub keyval: u32,
    /// `size − 12` octets.
    pub baggage: Vec<u8>,
}

/// One of ddsperf's `Struct*` types: members `$f` of type `$elem` (ddsperf's IDL spells them
/// out one by one, and its XTypes type must be the same as ours for Cyclone DDS to match us),
/// then `junk`, `seq` and the key `keyval`; `filled` builds one with every `$f` from `elem`.
macro_rules! ddsperf_struct {
    ($(#[$m:meta])* $t:ident, $name:tt, $elem:ty, [$($f:ident),*]) => {
        $(#[$m])*
        #[derive(TopicType, Debug, Clone, PartialEq)]
        #[topic(type_name = $name)]
        pub struct $t {
            $(
                #[doc = "Filler (one of ddsperf's numbered members)."]
                pub $f: $elem,
            )*
            /// Filler.
            pub junk: i64,
            /// Sequence number.
            pub seq: u32,
            /// Key (must-understand, as Cyclone 0.10.2 flags every key member: with equal
            /// flags the identifiers equal ddsperf's, which 0.10.2 needs for nested types).
            #[key]
            #[must_understand]
            pub keyval: u32,
        }

        impl $t {
            fn filled(elem: impl Fn() -> $elem) -> Self {
                $t {
                    $( $f: elem(), )*
                    junk: FILL_JUNK,
                    seq: u32::from_ne_bytes([FILL_OCTET; 4]),
                    keyval: u32::from_ne_bytes([FILL_OCTET; 4]),
                }
            }
        }
    };
}

ddsperf_struct!(
    /// `Struct16` (`-T S16`): 16 octets `struct0` .. `structf`, `junk`, `seq`, `keyval`.
    Struct16, "Struct16", u8, [struct0, struct1, struct2, struct3, struct4, struct5, struct6, struct7, struct8, struct9, structa, structb, structc, structd, structe, structf]
);
ddsperf_struct!(
    /// `Struct256` (`-T S256`): 16 × [`Struct16`] `struct160` .. `struct16f`, `junk`, `seq`,
    /// `keyval`.
    Struct256, "Struct256", Struct16, [struct160, struct161, struct162, struct163, struct164, struct165, struct166, struct167, struct168, struct169, struct16a, struct16b, struct16c, struct16d, struct16e, struct16f]
);
ddsperf_struct!(
    /// `Struct4k` (`-T S4k`): 16 × [`Struct256`] `struct2560` .. `struct256f`, `junk`, `seq`,
    /// `keyval`.
    Struct4k, "Struct4k", Struct256, [struct2560, struct2561, struct2562, struct2563, struct2564, struct2565, struct2566, struct2567, struct2568, struct2569, struct256a, struct256b, struct256c, struct256d, struct256e, struct256f]
);
ddsperf_struct!(
    /// `Struct32k` (`-T S32k`): 8 × [`Struct4k`] `struct4k0` .. `struct4k7`, `junk`, `seq`,
    /// `keyval`.
    Struct32k, "Struct32k", Struct4k, [struct4k0, struct4k1, struct4k2, struct4k3, struct4k4, struct4k5, struct4k6, struct4k7]
);

fn fill_struct16() -> Struct16 {
    Struct16::filled(|| FILL_OCTET)
}

fn fill_struct256() -> Struct256 {
    Struct256::filled(fill_struct16)
}

fn fill_struct4k() -> Struct4k {
    Struct4k::filled(fill_struct256)
}

macro_rules! keyless {
    ($t:ty, $size:expr, $new:expr) => {
        impl PerfSample for $t {
            fn new_sample(_baggage: u32) -> Self {
                $new
            }
            fn seq(&self) -> u32 {
                self.seq
            }
            fn set_seq(&mut self, seq: u32) {
                self.seq = seq;
            }
            fn keyval(&self) -> u32 {
                0
            }
            fn set_keyval(&mut self, _k: u32) {}
            fn size(&self) -> u32 {
                $size
            }
        }
    };
}

macro_rules! keyed {
    ($t:ty, $size:expr, $new:expr) => {
        impl PerfSample for $t {
            fn new_sample(_baggage: u32) -> Self {
                $new
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
    };
}

keyless!(OneULong, 4, OneULong { seq: 0 });
keyless!(
    Unkeyed16,
    16,
    Unkeyed16 {
        seq: 0,
        baggage: [FILL_OCTET; 12]
    }
);
keyless!(
    Unkeyed1024,
    1024,
    Unkeyed1024 {
        seq: 0,
        baggage: [FILL_OCTET; 1020]
    }
);
keyed!(
    Keyed32,
    32,
    Keyed32 {
        seq: 0,
        keyval: 0,
        baggage: [FILL_OCTET; 24]
    }
);
keyed!(
    Keyed256,
    256,
    Keyed256 {
        seq: 0,
        keyval: 0,
        baggage: [FILL_OCTET; 248]
    }
);
keyed!(
    Struct16,
    32,
    Struct16 {
        seq: 0,
        keyval: 0,
        ..fill_struct16()
    }
);
keyed!(
    Struct256,
    528,
    Struct256 {
        seq: 0,
        keyval: 0,
        ..fill_struct256()
    }
);
keyed!(
    Struct4k,
    8464,
    Struct4k {
        seq: 0,
        keyval: 0,
        ..fill_struct4k()
    }
);
keyed!(
    Struct32k,
    67728,
    Struct32k {
        seq: 0,
        keyval: 0,
        ..Struct32k::filled(fill_struct4k)
    }
);

impl PerfSample for KeyedSeq {
    fn new_sample(baggage: u32) -> Self {
        KeyedSeq {
            seq: 0,
            keyval: 0,
            baggage: vec![FILL_OCTET; baggage as usize],
        }
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
        12u32.saturating_add(u32::try_from(self.baggage.len()).unwrap_or(u32::MAX))
    }
}

/// `CPUStatThread`: one thread's CPU use in a [`CpuStats`] sample.
#[derive(TopicType, Debug, Clone, PartialEq)]
#[topic(type_name = "CPUStatThread")]
pub struct CpuStatThreadWire {
    /// Thread name.
    pub name: String,
    /// User CPU, percent of one core.
    pub u_pct: i32,
    /// System CPU, percent of one core.
    pub s_pct: i32,
}

/// `CPUStats`: what every ddsperf publishes once a second on `DDSPerfCPUStats`.
#[derive(TopicType, Debug, Clone, PartialEq)]
#[topic(type_name = "CPUStats")]
pub struct CpuStats {
    /// Host name (key).
    #[key]
    pub hostname: String,
    /// Process id (key).
    #[key]
    pub pid: u32,
    /// Maximum RSS in bytes.
    pub maxrss: f64,
    /// Voluntary context switches per second.
    pub vcsw: u32,
    /// Involuntary context switches per second.
    pub ivcsw: u32,
    /// Whether any thread is listed.
    pub some_above: bool,
    /// The listed threads.
    pub cpu: Vec<CpuStatThreadWire>,
}

impl From<&CpuStatsSample> for CpuStats {
    fn from(s: &CpuStatsSample) -> Self {
        CpuStats {
            hostname: s.hostname.clone(),
            pid: s.pid,
            maxrss: s.maxrss,
            vcsw: s.vcsw,
            ivcsw: s.ivcsw,
            some_above: s.some_above,
            cpu: s
                .cpu
                .iter()
                .map(|t| CpuStatThreadWire {
                    name: t.name.clone(),
                    u_pct: t.u_pct,
                    s_pct: t.s_pct,
                })
                .collect(),
        }
    }
}

impl From<CpuStats> for CpuStatsSample {
    fn from(s: CpuStats) -> Self {
        CpuStatsSample {
            hostname: s.hostname,
            pid: s.pid,
            maxrss: s.maxrss,
            vcsw: s.vcsw,
            ivcsw: s.ivcsw,
            some_above: s.some_above,
            cpu: s
                .cpu
                .into_iter()
                .map(|t| CpuStatThread {
                    name: t.name,
                    u_pct: t.u_pct,
                    s_pct: t.s_pct,
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::protocol::TopicKind;
    use tessera::rtps::cdr::{serialize_sample, Encoding};

    fn body_len<T: PerfSample>(v: &T) -> usize {
        let mut b = Vec::new();
        serialize_sample(v, Encoding::XCDR1_LE, &mut b);
        b.len() - 4
    }

    #[test]
    fn sizes_match_topic_kinds() {
        assert_eq!(
            OneULong::new_sample(0).size(),
            TopicKind::OU.payload_size(0)
        );
        assert_eq!(
            Unkeyed16::new_sample(0).size(),
            TopicKind::UK16.payload_size(0)
        );
        assert_eq!(
            Unkeyed1024::new_sample(0).size(),
            TopicKind::UK1024.payload_size(0)
        );
        assert_eq!(
            Keyed32::new_sample(0).size(),
            TopicKind::K32.payload_size(0)
        );
        assert_eq!(
            Keyed256::new_sample(0).size(),
            TopicKind::K256.payload_size(0)
        );
        assert_eq!(
            KeyedSeq::new_sample(100).size(),
            TopicKind::KS.payload_size(100)
        );
        assert_eq!(
            Struct16::new_sample(0).size(),
            TopicKind::S16.payload_size(0)
        );
        assert_eq!(
            Struct256::new_sample(0).size(),
            TopicKind::S256.payload_size(0)
        );
        assert_eq!(
            Struct4k::new_sample(0).size(),
            TopicKind::S4k.payload_size(0)
        );
        assert_eq!(
            Struct32k::new_sample(0).size(),
            TopicKind::S32k.payload_size(0)
        );
    }

    #[test]
    fn encoded_sizes_are_the_c_struct_sizes() {
        // Every member is naturally aligned, so the CDR body is as long as the C struct.
        assert_eq!(body_len(&OneULong::new_sample(0)), 4);
        assert_eq!(body_len(&Unkeyed1024::new_sample(0)), 1024);
        assert_eq!(body_len(&Keyed256::new_sample(0)), 256);
        assert_eq!(body_len(&Struct16::new_sample(0)), 32);
        assert_eq!(body_len(&Struct256::new_sample(0)), 528);
        assert_eq!(body_len(&Struct4k::new_sample(0)), 8464);
        assert_eq!(body_len(&Struct32k::new_sample(0)), 67728);
        // KS: seq, keyval, sequence length, octets.
        assert_eq!(body_len(&KeyedSeq::new_sample(4)), 16);
    }

    #[test]
    fn names_and_keys() {
        assert_eq!(KeyedSeq::TYPE_NAME, TopicKind::KS.type_name());
        assert_eq!(Struct32k::TYPE_NAME, TopicKind::S32k.type_name());
        assert_eq!(OneULong::TYPE_NAME, TopicKind::OU.type_name());
        for (keyed, kind) in [
            (OneULong::KEYED, TopicKind::OU),
            (Unkeyed16::KEYED, TopicKind::UK16),
            (Unkeyed1024::KEYED, TopicKind::UK1024),
            (Keyed32::KEYED, TopicKind::K32),
            (Keyed256::KEYED, TopicKind::K256),
            (KeyedSeq::KEYED, TopicKind::KS),
            (Struct16::KEYED, TopicKind::S16),
            (Struct256::KEYED, TopicKind::S256),
            (Struct4k::KEYED, TopicKind::S4k),
            (Struct32k::KEYED, TopicKind::S32k),
        ] {
            assert_eq!(keyed, kind.is_keyed(), "{kind}");
        }
        assert_eq!(CpuStats::TYPE_NAME, "CPUStats");
    }

    #[test]
    fn seq_and_key_accessors() {
        let mut s = Struct4k::new_sample(0);
        s.set_seq(7);
        s.set_keyval(3);
        assert_eq!((s.seq(), s.keyval()), (7, 3));
        assert_eq!(s.junk, FILL_JUNK);
        let mut o = OneULong::new_sample(0);
        o.set_keyval(9);
        assert_eq!(o.keyval(), 0);
    }

    /// ddsperf's IDL spells the filler members out (`octet struct0; ... Struct4k struct4k7;`):
    /// Cyclone DDS compares the types when both sides send type information, so ours must have
    /// the same members, names and order.
    #[test]
    fn struct_types_have_ddsperf_members() {
        use tessera::rtps::cdr::CdrType;
        use tessera::rtps::xtypes::TypeDesc;
        let names = |d: TypeDesc| match d {
            TypeDesc::Struct(s) => s.members.iter().map(|m| m.name.clone()).collect::<Vec<_>>(),
            other => panic!("{other:?}"),
        };
        let n16 = names(Struct16::type_desc());
        assert_eq!(n16.len(), 19);
        assert_eq!((n16[0].as_str(), n16[15].as_str()), ("struct0", "structf"));
        assert_eq!(&n16[16..], ["junk", "seq", "keyval"]);
        assert_eq!(names(Struct256::type_desc())[15], "struct16f");
        assert_eq!(names(Struct4k::type_desc())[0], "struct2560");
        assert_eq!(names(Struct32k::type_desc())[7], "struct4k7");
        // The wire size is unchanged: 16 octets, then junk (8-aligned in XCDR1), seq, keyval.
        let mut out = Vec::new();
        tessera::rtps::cdr::serialize_sample(
            &Struct16::new_sample(0),
            tessera::rtps::cdr::Encoding::XCDR1_LE,
            &mut out,
        );
        assert_eq!(out.len(), 4 + 32);
    }

    /// The hex of a type's minimal equivalence hash.
    fn minimal_hex<T: tessera::TopicType>() -> String {
        match T::type_bundle().minimal {
            tessera::rtps::xtypes::TypeIdentifier::Minimal(h) => {
                h.iter().map(|b| format!("{b:02x}")).collect()
            }
            other => panic!("{other:?}"),
        }
    }

    /// With keys flagged must-understand (as Cyclone 0.10.2 flags every key), the identifiers
    /// are those Debian's ddsperf 0.10.2 announces: KeyedSeq's is in the SEDP capture of
    /// `tests/discovery_codec/captured.rs`, Struct16's in its trace asking us for it. So 0.10.2
    /// matches us without comparing types, which it cannot do for nested final structs
    /// (Struct256...).
    #[test]
    fn identifiers_equal_ddsperf_0_10_2() {
        assert_eq!(minimal_hex::<KeyedSeq>(), "fa0413693f17171633962dcd81a2");
        assert_eq!(minimal_hex::<Struct16>(), "54e98945d81c91e9e5c8a0db70b4");
    }
}

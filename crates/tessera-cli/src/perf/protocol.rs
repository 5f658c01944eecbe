//! The application-level protocol that `ddsperf` peers speak on top of DDS: topic names and types,
//! participant user data, the per-participant pong partition names and the endpoint-match
//! bookkeeping. Everything here is pure (no DDS entities); `docs/ddsperf-protocol.md` is the
//! prose version.

use std::fmt;

/// Prefix of the participant USER_DATA that marks a ddsperf-compatible peer.
pub const USER_DATA_MAGIC: &str = "DDSPerf:";

/// Topic name of the CPU statistics topic (type [`CPU_STATS_TYPE_NAME`]).
pub const CPU_STATS_TOPIC: &str = "DDSPerfCPUStats";

/// Registered type name of the CPU statistics topic.
pub const CPU_STATS_TYPE_NAME: &str = "CPUStats";

/// Value every padding/baggage octet of a published sample is filled with.
pub const FILL_OCTET: u8 = 0xee;

/// Maximum number of samples taken from the data reader in one `take`.
pub const DATA_TAKE_MAX: usize = 1000;

/// Maximum number of samples taken from the ping or pong reader in one `take`.
pub const PINGPONG_TAKE_MAX: usize = 100;

/// `max_samples` resource limit of the data reader and writer (and of the pong reader).
pub const DATA_MAX_SAMPLES: i32 = 10_000;

/// The data type used for the Data, Ping and Pong topics (`-T`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize)]
pub enum TopicKind {
    /// `KeyedSeq`: `seq`, `@key keyval`, `sequence<octet> baggage` (the default).
    #[default]
    KS,
    /// `Keyed32`: `seq`, `@key keyval`, `octet baggage[24]`.
    K32,
    /// `Keyed256`: `seq`, `@key keyval`, `octet baggage[248]`.
    K256,
    /// `OneULong`: `seq` only (keyless).
    OU,
    /// `Unkeyed16`: `seq`, `octet baggage[12]` (keyless).
    UK16,
    /// `Unkeyed1024`: `seq`, `octet baggage[1020]` (keyless).
    UK1024,
    /// `Struct16`: 16 octets, `long long junk`, `seq`, `@key keyval`.
    S16,
    /// `Struct256`: 16 × `Struct16`, `junk`, `seq`, `@key keyval`.
    S256,
    /// `Struct4k`: 16 × `Struct256`, `junk`, `seq`, `@key keyval`.
    S4k,
    /// `Struct32k`: 8 × `Struct4k`, `junk`, `seq`, `@key keyval`.
    S32k,
}

impl TopicKind {
    /// All kinds, in `-T` documentation order.
    pub const ALL: [TopicKind; 10] = [
        TopicKind::KS,
        TopicKind::K32,
        TopicKind::K256,
        TopicKind::OU,
        TopicKind::UK16,
        TopicKind::UK1024,
        TopicKind::S16,
        TopicKind::S256,
        TopicKind::S4k,
        TopicKind::S32k,
    ];

    /// Parses the `-T` argument (exact, case-sensitive).
    pub fn from_arg(s: &str) -> Option<TopicKind> {
        TopicKind::ALL.into_iter().find(|k| k.suffix() == s)
    }

    /// The `-T` spelling, which is also the topic-name suffix.
    pub fn suffix(self) -> &'static str {
        match self {
            TopicKind::KS => "KS",
            TopicKind::K32 => "K32",
            TopicKind::K256 => "K256",
            TopicKind::OU => "OU",
            TopicKind::UK16 => "UK16",
            TopicKind::UK1024 => "UK1024",
            TopicKind::S16 => "S16",
            TopicKind::S256 => "S256",
            TopicKind::S4k => "S4k",
            TopicKind::S32k => "S32k",
        }
    }

    /// The registered type name (no module: ddsperf's IDL has none).
    pub fn type_name(self) -> &'static str {
        match self {
            TopicKind::KS => "KeyedSeq",
            TopicKind::K32 => "Keyed32",
            TopicKind::K256 => "Keyed256",
            TopicKind::OU => "OneULong",
            TopicKind::UK16 => "Unkeyed16",
            TopicKind::UK1024 => "Unkeyed1024",
            TopicKind::S16 => "Struct16",
            TopicKind::S256 => "Struct256",
            TopicKind::S4k => "Struct4k",
            TopicKind::S32k => "Struct32k",
        }
    }

    /// Whether the type has a `keyval` key field.
    pub fn is_keyed(self) -> bool {
        !matches!(self, TopicKind::OU | TopicKind::UK16 | TopicKind::UK1024)
    }

    /// The "size" ddsperf reports and counts for one sample: the in-memory size of the C struct,
    /// or 12 + baggage length for `KS`. `baggage` is ignored for the other kinds.
    pub fn payload_size(self, baggage: u32) -> u32 {
        match self {
            TopicKind::KS => 12u32.wrapping_add(baggage),
            TopicKind::K32 => 32,
            TopicKind::K256 => 256,
            TopicKind::OU => 4,
            TopicKind::UK16 => 16,
            TopicKind::UK1024 => 1024,
            TopicKind::S16 => 32,
            TopicKind::S256 => 528,
            TopicKind::S4k => 8464,
            TopicKind::S32k => 67728,
        }
    }
}

impl fmt::Display for TopicKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.suffix())
    }
}

/// Which of the three per-type topics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TopicRole {
    /// Throughput data (`pub`/`sub`).
    Data,
    /// Pings.
    Ping,
    /// Pongs (answers to pings and to data samples flagged as pings).
    Pong,
}

/// `DDSPerf` + `R`|`U` + `Data`|`Ping`|`Pong` + type suffix, e.g. `DDSPerfRDataKS`.
pub fn topic_name(role: TopicRole, reliable: bool, kind: TopicKind) -> String {
    topic_name_with_suffix(role, reliable, kind.suffix())
}

/// ddsperf's topic naming with any type suffix (`tessera perf --loan` names its own types).
pub fn topic_name_with_suffix(role: TopicRole, reliable: bool, suffix: &str) -> String {
    let r = if reliable { 'R' } else { 'U' };
    let role = match role {
        TopicRole::Data => "Data",
        TopicRole::Ping => "Ping",
        TopicRole::Pong => "Pong",
    };
    format!("DDSPerf{r}{role}{suffix}")
}

/// The participant USER_DATA ddsperf advertises: `DDSPerf:<R>:<pid>:<hostname>`, no terminating
/// NUL. `R` is 1 when the process has a data reader (a `sub` mode), else 0.
pub fn user_data(has_data_reader: bool, pid: u32, hostname: &str) -> Vec<u8> {
    format!(
        "{USER_DATA_MAGIC}{}:{pid}:{hostname}",
        u8::from(has_data_reader)
    )
    .into_bytes()
}

/// What a ddsperf peer tells about itself in its USER_DATA.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerUserData {
    /// Whether the peer has a data reader (so our data writer must match it).
    pub has_data_reader: bool,
    /// Process id of the peer.
    pub pid: u32,
    /// Host name of the peer (everything after the third colon).
    pub hostname: String,
}

/// Scans a C `%d`/`%ld`-style integer at the start of `s` (leading whitespace, optional sign,
/// at least one digit). Returns the value (wrapping like a C conversion) and the bytes consumed.
fn scan_c_long(s: &[u8]) -> Option<(i64, usize)> {
    let mut i = 0;
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c) {
        i += 1;
    }
    let mut neg = false;
    if i < s.len() && (s[i] == b'+' || s[i] == b'-') {
        neg = s[i] == b'-';
        i += 1;
    }
    let start = i;
    let mut v: i64 = 0;
    while i < s.len() && s[i].is_ascii_digit() {
        v = v.saturating_mul(10).saturating_add(i64::from(s[i] - b'0'));
        i += 1;
    }
    if i == start {
        return None;
    }
    Some((if neg { v.wrapping_neg() } else { v }, i))
}

/// Parses a peer's USER_DATA the way ddsperf does; `None` for anything that is not a ddsperf peer
/// (such participants are ignored entirely: no pong writer, no match tracking).
pub fn parse_user_data(data: &[u8]) -> Option<PeerUserData> {
    // ddsperf treats the user data as a C string: an embedded NUL makes the length check fail.
    if data.is_empty() || data.contains(&0) {
        return None;
    }
    let rest = data.strip_prefix(USER_DATA_MAGIC.as_bytes())?;
    let (has_reader, n1) = scan_c_long(rest)?;
    let rest = rest[n1..].strip_prefix(b":")?;
    let (pid, n2) = scan_c_long(rest)?;
    let rest = rest[n2..].strip_prefix(b":")?;
    Some(PeerUserData {
        has_data_reader: has_reader as i32 != 0,
        pid: pid as u32,
        hostname: String::from_utf8_lossy(rest).into_owned(),
    })
}

/// The partition name derived from a participant GUID: 16 bytes as lower-case hex, in four groups
/// of four bytes separated by `_` (e.g. `011007b8_d4460924_808f73f4_000001c1`).
pub fn guid_partition(guid: &[u8; 16]) -> String {
    let mut s = String::with_capacity(35);
    for (i, b) in guid.iter().enumerate() {
        if i > 0 && i % 4 == 0 {
            s.push('_');
        }
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// Bit set of the remote endpoints still expected from a peer participant. The bit names the
/// *remote* endpoint kind; it is cleared by the local endpoint that matches it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct MatchMask(pub u32);

impl MatchMask {
    /// A remote data reader (cleared by our data writer's publication-matched).
    pub const RD_DATA: MatchMask = MatchMask(1);
    /// A remote ping reader (cleared by our ping writer).
    pub const RD_PING: MatchMask = MatchMask(2);
    /// A remote pong reader (cleared by the pong writer we made for that peer).
    pub const RD_PONG: MatchMask = MatchMask(4);
    /// A remote data writer (cleared by our data reader, if we have one).
    pub const WR_DATA: MatchMask = MatchMask(8);
    /// A remote ping writer (cleared by our ping reader).
    pub const WR_PING: MatchMask = MatchMask(16);
    /// A remote pong writer (cleared by our pong reader).
    pub const WR_PONG: MatchMask = MatchMask(32);
    /// All six.
    pub const ALL: MatchMask = MatchMask(63);

    /// What ddsperf expects from a newly discovered peer.
    pub fn expected(peer_has_data_reader: bool, local_has_data_reader: bool) -> MatchMask {
        let mut m = MatchMask::ALL.0;
        if !peer_has_data_reader {
            m &= !MatchMask::RD_DATA.0;
        }
        if !local_has_data_reader {
            m &= !MatchMask::WR_DATA.0;
        }
        MatchMask(m)
    }

    /// Whether nothing is outstanding.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Clears `other`'s bits.
    pub fn clear(&mut self, other: MatchMask) {
        self.0 &= !other.0;
    }

    fn name1(bit: u32) -> &'static str {
        match bit {
            1 => "data reader",
            2 => "ping reader",
            4 => "pong reader",
            8 => "data writer",
            16 => "ping writer",
            32 => "pong writer",
            _ => "?",
        }
    }
}

impl fmt::Display for MatchMask {
    /// Lowest bit first, `", "`-separated (the order of the final "failed to match" error).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut m = self.0;
        let mut first = true;
        while m != 0 {
            let bit = m & m.wrapping_neg();
            m &= !bit;
            if !first {
                f.write_str(", ")?;
            }
            first = false;
            f.write_str(MatchMask::name1(bit))?;
        }
        Ok(())
    }
}

/// The source-timestamp flag: an odd timestamp (in ns) asks the receiver for a pong.
pub fn is_ping_timestamp(ts_ns: i64) -> bool {
    ts_ns & 1 != 0
}

/// Timestamp to put on a data sample: `now` with the low bit set iff it should double as a ping.
pub fn data_timestamp(now_ns: i64, request_pong: bool) -> i64 {
    (now_ns & !1) | i64::from(request_pong)
}

/// Timestamp for the pong answering a sample received on the *ping* topic: the ping's timestamp
/// with the low bit forced on (it normally already is).
pub fn pong_timestamp_for_ping(ping_ts_ns: i64) -> i64 {
    ping_ts_ns | 1
}

/// Timestamp for the pong answering a *data* sample that carried the ping flag: the data
/// timestamp minus one (so it is even, and the pinger does not send a follow-up ping).
pub fn pong_timestamp_for_data(data_ts_ns: i64) -> i64 {
    data_ts_ns - 1
}

/// One-way latency estimate a pinger records for a pong: half the round trip (integer ns,
/// truncating toward zero).
pub fn one_way_latency_ns(now_ns: i64, pong_ts_ns: i64) -> i64 {
    (now_ns - pong_ts_ns) / 2
}

/// One per-thread entry of [`CpuStatsSample`] (IDL `CPUStatThread`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CpuStatThread {
    /// Thread name (from `/proc/self/task/<tid>/stat`), or `others`.
    pub name: String,
    /// User CPU in percent of one core, rounded.
    pub u_pct: i32,
    /// System CPU in percent of one core, rounded.
    pub s_pct: i32,
}

/// The `CPUStats` sample (keys `hostname`, `pid`) each ddsperf publishes once per second.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CpuStatsSample {
    /// Host name (key).
    pub hostname: String,
    /// Process id (key).
    pub pid: u32,
    /// Maximum resident set size in bytes (`ru_maxrss` × 1024).
    pub maxrss: f64,
    /// Voluntary context switches per second over the last interval.
    pub vcsw: u32,
    /// Involuntary context switches per second over the last interval.
    pub ivcsw: u32,
    /// Whether any thread (or the "others" aggregate) used ≥ 0.5 % user or system CPU.
    pub some_above: bool,
    /// Threads above the threshold, plus possibly an `others` entry.
    pub cpu: Vec<CpuStatThread>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_names() {
        assert_eq!(
            topic_name(TopicRole::Data, true, TopicKind::KS),
            "DDSPerfRDataKS"
        );
        assert_eq!(
            topic_name(TopicRole::Ping, false, TopicKind::S32k),
            "DDSPerfUPingS32k"
        );
        assert_eq!(
            topic_name(TopicRole::Pong, true, TopicKind::UK1024),
            "DDSPerfRPongUK1024"
        );
    }

    #[test]
    fn kinds_round_trip_and_sizes() {
        for k in TopicKind::ALL {
            assert_eq!(TopicKind::from_arg(k.suffix()), Some(k));
        }
        assert_eq!(TopicKind::from_arg("ks"), None);
        assert_eq!(TopicKind::KS.payload_size(0), 12);
        assert_eq!(TopicKind::KS.payload_size(1012), 1024);
        assert_eq!(TopicKind::S16.payload_size(0), 32);
        assert_eq!(TopicKind::S256.payload_size(0), 16 * 32 + 16);
        assert_eq!(TopicKind::S4k.payload_size(0), 16 * 528 + 16);
        assert_eq!(TopicKind::S32k.payload_size(0), 8 * 8464 + 16);
        assert!(!TopicKind::UK16.is_keyed());
        assert!(TopicKind::S4k.is_keyed());
    }

    #[test]
    fn user_data_round_trip() {
        let ud = user_data(true, 8873, "vm");
        assert_eq!(ud, b"DDSPerf:1:8873:vm");
        assert_eq!(
            parse_user_data(&ud),
            Some(PeerUserData {
                has_data_reader: true,
                pid: 8873,
                hostname: "vm".into()
            })
        );
        let p = parse_user_data(b"DDSPerf:0:12:host:with:colons").unwrap();
        assert!(!p.has_data_reader);
        assert_eq!(p.hostname, "host:with:colons");
        assert_eq!(parse_user_data(b"DDSPerf:1:12:").unwrap().hostname, "");
    }

    #[test]
    fn user_data_rejects() {
        for bad in [
            &b""[..],
            b"DDSPerf",
            b"DDSPerf:1:12",
            b"DDSPerf:x:12:h",
            b"DDSPerf:1:x:h",
            b"ddsperf:1:12:h",
            b"DDSPerf:1:12:h\0",
            b"DDSPerf:1;12:h",
        ] {
            assert_eq!(parse_user_data(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn guid_partition_format() {
        let g = [
            0x01, 0x10, 0x07, 0xb8, 0xd4, 0x46, 0x09, 0x24, 0x80, 0x8f, 0x73, 0xf4, 0, 0, 1, 0xc1,
        ];
        assert_eq!(guid_partition(&g), "011007b8_d4460924_808f73f4_000001c1");
    }

    #[test]
    fn match_mask_text() {
        // Captured from ddsperf: a `pub` that saw a peer which matched nothing.
        let m = MatchMask::expected(true, false);
        assert_eq!(
            m.to_string(),
            "data reader, ping reader, pong reader, ping writer, pong writer"
        );
        let mut all = MatchMask::ALL;
        assert_eq!(
            all.to_string(),
            "data reader, ping reader, pong reader, data writer, ping writer, pong writer"
        );
        for b in [1, 2, 4, 8, 16, 32] {
            all.clear(MatchMask(b));
        }
        assert!(all.is_empty());
    }

    #[test]
    fn timestamps() {
        assert_eq!(data_timestamp(1001, false), 1000);
        assert_eq!(data_timestamp(1000, true), 1001);
        assert!(is_ping_timestamp(pong_timestamp_for_ping(1000)));
        assert!(!is_ping_timestamp(pong_timestamp_for_data(1001)));
        assert_eq!(one_way_latency_ns(1101, 1001), 50);
    }
}

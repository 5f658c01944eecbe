//! The built-in presets: `tessera bench quick`, `paper`, … and the TOML of each
//! (`src/presets/*.toml`).

/// The built-in presets: name, one-line description, TOML text.
pub const PRESETS: &[(&str, &str, &str)] = &[
    (
        "quick",
        "about 2 minutes: latency 16 B–64 KiB, throughput 16 B–64 KiB; Tessera (UDP, shm), Cyclone, raw UDP and shm floors",
        include_str!("../presets/quick.toml"),
    ),
    (
        "paper",
        "the seeds' figures: latency/jitter 4 B–16 KiB, 1-to-N, read modes, NASA cases a–i, \
         rate stepping, discovery, late joiners, mixed pairs",
        include_str!("../presets/paper.toml"),
    ),
    (
        "reliability",
        "the DerechoDDS test: a critical reliable flow beside saturating best-effort traffic",
        include_str!("../presets/reliability.toml"),
    ),
    (
        "peers",
        "under 5 minutes: latency, throughput and 1-to-4 fan-out for every installed \
         implementation (Tessera, Cyclone, Fast DDS, Fast DDS over UDP, RustDDS, dust_dds, \
         Zenoh, raw UDP), ranked",
        include_str!("../presets/peers.toml"),
    ),
    (
        "transport",
        "same host: Tessera over UDP and shared memory (blocking, spinning), Cyclone, Fast DDS \
         (shared memory, UDP), the raw UDP and shared-memory floors; latency to 1 MiB",
        include_str!("../presets/transport.toml"),
    ),
    (
        "architecture",
        "discovery time, traffic and CPU from 2 to 100 participants, decentralized and through \
         a discovery server (centralized); 1–16 applications to another host, decentralized and \
         through a node service per host (federated); the server or node killed mid-stream",
        include_str!("../presets/architecture.toml"),
    ),
    (
        "consistency",
        "about 6 minutes: ATOMIC consistency beside EVENTUAL Tessera and Cyclone — latency vs \
         payload and vs members (2–7), throughput at 4 and 64 KiB, the reliability test with \
         an ATOMIC critical flow",
        include_str!("../presets/consistency.toml"),
    ),
    (
        "ci",
        "a few seconds of every experiment kind, for the test suite",
        include_str!("../presets/ci.toml"),
    ),
];

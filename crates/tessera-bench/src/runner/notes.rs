//! The notes a report states for a whole run, whatever its results.

use super::*;

/// Notes that hold for a whole run, whatever the results.
pub(super) fn standing_notes(s: &Scenario) -> Vec<String> {
    let mut notes = vec![
        "Every DDS implementation runs with its defaults: blocking receive, no busy-polling. \
         Every point runs in network namespaces made for it and removed after it."
            .to_string(),
        "Latency is the full round trip (ping → pong → ping on the pinger's clock); ddsperf \
         prints half of it, so its figures are doubled here."
            .to_string(),
    ];
    let tiny = s.experiments.iter().any(|e| {
        e.axes.iter().any(|(n, v)| {
            n == "size"
                && v.iter()
                    .any(|x| x.as_u64().unwrap_or(KS_MIN_SIZE) < KS_MIN_SIZE)
        })
    });
    if tiny {
        notes.push(format!(
            "Payloads below {KS_MIN_SIZE} B run as ddsperf's smallest KS sample ({KS_MIN_SIZE} B: \
             sequence number, key, empty octet sequence) on both DDS implementations; the raw UDP \
             floor sends the exact size."
        ));
    }
    if s.experiments.iter().any(|e| {
        e.axes
            .iter()
            .any(|(n, _)| n == "applications" || n == "architecture")
            && e.kind == Kind::Throughput
    }) {
        notes.push(
            "Applications and federated cells: each application publishes `rate` samples/s, \
             so the subscriber should receive applications × rate. Through a node each \
             application writer is a writer of its own (under the node's participant), so the \
             subscriber's per-writer sequence check counts losses as it does directly. \
             `datagrams/s on the LAN` \
             counts what the hosts' LAN interfaces sent (loopback and shared memory excluded) \
             over the last 60 % of the run; CPU per sample includes the node services."
                .to_string(),
        );
    }
    let mcast_off = s.experiments.iter().any(|e| {
        e.axes
            .iter()
            .any(|(n, v)| n == "multicast" && v.contains(&Value::Bool(false)))
    });
    if s.experiments.iter().any(|e| e.kind == Kind::Reliability) {
        notes.push(
            "Retransmissions: Tessera counts retransmitted samples (`retransmits`); ddsperf's \
             `-X` counts retransmitted bytes (`retransmit_bytes` in results.json), so the two \
             are not compared."
                .to_string(),
        );
    }
    if s.experiments.iter().any(|e| {
        e.kind == Kind::Throughput && e.pairs.iter().any(|p| p.writer == Implementation::Udp)
    }) {
        notes.push(
            "The raw UDP stream sends one datagram per sample without batching; DDS \
             implementations that batch small samples can exceed it in samples/s. Its latency \
             ping-pong is the floor."
                .to_string(),
        );
    }
    let uses_any = |f: fn(Implementation) -> bool| {
        s.experiments
            .iter()
            .any(|e| e.pairs.iter().any(|p| f(p.writer) || f(p.reader)))
    };
    if uses_any(|i| {
        matches!(
            i,
            Implementation::TesseraShm | Implementation::TesseraShmSpin
        )
    }) {
        notes.push(format!(
            "Transport axis: `tessera` runs UDPv4 only (TESSERA_TRANSPORTS=udp4), like Cyclone; \
             `tessera-shm` lets Tessera use its shared-memory transport between the processes \
             of one host (TESSERA_TRANSPORTS=shm,udp4; across --hosts it is UDP), receive \
             threads blocking; `tessera-shm-spin` also spins before blocking \
             (TESSERA_WAIT={SPIN_WAIT}), which costs CPU while samples keep coming."
        ));
    }
    if uses_any(Implementation::is_loan) {
        notes.push(
            "Loans: `tessera-loan` and `tessera-loan-spin` run `tessera perf --loan SIZE` on \
             shared memory like `tessera-shm` and `tessera-shm-spin`: samples are `#[repr(C)]` \
             plain types of exactly the point's size (16 B to 4 MiB) written through \
             `DataWriter::loan`/`write_loan` and taken with `take_loaned`, so only a reference \
             travels; a pong answers with a fresh loan carrying the ping's number (the \
             payload is not echoed). Their topics and types are their own: they pair only \
             with themselves."
                .to_string(),
        );
    }
    if uses_any(|i| i == Implementation::TesseraAtomic) {
        notes.push(
            "ATOMIC: `tessera-atomic` runs `tessera perf --consistency atomic` from a binary \
             built with the `atomic` feature that the measured `tessera` leaves out (so its \
             resident memory is not comparable): the `tessera-atomic` beside the measured \
             `tessera` when there is one (`scripts/pgo-build --atomic` makes it profile-guided \
             like `tessera`), else `tessera-bench perf`; the environment line names it. Every \
             process keeps ddsperf's full set of endpoints (ping writer and reader, data writer, \
             a pong writer per peer), all ATOMIC: a point with N subscribers runs one consensus \
             group of N + 1 members per topic and partition (Ping, Data, each process's Pong \
             partition), most of them idle, and their heartbeats count in the CPU figures. A \
             write returns after its commit, so one publishing thread writes one sample per \
             commit. ATOMIC pairs only with itself and is never best-effort; beside a \
             reliability test's ATOMIC critical flow the background stays EVENTUAL."
                .to_string(),
        );
    }
    if uses_any(Implementation::is_shm_floor) {
        notes.push(
            "The raw shared-memory floor (`tessera bench shm`) hands a sample through one \
             segment and back with no middleware: a copy in and out on each side, and a futex \
             wake per hand-off (`shm`) or both sides polling (`shm-spin`). It runs on the first \
             host only."
                .to_string(),
        );
    }
    if uses_fastdds(s) {
        notes.push(
            "Fast DDS 2.9 runs as `fastdds-perf` (workers/fastdds/, compiled with g++ against \
             Debian's libfastrtps): ddsperf's topics, type, QoS (reliability, history, resource \
             limits) and protocol, every other Fast DDS setting at its default. `fastdds` keeps \
             Fast DDS's default transports (shared memory between Fast DDS processes of one \
             host, UDPv4 with everyone else); `fastdds-udp` runs UDPv4 only, like the bench's \
             Tessera (TESSERA_TRANSPORTS=udp4) and Cyclone. Its latency comes from a histogram of \
             every round trip, like Tessera's; its data goes by unicast whatever `multicast` \
             says (Fast DDS's default)."
                .to_string(),
        );
        if s.experiments
            .iter()
            .any(|e| e.kind == Kind::Throughput && e.pairs.iter().any(|p| p.reader.is_fastdds()))
        {
            notes.push(
                "Seen while building the Fast DDS worker (1 KiB, UDP, profiled with perf on this \
                 machine): in unpaced reliable throughput a Fast DDS 2.9 subscriber falls \
                 behind. Its socket overflowed (UdpRcvbufErrors: 12k of 17k datagrams) while \
                 its receive thread spent 96 % of its time in the take() of on_data_available, \
                 walking the reader's history (StatefulReader::begin_sample_access_nts, a \
                 gettid syscall per sample). Our reading: the walk grows with the samples held \
                 back behind a loss, so one loss can start the decline. A Fast DDS publisher \
                 to a Tessera or Cyclone subscriber does not show it."
                    .to_string(),
            );
        }
        if s.hosts > 1 || s.experiments.iter().any(|e| e.hosts.unwrap_or(1) > 1) {
            notes.push(
                "Across namespace hosts, `fastdds` may still use shared memory (the hosts \
                 share /dev/shm); `fastdds-udp` is the network measurement there."
                    .to_string(),
            );
        }
    }
    if uses(s, Implementation::CycloneC) {
        notes.push(crate::cyclonec::standing_note());
    }
    for e in s
        .experiments
        .iter()
        .filter(|e| e.settings.contains_key("count"))
    {
        let n = e.setting("count", 0.0);
        let duration_based: BTreeSet<&str> = e
            .pairs
            .iter()
            .filter(|p| count_mode(e, p.writer).is_none())
            .map(|p| p.writer.display())
            .collect();
        let mut note = format!(
            "{}: every pinger that can stops after {n:.0} round trips past the warm-up \
             (count mode; -D only bounds it at {COUNT_MODE_LIMIT_S} s).",
            e.name
        );
        if !duration_based.is_empty() {
            note.push_str(&format!(
                " {} cannot stop after a count: its cells run for duration_s ({} s).",
                duration_based.into_iter().collect::<Vec<_>>().join(", "),
                e.setting("duration_s", 2.0)
            ));
        }
        notes.push(note);
    }
    notes.extend(crate::rustpeers::standing_notes(|i| uses(s, i)));
    if mcast_off || s.experiments.iter().any(|e| e.kind == Kind::Throughput) {
        notes.push(
            "With `multicast = true` (the default) both implementations send data once per \
             multicast group that several readers share; `multicast = false` restricts both to \
             multicast for discovery only (Cyclone: AllowMulticast=spdp, Tessera: \
             TESSERA_ALLOW_MULTICAST=spdp), so data goes by unicast to each reader."
                .to_string(),
        );
    }
    notes
}

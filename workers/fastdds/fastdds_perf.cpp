// fastdds-perf: a Fast DDS 2.9 peer that speaks the part of Cyclone ddsperf's protocol and
// command grammar that `tessera bench` uses, so that Fast DDS runs the same experiments as
// Tessera (`tessera perf`) and Cyclone (`ddsperf`), and pairs with either over RTPS.
//
//   fastdds-perf [OPTIONS] MODE...
//     -i ID  domain     -D S  duration (s)      -u  best effort      -k N|all  history
//     -n N   keys       -1    sub line every s  -T KS (the only type) -X  accepted, ignored
//     -Q minmatch:N | initwait:S | roundtrips:N | samples:N
//     --warmup S   round trips of the first S s after the first pong stay out of the summary
//     --count N    stop once N pings past the warm-up were answered by every peer
//     --transport default|udp   Fast DDS defaults (shared memory + UDPv4) or UDPv4 only;
//                               also FASTDDS_PERF_TRANSPORT
//     --json       accepted: output is always tessera perf's JSON lines
//   MODE: ping [size S] [listener|waitset|polling]   pong [listener|waitset|polling]
//         sub [listener|waitset|polling]            pub [R[Hz|kHz]] [size S] [burst N]
//
// The protocol is ddsperf's (docs/ddsperf-protocol.md): topics DDSPerf{R,U}{Data,Ping,Pong}KS of
// type KeyedSeq, participant USER_DATA "DDSPerf:<R>:<pid>:<host>", one pong writer per peer in
// a publisher whose partition is that peer's GUID, the pong reader in our own GUID's partition,
// and the timestamp flag (odd source timestamp = answer me). The output is `tessera perf
// --json`'s lines (participant, latency, sub, error, summary with the whole-run histogram), so
// the bench reads it with the parser it already has.
//
// Not here (the bench does not use them; refused with exit 3 rather than ignored): ping rates,
// `pub` ping shares (X%), other -T types, -L, -c, -d, -l, -R. A subscriber does not answer data
// samples with odd timestamps (pings among data). Fast DDS needs a finite instance limit beside
// ddsperf's 10000 samples, so the data reader holds -n instances: samples of keys >= -n are
// refused by its resource limits (and counted lost) instead of ending the run with exit 3.
#include <fastdds/dds/core/LoanableSequence.hpp>
#include <fastdds/dds/domain/DomainParticipant.hpp>
#include <fastdds/dds/domain/DomainParticipantFactory.hpp>
#include <fastdds/dds/domain/DomainParticipantListener.hpp>
#include <fastdds/dds/publisher/DataWriter.hpp>
#include <fastdds/dds/publisher/DataWriterListener.hpp>
#include <fastdds/dds/publisher/Publisher.hpp>
#include <fastdds/dds/subscriber/DataReader.hpp>
#include <fastdds/dds/subscriber/DataReaderListener.hpp>
#include <fastdds/dds/subscriber/SampleInfo.hpp>
#include <fastdds/dds/subscriber/Subscriber.hpp>
#include <fastdds/dds/topic/TopicDataType.hpp>
#include <fastdds/dds/topic/TypeSupport.hpp>
#include <fastdds/rtps/transport/UDPv4TransportDescriptor.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdarg>
#include <csignal>
#include <pthread.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace eprosima::fastdds::dds;
using eprosima::fastrtps::rtps::GUID_t;
using eprosima::fastrtps::rtps::GuidPrefix_t;
using eprosima::fastrtps::rtps::InstanceHandle_t;
using eprosima::fastrtps::rtps::ParticipantDiscoveryInfo;
using eprosima::fastrtps::rtps::SerializedPayload_t;

namespace {

// ---------------------------------------------------------------- clocks and output

int64_t wall_ns() {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

using Steady = std::chrono::steady_clock;

std::mutex g_out_mutex;
int g_pid = 0;
Steady::time_point g_t0;

double since_start() {
    return std::chrono::duration<double>(Steady::now() - g_t0).count();
}

std::string json_str(const std::string& s) {
    std::string o = "\"";
    for (unsigned char c : s) {
        if (c == '"' || c == '\\') {
            o += '\\';
            o += char(c);
        } else if (c < 0x20) {
            char b[8];
            std::snprintf(b, sizeof b, "\\u%04x", c);
            o += b;
        } else {
            o += char(c);
        }
    }
    return o + "\"";
}

// One JSON object per line, flushed at once (the bench reads lines as they arrive).
void emit(const std::string& body) {
    std::lock_guard<std::mutex> g(g_out_mutex);
    std::fprintf(stdout, "{%s}\n", body.c_str());
    std::fflush(stdout);
}

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, f);
    std::vsnprintf(buf, sizeof buf, f, ap);
    va_end(ap);
    return buf;
}

void emit_error(const char* kind, const std::string& message) {
    emit(fmt("\"type\":\"error\",\"pid\":%d,\"error\":\"%s\",\"message\":%s,\"t\":%.3f", g_pid,
             kind, json_str(message).c_str(), since_start()));
}

// ---------------------------------------------------------------- the KeyedSeq type

// ddsperf's default type: { uint32 seq; @key uint32 keyval; sequence<octet> baggage; }, @final.
struct KeyedSeq {
    uint32_t seq = 0;
    uint32_t keyval = 0;
    std::vector<uint8_t> baggage;
};

const uint32_t kFixed = 12;  // seq + keyval + sequence length: ddsperf's "size" of an empty KS

// XCDR1 little-endian out; XCDR1 or XCDR2 (both identical for this @final type), either byte
// order, in. Written by hand: no fastddsgen on this machine.
class KeyedSeqType : public TopicDataType {
public:
    explicit KeyedSeqType(uint32_t size_hint) {
        setName("KeyedSeq");
        m_typeSize = 4 + kFixed + size_hint;  // an initial allocation, grown on demand
        m_isGetKeyDefined = true;
    }
    bool serialize(void* data, SerializedPayload_t* payload) override {
        const KeyedSeq* s = static_cast<KeyedSeq*>(data);
        const uint32_t n = uint32_t(s->baggage.size());
        const uint32_t total = 4 + kFixed + n;
        if (payload->max_size < total) return false;  // sized by getSerializedSizeProvider
        const uint8_t head[4] = {0x00, 0x01, 0x00, 0x00};  // CDR_LE, no options
        std::memcpy(payload->data, head, 4);
        std::memcpy(payload->data + 4, &s->seq, 4);
        std::memcpy(payload->data + 8, &s->keyval, 4);
        std::memcpy(payload->data + 12, &n, 4);
        if (n) std::memcpy(payload->data + 16, s->baggage.data(), n);
        payload->length = total;
        payload->encapsulation = CDR_LE;
        return true;
    }
    bool deserialize(SerializedPayload_t* payload, void* data) override {
        KeyedSeq* s = static_cast<KeyedSeq*>(data);
        const uint8_t* p = payload->data;
        if (payload->length < 16 || p[0] != 0) return false;
        if (p[1] != 0x00 && p[1] != 0x01 && p[1] != 0x06 && p[1] != 0x07) return false;
        const bool big = (p[1] & 1) == 0;
        auto u32 = [&](const uint8_t* q) {
            return big ? uint32_t(q[0]) << 24 | uint32_t(q[1]) << 16 | uint32_t(q[2]) << 8 | q[3]
                       : uint32_t(q[3]) << 24 | uint32_t(q[2]) << 16 | uint32_t(q[1]) << 8 | q[0];
        };
        const uint32_t n = u32(p + 12);
        if (n > payload->length - 16) return false;
        s->seq = u32(p + 4);
        s->keyval = u32(p + 8);
        s->baggage.assign(p + 16, p + 16 + n);
        return true;
    }
    std::function<uint32_t()> getSerializedSizeProvider(void* data) override {
        const uint32_t n = uint32_t(static_cast<KeyedSeq*>(data)->baggage.size());
        return [n] { return 4 + kFixed + n; };
    }
    void* createData() override { return new KeyedSeq(); }
    void deleteData(void* d) override { delete static_cast<KeyedSeq*>(d); }
    // The key hash of a key that fits in 16 bytes: the key big-endian, zero-padded.
    bool getKey(void* data, InstanceHandle_t* h, bool) override {
        const uint32_t k = static_cast<KeyedSeq*>(data)->keyval;
        std::memset(h->value, 0, 16);
        h->value[0] = uint8_t(k >> 24);
        h->value[1] = uint8_t(k >> 16);
        h->value[2] = uint8_t(k >> 8);
        h->value[3] = uint8_t(k);
        return true;
    }
};

// ---------------------------------------------------------------- arguments

enum class Trigger { Listener, Waitset, Polling };

struct Config {
    int domain = 0;
    double duration_s = 0;  // 0: until a signal
    bool best_effort = false;
    int history = 0;  // 0: KEEP_ALL, else KEEP_LAST history
    uint32_t nkeys = 1;
    bool sub_every_second = false;
    uint32_t minmatch = 0;
    double initwait_s = -1;
    uint64_t q_roundtrips = 0;
    uint64_t q_samples = 0;
    double warmup_s = 0;
    uint64_t count = 0;  // --count: 0 = no count
    bool udp_only = false;
    bool ping = false;
    bool pong = false;
    bool sub = false;
    bool pub = false;
    Trigger pingpong_trigger = Trigger::Listener;
    Trigger sub_trigger = Trigger::Listener;
    uint32_t ping_size = kFixed;
    uint32_t pub_size = kFixed;
    double pub_rate = 0;  // bursts per second; 0: unlimited
    uint32_t burst = 1;
};

[[noreturn]] void usage_error(const std::string& what) {
    std::fprintf(stderr, "fastdds-perf: %s\n", what.c_str());
    std::exit(3);
}

bool parse_u64(const std::string& s, uint64_t& out) {
    if (s.empty()) return false;
    char* end = nullptr;
    errno = 0;
    unsigned long long v = std::strtoull(s.c_str(), &end, 10);
    if (errno || *end || s[0] == '-') return false;
    out = v;
    return true;
}

bool parse_f(const std::string& s, double& out) {
    if (s.empty()) return false;
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    if (*end || !(v >= 0) || v > 1e12) return false;
    out = v;
    return true;
}

// "10", "10Hz", "10kHz", "inf".
bool parse_rate(const std::string& s, double& out) {
    if (s == "inf") {
        out = 0;
        return true;
    }
    std::string num = s;
    double mul = 1;
    auto ends = [&](const char* suf) {
        size_t n = std::strlen(suf);
        return num.size() > n && num.compare(num.size() - n, n, suf) == 0;
    };
    if (ends("kHz")) {
        num.resize(num.size() - 3);
        mul = 1000;
    } else if (ends("Hz")) {
        num.resize(num.size() - 2);
    }
    double v;
    if (!parse_f(num, v)) return false;
    out = v * mul;
    return true;
}

bool trigger_word(const std::string& w, Trigger& t) {
    if (w == "listener") t = Trigger::Listener;
    else if (w == "waitset") t = Trigger::Waitset;
    else if (w == "polling") t = Trigger::Polling;
    else return false;
    return true;
}

Config parse_args(int argc, char** argv) {
    Config c;
    std::vector<std::string> a(argv + 1, argv + argc);
    if (const char* t = std::getenv("FASTDDS_PERF_TRANSPORT")) c.udp_only = std::string(t) == "udp";
    size_t i = 0;
    auto value = [&](const std::string& opt) -> std::string {
        if (a[i].size() > opt.size()) return a[i].substr(opt.size());  // -D5
        if (i + 1 >= a.size()) usage_error(opt + " requires an argument");
        return a[++i];
    };
    for (; i < a.size() && a[i].size() > 1 && a[i][0] == '-'; ++i) {
        const std::string& o = a[i];
        uint64_t u;
        double d;
        if (o == "--json" || o == "-X") {
        } else if (o == "--warmup") {
            if (i + 1 >= a.size() || !parse_f(a[i + 1], c.warmup_s)) usage_error("bad --warmup");
            ++i;
        } else if (o == "--count") {
            if (i + 1 >= a.size() || !parse_u64(a[i + 1], c.count) || c.count == 0)
                usage_error("bad --count");
            ++i;
        } else if (o == "--transport") {
            if (i + 1 >= a.size()) usage_error("--transport requires default or udp");
            std::string t = a[++i];
            if (t != "udp" && t != "default") usage_error("--transport " + t + ": default or udp");
            c.udp_only = t == "udp";
        } else if (o == "-u") {
            c.best_effort = true;
        } else if (o == "-1") {
            c.sub_every_second = true;
        } else if (o.rfind("-i", 0) == 0) {
            if (!parse_u64(value("-i"), u) || u > 232) usage_error("bad domain id");
            c.domain = int(u);
        } else if (o.rfind("-D", 0) == 0) {
            if (!parse_f(value("-D"), c.duration_s)) usage_error("bad duration");
        } else if (o.rfind("-k", 0) == 0) {
            std::string v = value("-k");
            if (v == "all") c.history = 0;
            else if (parse_u64(v, u) && u > 0 && u < 1000000) c.history = int(u);
            else usage_error("bad -k");
        } else if (o.rfind("-n", 0) == 0) {
            if (!parse_u64(value("-n"), u) || u == 0 || u > 100000000) usage_error("bad -n");
            c.nkeys = uint32_t(u);
        } else if (o.rfind("-T", 0) == 0) {
            if (value("-T") != "KS") usage_error("only -T KS is supported");
        } else if (o.rfind("-Q", 0) == 0) {
            std::string v = value("-Q");
            size_t colon = v.find(':');
            if (colon == std::string::npos) usage_error("bad -Q " + v);
            std::string k = v.substr(0, colon), x = v.substr(colon + 1);
            if (k == "minmatch" && parse_u64(x, u)) c.minmatch = uint32_t(u);
            else if (k == "initwait" && parse_f(x, d)) c.initwait_s = d;
            else if (k == "roundtrips" && parse_u64(x, u)) c.q_roundtrips = u;
            else if (k == "samples" && parse_u64(x, u)) c.q_samples = u;
            else usage_error("unsupported -Q " + v);
        } else {
            usage_error("unsupported option " + o);
        }
    }
    while (i < a.size()) {
        const std::string m = a[i++];
        auto next_is = [&](const char* w) { return i < a.size() && a[i] == w; };
        if (m == "ping" || m == "pong") {
            (m == "ping" ? c.ping : c.pong) = true;
            while (i < a.size()) {
                if (m == "ping" && next_is("size")) {
                    uint64_t u;
                    if (i + 1 >= a.size() || !parse_u64(a[i + 1], u) || u > (64u << 20))
                        usage_error("bad ping size");
                    c.ping_size = std::max<uint32_t>(kFixed, uint32_t(u));
                    i += 2;
                } else if (trigger_word(a[i], c.pingpong_trigger)) {
                    ++i;
                } else {
                    double r;
                    if (m == "ping" && parse_rate(a[i], r)) usage_error("ping rates are not supported");
                    break;
                }
            }
        } else if (m == "sub") {
            c.sub = true;
            if (i < a.size() && trigger_word(a[i], c.sub_trigger)) ++i;
        } else if (m == "pub") {
            c.pub = true;
            while (i < a.size()) {
                double r;
                uint64_t u;
                if (next_is("size")) {
                    if (i + 1 >= a.size() || !parse_u64(a[i + 1], u) || u > (64u << 20))
                        usage_error("bad pub size");
                    c.pub_size = std::max<uint32_t>(kFixed, uint32_t(u));
                    i += 2;
                } else if (next_is("burst")) {
                    if (i + 1 >= a.size() || !parse_u64(a[i + 1], u) || u > 1000000)
                        usage_error("bad burst");
                    c.burst = uint32_t(u);
                    i += 2;
                } else if (a[i].back() == '%') {
                    usage_error("pub ping shares (X%) are not supported");
                } else if (parse_rate(a[i], r)) {
                    c.pub_rate = r;
                    ++i;
                } else {
                    break;
                }
            }
        } else {
            usage_error("unsupported mode " + m);
        }
    }
    return c;
}

// ---------------------------------------------------------------- latency statistics

// Whole-run histogram: exact below 2048 ns, then 1024 sub-buckets per power of two (about
// 0.1 % resolution, like an HdrHistogram with 3 significant digits); values are bucket middles.
struct Histogram {
    std::map<uint64_t, uint64_t> buckets;
    void record(uint64_t v) {
        if (v >= 2048) {
            int shift = 63 - __builtin_clzll(v) - 10;
            v = ((v >> shift) << shift) + (uint64_t(1) << shift) / 2;
        }
        ++buckets[v];
    }
    uint64_t count() const {
        uint64_t n = 0;
        for (auto& b : buckets) n += b.second;
        return n;
    }
    uint64_t quantile(double q) const {
        uint64_t n = count(), seen = 0;
        uint64_t rank = std::max<uint64_t>(1, uint64_t(q * double(n) + 0.999999));
        for (auto& b : buckets) {
            seen += b.second;
            if (seen >= rank) return b.first;
        }
        return buckets.empty() ? 0 : buckets.rbegin()->first;
    }
};

struct PeerLatency {
    std::string name;
    std::vector<uint64_t> interval;  // one-way ns of the current second
    Histogram run;
    uint64_t total = 0;
};

// ---------------------------------------------------------------- the process

const uint32_t RD_PING = 1, WR_PING = 2, RD_PONG = 4, WR_PONG = 8, RD_DATA = 16, WR_DATA = 32;

struct Peer {
    std::string name;  // host:pid
    bool has_reader = false;
    bool present = true;
    DataWriter* pong_writer = nullptr;
};

std::string guid_partition(const GUID_t& g) {
    uint8_t b[16];
    std::memcpy(b, g.guidPrefix.value, 12);
    std::memcpy(b + 12, g.entityId.value, 4);
    std::string s;
    for (int i = 0; i < 16; ++i) {
        if (i && i % 4 == 0) s += '_';
        s += fmt("%02x", b[i]);
    }
    return s;
}

std::string prefix_key(const GuidPrefix_t& p) { return std::string(reinterpret_cast<const char*>(p.value), 12); }

std::string handle_prefix(const InstanceHandle_t& h) {
    return std::string(reinterpret_cast<const char*>(static_cast<const uint8_t*>(h.value)), 12);
}

std::atomic<bool> g_stop{false};

struct Perf;

using KeyedSeqSeq = LoanableSequence<KeyedSeq>;

// Takes everything available, up to `batch` samples a call (as ddsperf: 1000 data samples, 100
// pings or pongs), on loan, and hands each valid one to `f`. In batches, not with
// take_next_sample: Fast DDS 2.9's take_next_sample walks the reader's whole history on every
// call, so once a loss leaves out-of-order samples waiting there, taking one sample at a time
// costs more than receiving and the socket overflows.
template <class F> void take_all(DataReader* r, int32_t batch, F f) {
    KeyedSeqSeq data;
    SampleInfoSeq infos;
    while (r->take(data, infos, batch) == ReturnCode_t::RETCODE_OK) {
        for (LoanableCollection::size_type i = 0; i < infos.length(); ++i)
            if (infos[i].valid_data) f(data[i], infos[i]);
        r->return_loan(data, infos);
    }
}

// Reads one reader in the configured way: a listener, a thread waiting for data, or polling.
struct ReaderPump : public DataReaderListener {
    Perf* perf = nullptr;
    DataReader* reader = nullptr;
    uint32_t match_bit = 0;
    void (Perf::*on_data)(DataReader*) = nullptr;
    void on_data_available(DataReader* r) override;
    void on_subscription_matched(DataReader*, const SubscriptionMatchedStatus& s) override;
};

struct WriterWatch : public DataWriterListener {
    Perf* perf = nullptr;
    uint32_t match_bit = 0;
    void on_publication_matched(DataWriter*, const PublicationMatchedStatus& s) override;
};

struct SeqState {
    std::vector<uint32_t> expected;
    uint64_t received = 0;
};

struct Perf : public DomainParticipantListener {
    Config cfg;
    DomainParticipant* dp = nullptr;
    Publisher* pub = nullptr;
    Subscriber* sub = nullptr;
    Topic* t_data = nullptr;
    Topic* t_ping = nullptr;
    Topic* t_pong = nullptr;
    DataWriter* w_ping = nullptr;
    DataWriter* w_data = nullptr;
    DataReader* r_ping = nullptr;
    DataReader* r_pong = nullptr;
    DataReader* r_data = nullptr;
    ReaderPump p_ping, p_pong, p_data;
    WriterWatch ww_ping, ww_data, ww_pong;
    std::string self_prefix;

    std::mutex m;  // everything below
    std::condition_variable wake;
    std::map<std::string, Peer> peers;               // by GUID prefix
    std::vector<std::pair<std::string, GUID_t>> pending;  // discovered, pong writer not made
    std::map<std::string, uint32_t> match_bits;      // by GUID prefix
    std::map<std::string, bool> fully_matched;       // by GUID prefix
    uint32_t match_count = 0;  // times a peer became fully matched (ddsperf's match count)
    // ping state
    uint32_t cur_seq = 0;
    uint32_t pongs_seen = 0;
    Steady::time_point last_ping;
    KeyedSeq ping_sample;
    std::map<std::string, PeerLatency> lat;  // by pong writer GUID prefix
    std::vector<std::string> lat_order;
    double first_pong_t = -1;
    bool pinging = false;
    uint64_t measured_pings = 0;  // for --count
    // sub state
    std::map<std::string, SeqState> seqs;  // by publication handle
    uint64_t total = 0, lost = 0, bytes = 0, last_total = 0, last_lost = 0, last_bytes = 0;
    uint32_t last_size = 0;
    bool key_error = false;

    std::string host;

    uint32_t required(const Peer& p) const {
        uint32_t r = RD_PING | WR_PING | RD_PONG | WR_PONG;
        if (p.has_reader) r |= RD_DATA;
        if (cfg.sub) r |= WR_DATA;
        return r;
    }
    // ddsperf's match count: +1 each time a present peer has all its endpoints matched (again);
    // a peer that leaves later still counts, as in ddsperf's -Qminmatch check at exit.
    void update_match_locked(const std::string& key) {
        auto p = peers.find(key);
        if (p == peers.end()) return;  // matched before discovered: counted at discovery
        auto it = match_bits.find(key);
        const uint32_t bits = it == match_bits.end() ? 0 : it->second;
        const uint32_t need = required(p->second);
        const bool full = p->second.present && (bits & need) == need;
        bool& was = fully_matched[key];
        if (full && !was) ++match_count;
        was = full;
    }
    uint32_t matched_count_locked() const { return match_count; }
    uint32_t expected_pongs_locked() const {
        uint32_t n = 0;
        for (auto& kv : peers) n += kv.second.present ? 1 : 0;
        return n;
    }

    void set_match(const InstanceHandle_t& remote, uint32_t bit, int change) {
        std::lock_guard<std::mutex> g(m);
        uint32_t& b = match_bits[handle_prefix(remote)];
        if (change > 0) b |= bit;
        else if (change < 0) b &= ~bit;
        update_match_locked(handle_prefix(remote));
        wake.notify_all();
    }

    // Participant discovery: ddsperf peers are those whose USER_DATA is "DDSPerf:R:PID:HOST".
    void on_participant_discovery(DomainParticipant*, ParticipantDiscoveryInfo&& info) override {
        const auto& ud = info.info.m_userData.data_vec();
        std::string s(ud.begin(), ud.end());
        std::string key = prefix_key(info.info.m_guid.guidPrefix);
        if (key == self_prefix || s.rfind("DDSPerf:", 0) != 0) return;
        size_t a = 8, b = s.find(':', a);
        if (b == std::string::npos) return;
        size_t c = s.find(':', b + 1);
        if (c == std::string::npos) return;
        uint64_t r, pid;
        if (!parse_u64(s.substr(a, b - a), r) || !parse_u64(s.substr(b + 1, c - b - 1), pid)) return;
        std::string phost = s.substr(c + 1);
        if (phost.find('\0') != std::string::npos) return;
        std::lock_guard<std::mutex> g(m);
        if (info.status == ParticipantDiscoveryInfo::DISCOVERED_PARTICIPANT) {
            if (peers.count(key) && peers[key].present) return;
            Peer& p = peers[key];
            p.name = phost + ":" + std::to_string(pid);
            p.has_reader = r != 0;
            p.present = true;
            if (!p.pong_writer) pending.emplace_back(key, info.info.m_guid);
            update_match_locked(key);
            emit(fmt("\"type\":\"participant\",\"pid\":%d,\"event\":\"new\",\"host\":%s,"
                     "\"peer_pid\":%llu,\"self\":false,\"t\":%.3f",
                     g_pid, json_str(phost).c_str(), (unsigned long long)pid, since_start()));
        } else if (info.status == ParticipantDiscoveryInfo::REMOVED_PARTICIPANT ||
                   info.status == ParticipantDiscoveryInfo::DROPPED_PARTICIPANT) {
            auto it = peers.find(key);
            if (it == peers.end() || !it->second.present) return;
            it->second.present = false;
            update_match_locked(key);
            emit(fmt("\"type\":\"participant\",\"pid\":%d,\"event\":\"gone\",\"host\":%s,"
                     "\"peer_pid\":%llu,\"t\":%.3f",
                     g_pid, json_str(phost).c_str(), (unsigned long long)pid, since_start()));
        }
        wake.notify_all();
    }

    // Pong writers are made on the main thread, not in Fast DDS's discovery callback.
    void make_pong_writers() {
        std::vector<std::pair<std::string, GUID_t>> todo;
        {
            std::lock_guard<std::mutex> g(m);
            todo.swap(pending);
        }
        for (auto& kv : todo) {
            PublisherQos pq = PUBLISHER_QOS_DEFAULT;
            pq.partition().push_back(guid_partition(kv.second).c_str());
            Publisher* pp = dp->create_publisher(pq);
            DataWriter* w = pp ? pp->create_datawriter(t_pong, keep_last_writer(), &ww_pong,
                                                       StatusMask::publication_matched())
                               : nullptr;
            if (!w) {
                emit_error("dds", "cannot create a pong writer");
                continue;
            }
            std::lock_guard<std::mutex> g(m);
            peers[kv.first].pong_writer = w;
        }
    }

    ReliabilityQosPolicy reliability() const {
        ReliabilityQosPolicy r;
        r.kind = cfg.best_effort ? BEST_EFFORT_RELIABILITY_QOS : RELIABLE_RELIABILITY_QOS;
        r.max_blocking_time = eprosima::fastrtps::Duration_t(10, 0);
        return r;
    }
    template <class Q> void common(Q& q) const {
        q.reliability() = reliability();
        q.durability().kind = VOLATILE_DURABILITY_QOS;
        // Samples vary in size and the type's size is only a hint: grow buffers on demand.
        q.endpoint().history_memory_policy =
            eprosima::fastrtps::rtps::PREALLOCATED_WITH_REALLOC_MEMORY_MODE;
    }
    template <class Q> void data_history(Q& q) const {
        if (cfg.history == 0) {
            q.history().kind = KEEP_ALL_HISTORY_QOS;
        } else {
            q.history().kind = KEEP_LAST_HISTORY_QOS;
            q.history().depth = cfg.history;
        }
        // ddsperf: max_samples 10000, instances unlimited. Fast DDS refuses a finite total
        // with unlimited instances, so the instances are bounded by the keys in use (-n).
        const int32_t n = int32_t(std::min<uint32_t>(cfg.nkeys, 1u << 24));
        q.resource_limits().max_samples = std::max<int32_t>(10000, n);
        q.resource_limits().max_instances = n;
        q.resource_limits().max_samples_per_instance = std::max<int32_t>(1, 10000 / n);
    }
    DataWriterQos keep_last_writer() const {
        DataWriterQos q = DATAWRITER_QOS_DEFAULT;
        common(q);
        q.history().kind = KEEP_LAST_HISTORY_QOS;
        q.history().depth = 1;
        return q;
    }

    bool create() {
        DomainParticipantQos pq = PARTICIPANT_QOS_DEFAULT;
        std::string ud = fmt("DDSPerf:%d:%d:%s", cfg.sub ? 1 : 0, g_pid, host.c_str());
        pq.user_data().data_vec(std::vector<uint8_t>(ud.begin(), ud.end()));
        pq.name("fastdds-perf");
        if (cfg.udp_only) {
            pq.transport().use_builtin_transports = false;
            pq.transport().user_transports.push_back(
                std::make_shared<eprosima::fastdds::rtps::UDPv4TransportDescriptor>());
        }
        dp = DomainParticipantFactory::get_instance()->create_participant(
            cfg.domain, pq, this, StatusMask::none());
        if (!dp) return false;
        self_prefix = prefix_key(dp->guid().guidPrefix);
        TypeSupport ts(new KeyedSeqType(std::max(cfg.ping_size, cfg.pub_size)));
        if (ts.register_type(dp) != ReturnCode_t::RETCODE_OK) return false;
        const char* rel = cfg.best_effort ? "U" : "R";
        t_data = dp->create_topic(fmt("DDSPerf%sDataKS", rel), "KeyedSeq", TOPIC_QOS_DEFAULT);
        t_ping = dp->create_topic(fmt("DDSPerf%sPingKS", rel), "KeyedSeq", TOPIC_QOS_DEFAULT);
        t_pong = dp->create_topic(fmt("DDSPerf%sPongKS", rel), "KeyedSeq", TOPIC_QOS_DEFAULT);
        pub = dp->create_publisher(PUBLISHER_QOS_DEFAULT);
        sub = dp->create_subscriber(SUBSCRIBER_QOS_DEFAULT);
        if (!t_data || !t_ping || !t_pong || !pub || !sub) return false;

        ww_ping.perf = this;
        ww_ping.match_bit = RD_PING;
        ww_data.perf = this;
        ww_data.match_bit = RD_DATA;
        ww_pong.perf = this;
        ww_pong.match_bit = RD_PONG;

        DataReaderQos rq1 = DATAREADER_QOS_DEFAULT;
        common(rq1);
        rq1.history().kind = KEEP_LAST_HISTORY_QOS;
        rq1.history().depth = 1;
        r_ping = make_reader(sub, t_ping, rq1, p_ping, WR_PING, &Perf::on_ping, cfg.pingpong_trigger);
        w_ping = pub->create_datawriter(t_ping, keep_last_writer(), &ww_ping,
                                        StatusMask::publication_matched());
        DataReaderQos rqd = DATAREADER_QOS_DEFAULT;
        common(rqd);
        data_history(rqd);
        if (cfg.sub) {
            r_data = make_reader(sub, t_data, rqd, p_data, WR_DATA, &Perf::on_data, cfg.sub_trigger);
            if (!r_data) return false;
        }
        DataWriterQos wqd = DATAWRITER_QOS_DEFAULT;
        common(wqd);
        data_history(wqd);
        w_data = pub->create_datawriter(t_data, wqd, &ww_data, StatusMask::publication_matched());
        SubscriberQos sq = SUBSCRIBER_QOS_DEFAULT;
        sq.partition().push_back(guid_partition(dp->guid()).c_str());
        Subscriber* pong_sub = dp->create_subscriber(sq);
        if (!pong_sub) return false;
        r_pong = make_reader(pong_sub, t_pong, rqd, p_pong, WR_PONG, &Perf::on_pong, cfg.pingpong_trigger);
        return r_ping && w_ping && w_data && r_pong;
    }

    DataReader* make_reader(Subscriber* s, Topic* t, const DataReaderQos& q, ReaderPump& pump,
                            uint32_t bit, void (Perf::*fn)(DataReader*), Trigger trig) {
        pump.perf = this;
        pump.match_bit = bit;
        pump.on_data = fn;
        StatusMask mask = StatusMask::subscription_matched();
        if (trig == Trigger::Listener) mask << StatusMask::data_available();
        pump.reader = s->create_datareader(t, q, &pump, mask);
        if (pump.reader && trig != Trigger::Listener) {
            threads.emplace_back([this, &pump, trig] {
                while (!g_stop) {
                    if (trig == Trigger::Waitset) {
                        if (!pump.reader->wait_for_unread_message(
                                eprosima::fastrtps::Duration_t(0, 100000000)))
                            continue;
                    }
                    (this->*pump.on_data)(pump.reader);
                    if (trig == Trigger::Polling) std::this_thread::sleep_for(std::chrono::milliseconds(1));
                }
            });
        }
        return pump.reader;
    }

    std::vector<std::thread> threads;

    // A ping from a peer: the same sample back on the pong writer for its participant, with
    // the ping's source timestamp (the pinger's clock).
    void on_ping(DataReader* r) {
        take_all(r, 100, [this](KeyedSeq& s, const SampleInfo& info) { answer(s, info, true); });
    }

    void answer(KeyedSeq& s, const SampleInfo& info, bool is_ping) {
        // `s` may be a loaned sample: written back as it is (Fast DDS copies it on write).
        DataWriter* w = nullptr;
        {
            std::lock_guard<std::mutex> g(m);
            auto it = peers.find(handle_prefix(info.publication_handle));
            if (it != peers.end()) w = it->second.pong_writer;
        }
        if (!w) return;  // not a known ddsperf peer (yet): like ddsperf, no answer
        int64_t ts = info.source_timestamp.to_ns();
        ts = is_ping ? (ts | 1) : (ts - 1);
        eprosima::fastrtps::Time_t t(int32_t(ts / 1000000000), uint32_t(ts % 1000000000));
        w->write_w_timestamp(&s, HANDLE_NIL, t);
    }

    // Data: loss accounting per publisher and key, as ddsperf's SeqTracker.
    void on_data(DataReader* r) {
        take_all(r, 1000, [this](KeyedSeq& d, const SampleInfo& info) {
            const uint32_t size = kFixed + uint32_t(d.baggage.size());
            std::lock_guard<std::mutex> g(m);
            const uint32_t n = cfg.nkeys, k = d.keyval, s = d.seq;
            if (k >= n) {
                if (!key_error) emit(fmt("\"type\":\"key_out_of_range\",\"key\":%u,\"nkeys\":%u", k, n));
                key_error = true;
                g_stop = true;
                wake.notify_all();
                return;
            }
            const uint8_t* hv = info.publication_handle.value;
            std::string key(reinterpret_cast<const char*>(hv), 16);
            SeqState& st = seqs[key];
            if (st.expected.empty()) {
                st.expected.resize(n);
                for (uint32_t i = 0; i < n; ++i) st.expected[i] = s + (i - k) + (i <= k ? n : 0);
            } else {
                lost += uint32_t(s - st.expected[k]);
                st.expected[k] = s + n;
            }
            ++st.received;
            ++total;
            bytes += size;
            last_size = size;
        });
    }

    // A pong: one-way latency (now − ping timestamp) / 2 on our clock, per pong source.
    void on_pong(DataReader* r) {
        take_all(r, 100, [this](KeyedSeq& d, const SampleInfo& info) { on_one_pong(d, info); });
    }

    void on_one_pong(const KeyedSeq& d, const SampleInfo& info) {
        const int64_t now = wall_ns();
        const int64_t ts = info.source_timestamp.to_ns();
        bool send = false;
        {
            std::lock_guard<std::mutex> g(m);
            const std::string src = handle_prefix(info.publication_handle);
            auto pit = peers.find(src);
            if (pit == peers.end()) return;
            auto it = lat.find(src);
            if (it == lat.end()) {
                it = lat.emplace(src, PeerLatency{}).first;
                it->second.name = pit->second.name;
                lat_order.push_back(src);
            }
            const uint64_t one_way = now > ts ? uint64_t(now - ts) / 2 : 0;
            const double t = since_start();
            if (first_pong_t < 0) first_pong_t = t;
            it->second.interval.push_back(one_way);
            ++it->second.total;
            const bool measured = t - first_pong_t >= cfg.warmup_s;
            if (measured) it->second.run.record(one_way);
            if (pinging && d.seq == cur_seq && ++pongs_seen == expected_pongs_locked()) {
                send = true;
                if (measured && cfg.count && ++measured_pings >= cfg.count) {
                    send = false;
                    g_stop = true;
                    wake.notify_all();
                }
            }
        }
        if (send) send_ping();
    }

    // Sends the next ping. Never under `m`: Fast DDS may call our listeners (which take `m`)
    // while holding its own locks, so we never hold `m` while calling into it.
    std::mutex ping_mutex;  // the ping sample and its write
    void send_ping() {
        std::lock_guard<std::mutex> pg(ping_mutex);
        {
            std::lock_guard<std::mutex> g(m);
            ping_sample.seq = ++cur_seq;
            pongs_seen = 0;
            last_ping = Steady::now();
        }
        const int64_t ts = wall_ns() | 1;
        eprosima::fastrtps::Time_t t(int32_t(ts / 1000000000), uint32_t(ts % 1000000000));
        w_ping->write_w_timestamp(&ping_sample, HANDLE_NIL, t);
    }

    void publish_loop() {
        KeyedSeq s;
        s.baggage.assign(cfg.pub_size - kFixed, 0xEE);
        const auto start = Steady::now();
        uint64_t written = 0;
        int64_t ts = 0;
        while (!g_stop) {
            // Source timestamps even, so no reader takes a data sample for a ping request, and
            // a multiple of 2^-8 s, so the RTPS fraction holds them exactly (no rounding can
            // make them odd on the way).
            if (written % 64 == 0) ts = wall_ns() / 3906250 * 3906250;
            eprosima::fastrtps::Time_t t(int32_t(ts / 1000000000), uint32_t(ts % 1000000000));
            ReturnCode_t rc = w_data->write_w_timestamp(&s, HANDLE_NIL, t);
            if (rc == ReturnCode_t::RETCODE_TIMEOUT) {
                emit(fmt("\"type\":\"write_error\",\"code\":%d", int(rc())));
                continue;
            } else if (rc != ReturnCode_t::RETCODE_OK) {
                emit(fmt("\"type\":\"write_error\",\"code\":%d", int(rc())));
                exit_code = 2;
                g_stop = true;
                wake.notify_all();
                return;
            }
            ++written;
            ++s.seq;
            s.keyval = (s.keyval + 1) % cfg.nkeys;
            if (cfg.pub_rate > 0 && cfg.burst > 0 && written % cfg.burst == 0) {
                for (;;) {
                    double el = std::chrono::duration<double>(Steady::now() - start).count();
                    if (double(written / cfg.burst) / (el + 0.005) <= cfg.pub_rate || g_stop) break;
                    std::this_thread::sleep_for(std::chrono::milliseconds(1));
                }
            }
        }
    }

    int exit_code = 0;

    void report(double t, double dt) {
        std::lock_guard<std::mutex> g(m);
        if (cfg.sub) {
            const uint64_t d = total - last_total, dl = lost - last_lost, db = bytes - last_bytes;
            if (d > 0 || cfg.sub_every_second) {
                const double ksps = double(d) / dt / 1e3, mbps = double(db) * 8 / dt / 1e6;
                emit(fmt("\"type\":\"sub\",\"pid\":%d,\"t\":%.3f,\"size\":%u,\"total\":%llu,"
                         "\"lost\":%llu,\"delta\":%llu,\"delta_lost\":%llu,\"rate_ksps\":%.6f,"
                         "\"rate_mbps\":%.6f",
                         g_pid, t, last_size, (unsigned long long)total, (unsigned long long)lost,
                         (unsigned long long)d, (unsigned long long)dl, ksps, mbps));
            }
            last_total = total;
            last_lost = lost;
            last_bytes = bytes;
        }
        for (auto& src : lat_order) {
            PeerLatency& l = lat[src];
            if (l.interval.empty()) continue;
            std::vector<uint64_t>& v = l.interval;
            std::sort(v.begin(), v.end());
            double sum = 0;
            for (uint64_t x : v) sum += double(x);
            auto pct = [&](double q) { return double(v[std::min(v.size() - 1, size_t(q * double(v.size())))]) / 1e3; };
            emit(fmt("\"type\":\"latency\",\"pid\":%d,\"t\":%.3f,\"peer\":%s,\"size\":%u,"
                     "\"cnt\":%zu,\"mean_us\":%.3f,\"min_us\":%.3f,\"p50_us\":%.3f,"
                     "\"p90_us\":%.3f,\"p99_us\":%.3f,\"max_us\":%.3f",
                     g_pid, t, json_str(l.name).c_str(), cfg.ping_size, v.size(),
                     sum / double(v.size()) / 1e3, double(v.front()) / 1e3, pct(0.5), pct(0.9),
                     pct(0.99), double(v.back()) / 1e3));
            v.clear();
        }
    }

    void summary() {
        std::lock_guard<std::mutex> g(m);
        std::string lats;
        for (auto& src : lat_order) {
            PeerLatency& l = lat[src];
            const Histogram& h = l.run;
            uint64_t n = h.count();
            double sum = 0;
            std::string hist;
            for (auto& b : h.buckets) {
                sum += double(b.first) * double(b.second);
                hist += fmt("%s[%llu,%llu]", hist.empty() ? "" : ",", (unsigned long long)b.first,
                            (unsigned long long)b.second);
            }
            auto us = [](uint64_t ns) { return double(ns) / 1e3; };
            lats += fmt("%s{\"peer\":%s,\"cnt\":%llu,\"mean_us\":%.3f,\"min_us\":%.3f,\"p50_us\":%.3f,"
                        "\"p90_us\":%.3f,\"p99_us\":%.3f,\"p999_us\":%.3f,\"max_us\":%.3f,\"hist\":[",
                        lats.empty() ? "" : ",", json_str(l.name).c_str(), (unsigned long long)n,
                        n ? sum / double(n) / 1e3 : 0.0, us(h.quantile(0)), us(h.quantile(0.5)),
                        us(h.quantile(0.9)), us(h.quantile(0.99)), us(h.quantile(0.999)),
                        us(h.quantile(1)));
            lats += hist + "]}";
        }
        // The summary line can be long (a histogram per source): no fixed buffer.
        std::string line = "\"type\":\"summary\",\"pid\":" + std::to_string(g_pid) + ",\"latency\":[" +
                           lats + "],\"received\":" + std::to_string(total) + ",\"lost\":" +
                           std::to_string(lost) + ",\"exit_code\":" + std::to_string(exit_code) +
                           fmt(",\"t\":%.3f", since_start());
        emit(line);
    }

    // Criteria at exit, as ddsperf checks them.
    void check_criteria() {
        std::lock_guard<std::mutex> g(m);
        uint32_t matched = matched_count_locked();
        if (matched < cfg.minmatch) {
            emit_error("too_few_matching", fmt("too few matching participants (%u)", matched));
            exit_code = 1;
        }
        if (cfg.q_roundtrips) {
            for (auto& kv : lat)
                if (kv.second.total < cfg.q_roundtrips) {
                    emit_error("too_few_roundtrips", "too few roundtrips for some peers");
                    exit_code = 1;
                    break;
                }
        }
        if (cfg.q_samples) {
            for (auto& kv : seqs)
                if (kv.second.received < cfg.q_samples) {
                    emit_error("too_few_samples", "too few samples for some peers");
                    exit_code = 1;
                    break;
                }
        }
        if (key_error) exit_code = 3;
    }

    int run() {
        g_t0 = Steady::now();
        emit(fmt("\"type\":\"participant\",\"pid\":%d,\"event\":\"new\",\"host\":%s,"
                 "\"peer_pid\":%d,\"self\":true,\"t\":%.3f",
                 g_pid, json_str(host).c_str(), g_pid, since_start()));
        if (!create()) {
            std::fprintf(stderr, "fastdds-perf: creating the DDS entities failed\n");
            return 2;
        }
        ping_sample.baggage.assign(cfg.ping_size - kFixed, 0xEE);
        make_pong_writers();
        if (cfg.initwait_s >= 0) {
            const auto until = Steady::now() + std::chrono::duration<double>(cfg.initwait_s);
            std::unique_lock<std::mutex> lk(m);
            while (matched_count_locked() < cfg.minmatch && !g_stop && Steady::now() < until) {
                lk.unlock();
                make_pong_writers();
                lk.lock();
                wake.wait_for(lk, std::chrono::milliseconds(100));
            }
            if (matched_count_locked() < cfg.minmatch) {
                uint32_t n = matched_count_locked();
                lk.unlock();
                emit_error("too_few_matching", fmt("too few matching participants (%u)", n));
                return shutdown(1);
            }
            lk.unlock();
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        // The run starts now: report times count from here, like ddsperf's tstart.
        g_t0 = Steady::now();
        std::thread publisher;
        if (cfg.pub) publisher = std::thread([this] { publish_loop(); });
        if (cfg.ping) {
            {
                std::lock_guard<std::mutex> g(m);
                pinging = true;
            }
            send_ping();
        }
        const auto end = cfg.duration_s > 0
                             ? g_t0 + std::chrono::duration_cast<Steady::duration>(
                                          std::chrono::duration<double>(cfg.duration_s))
                             : Steady::time_point::max();
        auto next = g_t0 + std::chrono::seconds(1);
        auto prev = g_t0;
        while (!g_stop) {
            make_pong_writers();
            const auto now = Steady::now();
            if (now >= next) {
                // ddsperf prints the report due at the end instant (-D 3: 1.000 … 3.000).
                report(std::chrono::duration<double>(next - g_t0).count(),
                       std::chrono::duration<double>(now - prev).count());
                prev = now;
                const bool last = next >= end;
                next += std::chrono::seconds(1);
                if (now - next > std::chrono::milliseconds(500)) next = now + std::chrono::seconds(1);
                if (last) break;
            } else if (now >= end) {
                break;  // a fractional -D ends between reports
            }
            if (cfg.ping) {
                bool due;
                {
                    std::lock_guard<std::mutex> g(m);
                    due = now - last_ping >= std::chrono::seconds(1);
                }
                if (due) send_ping();  // the watchdog: a lost ping or pong never stalls the run
            }
            std::unique_lock<std::mutex> lk(m);
            auto until = std::min(next, end);
            if (cfg.ping) until = std::min(until, last_ping + std::chrono::seconds(1));
            wake.wait_until(lk, until);
        }
        g_stop = true;
        if (cfg.count) {
            // --count ends between reports: the last part's lines too.
            const auto now = Steady::now();
            report(std::chrono::duration<double>(now - g_t0).count(),
                   std::chrono::duration<double>(now - prev).count());
        }
        if (publisher.joinable()) publisher.join();
        check_criteria();
        return shutdown(exit_code);
    }

    int shutdown(int code) {
        g_stop = true;
        for (auto& t : threads) t.join();
        threads.clear();
        exit_code = code;
        summary();
        if (dp) {
            // Deleting the participant releases its shared-memory segments.
            dp->delete_contained_entities();
            DomainParticipantFactory::get_instance()->delete_participant(dp);
            dp = nullptr;
        }
        return code;
    }
};

void ReaderPump::on_data_available(DataReader* r) { (perf->*on_data)(r); }

void ReaderPump::on_subscription_matched(DataReader*, const SubscriptionMatchedStatus& s) {
    perf->set_match(s.last_publication_handle, match_bit, s.current_count_change);
}

void WriterWatch::on_publication_matched(DataWriter*, const PublicationMatchedStatus& s) {
    perf->set_match(s.last_subscription_handle, match_bit, s.current_count_change);
}

}  // namespace

int main(int argc, char** argv) {
    g_pid = int(getpid());
    Config cfg = parse_args(argc, argv);
    if (!cfg.ping && !cfg.pong && !cfg.sub && !cfg.pub) cfg.pong = true;  // ddsperf's default
    // SIGINT/SIGTERM/SIGHUP end the run cleanly (the bench stops workers with SIGTERM, and a
    // deleted participant removes its shared-memory segments). They are blocked in every
    // thread (Fast DDS's threads inherit the mask) and taken by one thread with sigwait, which
    // may then use the condition variable that a signal handler could not.
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
    static Perf perf;
    perf.cfg = cfg;
    std::thread([sigs] {
        int sig = 0;
        sigwait(&sigs, &sig);
        std::lock_guard<std::mutex> g(perf.m);
        g_stop = true;
        perf.wake.notify_all();
    }).detach();
    char h[256] = {0};
    perf.host = gethostname(h, sizeof h - 1) == 0 ? h : "?";
    return perf.run();
}

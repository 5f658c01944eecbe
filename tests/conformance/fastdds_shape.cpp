// A shape application on Fast DDS 2.9 (Debian's libfastrtps-dev), with the options and the output
// of the OMG interoperability suite's shape_main, so that tests/conformance/shape_suite.py can run
// Tessera against Fast DDS in both directions (tests/interop/shape_fastdds.sh builds it).
//
// ShapeType is the suite's: @appendable struct { @key string<128> color; long x; long y;
// long shapesize; sequence<octet> additional_payload_size; }, encoded by hand (no fastddsgen on
// this machine): XCDR1 (plain CDR) by default, XCDR2 with a DHEADER for -x 2. Fast DDS 2.9 has no
// SQL filter for a type without a TypeObject, no time-based filter, no coherent or ordered access
// and no durability service: those options print "not supported", as the suite expects of a
// program that lacks a feature. Statuses are polled once per write or read period.
#include <fastdds/dds/core/LoanableSequence.hpp>
#include <fastdds/dds/domain/DomainParticipant.hpp>
#include <fastdds/dds/domain/DomainParticipantFactory.hpp>
#include <fastdds/dds/publisher/DataWriter.hpp>
#include <fastdds/dds/publisher/Publisher.hpp>
#include <fastdds/dds/subscriber/DataReader.hpp>
#include <fastdds/dds/subscriber/SampleInfo.hpp>
#include <fastdds/dds/subscriber/Subscriber.hpp>
#include <fastdds/dds/topic/TopicDataType.hpp>
#include <fastdds/dds/topic/TypeSupport.hpp>
#include <fastrtps/utils/md5.h>

#include <array>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

using namespace eprosima::fastdds::dds;
using eprosima::fastrtps::rtps::InstanceHandle_t;
using eprosima::fastrtps::rtps::SerializedPayload_t;

namespace {

std::atomic<bool> g_stop{false};

void on_signal(int) { g_stop = true; }

struct Shape {
    std::string color;
    int32_t x = 0, y = 0, shapesize = 0;
    std::vector<uint8_t> payload;
};

// ---------------------------------------------------------------- encoding

struct Out {
    std::vector<uint8_t> b;
    size_t origin = 4;  // alignment counts from after the encapsulation header
    void align(size_t n) {
        while ((b.size() - origin) % n) b.push_back(0);
    }
    void u32(uint32_t v) {
        align(4);
        for (int i = 0; i < 4; i++) b.push_back(uint8_t(v >> (8 * i)));
    }
    void str(const std::string& s) {
        u32(uint32_t(s.size() + 1));
        b.insert(b.end(), s.begin(), s.end());
        b.push_back(0);
    }
};

struct In {
    const uint8_t* p;
    size_t n, at = 4;
    bool big, ok = true;
    void align(size_t k) {
        while ((at - 4) % k) at++;
    }
    uint32_t u32() {
        align(4);
        if (at + 4 > n) {
            ok = false;
            return 0;
        }
        const uint8_t* q = p + at;
        at += 4;
        return big ? uint32_t(q[0]) << 24 | uint32_t(q[1]) << 16 | uint32_t(q[2]) << 8 | q[3]
                   : uint32_t(q[3]) << 24 | uint32_t(q[2]) << 16 | uint32_t(q[1]) << 8 | q[0];
    }
    std::string str() {
        uint32_t len = u32();
        if (!ok || len == 0 || len > n - at || len > 129) {
            ok = false;
            return {};
        }
        std::string s(reinterpret_cast<const char*>(p + at), len - 1);
        at += len;
        return s;
    }
};

// Encapsulation identifiers (RTPS 2.5 10.5): CDR_LE, and XCDR2's D_CDR2_LE for an appendable type.
const uint16_t kCdrLe = 0x0001, kDCdr2Le = 0x0009;

class ShapeTypeSupport : public TopicDataType {
public:
    explicit ShapeTypeSupport(int xcdr) : xcdr_(xcdr) {
        setName("ShapeType");
        m_typeSize = 4 + 4 + 4 + 129 + 16 + 4 + 65536;  // grown per sample by the size provider
        m_isGetKeyDefined = true;
    }
    std::vector<uint8_t> encode(const Shape& s) const {
        Out o;
        const uint16_t id = xcdr_ == 2 ? kDCdr2Le : kCdrLe;
        o.b = {uint8_t(id >> 8), uint8_t(id), 0, 0};
        size_t dheader = 0;
        if (xcdr_ == 2) {
            dheader = o.b.size();
            o.u32(0);  // the member bytes that follow, patched below
        }
        o.str(s.color);
        o.u32(uint32_t(s.x));
        o.u32(uint32_t(s.y));
        o.u32(uint32_t(s.shapesize));
        o.u32(uint32_t(s.payload.size()));
        o.b.insert(o.b.end(), s.payload.begin(), s.payload.end());
        if (xcdr_ == 2) {
            const uint32_t len = uint32_t(o.b.size() - dheader - 4);
            for (int i = 0; i < 4; i++) o.b[dheader + i] = uint8_t(len >> (8 * i));
        }
        // Padding to a multiple of 4, said in the options' last two bits (RTPS 2.5 10.6).
        const uint8_t pad = uint8_t((4 - (o.b.size() % 4)) % 4);
        o.b.insert(o.b.end(), pad, 0);
        o.b[3] = pad;
        return o.b;
    }
    bool serialize(void* data, SerializedPayload_t* payload) override {
        const std::vector<uint8_t> b = encode(*static_cast<Shape*>(data));
        if (payload->max_size < b.size()) return false;
        std::memcpy(payload->data, b.data(), b.size());
        payload->length = uint32_t(b.size());
        payload->encapsulation = CDR_LE;
        return true;
    }
    bool deserialize(SerializedPayload_t* payload, void* data) override {
        Shape* s = static_cast<Shape*>(data);
        const uint8_t* p = payload->data;
        if (payload->length < 8 || p[0] != 0) return false;
        const uint8_t id = p[1];
        // CDR_BE/LE, PL_CDR_BE/LE never for this type; D_CDR2_BE/LE (8/9) with a DHEADER.
        if (id != 0x00 && id != 0x01 && id != 0x08 && id != 0x09) return false;
        In in{p, payload->length, 4, (id & 1) == 0};
        size_t end = payload->length - (p[3] & 3);
        if (id >= 0x08) {
            const uint32_t len = in.u32();
            if (!in.ok || len > payload->length - in.at) return false;
            end = in.at + len;
        }
        in.n = end;
        s->color = in.str();
        s->x = int32_t(in.u32());
        s->y = int32_t(in.u32());
        s->shapesize = int32_t(in.u32());
        // An older ShapeType without the payload member ends here (appendable).
        s->payload.clear();
        if (in.ok && in.at < end) {
            const uint32_t n = in.u32();
            if (!in.ok || n > end - in.at) return false;
            s->payload.assign(p + in.at, p + in.at + n);
        }
        return in.ok;
    }
    std::function<uint32_t()> getSerializedSizeProvider(void* data) override {
        const Shape* s = static_cast<Shape*>(data);
        const uint32_t n = uint32_t(4 + 4 + 4 + s->color.size() + 1 + 3 + 12 + 4 + s->payload.size() + 3);
        return [n] { return n; };
    }
    void* createData() override { return new Shape(); }
    void deleteData(void* d) override { delete static_cast<Shape*>(d); }
    // XTypes 1.3 7.6.8: the key (the color) serialized as XCDR2 big-endian, then MD5, since a
    // string<128> key may exceed 16 bytes.
    bool getKey(void* data, InstanceHandle_t* h, bool) override {
        const std::string& c = static_cast<Shape*>(data)->color;
        std::vector<uint8_t> k;
        const uint32_t len = uint32_t(c.size() + 1);
        k = {uint8_t(len >> 24), uint8_t(len >> 16), uint8_t(len >> 8), uint8_t(len)};
        k.insert(k.end(), c.begin(), c.end());
        k.push_back(0);
        MD5 md5;
        md5.update(reinterpret_cast<const char*>(k.data()), unsigned(k.size()));
        md5.finalize();
        std::memcpy(h->value, md5.digest, 16);
        return true;
    }

private:
    int xcdr_;
};

// ---------------------------------------------------------------- options

struct Opts {
    char role = 0;
    int domain = 0;
    bool reliable = true;
    int depth = -1;  // -1: the default history
    int deadline_ms = -1;
    int strength = -1;
    std::string topic = "Square";
    std::string color;
    bool has_color = false;
    std::string partition;
    char durability = 'v';
    int xcdr = 1;
    bool print_writes = false;
    int size = 20;
    bool use_read = false;
    int write_period = 33, read_period = 100;
    int lifespan_ms = -1;
    long iterations = -1;
    int instances = 1, topics = 1;
    char final_state = 0;
    int payload = 0;
    int size_modulo = 0;
    std::vector<std::string> unsupported;
};

bool parse(int argc, char** argv, Opts& o) {
    for (int i = 1; i < argc; i++) {
        const std::string a = argv[i];
        auto v = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "%s needs a value\n", a.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "-P") o.role = 'P';
        else if (a == "-S") o.role = 'S';
        else if (a == "-d") o.domain = std::atoi(v().c_str());
        else if (a == "-b") o.reliable = false;
        else if (a == "-r") o.reliable = true;
        else if (a == "-k") o.depth = std::atoi(v().c_str());
        else if (a == "-f") o.deadline_ms = std::atoi(v().c_str());
        else if (a == "-s") o.strength = std::atoi(v().c_str());
        else if (a == "-t") o.topic = v();
        else if (a == "-c") o.color = v(), o.has_color = true;
        else if (a == "-p") o.partition = v();
        else if (a == "-D") o.durability = v()[0];
        else if (a == "-x") o.xcdr = std::atoi(v().c_str());
        else if (a == "-w") o.print_writes = true;
        else if (a == "-z") o.size = std::atoi(v().c_str());
        else if (a == "-R") o.use_read = true;
        else if (a == "-v") v();
        else if (a == "--write-period") o.write_period = std::atoi(v().c_str());
        else if (a == "--read-period") o.read_period = std::atoi(v().c_str());
        else if (a == "--lifespan") o.lifespan_ms = std::atoi(v().c_str());
        else if (a == "--num-iterations") o.iterations = std::atol(v().c_str());
        else if (a == "--num-instances") o.instances = std::max(1, std::atoi(v().c_str()));
        else if (a == "--num-topics") o.topics = std::max(1, std::atoi(v().c_str()));
        else if (a == "--final-instance-state") o.final_state = v()[0];
        else if (a == "--additional-payload-size") o.payload = std::atoi(v().c_str());
        else if (a == "--take-read") o.use_read = false;
        else if (a == "--size-modulo") o.size_modulo = std::max(1, std::atoi(v().c_str()));
        else if (a == "--coherent" || a == "--ordered") o.unsupported.push_back(a);
        else if (a == "--access-scope" || a == "--coherent-sample-count" ||
                 a == "--periodic-announcement" || a == "--datafrag-size" || a == "--cft" ||
                 a == "--time-filter") {
            v();
            o.unsupported.push_back(a);
        } else {
            std::fprintf(stderr, "unknown option %s\n", a.c_str());
            return false;
        }
    }
    if (!o.role) {
        std::fprintf(stderr, "one of -P or -S is required\n");
        return false;
    }
    if (o.role == 'S' && o.has_color) o.unsupported.push_back("-c (a content filter)");
    if (o.durability == 't' || o.durability == 'p')
        o.unsupported.push_back("-D t/p (no durability service)");
    if (o.xcdr != 1 && o.xcdr != 2) o.unsupported.push_back("-x " + std::to_string(o.xcdr));
    return true;
}

std::string name(const std::string& base, int k) {
    return k == 0 ? base : base + std::to_string(k);
}

Duration_t ms(int n) { return Duration_t(n / 1000, uint32_t(n % 1000) * 1000000u); }

template <class Q> void common_qos(const Opts& o, Q& q) {
    q.reliability().kind = o.reliable ? RELIABLE_RELIABILITY_QOS : BEST_EFFORT_RELIABILITY_QOS;
    q.durability().kind = o.durability == 'l' ? TRANSIENT_LOCAL_DURABILITY_QOS : VOLATILE_DURABILITY_QOS;
    if (o.depth == 0) {
        q.history().kind = KEEP_ALL_HISTORY_QOS;
    } else if (o.depth > 0) {
        q.history().kind = KEEP_LAST_HISTORY_QOS;
        q.history().depth = o.depth;
    }
    if (o.deadline_ms >= 0) q.deadline().period = ms(o.deadline_ms);
    if (o.strength >= 0) q.ownership().kind = EXCLUSIVE_OWNERSHIP_QOS;
}

void representation(const Opts& o, DataRepresentationQosPolicy& r) {
    r.m_value.clear();
    r.m_value.push_back(o.xcdr == 2 ? XCDR2_DATA_REPRESENTATION : XCDR_DATA_REPRESENTATION);
}

// ---------------------------------------------------------------- output

void print_sample(const std::string& topic, const Shape& s) {
    std::printf("%-10s %-10s %03d %03d [%d]", topic.c_str(), s.color.c_str(), s.x, s.y, s.shapesize);
    if (!s.payload.empty()) std::printf(" {%d}", s.payload.back());
    std::printf("\n");
    std::fflush(stdout);
}

struct Seen {
    int32_t matched = 0, incompatible = 0, missed = 0;
    void report(const std::string& topic, bool writer, int32_t m, int32_t current, int32_t inc,
                uint32_t policy, int32_t miss) {
        auto line = [&](const char* cb, const std::string& details) {
            std::printf("%s() topic: '%s'  type: 'ShapeType' : %s\n", cb, topic.c_str(),
                        details.c_str());
            std::fflush(stdout);
        };
        if (m > matched) {
            matched = m;
            line(writer ? "on_publication_matched" : "on_subscription_matched",
                 std::string("matched ") + (writer ? "readers " : "writers ") +
                     std::to_string(current) + " (change = 1)");
        }
        if (inc > incompatible) {
            incompatible = inc;
            line(writer ? "on_offered_incompatible_qos" : "on_requested_incompatible_qos",
                 "policy id " + std::to_string(policy));
        }
        if (miss > missed) {
            missed = miss;
            line(writer ? "on_offered_deadline_missed" : "on_requested_deadline_missed",
                 "total count " + std::to_string(miss));
        }
    }
};

void pause_ms(int n) {
    auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(n);
    while (!g_stop && std::chrono::steady_clock::now() < end)
        std::this_thread::sleep_for(std::chrono::milliseconds(std::min(n, 20)));
}

struct Endpoint {
    std::string topic;
    Topic* t = nullptr;
    DataWriter* w = nullptr;
    DataReader* r = nullptr;
    Seen seen;
    std::map<InstanceHandle_t, std::pair<std::string, InstanceStateKind>> states;
};

int publish(const Opts& o, DomainParticipant* dp) {
    PublisherQos pq = PUBLISHER_QOS_DEFAULT;
    if (!o.partition.empty()) pq.partition().push_back(o.partition.c_str());
    Publisher* pub = dp->create_publisher(pq);
    const std::string color = o.has_color ? o.color : "BLUE";
    std::vector<Endpoint> eps(o.topics);
    for (int k = 0; k < o.topics; k++) {
        Endpoint& e = eps[k];
        e.topic = name(o.topic, k);
        std::printf("Create topic: %s\n", e.topic.c_str());
        e.t = dp->create_topic(e.topic, "ShapeType", TOPIC_QOS_DEFAULT);
        std::printf("Create writer for topic: %s color: %s\n", e.topic.c_str(), color.c_str());
        std::fflush(stdout);
        DataWriterQos wq = DATAWRITER_QOS_DEFAULT;
        common_qos(o, wq);
        representation(o, wq.representation());
        if (o.strength >= 0) wq.ownership_strength().value = uint32_t(o.strength);
        if (o.lifespan_ms >= 0) wq.lifespan().duration = ms(o.lifespan_ms);
        if (o.final_state == 'u') wq.writer_data_lifecycle().autodispose_unregistered_instances = false;
        e.w = pub->create_datawriter(e.t, wq);
        if (!e.t || !e.w) {
            std::printf("failed to create the writer\n");
            return 1;
        }
    }
    std::vector<std::array<int, 4>> pos;
    std::vector<std::string> colors;
    for (int k = 0; k < o.instances; k++) {
        colors.push_back(name(color, k));
        pos.push_back({(17 * k) % 200, (31 * k) % 200, 1 + k % 5, 1 + (k * 3) % 5});
    }
    std::vector<uint8_t> payload(size_t(std::max(0, o.payload)), 0);
    if (!payload.empty()) payload.back() = 255;
    auto statuses = [&] {
        for (Endpoint& e : eps) {
            PublicationMatchedStatus m;
            OfferedIncompatibleQosStatus i;
            OfferedDeadlineMissedStatus d;
            e.w->get_publication_matched_status(m);
            e.w->get_offered_incompatible_qos_status(i);
            e.w->get_offered_deadline_missed_status(d);
            e.seen.report(e.topic, true, m.total_count, m.current_count, i.total_count,
                          i.last_policy_id, d.total_count);
        }
    };
    long iteration = 0, counter = 0;
    while (!g_stop && (o.iterations < 0 || iteration < o.iterations)) {
        statuses();
        int size = o.size;
        if (o.size == 0) {
            counter++;
            size = o.size_modulo ? int((counter - 1) % o.size_modulo + 1) : int(counter);
        }
        for (Endpoint& e : eps) {
            for (size_t c = 0; c < colors.size(); c++) {
                auto& p = pos[c];
                const int lim = 240 - (o.size == 0 ? 0 : size);
                p[0] += p[2];
                p[1] += p[3];
                if (p[0] < 0 || p[0] > lim) p[2] = -p[2], p[0] = std::min(std::max(p[0], 0), lim);
                if (p[1] < 0 || p[1] > lim) p[3] = -p[3], p[1] = std::min(std::max(p[1], 0), lim);
                Shape s{colors[c], p[0], p[1], size, payload};
                e.w->write(&s);
                if (o.print_writes) print_sample(e.topic, s);
            }
        }
        iteration++;
        pause_ms(o.write_period);
    }
    if (o.final_state) {
        for (Endpoint& e : eps) {
            for (const std::string& c : colors) {
                Shape k{c, 0, 0, 0, {}};
                if (o.final_state == 'd') e.w->dispose(&k, HANDLE_NIL);
                else e.w->unregister_instance(&k, HANDLE_NIL);
            }
        }
        pause_ms(500);
    }
    while (!g_stop) {
        statuses();
        pause_ms(o.write_period);
    }
    return 0;
}

const char* state_label(InstanceStateKind s) {
    if (s == NOT_ALIVE_DISPOSED_INSTANCE_STATE) return "NOT_ALIVE_DISPOSED_INSTANCE_STATE";
    if (s == NOT_ALIVE_NO_WRITERS_INSTANCE_STATE) return "NOT_ALIVE_NO_WRITERS_INSTANCE_STATE";
    return nullptr;
}

int subscribe(const Opts& o, DomainParticipant* dp) {
    SubscriberQos sq = SUBSCRIBER_QOS_DEFAULT;
    if (!o.partition.empty()) sq.partition().push_back(o.partition.c_str());
    Subscriber* sub = dp->create_subscriber(sq);
    std::vector<Endpoint> eps(o.topics);
    for (int k = 0; k < o.topics; k++) {
        Endpoint& e = eps[k];
        e.topic = name(o.topic, k);
        std::printf("Create topic: %s\n", e.topic.c_str());
        e.t = dp->create_topic(e.topic, "ShapeType", TOPIC_QOS_DEFAULT);
        std::printf("Create reader for topic: %s\n", e.topic.c_str());
        std::fflush(stdout);
        DataReaderQos rq = DATAREADER_QOS_DEFAULT;
        common_qos(o, rq);
        representation(o, rq.type_consistency().representation);
        e.r = sub->create_datareader(e.t, rq);
        if (!e.t || !e.r) {
            std::printf("failed to create the reader\n");
            return 1;
        }
    }
    long iteration = 0;
    while (!g_stop && (o.iterations < 0 || iteration < o.iterations)) {
        for (Endpoint& e : eps) {
            SubscriptionMatchedStatus m;
            RequestedIncompatibleQosStatus i;
            RequestedDeadlineMissedStatus d;
            e.r->get_subscription_matched_status(m);
            e.r->get_requested_incompatible_qos_status(i);
            e.r->get_requested_deadline_missed_status(d);
            e.seen.report(e.topic, false, m.total_count, m.current_count, i.total_count,
                          i.last_policy_id, d.total_count);
            LoanableSequence<Shape> data;
            SampleInfoSeq infos;
            const ReturnCode_t rc =
                o.use_read ? e.r->read(data, infos, 10000, NOT_READ_SAMPLE_STATE)
                           : e.r->take(data, infos, 10000);
            if (rc != ReturnCode_t::RETCODE_OK) continue;
            std::map<InstanceHandle_t, InstanceStateKind> last;
            for (LoanableCollection::size_type n = 0; n < infos.length(); n++) {
                const SampleInfo& info = infos[n];
                if (info.valid_data) {
                    e.states.emplace(info.instance_handle,
                                     std::make_pair(data[n].color, ALIVE_INSTANCE_STATE));
                    print_sample(e.topic, data[n]);
                }
                last[info.instance_handle] = info.instance_state;
            }
            e.r->return_loan(data, infos);
            for (const auto& [h, st] : last) {
                auto it = e.states.find(h);
                if (it == e.states.end() || it->second.second == st) continue;
                it->second.second = st;
                if (const char* label = state_label(st)) {
                    std::printf("%-10s %-10s %s\n", e.topic.c_str(), it->second.first.c_str(), label);
                    std::fflush(stdout);
                }
            }
        }
        iteration++;
        pause_ms(o.read_period);
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    Opts o;
    if (!parse(argc, argv, o)) return 2;
    if (!o.unsupported.empty()) {
        std::string all;
        for (const std::string& u : o.unsupported) all += (all.empty() ? "" : ", ") + u;
        std::printf("%s: not supported by this Fast DDS peer\n", all.c_str());
        std::fflush(stdout);
        return 1;
    }
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    DomainParticipant* dp = DomainParticipantFactory::get_instance()->create_participant(
        o.domain, PARTICIPANT_QOS_DEFAULT);
    if (!dp) {
        std::printf("failed to create the participant\n");
        return 1;
    }
    TypeSupport type(new ShapeTypeSupport(o.xcdr));
    type.register_type(dp);
    const int rc = o.role == 'P' ? publish(o, dp) : subscribe(o, dp);
    dp->delete_contained_entities();
    DomainParticipantFactory::get_instance()->delete_participant(dp);
    return rc;
}

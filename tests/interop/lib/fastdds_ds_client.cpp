// A minimal Fast DDS 2.x publisher/subscriber for tests/interop/ds_tessera_server.sh. Discovery
// is left SIMPLE, so ROS_DISCOVERY_SERVER makes it a discovery-server CLIENT.
//
//   fdsclient pub TOPIC COUNT TIMEOUT_S   wait for a reader, write COUNT samples, wait for acks
//   fdsclient sub TOPIC COUNT TIMEOUT_S   receive COUNT samples (exit 0) or time out (exit 1)
//
// Both print "participants N" at the end: remote participants known, discovery servers aside.
// The type is the Tessera test peer's (crates/tessera/examples/peer.rs): "PeerSample" { uint32
// seq; sequence<octet> payload; } with 64 payload bytes (seq + i) mod 256, so Fast DDS and
// Tessera clients exchange data.
#include <fastdds/dds/domain/DomainParticipant.hpp>
#include <fastdds/dds/domain/DomainParticipantFactory.hpp>
#include <fastdds/dds/domain/DomainParticipantListener.hpp>
#include <fastdds/dds/publisher/DataWriter.hpp>
#include <fastdds/dds/publisher/Publisher.hpp>
#include <fastdds/dds/subscriber/DataReader.hpp>
#include <fastdds/dds/subscriber/SampleInfo.hpp>
#include <fastdds/dds/subscriber/Subscriber.hpp>
#include <fastdds/dds/topic/TopicDataType.hpp>
#include <fastdds/dds/topic/TypeSupport.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

using namespace eprosima::fastdds::dds;
using eprosima::fastrtps::rtps::InstanceHandle_t;
using eprosima::fastrtps::rtps::ParticipantDiscoveryInfo;
using eprosima::fastrtps::rtps::SerializedPayload_t;

struct Msg {
    uint32_t seq;
    bool ok;
};

static const uint32_t kPayload = 64;
static const uint32_t kSize = 4 + 4 + 4 + kPayload;

// XCDR1 little-endian, written by hand (no fastddsgen).
class MsgType : public TopicDataType {
public:
    MsgType() {
        setName("PeerSample");
        m_typeSize = kSize;
        m_isGetKeyDefined = false;
    }
    bool serialize(void* data, SerializedPayload_t* payload) override {
        const uint8_t head[4] = {0, 1, 0, 0};
        const uint32_t seq = static_cast<Msg*>(data)->seq;
        std::memcpy(payload->data, head, 4);
        std::memcpy(payload->data + 4, &seq, 4);
        std::memcpy(payload->data + 8, &kPayload, 4);
        for (uint32_t i = 0; i < kPayload; ++i) payload->data[12 + i] = uint8_t(seq + i);
        payload->length = kSize;
        return true;
    }
    bool deserialize(SerializedPayload_t* payload, void* data) override {
        Msg* m = static_cast<Msg*>(data);
        if (payload->length < 12) return false;
        uint32_t len = 0;
        std::memcpy(&m->seq, payload->data + 4, 4);
        std::memcpy(&len, payload->data + 8, 4);
        m->ok = len == kPayload && payload->length >= 12 + len;
        for (uint32_t i = 0; m->ok && i < len; ++i) m->ok = payload->data[12 + i] == uint8_t(m->seq + i);
        return true;
    }
    std::function<uint32_t()> getSerializedSizeProvider(void*) override {
        return [] { return kSize; };
    }
    void* createData() override { return new Msg(); }
    void deleteData(void* d) override { delete static_cast<Msg*>(d); }
    bool getKey(void*, InstanceHandle_t*, bool) override { return false; }
};

static std::atomic<int> g_participants{0};

class Listener : public DomainParticipantListener {
public:
    void on_participant_discovery(DomainParticipant*, ParticipantDiscoveryInfo&& info) override {
        const auto& p = info.info.m_guid.guidPrefix.value;
        if (p[0] == 0x44 && p[1] == 0x53) return;  // a discovery server
        if (info.status == ParticipantDiscoveryInfo::DISCOVERED_PARTICIPANT) {
            ++g_participants;
        } else if (info.status == ParticipantDiscoveryInfo::REMOVED_PARTICIPANT ||
                   info.status == ParticipantDiscoveryInfo::DROPPED_PARTICIPANT) {
            --g_participants;
        }
    }
};

int main(int argc, char** argv) {
    if (argc != 5) {
        std::fprintf(stderr, "usage: %s pub|sub TOPIC COUNT TIMEOUT_S\n", argv[0]);
        return 3;
    }
    const std::string mode = argv[1];
    const std::string topic_name = argv[2];
    const uint32_t count = static_cast<uint32_t>(std::stoul(argv[3]));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(std::stoi(argv[4]));
    Listener listener;
    DomainParticipant* dp = DomainParticipantFactory::get_instance()->create_participant(
        0, PARTICIPANT_QOS_DEFAULT, &listener, StatusMask::none());
    if (!dp) return 2;
    TypeSupport type(new MsgType());
    type.register_type(dp);
    Topic* topic = dp->create_topic(topic_name, "PeerSample", TOPIC_QOS_DEFAULT);
    int rc = 1;
    if (mode == "pub") {
        Publisher* pub = dp->create_publisher(PUBLISHER_QOS_DEFAULT);
        DataWriterQos wq = DATAWRITER_QOS_DEFAULT;
        wq.reliability().kind = RELIABLE_RELIABILITY_QOS;
        wq.history().kind = KEEP_ALL_HISTORY_QOS;
        DataWriter* w = pub->create_datawriter(topic, wq);
        PublicationMatchedStatus st;
        while (w->get_publication_matched_status(st), st.current_count == 0) {
            if (std::chrono::steady_clock::now() > deadline) break;
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        if (st.current_count > 0) {
            for (uint32_t i = 0; i < count; ++i) {
                Msg m{i, true};
                w->write(&m);
            }
            bool acked = w->wait_for_acknowledgments(eprosima::fastrtps::Duration_t(10, 0)) ==
                         ReturnCode_t::RETCODE_OK;
            std::printf("wrote %u acked %d\n", count, acked ? 1 : 0);
            rc = acked ? 0 : 1;
            std::this_thread::sleep_for(std::chrono::seconds(1));
        } else {
            std::printf("no reader matched\n");
        }
    } else {
        Subscriber* sub = dp->create_subscriber(SUBSCRIBER_QOS_DEFAULT);
        DataReaderQos rq = DATAREADER_QOS_DEFAULT;
        rq.reliability().kind = RELIABLE_RELIABILITY_QOS;
        rq.history().kind = KEEP_ALL_HISTORY_QOS;
        DataReader* r = sub->create_datareader(topic, rq);
        uint32_t received = 0, corrupt = 0;
        Msg m{};
        SampleInfo info;
        while (received < count && std::chrono::steady_clock::now() < deadline) {
            if (r->take_next_sample(&m, &info) == ReturnCode_t::RETCODE_OK) {
                if (info.valid_data) {
                    ++received;
                    if (!m.ok) ++corrupt;
                }
            } else {
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
            }
        }
        std::printf("received %u of %u (corrupt %u)\n", received, count, corrupt);
        rc = received == count && corrupt == 0 ? 0 : 1;
    }
    std::printf("participants %d\n", g_participants.load());
    std::fflush(stdout);
    dp->delete_contained_entities();
    DomainParticipantFactory::get_instance()->delete_participant(dp);
    return rc;
}

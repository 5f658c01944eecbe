// A minimal Fast DDS 2.x publisher/subscriber for tests/interop/ds_tessera_server.sh. Discovery
// is left SIMPLE, so ROS_DISCOVERY_SERVER makes it a discovery-server CLIENT.
//
//   fdsclient pub TOPIC COUNT TIMEOUT_S   wait for a reader, write COUNT samples, wait for acks
//   fdsclient sub TOPIC COUNT TIMEOUT_S   receive COUNT samples (exit 0) or time out (exit 1)
//
// Both print "participants N" at the end: remote participants known, discovery servers aside.
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
};

// One unsigned long, XCDR1 little-endian, written by hand (no fastddsgen).
class MsgType : public TopicDataType {
public:
    MsgType() {
        setName("DsMsg");
        m_typeSize = 8;
        m_isGetKeyDefined = false;
    }
    bool serialize(void* data, SerializedPayload_t* payload) override {
        const uint8_t head[4] = {0, 1, 0, 0};
        std::memcpy(payload->data, head, 4);
        std::memcpy(payload->data + 4, &static_cast<Msg*>(data)->seq, 4);
        payload->length = 8;
        return true;
    }
    bool deserialize(SerializedPayload_t* payload, void* data) override {
        if (payload->length < 8) return false;
        std::memcpy(&static_cast<Msg*>(data)->seq, payload->data + 4, 4);
        return true;
    }
    std::function<uint32_t()> getSerializedSizeProvider(void*) override {
        return [] { return 8u; };
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
    Topic* topic = dp->create_topic(topic_name, "DsMsg", TOPIC_QOS_DEFAULT);
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
                Msg m{i};
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
        uint32_t received = 0;
        Msg m{};
        SampleInfo info;
        while (received < count && std::chrono::steady_clock::now() < deadline) {
            if (r->take_next_sample(&m, &info) == ReturnCode_t::RETCODE_OK) {
                if (info.valid_data) ++received;
            } else {
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
            }
        }
        std::printf("received %u of %u\n", received, count);
        rc = received == count ? 0 : 1;
    }
    std::printf("participants %d\n", g_participants.load());
    std::fflush(stdout);
    dp->delete_contained_entities();
    DomainParticipantFactory::get_instance()->delete_participant(dp);
    return rc;
}

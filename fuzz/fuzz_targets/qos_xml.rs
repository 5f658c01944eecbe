//! Fuzzes the XML QoS profile loader: any bytes, read as UTF-8 (lossily) and loaded as a
//! QoS document, give profiles or a typed error, never a panic; every profile that loaded
//! resolves for every entity kind (inheritance chains and topic filters included).
#![no_main]

use libfuzzer_sys::fuzz_target;
use tessera::qos_xml::QosProvider;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let Ok(p) = QosProvider::from_str(&text) else {
        return;
    };
    let _ = p.warnings();
    for name in p.profile_names() {
        let _ = p.participant_qos(&name).unwrap();
        let _ = p.topic_qos_for_topic(&name, "SensorTopic").unwrap();
        let _ = p.publisher_qos(&name).unwrap();
        let _ = p.subscriber_qos(&name).unwrap();
        let _ = p.datawriter_qos_for_topic(&name, "SensorTopic").unwrap();
        let _ = p.datareader_qos(&name).unwrap();
    }
});

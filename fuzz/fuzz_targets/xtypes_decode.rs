//! Decodes arbitrary bytes as what peers send the XTypes code: a TypeObject, a
//! PID_TYPE_INFORMATION value (both byte orders), a TypeLookup request and reply. Whatever
//! decodes must re-encode to something that decodes to the same value (TypeObjects: to the
//! same canonical bytes, hashing to the same identifier).
#![no_main]

use libfuzzer_sys::fuzz_target;
use tessera_rtps::xtypes::lookup::{Reply, Request, Return};
use tessera_rtps::xtypes::{TypeInformation, TypeObject};

fuzz_target!(|data: &[u8]| {
    if let Ok(obj) = TypeObject::from_bytes(data) {
        let bytes = obj.to_bytes();
        let again = TypeObject::from_bytes(&bytes).expect("re-encoded object decodes");
        assert_eq!(again, obj);
        assert_eq!(again.identifier(), obj.identifier());
    }
    for big_endian in [false, true] {
        if let Ok(info) = TypeInformation::decode(data, big_endian) {
            let again = TypeInformation::decode(&info.to_bytes(big_endian), big_endian)
                .expect("re-encoded TypeInformation decodes");
            assert_eq!(again, info);
        }
    }
    if let Ok(req) = Request::decode(data) {
        assert_eq!(Request::decode(&req.to_payload()).as_ref(), Ok(&req));
    }
    if let Ok(mut rep) = Reply::decode(data) {
        // Objects of kinds Tessera does not model are reported, not re-encoded.
        if let Return::Types { unsupported, .. } = &mut rep.result {
            unsupported.clear();
        }
        assert_eq!(Reply::decode(&rep.to_payload()).as_ref(), Ok(&rep));
    }
});

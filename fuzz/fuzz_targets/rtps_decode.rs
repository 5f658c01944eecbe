//! Fuzzes the RTPS message decoder.
//!
//! Arbitrary bytes go through `SubmessageIter` and `MessageReceiver` (which must never panic and
//! must stop after their first error); every submessage that decodes is re-encoded with
//! `MessageBuilder` and decoded again, which must give the same value (a DATA payload may gain
//! up to 3 bytes of zero padding, as on the wire).
#![no_main]

use libfuzzer_sys::fuzz_target;
use tessera_rtps::types::GuidPrefix;
use tessera_rtps::wire::{
    pid, Data, DataFrag, MessageBuilder, MessageReceiver, Submessage, SubmessageIter,
};

/// `d` without its payload, for comparing everything else.
fn strip<'a>(d: &Data<'a>) -> Data<'a> {
    Data { payload: &[], ..*d }
}

fn same_after_reencode(a: &Submessage<'_>, b: &Submessage<'_>) -> bool {
    match (a, b) {
        (Submessage::Data(x), Submessage::Data(y)) => {
            strip(x) == strip(y)
                && y.payload.starts_with(x.payload)
                && y.payload.len() - x.payload.len() < 4
                && y.payload[x.payload.len()..].iter().all(|&b| b == 0)
        }
        _ => a == b,
    }
}

/// Calls the accessors the protocol layers use on decoded values; they must not panic either
/// (overflow checks are on in fuzz builds).
fn touch(sm: &Submessage<'_>) {
    match sm {
        Submessage::AckNack(a) => {
            std::hint::black_box(a.reader_sn_state.iter().count());
        }
        Submessage::Gap(g) => {
            std::hint::black_box(g.gap_list.iter().count());
            std::hint::black_box(g.gap_list.contains(g.gap_start));
        }
        Submessage::NackFrag(n) => {
            std::hint::black_box(n.fragment_number_state.iter().count());
        }
        Submessage::Data(Data {
            inline_qos: Some(pl),
            ..
        })
        | Submessage::DataFrag(DataFrag {
            inline_qos: Some(pl),
            ..
        }) => {
            std::hint::black_box(pl.iter().count());
            std::hint::black_box(pl.get(pid::STATUS_INFO));
            // What a reader takes from it: key hash, status, identities, coherent set.
            std::hint::black_box(tessera_rtps::writer::InlineQos::parse(Some(pl)));
        }
        _ => {}
    }
}

fuzz_target!(|data: &[u8]| {
    let mut decoded = Vec::new();
    if let Ok((_, iter)) = SubmessageIter::parse(data) {
        let mut failed = false;
        for item in iter {
            assert!(!failed, "item after an error");
            match item {
                Ok(sm) => {
                    touch(&sm);
                    decoded.push(sm);
                }
                Err(_) => failed = true,
            }
        }
    }
    if let Ok(rx) = MessageReceiver::new(data) {
        let mut failed = false;
        for item in rx {
            assert!(!failed, "receiver item after an error");
            failed = item.is_err();
        }
    }
    if decoded.is_empty() {
        return;
    }

    let mut out = Vec::with_capacity(data.len() + 64);
    let mut builder = MessageBuilder::new(&mut out, GuidPrefix([0x5a; 12]));
    let mut expected_len = builder.len();
    for sm in &decoded {
        builder.submessage(sm);
        expected_len += sm.encoded_len();
        assert_eq!(builder.len(), expected_len, "encoded_len of {sm:?}");
    }
    let (_, iter) = SubmessageIter::parse(&out).expect("own header");
    let again: Vec<_> = iter
        .collect::<Result<_, _>>()
        .expect("re-encoded message decodes");
    assert_eq!(again.len(), decoded.len());
    for (a, b) in decoded.iter().zip(&again) {
        assert!(same_after_reencode(a, b), "{a:?}\n  re-decoded as\n{b:?}");
    }
});

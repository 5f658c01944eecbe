//! `Plain` as `#[derive(TopicType)]` decides it: which types are plain, and what their layout
//! hash tells apart. The negative cases (a `String` member, no `#[repr(C)]`, not `Copy`) are
//! compile-fail doctests on `tessera_rtps::cdr::Plain`.

use tessera::rtps::cdr::{deserialize_sample, serialize_sample, Encoding, Plain};
use tessera::TopicType;

#[derive(TopicType, Clone, Copy, Debug, PartialEq)]
#[repr(C)]
struct Inner {
    a: u16,
    b: [i32; 3],
}

#[derive(TopicType, Clone, Copy, Debug, PartialEq)]
#[repr(C)]
struct Outer {
    seq: u64,
    #[key]
    id: u32,
    inner: Inner,
    grid: [[f32; 4]; 2],
}

/// Same members as `Outer`, in another order.
#[derive(TopicType, Clone, Copy)]
#[topic(type_name = "Outer")]
#[repr(C)]
struct OuterSwapped {
    #[key]
    id: u32,
    seq: u64,
    inner: Inner,
    grid: [[f32; 4]; 2],
}

mod other {
    /// Same name and members as `Outer`, one member of another type.
    #[derive(tessera::TopicType, Clone, Copy)]
    #[topic(type_name = "Outer")]
    #[repr(C)]
    pub struct Outer {
        pub seq: u64,
        #[key]
        pub id: i32,
        pub inner: super::Inner,
        pub grid: [[f32; 4]; 2],
    }

    /// The same layout under the same name: what another process compiles.
    #[derive(tessera::TopicType, Clone, Copy)]
    #[topic(type_name = "Outer")]
    #[repr(C)]
    pub struct Twin {
        pub seq: u64,
        #[key]
        pub id: u32,
        pub inner: super::Inner,
        pub grid: [[f32; 4]; 2],
    }
}

#[derive(TopicType, Clone, Copy)]
#[repr(C, align(64))]
struct Aligned {
    x: u8,
}

fn layout<T: Plain>() -> u64 {
    T::LAYOUT
}

#[test]
fn nested_repr_c_structs_of_plain_members_are_plain() {
    assert_ne!(layout::<Outer>(), 0);
    assert_ne!(layout::<Inner>(), layout::<Outer>());
    assert_ne!(layout::<Aligned>(), 0);
}

#[test]
fn layout_hash_tells_apart_order_member_types_and_alignment() {
    assert_eq!(layout::<Outer>(), layout::<other::Twin>());
    assert_ne!(layout::<Outer>(), layout::<OuterSwapped>());
    assert_ne!(layout::<Outer>(), layout::<other::Outer>());
    #[derive(TopicType, Clone, Copy)]
    #[topic(type_name = "Aligned")]
    #[repr(C)]
    struct Unaligned {
        x: u8,
    }
    assert_ne!(layout::<Aligned>(), layout::<Unaligned>());
}

#[test]
fn plain_types_still_serialize_as_cdr() {
    let v = Outer {
        seq: 7,
        id: 3,
        inner: Inner {
            a: 9,
            b: [1, -2, 3],
        },
        grid: [[0.5; 4], [1.5; 4]],
    };
    let mut bytes = Vec::new();
    serialize_sample(&v, Encoding::XCDR1_LE, &mut bytes);
    assert_eq!(deserialize_sample::<Outer>(&bytes).unwrap(), v);
}

#[test]
fn plain_layout_is_zero_for_types_that_are_not_plain() {
    use tessera::rtps::cdr::CdrType;
    #[derive(TopicType, Clone)]
    #[repr(C)]
    struct Named {
        id: u32,
        name: String,
    }
    #[derive(TopicType, Clone, Copy)]
    struct Loose {
        id: u32,
    }
    #[derive(TopicType, Clone, Copy)]
    #[repr(C)]
    struct Flag {
        on: bool,
    }
    assert_eq!(Named::PLAIN_LAYOUT, 0);
    assert_eq!(Loose::PLAIN_LAYOUT, 0);
    assert_eq!(Flag::PLAIN_LAYOUT, 0);
    assert_eq!(<Outer as CdrType>::PLAIN_LAYOUT, layout::<Outer>());
}

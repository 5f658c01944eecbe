//! Assignability of minimal types (DDS-XTypes 1.3 §7.2.4) under TypeConsistencyEnforcement.

use std::collections::HashMap;
use std::sync::Arc;

use tessera_rtps::qos::{TypeConsistencyEnforcement, TypeConsistencyKind};
use tessera_rtps::xtypes::{
    assignable, shape_type, Assignability, EnumDesc, Extensibility, MemberDesc, Primitive,
    StructDesc, TypeBundle, TypeDesc, TypeIdentifier, TypeObject,
};

/// The minimal identifiers of `descs` and a resolver knowing all their objects.
fn library(descs: &[TypeDesc]) -> (Vec<TypeIdentifier>, HashMap<Vec<u8>, TypeObject>) {
    let mut ids = Vec::new();
    let mut objects = HashMap::new();
    for d in descs {
        let b = TypeBundle::new(d);
        ids.push(b.minimal.clone());
        for (key, (_, bytes)) in &b.objects {
            objects.insert(key.clone(), TypeObject::from_bytes(bytes).unwrap());
        }
    }
    (ids, objects)
}

fn check(
    reader: &TypeDesc,
    writer: &TypeDesc,
    policy: &TypeConsistencyEnforcement,
) -> Assignability {
    let (ids, objects) = library(&[reader.clone(), writer.clone()]);
    assignable(&ids[0], &ids[1], policy, &|id| {
        objects.get(&id.to_bytes()).cloned()
    })
}

fn strukt(name: &str, ext: Extensibility, members: Vec<MemberDesc>) -> TypeDesc {
    TypeDesc::Struct(Arc::new(StructDesc {
        name: name.into(),
        extensibility: ext,
        members,
    }))
}

fn i32m(name: &str, id: u32) -> MemberDesc {
    MemberDesc::new(name, id, TypeDesc::Primitive(Primitive::Int32))
}

fn allow() -> TypeConsistencyEnforcement {
    TypeConsistencyEnforcement::default()
}

use Assignability::{Assignable, NotAssignable};
use Extensibility::{Appendable, Final, Mutable};

#[test]
fn identical_types_and_disallow_coercion() {
    assert_eq!(check(&shape_type(), &shape_type(), &allow()), Assignable);
    let a = strukt("A", Appendable, vec![i32m("x", 0)]);
    let b = strukt("A", Appendable, vec![i32m("x", 0), i32m("y", 1)]);
    let disallow = TypeConsistencyEnforcement {
        kind: TypeConsistencyKind::DisallowTypeCoercion,
        ..allow()
    };
    assert_eq!(check(&a, &b, &disallow), NotAssignable);
    assert_eq!(check(&a, &a, &disallow), Assignable);
}

#[test]
fn appendable_types_share_a_prefix_and_may_append() {
    let short = strukt("A", Appendable, vec![i32m("x", 0)]);
    let long = strukt("A", Appendable, vec![i32m("x", 0), i32m("y", 1)]);
    assert_eq!(check(&short, &long, &allow()), Assignable);
    assert_eq!(check(&long, &short, &allow()), Assignable);
    // A different member type in the prefix, or a different name.
    let other = strukt(
        "A",
        Appendable,
        vec![MemberDesc::new(
            "x",
            0,
            TypeDesc::Primitive(Primitive::Int16),
        )],
    );
    assert_eq!(check(&short, &other, &allow()), NotAssignable);
    let renamed = strukt("A", Appendable, vec![i32m("z", 0)]);
    assert_eq!(check(&short, &renamed, &allow()), NotAssignable);
    let ignore_names = TypeConsistencyEnforcement {
        ignore_member_names: true,
        ..allow()
    };
    assert_eq!(check(&short, &renamed, &ignore_names), Assignable);
    // Extensibility must agree.
    let fin = strukt("A", Final, vec![i32m("x", 0)]);
    assert_eq!(check(&short, &fin, &allow()), NotAssignable);
}

#[test]
fn final_types_need_the_same_members() {
    let a = strukt("F", Final, vec![i32m("x", 0)]);
    let b = strukt("F", Final, vec![i32m("x", 0), i32m("y", 1)]);
    assert_eq!(check(&a, &b, &allow()), NotAssignable);
}

#[test]
fn mutable_types_match_members_by_id() {
    let r = strukt("M", Mutable, vec![i32m("a", 1), i32m("b", 2)]);
    let w = strukt("M", Mutable, vec![i32m("b", 2), i32m("c", 3), i32m("a", 1)]);
    assert_eq!(check(&r, &w, &allow()), Assignable);
    // No member in common.
    let disjoint = strukt("M", Mutable, vec![i32m("z", 9)]);
    assert_eq!(check(&r, &disjoint, &allow()), NotAssignable);
    // A key on one side only.
    let keyed = strukt("M", Mutable, vec![i32m("a", 1), i32m("k", 5).key()]);
    assert_eq!(check(&r, &keyed, &allow()), NotAssignable);
    // prevent_type_widening: one-sided non-optional members are refused.
    let strict = TypeConsistencyEnforcement {
        prevent_type_widening: true,
        ..allow()
    };
    assert_eq!(check(&r, &w, &strict), NotAssignable);
}

#[test]
fn bounds_count_unless_ignored() {
    let s = |bound| {
        strukt(
            "S",
            Final,
            vec![MemberDesc::new("s", 0, TypeDesc::String { bound })],
        )
    };
    let strict = TypeConsistencyEnforcement {
        ignore_string_bounds: false,
        ..allow()
    };
    assert_eq!(check(&s(10), &s(20), &allow()), Assignable);
    assert_eq!(check(&s(10), &s(20), &strict), NotAssignable);
    assert_eq!(check(&s(20), &s(10), &strict), Assignable);
    assert_eq!(
        check(&s(0), &s(10), &strict),
        Assignable,
        "unbounded takes any"
    );
    assert_eq!(check(&s(10), &s(0), &strict), NotAssignable);
}

#[test]
fn nested_types_and_enums() {
    let color = |lits: Vec<(&str, i32)>, ext| {
        TypeDesc::Enum(Arc::new(EnumDesc {
            name: "C".into(),
            extensibility: ext,
            bit_bound: 32,
            literals: lits.into_iter().map(|(n, v)| (n.to_owned(), v)).collect(),
        }))
    };
    let holder = |e: TypeDesc| strukt("H", Appendable, vec![MemberDesc::new("c", 0, e)]);
    let two = color(vec![("RED", 0), ("GREEN", 1)], Final);
    assert_eq!(
        check(&holder(two.clone()), &holder(two.clone()), &allow()),
        Assignable
    );
    let three = color(vec![("RED", 0), ("GREEN", 1), ("BLUE", 2)], Final);
    assert_eq!(check(&holder(two), &holder(three), &allow()), NotAssignable);
    let two_a = color(vec![("RED", 0), ("GREEN", 1)], Appendable);
    let three_a = color(vec![("RED", 0), ("GREEN", 1), ("BLUE", 2)], Appendable);
    assert_eq!(
        check(&holder(two_a.clone()), &holder(three_a), &allow()),
        Assignable
    );
    let renamed = color(vec![("RED", 0), ("VERT", 1)], Appendable);
    assert_eq!(
        check(&holder(two_a), &holder(renamed), &allow()),
        NotAssignable
    );
}

#[test]
fn unknown_types_are_reported_unresolved() {
    let inner = |extra: bool| {
        let mut m = vec![i32m("x", 0)];
        if extra {
            m.push(i32m("y", 1));
        }
        strukt("I", Appendable, m)
    };
    let outer = |i| strukt("O", Appendable, vec![MemberDesc::new("i", 0, i)]);
    let (ids, objects) = library(&[outer(inner(false)), outer(inner(true))]);
    // The resolver knows the reader's objects only.
    let reader_objects = TypeBundle::new(&outer(inner(false))).objects;
    let resolve = |id: &TypeIdentifier| {
        reader_objects
            .get(&id.to_bytes())
            .map(|(_, b)| TypeObject::from_bytes(b).unwrap())
    };
    match assignable(&ids[0], &ids[1], &allow(), &resolve) {
        Assignability::Unresolved(missing) => assert_eq!(missing, vec![ids[1].clone()]),
        other => panic!("{other:?}"),
    }
    // With everything known, the appended member is fine.
    let all = |id: &TypeIdentifier| objects.get(&id.to_bytes()).cloned();
    assert_eq!(assignable(&ids[0], &ids[1], &allow(), &all), Assignable);
}

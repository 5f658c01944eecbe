//! The loan pool on private memory (protocol, validation) and on `/dev/shm` (files, reclaim,
//! a reader process killed while it holds chunks).

use super::*;
use crate::transport::shm;
use crate::transport::shm::tests::TestDir;
use std::time::{Duration, Instant};

const LAYOUT: u64 = 0x1234_5678_9abc_def0;
const SIZE: usize = 24;

fn pool(chunks: u32) -> Pool {
    let geo = PoolGeometry::new(chunks, SIZE, 8).unwrap();
    Pool::init(
        Region::heap(geo.total_len()),
        geo,
        Owner::default(),
        7,
        LAYOUT,
    )
    .unwrap()
}

fn write(pool: &Pool, chunk: u32, fill: u8) {
    // SAFETY: the chunk is claimed by this writer (WRITER_BIT) and SIZE bytes long.
    unsafe { std::ptr::write_bytes(pool.payload_ptr(chunk).as_ptr(), fill, SIZE) };
}

fn read(pool: &Pool, chunk: u32) -> Vec<u8> {
    let mut v = vec![0u8; SIZE];
    // SAFETY: in bounds of the chunk; private destination.
    unsafe {
        std::ptr::copy_nonoverlapping(pool.payload_ptr(chunk).as_ptr(), v.as_mut_ptr(), SIZE)
    };
    v
}

#[test]
fn geometry_out_of_range_is_refused() {
    assert!(PoolGeometry::new(0, 8, 8).is_none());
    assert!(PoolGeometry::new(4, 8, 128).is_none());
    assert!(PoolGeometry::new(4, 8, 3).is_none());
    assert!(PoolGeometry::new(MAX_CHUNKS + 1, 8, 8).is_none());
    assert!(PoolGeometry::new(4, MAX_PAYLOAD as usize + 1, 8).is_none());
    let g = PoolGeometry::new(4, 4 << 20, 64).unwrap();
    assert_eq!(g.payload(), 4 << 20);
    assert!(g.total_len() >= POOL_HEADER + 4 * (4 << 20));
}

#[test]
fn attach_validates_the_header() {
    let p = pool(4);
    let mut image = vec![0u8; p.geometry().total_len()];
    p.copy_to(&mut image);
    let q = Pool::attach(Region::from_bytes(&image)).unwrap();
    assert_eq!(
        (q.geometry(), q.layout(), q.id()),
        (p.geometry(), LAYOUT, 7)
    );

    let patched = |off: usize, bytes: &[u8]| {
        let mut im = image.clone();
        im[off..off + bytes.len()].copy_from_slice(bytes);
        Pool::attach(Region::from_bytes(&im)).err()
    };
    assert_eq!(patched(0, b"TSRSHM01"), Some(SegmentError::BadMagic));
    assert_eq!(
        patched(8, &2u32.to_ne_bytes()),
        Some(SegmentError::Version(2))
    );
    assert_eq!(
        patched(16, &0u32.to_ne_bytes()),
        Some(SegmentError::Geometry)
    );
    assert_eq!(
        patched(20, &65u32.to_ne_bytes()),
        Some(SegmentError::Geometry)
    );
    assert_eq!(
        patched(28, &256u32.to_ne_bytes()),
        Some(SegmentError::Geometry)
    );
    // More chunks than the image holds.
    assert_eq!(
        patched(16, &5u32.to_ne_bytes()),
        Some(SegmentError::TooSmall)
    );
    assert_eq!(
        Pool::attach(Region::from_bytes(&image[..100])).err(),
        Some(SegmentError::TooSmall)
    );
}

#[test]
fn a_loan_travels_and_its_chunk_is_reused_only_when_no_one_holds_it() {
    let p = pool(2);
    let mut alloc = ChunkAlloc::new(2);
    let slot = p.register_reader(reader_tag(1, 1)).unwrap();
    let mut holds = Holds::default();

    let c = alloc.loan(&p).unwrap();
    // Being filled: a reference to it (of the generation it will get) is refused.
    let early = LoanRef {
        domain: 0,
        pool: 7,
        chunk: c,
        generation: 1,
        len: SIZE as u32,
        layout: LAYOUT,
    };
    assert_eq!(
        holds.acquire(&p, slot, &early, SIZE, LAYOUT),
        Err(Refused::Stale)
    );
    write(&p, c, 0xa1);
    let r = alloc.publish(&p, c);
    assert_eq!(r, early);
    holds.acquire(&p, slot, &r, SIZE, LAYOUT).unwrap();
    assert_eq!(read(&p, c), vec![0xa1; SIZE]);

    // The writer's history lets go; the reader still holds it: not handed out again.
    alloc.release(&p, c);
    let d = alloc.loan(&p).unwrap();
    assert_ne!(c, d);
    alloc.release(&p, d);
    let again = alloc.loan(&p).unwrap();
    assert_eq!(again, d, "the held chunk was skipped");
    assert_eq!(
        alloc.loan(&p),
        None,
        "one held by the writer, one by a reader"
    );
    assert_eq!(read(&p, c), vec![0xa1; SIZE]);

    // The reader lets go: the chunk is reused under a new generation, the old reference
    // becomes stale.
    holds.release(&p, slot, c);
    assert!(holds.is_empty());
    let reused = alloc.loan(&p).unwrap();
    assert_eq!(reused, c);
    write(&p, c, 0xb2);
    let r2 = alloc.publish(&p, c);
    assert_eq!(r2.generation, 2);
    assert_eq!(
        holds.acquire(&p, slot, &r, SIZE, LAYOUT),
        Err(Refused::Stale)
    );
    holds.acquire(&p, slot, &r2, SIZE, LAYOUT).unwrap();
    assert_eq!(read(&p, c), vec![0xb2; SIZE]);
}

#[test]
fn bad_references_are_refused_without_taking_hold() {
    let p = pool(2);
    let mut alloc = ChunkAlloc::new(2);
    let slot = p.register_reader(reader_tag(1, 1)).unwrap();
    let c = alloc.loan(&p).unwrap();
    let good = alloc.publish(&p, c);
    let mut holds = Holds::default();
    let cases = [
        (
            LoanRef { pool: 8, ..good },
            SIZE,
            LAYOUT,
            Refused::WrongPool,
        ),
        (
            LoanRef { chunk: 2, ..good },
            SIZE,
            LAYOUT,
            Refused::ChunkRange,
        ),
        (
            LoanRef {
                chunk: u32::MAX,
                ..good
            },
            SIZE,
            LAYOUT,
            Refused::ChunkRange,
        ),
        (LoanRef { len: 23, ..good }, SIZE, LAYOUT, Refused::Length),
        (good, SIZE + 8, LAYOUT, Refused::Length),
        (LoanRef { layout: 1, ..good }, SIZE, LAYOUT, Refused::Layout),
        (LoanRef { layout: 1, ..good }, SIZE, 1, Refused::Layout),
        (
            LoanRef {
                generation: 0,
                ..good
            },
            SIZE,
            LAYOUT,
            Refused::Stale,
        ),
        (
            LoanRef {
                generation: 9,
                ..good
            },
            SIZE,
            LAYOUT,
            Refused::Stale,
        ),
    ];
    for (r, size, layout, why) in cases {
        assert_eq!(holds.acquire(&p, slot, &r, size, layout), Err(why), "{r:?}");
    }
    assert!(holds.is_empty());
    // No bit was left behind: once the writer lets go, the chunk is free again.
    alloc.release(&p, c);
    assert_eq!(alloc.loan(&p), Some(1));
    assert_eq!(alloc.loan(&p), Some(c));
}

#[test]
fn holds_of_one_process_share_one_bit() {
    let p = pool(1);
    let mut alloc = ChunkAlloc::new(1);
    let slot = p.register_reader(reader_tag(1, 1)).unwrap();
    let c = alloc.loan(&p).unwrap();
    let r = alloc.publish(&p, c);
    alloc.release(&p, c);
    let mut holds = Holds::default();
    holds.acquire(&p, slot, &r, SIZE, LAYOUT).unwrap();
    holds.acquire(&p, slot, &r, SIZE, LAYOUT).unwrap();
    // A refused third acquire (stale generation) must not clear the bit the others hold.
    let stale = LoanRef { generation: 5, ..r };
    assert!(holds.acquire(&p, slot, &stale, SIZE, LAYOUT).is_err());
    holds.release(&p, slot, c);
    assert_eq!(alloc.loan(&p), None, "one hold left");
    holds.release(&p, slot, c);
    assert_eq!(alloc.loan(&p), Some(c));
}

#[test]
fn reader_slots_are_bounded_and_dead_readers_bits_are_cleared() {
    let p = pool(2);
    let mut alloc = ChunkAlloc::new(2);
    let slots: Vec<u32> = (1..=READER_SLOTS)
        .map(|i| p.register_reader(reader_tag(i, 0)).unwrap())
        .collect();
    assert_eq!(p.register_reader(reader_tag(999, 0)), None, "all taken");
    assert_eq!(p.register_reader(0), None);
    // Reader 5 takes hold of both chunks, then "dies".
    let mut holds = Holds::default();
    for _ in 0..2 {
        let c = alloc.loan(&p).unwrap();
        let r = alloc.publish(&p, c);
        alloc.release(&p, c);
        holds.acquire(&p, slots[4], &r, SIZE, LAYOUT).unwrap();
    }
    assert_eq!(alloc.loan(&p), None);
    let dead = reader_tag(5, 0);
    assert_eq!(alloc.clear_dead_readers(&p, |t| t != dead), 1);
    assert!(alloc.loan(&p).is_some());
    assert!(alloc.loan(&p).is_some());
    // Its slot is free for a newcomer.
    assert_eq!(p.register_reader(reader_tag(1000, 0)), Some(slots[4]));
}

#[test]
fn loan_refs_round_trip() {
    let r = LoanRef {
        domain: 230,
        pool: 0xdead_beef,
        chunk: 3,
        generation: u64::MAX - 1,
        len: 65536,
        layout: LAYOUT,
    };
    assert_eq!(LoanRef::decode(&r.encode()), Some(r));
    assert_eq!(LoanRef::decode(&r.encode()[..31]), None);
}

#[test]
fn reader_tags_tell_live_processes_from_dead_ones() {
    assert!(reader_alive(own_reader_tag()));
    assert!(!reader_alive(own_reader_tag() ^ 1), "another start time");
    assert!(!reader_alive(0));
    assert!(!reader_alive(reader_tag(u32::MAX - 1, 0)));
}

#[test]
fn a_pool_file_is_private_opens_validated_and_goes_with_its_writer() {
    use std::os::unix::fs::PermissionsExt;
    let dir = TestDir::new("file");
    let geo = PoolGeometry::new(3, SIZE, 8).unwrap();
    let own = OwnPool::create(&dir.0, 5, 42, geo, LAYOUT).unwrap();
    let mode = std::fs::metadata(own.path()).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let id = own.pool().id();
    assert_eq!(dir.files(), vec![pool_name(5, id)]);

    let seen = open_pool(&dir.0, 5, id).unwrap();
    assert_eq!((seen.geometry(), seen.layout()), (geo, LAYOUT));
    assert!(pool_owner_alive(&seen));
    assert!(open_pool(&dir.0, 6, id).is_err(), "another domain's name");

    // A live writer's pool survives a reclaim.
    assert_eq!(shm::reclaim_dead_segments(&dir.0).removed, 0);
    drop(own);
    assert!(seen.is_closed());
    assert!(dir.files().is_empty());
}

#[test]
fn an_unlinked_pool_is_closed_stays_mapped_and_its_drop_spares_a_new_file_of_its_name() {
    let dir = TestDir::new("unlink");
    let geo = PoolGeometry::new(3, SIZE, 8).unwrap();
    let own = OwnPool::create(&dir.0, 5, 42, geo, LAYOUT).unwrap();
    let seen = open_pool(&dir.0, 5, own.pool().id()).unwrap();
    assert!(!seen.is_closed());
    own.unlink();
    own.unlink();
    assert!(dir.files().is_empty(), "the file goes at once");
    // Closed at once, so that a reader letting go of its last chunk unmaps it; the mappings
    // themselves stay.
    assert!(seen.is_closed());
    assert!(own.pool().is_closed());
    // A name is free again once unlinked: the drop must not remove what now holds it.
    std::fs::write(own.path(), b"another pool").unwrap();
    drop(own);
    assert_eq!(dir.files().len(), 1);
}

const CHILD_DIR: &str = "TESSERA_POOL_TEST_CHILD_DIR";
const CHILD_ID: &str = "TESSERA_POOL_TEST_CHILD_ID";

/// Not a test of its own: the reader process of the kill -9 test. It takes hold of every
/// chunk of the pool its parent names, says so, and waits to be killed. Without the parent's
/// variables it returns at once.
#[test]
#[ignore = "child process of a_reader_killed_while_holding_loans_does_not_wedge_the_writer"]
fn child_holds_loans() {
    let (Ok(dir), Ok(id)) = (std::env::var(CHILD_DIR), std::env::var(CHILD_ID)) else {
        return;
    };
    let pool = open_pool(Path::new(&dir), 5, id.parse().unwrap()).unwrap();
    let slot = pool.register_reader(own_reader_tag()).unwrap();
    let mut holds = Holds::default();
    for line in std::io::stdin().lines() {
        let r = LoanRef::decode(&hex_decode(&line.unwrap())).unwrap();
        holds.acquire(&pool, slot, &r, SIZE, LAYOUT).unwrap();
        println!("held {}", r.chunk);
    }
    std::thread::sleep(Duration::from_secs(60));
}

fn hex_decode(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

#[test]
fn a_reader_killed_while_holding_loans_does_not_wedge_the_writer() {
    use std::io::{BufRead, Write};
    use std::process::{Command, Stdio};
    let dir = TestDir::new("kill9");
    let geo = PoolGeometry::new(2, SIZE, 8).unwrap();
    let own = OwnPool::create(&dir.0, 5, 42, geo, LAYOUT).unwrap();
    let p = own.pool();
    let mut alloc = ChunkAlloc::new(2);
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "transport::shm_pool::tests::child_holds_loans",
            "--exact",
            "--ignored",
            "--nocapture",
        ])
        .env(CHILD_DIR, &dir.0)
        .env(CHILD_ID, p.id().to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut to_child = child.stdin.take().unwrap();
    let mut from_child = std::io::BufReader::new(child.stdout.take().unwrap());
    for fill in [1u8, 2] {
        let c = alloc.loan(p).unwrap();
        write(p, c, fill);
        let r = alloc.publish(p, c);
        alloc.release(p, c);
        let hex: String = r.encode().iter().map(|b| format!("{b:02x}")).collect();
        writeln!(to_child, "{hex}").unwrap();
        let mut line = String::new();
        let deadline = Instant::now() + Duration::from_secs(20);
        while !line.starts_with("held") {
            line.clear();
            assert!(from_child.read_line(&mut line).unwrap() > 0, "child ended");
            assert!(Instant::now() < deadline);
        }
    }
    // Both chunks held by a live reader: the writer must wait (KEEP_ALL back-pressure).
    assert_eq!(alloc.loan(p), None);
    assert_eq!(alloc.clear_dead_readers(p, reader_alive), 0);

    // SAFETY: kill has no memory preconditions; the pid is our own child's, not yet reaped.
    assert_eq!(
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGKILL) },
        0
    );
    child.wait().unwrap();
    assert_eq!(alloc.clear_dead_readers(p, reader_alive), 1);
    assert!(alloc.loan(p).is_some());
    assert!(alloc.loan(p).is_some());
    drop(own);
    assert!(dir.files().is_empty(), "{:?}", dir.files());
}

#[test]
fn pools_of_dead_writers_are_reclaimed() {
    let dir = TestDir::new("reclaim");
    let geo = PoolGeometry::new(1, SIZE, 8).unwrap();
    let live = OwnPool::create(&dir.0, 5, 42, geo, LAYOUT).unwrap();
    // A pool whose header names a process that is gone (our pid, another start time).
    let dead = OwnPool::create(&dir.0, 5, 42, geo, LAYOUT).unwrap();
    dead.pool()
        .region
        .u64_at(OFF_OWNER_START)
        .fetch_add(1, Ordering::Relaxed);
    let dead_path = dead.path().to_owned();
    // Keep the file, as a killed writer does.
    std::mem::forget(dead);
    assert_eq!(dir.files().len(), 2);
    let r = shm::reclaim_dead_segments(&dir.0);
    assert_eq!((r.removed, r.kept), (1, 1));
    assert!(!dead_path.exists());
    drop(live);
    assert!(dir.files().is_empty());
}

#[test]
fn a_held_chunk_is_never_rewritten_under_its_reader() {
    use std::sync::Arc;
    let p = Arc::new(pool(4));
    let latest = Arc::new(AtomicU64::new(0));
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (p, latest, done) = (p.clone(), latest.clone(), done.clone());
        std::thread::spawn(move || {
            let mut alloc = ChunkAlloc::new(4);
            let mut n = 0u32;
            while !done.load(Ordering::SeqCst) {
                let Some(c) = alloc.loan(&p) else {
                    std::thread::yield_now();
                    continue;
                };
                n += 1;
                write(&p, c, n as u8);
                let r = alloc.publish(&p, c);
                // Chunk and generation in one word for the reader thread.
                latest.store((r.generation << 8) | u64::from(c), Ordering::SeqCst);
                alloc.release(&p, c);
            }
            n
        })
    };
    let slot = p.register_reader(reader_tag(1, 1)).unwrap();
    let mut holds = Holds::default();
    let (mut taken, mut stale) = (0u32, 0u32);
    let deadline = Instant::now() + Duration::from_secs(10);
    while taken < 5_000 && Instant::now() < deadline {
        let w = latest.load(Ordering::SeqCst);
        if w == 0 {
            continue;
        }
        let r = LoanRef {
            domain: 0,
            pool: 7,
            chunk: (w & 0xff) as u32,
            generation: w >> 8,
            len: SIZE as u32,
            layout: LAYOUT,
        };
        match holds.acquire(&p, slot, &r, SIZE, LAYOUT) {
            Ok(()) => {
                let first = read(&p, r.chunk);
                std::thread::yield_now();
                let again = read(&p, r.chunk);
                assert_eq!(first, again, "rewritten while held");
                assert!(first.iter().all(|b| *b == first[0]), "torn: {first:?}");
                holds.release(&p, slot, r.chunk);
                taken += 1;
            }
            Err(Refused::Stale) => stale += 1,
            Err(e) => panic!("{e}"),
        }
    }
    done.store(true, Ordering::SeqCst);
    let written = writer.join().unwrap();
    assert_eq!(
        taken, 5_000,
        "taken {taken}, stale {stale}, written {written}"
    );
}

#[test]
fn a_pool_of_serialized_samples_takes_any_length_up_to_its_chunks() {
    let geo = PoolGeometry::new(2, 100, 8).unwrap();
    let p = Pool::init(
        Region::heap(geo.total_len()),
        geo,
        Owner::default(),
        9,
        CDR_LAYOUT,
    )
    .unwrap();
    let mut alloc = ChunkAlloc::new(2);
    let c = alloc.loan(&p).unwrap();
    let bytes: Vec<u8> = (0..60).collect();
    p.fill(c, &bytes);
    let r = alloc.publish_len(&p, c, 60);
    assert_eq!((r.len, r.layout), (60, CDR_LAYOUT));
    p.acquire(&r, 0, 0, CDR_LAYOUT, false).unwrap();
    let mut out = vec![0xff];
    p.append_payload(c, r.len as usize, &mut out);
    assert_eq!(out[1..], bytes[..]);
    p.release(c, 0);
    // Longer than a chunk, or claimed as a plain type's: refused.
    let long = LoanRef { len: 101, ..r };
    assert_eq!(
        p.acquire(&long, 0, 0, CDR_LAYOUT, false),
        Err(Refused::Length)
    );
    let whole = LoanRef { len: 100, ..r };
    assert_eq!(
        p.acquire(&whole, 0, 100, LAYOUT, false),
        Err(Refused::Layout)
    );
    // A plain pool is not read as serialized bytes, whatever the reference says.
    let plain = pool(2);
    let r2 = LoanRef {
        pool: 7,
        domain: 0,
        len: 20,
        ..r
    };
    assert_eq!(
        plain.acquire(&r2, 0, 20, CDR_LAYOUT, false),
        Err(Refused::Layout)
    );
    // A length never exceeds the chunk, whatever the writer asks.
    let c2 = alloc.loan(&p).unwrap();
    assert_eq!(alloc.publish_len(&p, c2, 1000).len, 100);
}

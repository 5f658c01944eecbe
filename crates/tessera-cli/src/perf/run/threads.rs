//! The run's service threads: the reader threads of the waitset and polling modes, the
//! signal thread, and the start of the data-path threads.

use super::*;

/// A thread servicing `reader` after waitset triggers (or by polling every 1 ms).
fn spawn_reader_thread<T: PerfIo>(
    name: &str,
    ctx: Arc<Ctx<T>>,
    role: ReaderRole,
    reader: DataReader<T>,
    polling: bool,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name(name.to_string())
        .spawn(move || {
            let mut buf = SampleBuffer::new();
            if polling {
                while !ctx.stopping() {
                    if process(&ctx, role, &reader, &mut buf) == 0 {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
                return;
            }
            let mut ws = WaitSet::new();
            ws.attach(&reader.create_readcondition(StateMasks::ANY));
            ws.attach(&ctx.guard.condition());
            let mut active = Vec::new();
            while !ctx.stopping() {
                let _ = ws.wait_into(&mut active, Some(Duration::from_secs(1)));
                while !ctx.stopping() && process(&ctx, role, &reader, &mut buf) > 0 {}
            }
        })
}

/// Blocks SIGINT, SIGTERM and SIGHUP in the calling thread (and so in every thread started
/// after it) and starts a thread that waits for them and requests the end of the run.
pub(super) fn block_signals() -> Option<libc::sigset_t> {
    // SAFETY: sigset_t is plain data; sigemptyset/sigaddset initialise it, and
    // pthread_sigmask only changes this thread's signal mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::sigaddset(&mut set, libc::SIGHUP);
        if libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
            return None;
        }
        Some(set)
    }
}

pub(super) fn spawn_signal_thread(set: libc::sigset_t, on_signal: impl Fn() + Send + 'static) {
    let _ = std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            let mut sig: libc::c_int = 0;
            // SAFETY: `set` is an initialised signal set and `sig` a valid out-pointer.
            if unsafe { libc::sigwait(&set, &mut sig) } == 0 {
                on_signal();
            }
        });
}

/// Starts the data-path threads (publisher, subscriber/ping/pong service threads) or
/// switches on the data listener.
pub(super) fn start_threads<T: PerfIo>(
    ctx: &Arc<Ctx<T>>,
    data_reader: &Option<DataReader<T>>,
    data_writer: &DataWriter<T>,
    ping_reader: &DataReader<T>,
    pong_reader: &DataReader<T>,
) -> std::io::Result<Vec<JoinHandle<()>>> {
    let cfg = &ctx.cfg;
    let mut threads = Vec::new();
    if let (Some(mode), Some(r)) = (cfg.sub, data_reader) {
        match mode {
            SubMode::Listener => {
                ctx.data_on.store(true, Ordering::Release);
                // Samples that arrived before the listener was switched on.
                let mut buf = SampleBuffer::new();
                while ctx.process_data(r, &mut buf) > 0 {}
            }
            SubMode::Waitset | SubMode::Polling => threads.push(spawn_reader_thread(
                "sub",
                ctx.clone(),
                ReaderRole::Data,
                r.clone(),
                mode == SubMode::Polling,
            )?),
        }
    }
    if cfg.pingpong_uses_waitset() {
        threads.push(spawn_reader_thread(
            "ping",
            ctx.clone(),
            ReaderRole::Pong,
            pong_reader.clone(),
            false,
        )?);
        threads.push(spawn_reader_thread(
            "pong",
            ctx.clone(),
            ReaderRole::Ping,
            ping_reader.clone(),
            false,
        )?);
    }
    if cfg.publishes() {
        let c = ctx.clone();
        let w = data_writer.clone();
        threads.push(
            std::thread::Builder::new()
                .name("pub".into())
                .spawn(move || publish(&c, &w))?,
        );
    }
    Ok(threads)
}

//! The federated architecture in throughput points: a node service (`tessera node`) on every
//! host of the point, every Tessera process of the point attached to its host's node
//! (`TESSERA_NODE=1`), and the datagrams that cross the LAN counted apart from loopback (an
//! application reaches its node over shared memory and loopback, which never leave the host).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::Context as _;

use super::{secs, wait_for_line, Capture, Ctx, Implementation, Topology, Traffic, Worker};

/// Datagrams and bytes the hosts' LAN interfaces transmitted so far (`/proc/net/dev`'s
/// transmit packets and bytes of each host's own interface; loopback excluded).
pub(super) fn link_traffic(topo: &Topology) -> Option<Traffic> {
    let mut total = Traffic::default();
    for (h, host) in topo.hosts().iter().enumerate() {
        let out = topo.command(h, "cat").arg("/proc/net/dev").output().ok()?;
        let t = parse_link(&String::from_utf8_lossy(&out.stdout), &host.iface)?;
        total.datagrams += t.datagrams;
        total.bytes += t.bytes;
    }
    Some(total)
}

/// `iface`'s transmitted packets and bytes in `/proc/net/dev` text.
fn parse_link(text: &str, iface: &str) -> Option<Traffic> {
    let (_, rest) = text
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(name, _)| name.trim() == iface)?;
    // 8 receive fields, then transmit bytes and packets.
    let mut f = rest.split_whitespace().skip(8);
    let bytes = f.next()?.parse().ok()?;
    let datagrams = f.next()?.parse().ok()?;
    Some(Traffic { datagrams, bytes })
}

/// The node services of one point. Dropped on any path (an error included), it detaches the
/// context and stops them.
pub(super) struct Nodes<'c, 'a> {
    ctx: &'c Ctx<'a>,
    workers: Vec<Worker>,
    /// The host of each of `workers`.
    hosts: Vec<usize>,
    /// Nodes killed by [`Nodes::kill`], kept for their figures.
    killed: Vec<Worker>,
}

impl<'c, 'a> Nodes<'c, 'a> {
    pub(super) fn new(ctx: &'c Ctx<'a>) -> Self {
        Nodes {
            ctx,
            workers: Vec::new(),
            hosts: Vec::new(),
            killed: Vec::new(),
        }
    }

    /// Starts `tessera node` on host 0 and the hosts of `readers` readers, and waits until
    /// each serves; the Tessera processes the context starts from now on until
    /// [`Nodes::detach`] attach to them.
    pub(super) fn start(&mut self, topo: &Topology, readers: usize) -> anyhow::Result<()> {
        let mut hosts: Vec<usize> = (0..readers).map(|i| Ctx::reader_host(topo, i)).collect();
        hosts.push(0);
        hosts.sort_unstable();
        hosts.dedup();
        for h in hosts {
            self.start_one(topo, h)?;
        }
        self.ctx.attach_to_node.set(true);
        Ok(())
    }

    /// Starts host `h`'s node and waits until it serves.
    fn start_one(&mut self, topo: &Topology, h: usize) -> anyhow::Result<()> {
        let mut cmd = topo.command(h, &self.ctx.opts.tessera_exe);
        cmd.args(["node", "--stats", "0"]);
        // The node reaches its applications by shared memory, the LAN by UDP.
        cmd.env("TESSERA_TRANSPORTS", "udp4,shm");
        let node = Ctx::spawn_worker(
            cmd,
            &format!("node{h}"),
            Implementation::Tessera,
            Capture::Lines,
        )?;
        // An application that finds no node runs decentralized: never start one early.
        wait_for_line(&node, "tessera node: serving", secs(10.0))
            .with_context(|| format!("the node service on host {h} did not start"))?;
        self.workers.push(node);
        self.hosts.push(h);
        Ok(())
    }

    /// Kills host `h`'s node with SIGKILL, as a crash would; false when none runs there.
    pub(super) fn kill(&mut self, h: usize) -> bool {
        let Some(i) = self.hosts.iter().position(|&x| x == h) else {
            return false;
        };
        self.hosts.remove(i);
        let mut w = self.workers.remove(i);
        w.proc.kill();
        self.killed.push(w);
        true
    }

    /// Starts host `h`'s node again after [`Nodes::kill`].
    pub(super) fn restart(&mut self, topo: &Topology, h: usize) -> anyhow::Result<()> {
        self.start_one(topo, h)
    }

    /// Processes started from now on run decentralized again.
    pub(super) fn detach(&self) {
        self.ctx.attach_to_node.set(false);
    }

    pub(super) fn pids(&self) -> Vec<u32> {
        self.workers.iter().map(|w| w.proc.pid()).collect()
    }

    /// Attaches a Tessera process to its host's node: shared memory to the node, which does
    /// the networking.
    pub(super) fn attach(cmd: &mut std::process::Command) {
        cmd.env("TESSERA_NODE", "1")
            .env("TESSERA_TRANSPORTS", "udp4,shm");
    }

    /// Stops the nodes (SIGTERM: they leave cleanly) and hands them back for their figures.
    pub(super) fn stop(mut self) -> Vec<Worker> {
        self.detach();
        let mut workers = std::mem::take(&mut self.workers);
        for w in &mut workers {
            w.stop();
        }
        workers.append(&mut self.killed);
        workers
    }
}

impl Drop for Nodes<'_, '_> {
    fn drop(&mut self) {
        self.detach();
        for w in &mut self.workers {
            w.stop();
        }
    }
}

/// LAN counters sampled while a flow's subscribers run.
pub(super) struct LinkWatch {
    /// (when, counters so far), taken while every subscriber still ran.
    snaps: Vec<(Instant, Traffic)>,
}

/// How often [`LinkWatch::follow`] reads the counters.
const LINK_SAMPLE: Duration = Duration::from_millis(250);

impl LinkWatch {
    pub(super) fn start(topo: &Topology) -> Self {
        LinkWatch {
            snaps: link_traffic(topo)
                .map(|t| (Instant::now(), t))
                .into_iter()
                .collect(),
        }
    }

    /// Waits until every subscriber exited (or `deadline`), reading the counters meanwhile.
    pub(super) fn follow(&mut self, topo: &Topology, subs: &mut [Worker], deadline: Instant) {
        while Instant::now() < deadline {
            let mut exited = false;
            for s in subs.iter_mut() {
                exited |= s.proc.wait_timeout(Duration::ZERO).is_some();
            }
            if exited {
                break;
            }
            if let Some(t) = link_traffic(topo) {
                self.snaps.push((Instant::now(), t));
            }
            std::thread::sleep(LINK_SAMPLE);
        }
        for s in subs.iter_mut() {
            let left = deadline.saturating_duration_since(Instant::now());
            s.proc.wait_timeout(left);
        }
    }

    /// Datagrams and bytes per second on the LAN over the steady part of the run (its last
    /// 60 %: discovery and matching are over), and datagrams per delivered sample.
    pub(super) fn metrics(&self, samples_per_s: f64) -> BTreeMap<String, f64> {
        let mut out = BTreeMap::new();
        let (Some(first), Some(last)) = (self.snaps.first(), self.snaps.last()) else {
            return out;
        };
        let from = first.0 + (last.0 - first.0).mul_f64(0.4);
        let Some(a) = self.snaps.iter().find(|(t, _)| *t >= from) else {
            return out;
        };
        let dt = (last.0 - a.0).as_secs_f64();
        if dt < 0.5 {
            return out;
        }
        let per_s = (last.1.datagrams.saturating_sub(a.1.datagrams)) as f64 / dt;
        out.insert("link_datagrams_per_s".into(), per_s);
        out.insert(
            "link_bytes_per_s".into(),
            (last.1.bytes.saturating_sub(a.1.bytes)) as f64 / dt,
        );
        if samples_per_s > 0.0 {
            out.insert("link_datagrams_per_sample".into(), per_s / samples_per_s);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_counters_are_the_interface_transmit_fields() {
        let dev = "Inter-|   Receive                                                |  Transmit\n \
                   face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n    \
                   lo:  900      9    0    0    0     0          0         0      900      9    0    0    0     0       0          0\n \
                   tb3h0: 5000  50    0    0    0     0          0         0     7000     70    0    0    0     0       0          0\n";
        let t = parse_link(dev, "tb3h0").unwrap();
        assert_eq!((t.datagrams, t.bytes), (70, 7000));
        assert!(parse_link(dev, "eth9").is_none());
    }
}

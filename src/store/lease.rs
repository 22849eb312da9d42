//! One run per data location: the driver's lease (README, "Running on a
//! cluster").
//!
//! Two drivers on one location (a nightly run that overran into the next
//! night) would both crawl, doubling every host's request rate, and race on
//! the same files. So a driver first takes a lease: `state/lease.json`,
//! written create-if-absent, naming its holder (host, process, start) and a
//! heartbeat the holder renews every [`HEARTBEAT`]. A second driver finds
//! it and refuses, naming the holder, or waits for it (`--wait`).
//!
//! A lease whose holder is gone is taken over: its holder was a process of
//! this host (same host name and same PID namespace: a container with the
//! same host name is another host) that no longer runs, or its heartbeat
//! has not moved for [`EXPIRY`]. The heartbeat is judged by watching it on
//! this driver's own monotonic clock, never by comparing the holder's
//! wall-clock time with this machine's: a driver whose clock runs a minute
//! ahead would otherwise take a live lease at once. Taking over is itself
//! a create-if-absent write, of a marker named after the stale lease's
//! token, so of two drivers that find the same stale lease only one deletes
//! it. The same rules hold on object storage, where both writes are
//! conditional requests.
//!
//! The holder fences itself ([`crate::fence`]): each successful renewal
//! lets it act for [`FENCE`] more (less than the [`EXPIRY`] a successor
//! waits), so a driver that cannot renew (a failing store, a process that
//! was stopped and resumed) stops its requests and commits nothing before
//! another driver may take over.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::{layout, Created, Store, StoreError};
use crate::fence::Fence;

/// How often the holder renews its heartbeat.
pub const HEARTBEAT: Duration = Duration::from_secs(10);
/// A heartbeat older than this means the holder is gone.
pub const EXPIRY: Duration = Duration::from_secs(60);
/// How long a renewal lets the holder act: two heartbeats short of the
/// expiry, so it stops before a successor may take over.
pub const FENCE: Duration = Duration::from_secs(40);
/// How often a driver that waits (`--wait`), or watches a heartbeat that
/// looks stale, looks again.
const WAIT_POLL: Duration = Duration::from_secs(2);

/// Who holds the lease, as written in `state/lease.json`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Holder {
    /// Unique to this holding.
    pub token: String,
    pub host: String,
    pub pid: u32,
    /// Unix seconds.
    pub started: u64,
    /// Unix seconds of the last renewal.
    pub heartbeat: u64,
    /// The PID namespace of the holder (`/proc/self/ns/pid`), so that a
    /// process of another container with the same host name is not taken
    /// for one of this host.
    #[serde(default)]
    pub pid_ns: Option<String>,
}

impl Holder {
    fn me() -> Self {
        let now = unix_now();
        let token = crate::store::attempt::Attempt::start("lease").id;
        Self {
            token,
            host: host_name(),
            pid: std::process::id(),
            started: now,
            heartbeat: now,
            pid_ns: pid_namespace(),
        }
    }

    /// Whether the holder was a process of this host (and PID namespace)
    /// that no longer runs: a killed crawl is resumed at once, without
    /// waiting for the expiry.
    #[must_use]
    pub fn is_dead_here(&self) -> bool {
        self.host == host_name() && self.pid_ns == pid_namespace() && !process_runs(self.pid)
    }

    /// Whether its heartbeat looks older than the expiry by this machine's
    /// wall clock: only a reason to watch it (see [`Lease::acquire`]).
    #[must_use]
    pub fn looks_stale(&self, now: u64) -> bool {
        now.saturating_sub(self.heartbeat) > EXPIRY.as_secs()
    }

    /// The holder, for messages.
    #[must_use]
    pub fn describe(&self) -> String {
        format!(
            "process {} on host {} (started {} s ago, last heartbeat {} s ago)",
            self.pid,
            self.host,
            unix_now().saturating_sub(self.started),
            unix_now().saturating_sub(self.heartbeat)
        )
    }
}

/// Why no lease was taken.
#[derive(Debug, thiserror::Error)]
pub enum LeaseError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Another driver holds it.
    #[error("another run is using data location {data}: {}. Wait for it (add --wait), or, if it is gone, run again once its heartbeat is {} s old (a run of this host that no longer runs is taken over at once)", holder.describe(), EXPIRY.as_secs())]
    Held { data: String, holder: Holder },
}

/// A lease held by this process; renewed in the background until released.
pub struct Lease {
    store: Store,
    token: String,
    lost: Arc<AtomicBool>,
    fence: Arc<Fence>,
    renewer: tokio::task::JoinHandle<()>,
}

impl Lease {
    /// Takes the lease of `store`'s location; with `wait`, waits for a
    /// holder to finish instead of refusing.
    ///
    /// # Errors
    /// [`LeaseError::Held`] when another live driver holds it (and not
    /// `wait`); a storage failure.
    pub async fn acquire(store: &Store, wait: bool) -> Result<Self, LeaseError> {
        Self::acquire_with_clock(store, wait, unix_now).await
    }

    /// [`Self::acquire`] with this machine's wall clock given (a test skews it).
    async fn acquire_with_clock(store: &Store, wait: bool, clock: fn() -> u64) -> Result<Self, LeaseError> {
        let mut told = false;
        // A heartbeat that looked stale: (token, heartbeat) and since when
        // it has not moved, on this driver's monotonic clock.
        let mut watched: Option<(String, u64, tokio::time::Instant)> = None;
        loop {
            let me = Holder::me();
            if store.put_json_new(layout::LEASE, &me).await? == Created::New {
                return Ok(Self::hold(store.clone(), me));
            }
            let Some(holder) = store.get_json::<Holder>(layout::LEASE).await? else {
                continue; // released between the two reads
            };
            if holder.is_dead_here() {
                take_over(store, &holder).await?;
                continue;
            }
            if holder.looks_stale(clock()) {
                let now = tokio::time::Instant::now();
                let same = |t: &String, h: u64| *t == holder.token && h == holder.heartbeat;
                match &watched {
                    // Unchanged since we first saw it: gone after the expiry.
                    Some((t, h, since)) if same(t, *h) => {
                        if since.elapsed() >= EXPIRY {
                            take_over(store, &holder).await?;
                            watched = None;
                        } else {
                            tokio::time::sleep(WAIT_POLL).await;
                        }
                        continue;
                    }
                    // It moved: its holder is alive (our clocks disagree).
                    Some((t, _, _)) if *t == holder.token => {
                        watched = Some((holder.token.clone(), holder.heartbeat, now));
                    }
                    _ => {
                        tracing::warn!(
                            "the lease of {} looks stale; watching its heartbeat for {} s before taking it over",
                            holder.describe(),
                            EXPIRY.as_secs()
                        );
                        watched = Some((holder.token.clone(), holder.heartbeat, now));
                        tokio::time::sleep(WAIT_POLL).await;
                        continue;
                    }
                }
            } else {
                watched = None;
            }
            if !wait {
                return Err(LeaseError::Held { data: store.location().to_string(), holder });
            }
            if !told {
                tracing::warn!("waiting for the run of {} to finish", holder.describe());
                told = true;
            }
            tokio::time::sleep(WAIT_POLL).await;
        }
    }

    fn hold(store: Store, me: Holder) -> Self {
        let lost = Arc::new(AtomicBool::new(false));
        let fence = Fence::new(FENCE);
        let token = me.token.clone();
        let renewer = tokio::spawn(renew(store.clone(), me, Arc::clone(&lost), Arc::clone(&fence)));
        Self { store, token, lost, fence, renewer }
    }

    /// Whether this run may no longer act: another driver took the lease
    /// over, or it could not be renewed for [`FENCE`] (the run must stop).
    #[must_use]
    pub fn lost(&self) -> bool {
        self.lost.load(Ordering::Relaxed) || !self.fence.holds()
    }

    /// The fence the renewals extend, for the fetcher to check before each
    /// request.
    #[must_use]
    pub fn fence(&self) -> Arc<Fence> {
        Arc::clone(&self.fence)
    }

    /// Gives the lease up.
    ///
    /// # Errors
    /// When the store fails.
    pub async fn release(self) -> Result<(), StoreError> {
        self.renewer.abort();
        if let Some(h) = self.store.get_json::<Holder>(layout::LEASE).await? {
            if h.token == self.token {
                self.store.delete(layout::LEASE).await?;
            }
        }
        Ok(())
    }
}

/// What one renewal found.
enum Renewal {
    Renewed,
    /// The lease is someone else's (or gone).
    Taken,
    /// The store failed; the lease may still be ours.
    Failed(String),
}

/// Renews the heartbeat until aborted, or until the lease turns out to be
/// someone else's. The renewal replaces the lease only if it is still the
/// one read (a conditional write on object storage), so a holder that
/// stalled never overwrites the lease of the driver that took over. A
/// renewal that fails is not taken for a success: when none has succeeded
/// for [`FENCE`], the fence runs out and the run stops.
async fn renew(store: Store, mut me: Holder, lost: Arc<AtomicBool>, fence: Arc<Fence>) {
    let mut warned = false;
    loop {
        tokio::time::sleep(HEARTBEAT).await;
        let started = tokio::time::Instant::now();
        let outcome = match store.get_versioned(layout::LEASE).await {
            Ok(Some((bytes, version))) => match serde_json::from_slice::<Holder>(&bytes) {
                Ok(h) if h.token == me.token => {
                    me.heartbeat = unix_now();
                    let body = serde_json::to_vec_pretty(&me).unwrap_or_default();
                    match store.put_if_unchanged(layout::LEASE, body.into(), version).await {
                        Ok(true) => Renewal::Renewed,
                        Ok(false) => Renewal::Taken,
                        Err(e) => Renewal::Failed(format!("cannot renew the lease: {e}")),
                    }
                }
                _ => Renewal::Taken,
            },
            Ok(None) => Renewal::Taken,
            Err(e) => Renewal::Failed(format!("cannot read the lease: {e}")),
        };
        match outcome {
            Renewal::Renewed => {
                fence.extend(started, FENCE);
                warned = false;
            }
            Renewal::Failed(why) if fence.holds() => {
                if !warned {
                    tracing::warn!("{why}; the run stops if it cannot renew it within {} s", FENCE.as_secs());
                    warned = true;
                }
            }
            Renewal::Failed(why) => {
                tracing::error!(
                    "{why}: not renewed for {} s, so this run stops before another may take the lease over",
                    FENCE.as_secs()
                );
                lost.store(true, Ordering::Relaxed);
                return;
            }
            Renewal::Taken => {
                tracing::error!("the lease on {} was taken over by another run", store.location());
                fence.revoke();
                lost.store(true, Ordering::Relaxed);
                return;
            }
        }
    }
}

/// Removes the stale lease of `holder`, if this driver is the one that
/// gets to (see the module text).
async fn take_over(store: &Store, holder: &Holder) -> Result<(), StoreError> {
    let marker = layout::lease_takeover(&holder.token);
    if store.put_json_new(&marker, &Holder::me()).await? == Created::New {
        tracing::warn!("taking over the lease of {}, which is gone", holder.describe());
        // Only the stale lease is removed: one renewed meanwhile is kept.
        if store.get_json::<Holder>(layout::LEASE).await?.is_some_and(|now| now.token == holder.token) {
            store.delete(layout::LEASE).await?;
        }
    } else {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

/// This machine's name (a pod's name on Kubernetes).
#[must_use]
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

/// This process's PID namespace (`pid:[4026531836]`), where it can be read.
fn pid_namespace() -> Option<String> {
    std::fs::read_link("/proc/self/ns/pid").ok().map(|p| p.display().to_string())
}

/// Whether process `pid` of this host runs (where that can be known: on
/// other systems a lease expires by its heartbeat alone).
fn process_runs(pid: u32) -> bool {
    if cfg!(target_os = "linux") {
        std::path::Path::new(&format!("/proc/{pid}")).exists()
    } else {
        true
    }
}

fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_second_driver_is_refused_then_served_once_released() {
        let store = Store::open("memory://").expect("open");
        let first = Lease::acquire(&store, false).await.expect("free");
        match Lease::acquire(&store, false).await {
            Err(LeaseError::Held { holder, .. }) => assert_eq!(holder.pid, std::process::id()),
            other => panic!("expected Held, got {:?}", other.map(|_| ())),
        }
        first.release().await.expect("release");
        Lease::acquire(&store, false).await.expect("free again").release().await.expect("release");
    }

    #[tokio::test(start_paused = true)]
    async fn a_lease_whose_holder_is_gone_is_taken_over_once() {
        let store = Store::open("memory://").expect("open");
        let gone =
            Holder { token: "t0".into(), host: "elsewhere".into(), pid: 1, started: 0, heartbeat: 0, pid_ns: None };
        store.put_json(layout::LEASE, &gone).await.expect("put");
        let (a, b) = tokio::join!(Lease::acquire(&store, false), Lease::acquire(&store, false));
        assert!(a.is_ok() != b.is_ok(), "exactly one of two racing drivers takes over");
    }

    /// A live holder elsewhere whose heartbeat looks a minute old by this
    /// machine's clock (ours runs ahead) is not taken over: its heartbeat
    /// is seen to move.
    #[tokio::test(start_paused = true)]
    async fn a_skewed_clock_does_not_take_a_live_lease() {
        fn two_minutes_ahead() -> u64 {
            unix_now() + 120
        }
        let store = Store::open("memory://").expect("open");
        let mut live =
            Holder { token: "live".into(), host: "elsewhere".into(), pid: 1, started: 0, heartbeat: 0, pid_ns: None };
        live.heartbeat = unix_now();
        store.put_json(layout::LEASE, &live).await.expect("put");
        let renewer = {
            let (store, mut live) = (store.clone(), live.clone());
            tokio::spawn(async move {
                for beat in 1..=100 {
                    tokio::time::sleep(HEARTBEAT).await;
                    live.heartbeat = unix_now() + beat;
                    store.put_json(layout::LEASE, &live).await.expect("renew");
                }
            })
        };
        match Lease::acquire_with_clock(&store, false, two_minutes_ahead).await {
            Err(LeaseError::Held { holder, .. }) => assert_eq!(holder.token, "live"),
            other => panic!("a live lease was taken: {:?}", other.map(|_| ())),
        }
        // Once it stops moving, it is gone: taken over after the expiry.
        renewer.abort();
        let started = tokio::time::Instant::now();
        let lease = Lease::acquire_with_clock(&store, false, two_minutes_ahead).await.expect("taken over");
        assert!(started.elapsed() >= EXPIRY, "watched for the expiry first");
        lease.release().await.expect("release");
    }

    /// A holder that stalled (stopped and resumed) after another driver
    /// took over stops at once: its fence is revoked at its next renewal,
    /// and its requests stop with it (the fetcher checks the fence).
    #[tokio::test(start_paused = true)]
    async fn a_stalled_holder_that_wakes_after_a_takeover_stops() {
        let store = Store::open("memory://").expect("open");
        let lease = Lease::acquire(&store, false).await.expect("free");
        let fence = lease.fence();
        assert!(!lease.lost() && fence.holds());
        let other = Holder { token: "other".into(), ..Holder::me() };
        store.put_json(layout::LEASE, &other).await.expect("taken over meanwhile");
        tokio::time::sleep(HEARTBEAT + Duration::from_secs(1)).await;
        assert!(lease.lost() && !fence.holds(), "lost and fenced");
        // It never overwrites the successor's lease.
        let now: Holder = store.get_json(layout::LEASE).await.expect("get").expect("lease");
        assert_eq!(now.token, "other");
    }

    /// A store that fails the renewals: the run may go on for the fence's
    /// time, not forever, and stops before a successor may take over.
    #[tokio::test(start_paused = true)]
    async fn a_store_that_fails_renewals_fences_the_run_before_the_expiry() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path().to_str().expect("utf-8")).expect("open");
        let lease = Lease::acquire(&store, false).await.expect("free");
        // The lease file becomes unreadable (a link to itself: every read
        // fails, and the lease is not seen as gone either).
        let path = dir.path().join(layout::LEASE);
        std::fs::remove_file(&path).expect("remove");
        std::os::unix::fs::symlink(&path, &path).expect("a link loop in its place");
        tokio::time::sleep(FENCE - HEARTBEAT).await;
        assert!(!lease.lost(), "a failing renewal is not given up at once");
        tokio::time::sleep(HEARTBEAT + HEARTBEAT).await;
        assert!(lease.lost(), "not renewed for the fence's time: stopped");
        assert!(FENCE + HEARTBEAT < EXPIRY, "stopped before a successor may take over");
    }
}

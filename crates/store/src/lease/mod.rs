//! One run per data location: the driver's lease (docs/src/cluster.md).
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
//! ahead would otherwise take a live lease at once.
//!
//! After the create-if-absent write, every change of the lease is one
//! conditional replace of the version read ([`replace`], through
//! [`Store::put_if_unchanged`]): a renewal, a takeover, and the release,
//! which marks the lease released rather than deleting it (object storage
//! has no conditional delete). So of the drivers that read the same lease,
//! exactly one changes it: two that take over the same stale lease do not
//! both win, and a holder that stalled between reading its lease and
//! renewing it never overwrites the lease of the driver that took over. On
//! object storage the replace is a conditional request (`If-Match`); in a
//! local folder it holds a lock file's `flock` around the read and the
//! write (see `store/lock.rs`).
//!
//! The holder fences itself ([`crate::fence`]): each successful renewal
//! lets it act for [`FENCE`] more (less than the [`EXPIRY`] a successor
//! waits), so a driver that cannot renew (a failing store, a process that
//! was stopped and resumed) stops its requests and commits nothing before
//! another driver may take over.
//!
//! These three times are the defaults for an expiry of 60 s. A run may
//! choose another expiry (`--lease-expiry`); the heartbeat is then a sixth
//! of it and the fence two thirds. The holder writes its expiry into the
//! lease ([`Holder::expiry`]), and whoever judges the lease (a driver that
//! waits to take it over, a task that watches its driver's) goes by the
//! expiry written there, not by its own: a successor keeps to what the
//! holder promised.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::{layout, Created, Store, StoreError, Version};
use crate::fence::Fence;

/// How often the holder renews its heartbeat, with the default expiry (a
/// sixth of the expiry: [`Holder::heartbeat_every`]).
pub const HEARTBEAT: Duration = Duration::from_secs(10);
/// A heartbeat older than this means the holder is gone: the default
/// expiry (`--lease-expiry`).
pub const EXPIRY: Duration = Duration::from_secs(60);
/// How long a renewal lets the holder act, with the default expiry: two
/// heartbeats short of the expiry, so it stops before a successor may take
/// over ([`Holder::fence_for`]).
pub const FENCE: Duration = Duration::from_secs(40);
/// The shortest expiry a run may choose: its heartbeat is then 1 s.
pub const MIN_EXPIRY: Duration = Duration::from_secs(6);
/// How often a driver that waits (`--wait`), or watches a heartbeat that
/// looks stale, looks again; and how often a task run on its own looks at
/// its driver's lease ([`watch`]).
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
    /// Given back by its holder: the lease is free.
    #[serde(default)]
    pub released: bool,
    /// The lease's generation: 1 when it was first created, one more at
    /// each change of holder (a takeover, or a new run after a release);
    /// renewals keep it. Each task attempt carries it as its fencing token
    /// (`store/fencing.rs`).
    #[serde(default)]
    pub generation: u64,
    /// Seconds without a heartbeat after which the holder is gone, as its
    /// run chose (`--lease-expiry`); a lease written before the expiry was
    /// a setting has none, and the default.
    #[serde(default = "default_expiry_secs")]
    pub expiry: u64,
}

fn default_expiry_secs() -> u64 {
    EXPIRY.as_secs()
}

impl Holder {
    /// A new holding by this process, with `expiry` (at least [`MIN_EXPIRY`]).
    pub(crate) fn me(expiry: Duration) -> Self {
        let now = unix_now();
        let token = crate::attempt::Attempt::start("lease").id;
        Self {
            token,
            host: host_name(),
            pid: std::process::id(),
            started: now,
            heartbeat: now,
            pid_ns: pid_namespace(),
            released: false,
            generation: 1,
            expiry: expiry.max(MIN_EXPIRY).as_secs(),
        }
    }

    /// How long the heartbeat may stand still before the holder counts as
    /// gone.
    #[must_use]
    pub fn expiry(&self) -> Duration {
        Duration::from_secs(self.expiry.max(MIN_EXPIRY.as_secs()))
    }

    /// How often the holder renews: a sixth of the expiry.
    #[must_use]
    pub fn heartbeat_every(&self) -> Duration {
        self.expiry() / 6
    }

    /// How long one renewal lets the holder (and its tasks) act: two
    /// heartbeats short of the expiry, so they stop before a successor may
    /// take over.
    #[must_use]
    pub fn fence_for(&self) -> Duration {
        self.expiry() - self.heartbeat_every() * 2
    }

    /// This holding, as the successor of `before` (one generation on).
    fn after(self, before: &Holder) -> Self {
        Self { generation: before.generation + 1, ..self }
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
        now.saturating_sub(self.heartbeat) > self.expiry().as_secs()
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
    #[error("another run is using data location {data}: {}. Wait for it (add --wait), or, if it is gone, run again once its heartbeat is {} s old (a run of this host that no longer runs is taken over at once)", holder.describe(), holder.expiry().as_secs())]
    Held { data: String, holder: Holder },
}

/// A lease held by this process; renewed in the background until released.
pub struct Lease {
    store: Store,
    token: String,
    generation: u64,
    lost: Arc<AtomicBool>,
    fence: Arc<Fence>,
    renewer: tokio::task::JoinHandle<()>,
}

impl Lease {
    /// Takes the lease of `store`'s location, with the default expiry;
    /// with `wait`, waits for a holder to finish instead of refusing.
    ///
    /// # Errors
    /// [`LeaseError::Held`] when another live driver holds it (and not
    /// `wait`); a storage failure.
    pub async fn acquire(store: &Store, wait: bool) -> Result<Self, LeaseError> {
        Self::acquire_with_clock(store, wait, EXPIRY, unix_now).await
    }

    /// [`Self::acquire`] with the expiry this run promises (`--lease-expiry`,
    /// at least [`MIN_EXPIRY`]): its heartbeat and fence follow from it.
    ///
    /// # Errors
    /// As [`Self::acquire`].
    pub async fn acquire_for(store: &Store, wait: bool, expiry: Duration) -> Result<Self, LeaseError> {
        Self::acquire_with_clock(store, wait, expiry, unix_now).await
    }

    /// [`Self::acquire`] with this machine's wall clock given (a test skews it).
    async fn acquire_with_clock(
        store: &Store,
        wait: bool,
        expiry: Duration,
        clock: fn() -> u64,
    ) -> Result<Self, LeaseError> {
        let mut told = false;
        // A heartbeat that looked stale: (token, heartbeat) and since when
        // it has not moved, on this driver's monotonic clock.
        let mut watched: Option<(String, u64, tokio::time::Instant)> = None;
        loop {
            let me = Holder::me(expiry);
            if store.put_json_new(layout::LEASE, &me).await? == Created::New {
                return Ok(Self::hold(store.clone(), me));
            }
            let Some(read) = current(store).await? else {
                continue; // gone between the two requests
            };
            let holder = read.holder.clone();
            let me = me.after(&holder);
            if holder.released || holder.is_dead_here() {
                if take_over(store, &read, &me).await? {
                    return Ok(Self::hold(store.clone(), me));
                }
                continue;
            }
            if holder.looks_stale(clock()) {
                let now = tokio::time::Instant::now();
                let same = |t: &String, h: u64| *t == holder.token && h == holder.heartbeat;
                match &watched {
                    // Unchanged since we first saw it: gone after the expiry.
                    Some((t, h, since)) if same(t, *h) => {
                        if since.elapsed() >= holder.expiry() {
                            if take_over(store, &read, &me).await? {
                                return Ok(Self::hold(store.clone(), me));
                            }
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
                            holder.expiry().as_secs()
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
        let fence = Fence::of_generation(me.fence_for(), me.generation);
        let (token, generation) = (me.token.clone(), me.generation);
        let renewer = tokio::spawn(renew(store.clone(), me, Arc::clone(&lost), Arc::clone(&fence)));
        Self { store, token, generation, lost, fence, renewer }
    }

    /// The lease's generation while this driver holds it: the fencing
    /// token of its tasks.
    #[must_use]
    pub fn generation(&self) -> u64 {
        self.generation
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

    /// Gives the lease up: marks it released, if it is still this
    /// driver's (a conditional replace, so a lease taken over meanwhile is
    /// left to its new holder).
    ///
    /// # Errors
    /// When the store fails.
    pub async fn release(self) -> Result<(), StoreError> {
        self.renewer.abort();
        // A renewal cut short may still land (a local write runs to its
        // end on a thread of its own): then the replace below finds a
        // newer version of the same lease, and is tried again.
        for _ in 0..5 {
            let Some(read) = current(&self.store).await? else { return Ok(()) };
            if read.holder.token != self.token || read.holder.released {
                return Ok(());
            }
            let given_back = Holder { released: true, heartbeat: unix_now(), ..read.holder.clone() };
            if replace(&self.store, &read, &given_back).await? {
                return Ok(());
            }
        }
        Ok(())
    }
}

/// The lease as read, with the version a conditional replace names.
#[derive(Clone, Debug)]
pub struct Current {
    pub holder: Holder,
    version: Version,
}

/// Reads the lease of `store`'s location; `None` when there is none.
///
/// # Errors
/// When the store fails or the lease is not a lease.
pub async fn current(store: &Store) -> Result<Option<Current>, StoreError> {
    let Some((bytes, version)) = store.get_versioned(layout::LEASE).await? else { return Ok(None) };
    let holder =
        serde_json::from_slice(&bytes).map_err(|source| StoreError::Json { path: layout::LEASE.into(), source })?;
    Ok(Some(Current { holder, version }))
}

/// Replaces the lease `read` with `next`, only if nobody changed it since:
/// `false` when someone did. Of the drivers that read the same lease,
/// exactly one replaces it, on every backend ([`Store::put_if_unchanged`]).
///
/// A refused replace is checked once: when the lease now holds exactly
/// `next`, the write did land. An object store's client sends a request
/// again after a server error or a lost answer, and the second sending of
/// a conditional write that had already been made is refused (the version
/// it names is gone: replaced by itself); that is not another driver.
///
/// # Errors
/// When the store fails.
pub async fn replace(store: &Store, read: &Current, next: &Holder) -> Result<bool, StoreError> {
    let body =
        serde_json::to_vec_pretty(next).map_err(|source| StoreError::Json { path: layout::LEASE.into(), source })?;
    if store.put_if_unchanged(layout::LEASE, body.into(), read.version.clone()).await? {
        return Ok(true);
    }
    Ok(current(store).await?.is_some_and(|now| now.holder == *next))
}

/// What one renewal found.
#[derive(Debug, PartialEq, Eq)]
enum Renewal {
    Renewed,
    /// The lease is someone else's (or released, or gone).
    Taken,
    /// The store failed; the lease may still be ours.
    Failed(String),
}

/// Renews the heartbeat until aborted, or until the lease turns out to be
/// someone else's. A renewal that fails is not taken for a success: when
/// none has succeeded for the fence's time ([`Holder::fence_for`]), the
/// fence runs out and the run stops.
async fn renew(store: Store, mut me: Holder, lost: Arc<AtomicBool>, fence: Arc<Fence>) {
    let mut warned = false;
    let (every, lasts) = (me.heartbeat_every(), me.fence_for());
    loop {
        tokio::time::sleep(every).await;
        let started = tokio::time::Instant::now();
        let outcome = match current(&store).await {
            Ok(Some(read)) => renew_read(&store, &read, &mut me).await,
            Ok(None) => Renewal::Taken,
            Err(e) => Renewal::Failed(format!("cannot read the lease: {e}")),
        };
        match outcome {
            Renewal::Renewed => {
                fence.extend(started, lasts);
                warned = false;
            }
            Renewal::Failed(why) if fence.holds() => {
                if !warned {
                    tracing::warn!("{why}; the run stops if it cannot renew it within {} s", lasts.as_secs());
                    warned = true;
                }
            }
            Renewal::Failed(why) => {
                tracing::error!(
                    "{why}: not renewed for {} s, so this run stops before another may take the lease over",
                    lasts.as_secs()
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

/// The write of one renewal, of the lease as `read` (however long ago):
/// the lease is replaced only if it is still that version, so a holder
/// that stalled after its read never overwrites the lease of the driver
/// that took over meanwhile.
async fn renew_read(store: &Store, read: &Current, me: &mut Holder) -> Renewal {
    if read.holder.token != me.token || read.holder.released {
        return Renewal::Taken;
    }
    me.heartbeat = unix_now();
    match replace(store, read, me).await {
        Ok(true) => Renewal::Renewed,
        Ok(false) => Renewal::Taken,
        Err(e) => Renewal::Failed(format!("cannot renew the lease: {e}")),
    }
}

/// Takes the lease `read` (released, or its holder gone) for `me`: `true`
/// when this driver is the one that got it (see the module text).
async fn take_over(store: &Store, read: &Current, me: &Holder) -> Result<bool, StoreError> {
    let won = replace(store, read, me).await?;
    if won && !read.holder.released {
        tracing::warn!("took over the lease of {}, which is gone", read.holder.describe());
    }
    Ok(won)
}

// This machine's name lives with the attempts, which the lease's token
// already comes from: the two files then name each other one way only.
pub use super::attempt::host_name;
/// The fence of a task run in a process of its own (`layercrawl task`)
/// under lease generation `generation`, its driver's.
///
/// The task does not hold the lease; it watches it every [`WAIT_POLL`].
/// It may act for `given` from now (what was left of its driver's fence
/// when the driver started it), and each renewal it sees lets it act for
/// its driver's fence time ([`Holder::fence_for`], from the expiry written
/// in the lease) from the start of the look before, the last one that saw
/// the lease unrenewed: the renewal was written after that, so no
/// successor may take over until the expiry after it. A renewal it cannot see (its driver
/// stopped, the store failing) runs its fence out as the driver's own runs
/// out, 20 s before a successor may take over; a lease of another
/// generation, or released, revokes it at once. Without `given` (a pod
/// started long after its Job was made) the task waits to see a renewal.
///
/// # Errors
/// [`StoreError::Fenced`] when the lease is not of `generation` (another
/// run holds it, or none), or is not seen renewed within the expiry; a
/// storage failure.
pub async fn watch(store: &Store, generation: u64, given: Option<Duration>) -> Result<Arc<Fence>, StoreError> {
    let fence = Fence::of_generation(given.unwrap_or(Duration::ZERO), generation);
    let since = tokio::time::Instant::now();
    let fenced = |why: String| StoreError::Fenced { path: layout::LEASE.into(), ours: generation, why };
    let read = current(store).await?.ok_or_else(|| fenced("there is no lease".into()))?;
    if read.holder.generation != generation || read.holder.released {
        return Err(fenced(format!(
            "the lease is of generation {}{}",
            read.holder.generation,
            if read.holder.released { ", released" } else { "" }
        )));
    }
    let (expiry, lasts) = (read.holder.expiry(), read.holder.fence_for());
    let mut watch = Watch { store: store.clone(), version: read.version, since, fence: Arc::clone(&fence), lasts };
    if given.is_none() {
        let waited = tokio::time::Instant::now();
        while !fence.holds() {
            if waited.elapsed() >= expiry {
                return Err(fenced(format!("its lease was not renewed for {} s", expiry.as_secs())));
            }
            tokio::time::sleep(WAIT_POLL).await;
            if !watch.look().await {
                return Err(fenced("another run took the lease over".into()));
            }
        }
    }
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(WAIT_POLL).await;
            if !watch.look().await {
                return;
            }
        }
    });
    Ok(fence)
}

/// A task's watch of its driver's lease (see [`watch`]).
struct Watch {
    store: Store,
    /// The lease's version at the last look.
    version: Version,
    /// When the last look that saw `version` started.
    since: tokio::time::Instant,
    fence: Arc<Fence>,
    /// How long a renewal lets the driver act ([`Holder::fence_for`]).
    lasts: Duration,
}

impl Watch {
    /// One look at the lease; `false` once the fence is revoked for good.
    async fn look(&mut self) -> bool {
        let started = tokio::time::Instant::now();
        match current(&self.store).await {
            Ok(Some(read)) if read.holder.generation == self.fence.generation() && !read.holder.released => {
                if !read.version.same(&self.version) {
                    // Renewed after the look at `since` read it unrenewed.
                    self.fence.extend(self.since, self.lasts);
                    self.version = read.version;
                }
                self.since = started;
                true
            }
            Ok(_) => {
                tracing::error!("the lease on {} is no longer this task's driver's: stopping", self.store.location());
                self.fence.revoke();
                false
            }
            // Not seen renewed: the fence runs out on its own.
            Err(e) => {
                tracing::warn!("cannot read the lease: {e}");
                true
            }
        }
    }
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
mod tests;

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
//! A lease whose holder is gone is taken over: its heartbeat is older than
//! [`EXPIRY`], or its holder was a process on this host that no longer
//! runs. Taking over is itself a create-if-absent write, of a marker named
//! after the stale lease's token, so of two drivers that find the same
//! stale lease only one deletes it. The same rules hold on object storage,
//! where both writes are conditional requests.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::{layout, Created, Store, StoreError};

/// How often the holder renews its heartbeat.
pub const HEARTBEAT: Duration = Duration::from_secs(10);
/// A heartbeat older than this means the holder is gone.
pub const EXPIRY: Duration = Duration::from_secs(60);
/// How often a driver that waits (`--wait`) looks again.
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
}

impl Holder {
    fn me() -> Self {
        let now = unix_now();
        let token = crate::store::attempt::Attempt::start("lease").id;
        Self { token, host: host_name(), pid: std::process::id(), started: now, heartbeat: now }
    }

    /// Whether this lease's holder is gone: its heartbeat expired, or it
    /// was a process of this host that no longer runs (a killed crawl can
    /// be resumed at once, without waiting for the expiry).
    #[must_use]
    pub fn is_stale(&self, now: u64) -> bool {
        if now.saturating_sub(self.heartbeat) > EXPIRY.as_secs() {
            return true;
        }
        self.host == host_name() && !process_runs(self.pid)
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
        let mut told = false;
        loop {
            let me = Holder::me();
            if store.put_json_new(layout::LEASE, &me).await? == Created::New {
                return Ok(Self::hold(store.clone(), me));
            }
            let Some(holder) = store.get_json::<Holder>(layout::LEASE).await? else {
                continue; // released between the two reads
            };
            if holder.is_stale(unix_now()) {
                take_over(store, &holder).await?;
                continue;
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
        let token = me.token.clone();
        let renewer = tokio::spawn(renew(store.clone(), me, Arc::clone(&lost)));
        Self { store, token, lost, renewer }
    }

    /// Whether another driver took the lease over (this one stalled past
    /// the expiry): the run must stop.
    #[must_use]
    pub fn lost(&self) -> bool {
        self.lost.load(Ordering::Relaxed)
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

/// Renews the heartbeat until aborted, or until the lease turns out to be
/// someone else's. The renewal replaces the lease only if it is still the
/// one read (a conditional write on object storage), so a holder that
/// stalled never overwrites the lease of the driver that took over.
async fn renew(store: Store, mut me: Holder, lost: Arc<AtomicBool>) {
    let mut warned = false;
    loop {
        tokio::time::sleep(HEARTBEAT).await;
        let still_mine = match store.get_versioned(layout::LEASE).await {
            Ok(Some((bytes, version))) => match serde_json::from_slice::<Holder>(&bytes) {
                Ok(h) if h.token == me.token => {
                    me.heartbeat = unix_now();
                    let body = serde_json::to_vec_pretty(&me).unwrap_or_default();
                    match store.put_if_unchanged(layout::LEASE, body.into(), version).await {
                        Ok(replaced) => replaced,
                        Err(e) => {
                            tracing::warn!("cannot renew the lease: {e}");
                            true
                        }
                    }
                }
                _ => false,
            },
            Ok(None) => false,
            Err(e) => {
                if !warned {
                    tracing::warn!("cannot read the lease: {e}");
                    warned = true;
                }
                true
            }
        };
        if !still_mine {
            tracing::error!("the lease on {} was taken over by another run", store.location());
            lost.store(true, Ordering::Relaxed);
            return;
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

    #[tokio::test]
    async fn a_lease_whose_holder_is_gone_is_taken_over_once() {
        let store = Store::open("memory://").expect("open");
        let gone = Holder { token: "t0".into(), host: "elsewhere".into(), pid: 1, started: 0, heartbeat: 0 };
        store.put_json(layout::LEASE, &gone).await.expect("put");
        let (a, b) = tokio::join!(Lease::acquire(&store, false), Lease::acquire(&store, false));
        assert!(a.is_ok() != b.is_ok(), "exactly one of two racing drivers takes over");
    }
}

//! The crawl's DNS cache (docs/src/dns.md).
//!
//! Names are resolved by hickory's resolver, from the system's
//! configuration (`/etc/resolv.conf`) or the servers given with
//! `--dns IP:PORT`, and kept here for as long as the answer's TTL says
//! (at least [`MIN_TTL`]). A name that does not exist is kept too, for the
//! negative TTL of the answer ([`NEGATIVE_TTL`] when it gives none); a
//! failed lookup (a timeout, a server error) for [`FAILURE_TTL`]. So a host
//! costs one query per TTL however many connections the crawl opens to it.
//!
//! Lookups of one name at once share one query. A partition's hosts are
//! looked up together, [`PREFETCH`] at a time, when the partition starts
//! (`prefetch`), so the scheduler's first request to each finds its answer
//! waiting. Counts per name (queries, answers from the cache, failures) are
//! taken by the map task that owns the host, for the summary.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::{BoxFuture, FutureExt, Shared};
use futures::StreamExt;
use hickory_resolver::config::{NameServerConfig, ResolverConfig};
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::TokioResolver;

/// Shortest time an answer is kept.
pub const MIN_TTL: Duration = Duration::from_secs(1);
/// How long "no such name" is kept when the answer gives no negative TTL.
pub const NEGATIVE_TTL: Duration = Duration::from_secs(60);
/// How long a failed lookup (no answer at all) is kept.
pub const FAILURE_TTL: Duration = Duration::from_secs(5);
/// Names a partition looks up at once ahead of its requests.
pub const PREFETCH: usize = 32;

/// A lookup's outcome: the addresses, or why there are none.
pub type Answer = Result<Vec<IpAddr>, String>;

type Pending = Shared<BoxFuture<'static, Answer>>;

/// Queries, answers from the cache, and failed or empty lookups.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DnsCounts {
    pub queries: u64,
    pub cached: u64,
    pub failures: u64,
}

impl DnsCounts {
    pub fn add(&mut self, o: Self) {
        self.queries += o.queries;
        self.cached += o.cached;
        self.failures += o.failures;
    }
}

enum Slot {
    Ready { answer: Answer, until: Instant },
    Pending(Pending),
}

/// The caching resolver shared by a run's fetcher.
pub struct DnsCache {
    resolver: TokioResolver,
    slots: Mutex<HashMap<String, Slot>>,
    counts: Mutex<HashMap<String, DnsCounts>>,
}

impl std::fmt::Debug for DnsCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DnsCache").finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl DnsCache {
    /// A cache in front of the system's resolvers, or of `servers` when
    /// some are given.
    ///
    /// # Errors
    /// When the system configuration cannot be read (and no servers are
    /// given).
    pub fn new(servers: &[SocketAddr]) -> Result<Self, String> {
        let builder = if servers.is_empty() {
            TokioResolver::builder_tokio()
                .map_err(|e| format!("cannot read the system's DNS configuration (/etc/resolv.conf): {e}; give servers with --dns IP:PORT"))?
        } else {
            let mut config = ResolverConfig::from_name_servers(Vec::new());
            for s in servers {
                let mut ns = NameServerConfig::udp_and_tcp(s.ip());
                for c in &mut ns.connections {
                    c.port = s.port();
                }
                config.add_name_server(ns);
            }
            TokioResolver::builder_with_config(config, TokioRuntimeProvider::default())
        };
        let mut builder = builder;
        // This cache keeps the answers (and counts them); the resolver's own
        // is one entry deep.
        builder.options_mut().cache_size = 0;
        let resolver = builder.build().map_err(|e| format!("cannot start the DNS resolver: {e}"))?;
        Ok(Self { resolver, slots: Mutex::default(), counts: Mutex::default() })
    }

    /// The addresses of `name` (lower case), from the cache while its TTL
    /// lasts, else from one query shared by every caller asking meanwhile.
    pub async fn lookup(self: &Arc<Self>, name: &str) -> Answer {
        enum Found {
            Cached(Answer),
            Waiting(Pending),
            Asking(Pending),
        }
        let found = {
            let mut slots = lock(&self.slots);
            match slots.get(name) {
                Some(Slot::Ready { answer, until }) if *until > Instant::now() => Found::Cached(answer.clone()),
                Some(Slot::Pending(p)) => Found::Waiting(p.clone()),
                _ => {
                    let this = Arc::clone(self);
                    let owned = name.to_string();
                    let p = async move { this.query(&owned).await }.boxed().shared();
                    slots.insert(name.to_string(), Slot::Pending(p.clone()));
                    Found::Asking(p)
                }
            }
        };
        match found {
            Found::Cached(answer) => {
                self.count(name, |c| c.cached += 1);
                answer
            }
            Found::Waiting(p) => {
                self.count(name, |c| c.cached += 1);
                p.await
            }
            Found::Asking(p) => {
                self.count(name, |c| c.queries += 1);
                p.await
            }
        }
    }

    /// One query; its answer goes into the cache with its lifetime.
    async fn query(&self, name: &str) -> Answer {
        let (answer, ttl) = match self.resolver.lookup_ip(name).await {
            Ok(l) => {
                let ips: Vec<IpAddr> = l.iter().collect();
                let ttl = l.valid_until().saturating_duration_since(Instant::now());
                if ips.is_empty() {
                    (Err("no addresses".to_string()), NEGATIVE_TTL)
                } else {
                    (Ok(ips), ttl)
                }
            }
            Err(e) => {
                let negative = e.is_no_records_found();
                let ttl = if negative { negative_ttl(&e).unwrap_or(NEGATIVE_TTL) } else { FAILURE_TTL };
                (Err(e.to_string()), ttl)
            }
        };
        if answer.is_err() {
            self.count(name, |c| c.failures += 1);
        }
        let until = Instant::now() + ttl.max(MIN_TTL);
        lock(&self.slots).insert(name.to_string(), Slot::Ready { answer: answer.clone(), until });
        answer
    }

    /// Looks up `names` ahead of their requests, [`PREFETCH`] at a time, in
    /// the background.
    pub fn prefetch(self: &Arc<Self>, names: Vec<String>) {
        if names.is_empty() {
            return;
        }
        let this = Arc::clone(self);
        tokio::spawn(async move {
            futures::stream::iter(names)
                .for_each_concurrent(PREFETCH, |n| {
                    let this = Arc::clone(&this);
                    async move {
                        let _ = this.lookup(&n).await;
                    }
                })
                .await;
        });
    }

    fn count(&self, name: &str, f: impl FnOnce(&mut DnsCounts)) {
        f(lock(&self.counts).entry(name.to_string()).or_default());
    }

    /// Takes (and resets) the counts of `names`.
    pub fn take_counts<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> DnsCounts {
        let mut counts = lock(&self.counts);
        let mut out = DnsCounts::default();
        for n in names {
            if let Some(c) = counts.remove(n) {
                out.add(c);
            }
        }
        out
    }
}

/// The negative TTL of a "no such name" answer, when it has one.
fn negative_ttl(e: &hickory_resolver::net::NetError) -> Option<Duration> {
    match e {
        hickory_resolver::net::NetError::Dns(hickory_resolver::net::DnsError::NoRecordsFound(n)) => {
            n.negative_ttl.map(|s| Duration::from_secs(u64::from(s)))
        }
        _ => None,
    }
}

//! Crawl scope: which link targets a run follows, fixed by the seeds.

use std::collections::BTreeSet;
use std::sync::Arc;

use url::Url;

use crate::urlnorm;

/// Which link targets a crawl follows, relative to the seeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Only hosts that appear in the seeds.
    Host,
    /// Only registrable domains that appear in the seeds.
    Domain,
    /// Anything reachable.
    Any,
}

impl std::str::FromStr for Scope {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "host" => Ok(Self::Host),
            "domain" => Ok(Self::Domain),
            "any" => Ok(Self::Any),
            _ => Err(format!("{s:?} is not a scope; allowed: host, domain, any")),
        }
    }
}

/// The scope rule plus the seeds' hosts and registrable domains.
#[derive(Clone, Debug)]
pub struct ScopeFilter {
    scope: Scope,
    hosts: Arc<BTreeSet<String>>,
    domains: Arc<BTreeSet<String>>,
}

impl ScopeFilter {
    #[must_use]
    pub fn new(scope: Scope, hosts: BTreeSet<String>, domains: BTreeSet<String>) -> Self {
        Self { scope, hosts: Arc::new(hosts), domains: Arc::new(domains) }
    }

    /// Builds the filter from seed URLs.
    #[must_use]
    pub fn from_seeds(scope: Scope, seeds: &[Url]) -> Self {
        let hosts: BTreeSet<String> = seeds.iter().filter_map(|u| u.host_str().map(str::to_string)).collect();
        let domains = hosts.iter().map(|h| urlnorm::registrable_domain(h)).collect();
        Self::new(scope, hosts, domains)
    }

    /// Whether a link to `url` is followed.
    #[must_use]
    pub fn allows(&self, url: &Url) -> bool {
        let Some(host) = url.host_str() else { return false };
        match self.scope {
            Scope::Any => true,
            Scope::Host => self.hosts.contains(host),
            Scope::Domain => self.domains.contains(&urlnorm::registrable_domain(host)),
        }
    }

    #[must_use]
    pub fn hosts(&self) -> &BTreeSet<String> {
        &self.hosts
    }

    #[must_use]
    pub fn domains(&self) -> &BTreeSet<String> {
        &self.domains
    }
}

//! Name resolution with curl-like overrides and the address policy.
//!
//! Every connection's address comes from [`PolicyResolver`]: an override
//! rule (`--resolve 'HOST=IP:PORT'` or `'*.SUFFIX=IP:PORT'`) or the system
//! resolver, then the policy drops addresses the crawl may not reach
//! (loopback, private, link-local, CGNAT, metadata...: the one list of
//! [`ranges`]) unless allowed.
//! Because the check runs on the addresses actually handed to the
//! connector, a DNS answer that changes between checks (rebinding) cannot
//! slip past it. URLs whose host is an IP literal skip resolution in the
//! HTTP client, so the fetcher checks those with [`AddressPolicy::check`].

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

pub mod ranges;
mod rules;

pub use rules::{AllowPrivate, ResolveRule};

/// Which destination addresses the crawler may connect to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AddressPolicy {
    /// Which loopback, private, link-local, CGNAT and unique-local
    /// addresses are allowed.
    pub private: AllowPrivate,
}

impl AddressPolicy {
    #[must_use]
    pub fn new(private: AllowPrivate) -> Self {
        Self { private }
    }

    /// `Ok` when the address may be reached, else the reason it may not:
    /// the range of [`ranges::BLOCKED`] it is in, unless `--allow-private`
    /// opens it (never a metadata address). An address that carries an
    /// IPv4 address to a gateway must be allowed, and that address too.
    ///
    /// # Errors
    /// The name of the blocked range, for the `error_detail` column.
    pub fn check(&self, ip: IpAddr) -> Result<(), &'static str> {
        let found: Vec<(IpAddr, &ranges::Range)> = ranges::ranges_of(ip).collect();
        if let Some((_, never)) = found.iter().find(|(_, r)| !r.openable) {
            return Err(never.class);
        }
        match found.iter().find(|(a, _)| !self.opens(*a)) {
            Some((_, r)) => Err(r.class),
            None => Ok(()),
        }
    }

    /// Whether `--allow-private` opens `ip`.
    fn opens(&self, ip: IpAddr) -> bool {
        match &self.private {
            AllowPrivate::None => false,
            AllowPrivate::All => true,
            AllowPrivate::Only(nets) => nets.iter().any(|n| n.contains(&ip)),
        }
    }
}

/// The special-purpose range an address is in, or `None` for a public one:
/// the first range of [`ranges::BLOCKED`] that holds it (an IPv4-mapped
/// address as its IPv4 address), or `metadata` when an IPv4 address it
/// carries to a gateway (IPv4-compatible, NAT64, 6to4, Teredo) is one.
#[must_use]
pub fn classify(ip: IpAddr) -> Option<&'static str> {
    let mut found = ranges::ranges_of(ip).map(|(_, r)| r);
    let own = found.next();
    found.find(|r| !r.openable).or(own).map(|r| r.class)
}

/// The resolver handed to the HTTP client.
#[derive(Clone, Debug, Default)]
pub struct PolicyResolver {
    rules: Arc<Vec<ResolveRule>>,
    policy: AddressPolicy,
    /// The crawl's DNS cache; none: the system's resolver (getaddrinfo).
    cache: Option<Arc<super::dns::DnsCache>>,
}

impl PolicyResolver {
    #[must_use]
    pub fn new(rules: Vec<ResolveRule>, policy: AddressPolicy) -> Self {
        Self { rules: Arc::new(rules), policy, cache: None }
    }

    /// Resolves through `cache` (the crawl's DNS cache) when given.
    #[must_use]
    pub fn with_cache(mut self, cache: Option<Arc<super::dns::DnsCache>>) -> Self {
        self.cache = cache;
        self
    }

    /// Whether a `--resolve` rule answers for `host` (no DNS asked).
    #[must_use]
    pub fn overridden(&self, host: &str) -> bool {
        self.rules.iter().any(|r| r.matches(host))
    }

    /// Resolves `host` to the addresses the crawler may connect to.
    ///
    /// # Errors
    /// `ResolveError::Dns` when the name does not resolve, `Blocked` when
    /// every address is outside the policy.
    pub async fn lookup(&self, host: &str) -> Result<Vec<SocketAddr>, ResolveError> {
        let host = host.to_ascii_lowercase();
        let candidates: Vec<SocketAddr> = if let Some(rule) = self.rules.iter().find(|r| r.matches(&host)) {
            vec![rule.addr]
        } else if let Some(cache) = &self.cache {
            cache
                .lookup(&host)
                .await
                .map_err(|reason| ResolveError::Dns { host: host.clone(), reason })?
                .into_iter()
                .map(|ip| SocketAddr::new(ip, 0))
                .collect()
        } else {
            tokio::net::lookup_host((host.as_str(), 0))
                .await
                .map_err(|e| ResolveError::Dns { host: host.clone(), reason: e.to_string() })?
                .collect()
        };
        if candidates.is_empty() {
            return Err(ResolveError::Dns { host, reason: "no addresses".into() });
        }
        let mut blocked = None;
        let allowed: Vec<SocketAddr> = candidates
            .into_iter()
            .filter(|a| match self.policy.check(a.ip()) {
                Ok(()) => true,
                Err(class) => {
                    blocked = Some((a.ip(), class));
                    false
                }
            })
            .collect();
        match (allowed.is_empty(), blocked) {
            (true, Some((ip, class))) => Err(ResolveError::Blocked { host, ip, class }),
            _ => Ok(allowed),
        }
    }
}

impl PolicyResolver {
    /// The addresses to connect to for `host:port` (a name or an IP
    /// literal, as a request or a CONNECT names it), each allowed by the
    /// policy. A `--resolve` rule's port is used when `port` is the
    /// scheme's `default`, as the HTTP client does when a URL names none.
    ///
    /// # Errors
    /// As [`PolicyResolver::lookup`]; an IP literal is `Blocked` or not.
    pub async fn target(&self, host: &str, port: u16, default: u16) -> Result<Vec<SocketAddr>, ResolveError> {
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        if let Ok(ip) = bare.parse::<IpAddr>() {
            self.policy.check(ip).map_err(|class| ResolveError::Blocked { host: bare.to_string(), ip, class })?;
            return Ok(vec![SocketAddr::new(ip, port)]);
        }
        let mut addrs = self.lookup(bare).await?;
        for a in &mut addrs {
            if port != default || a.port() == 0 {
                a.set_port(port);
            }
        }
        Ok(addrs)
    }
}

/// Why a host could not be resolved to a usable address.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ResolveError {
    #[error("cannot resolve {host}: {reason}")]
    Dns { host: String, reason: String },
    #[error("{host} resolves to {ip}, a {class} address, which the crawl may not reach (allow with --allow-private)")]
    Blocked { host: String, ip: IpAddr, class: &'static str },
}

impl Resolve for PolicyResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let this = self.clone();
        let host = name.as_str().to_string();
        Box::pin(async move {
            let addrs = this.lookup(&host).await?;
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_parse_and_match() {
        let r = ResolveRule::parse("*.test=127.0.0.1:8080").expect("parse");
        assert!(r.matches("s000.test") && r.matches("blog.s001.test"));
        assert!(!r.matches("test") && !r.matches("xtest") && !r.matches("a.test.org"));
        let exact = ResolveRule::parse("Example.COM=[::1]:9").expect("parse");
        assert!(exact.matches("example.com") && !exact.matches("a.example.com"));
        assert_eq!(exact.to_string(), "example.com=[::1]:9");
        for bad in ["x", "a.test=1.2.3.4", "*.=1.2.3.4:1", "a*b=1.2.3.4:5"] {
            assert!(ResolveRule::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn policy_blocks_special_ranges_by_default() {
        let deny = AddressPolicy::default();
        let cases: [(&str, Option<&str>); 14] = [
            ("127.0.0.1", Some("loopback")),
            ("10.1.2.3", Some("private")),
            ("172.16.0.1", Some("private")),
            ("192.168.1.1", Some("private")),
            ("169.254.169.254", Some("metadata")),
            ("169.254.1.1", Some("link-local")),
            ("100.64.0.1", Some("cgnat")),
            ("0.0.0.0", Some("unspecified")),
            ("::1", Some("loopback")),
            ("fd00:ec2::254", Some("metadata")),
            ("fc00::1", Some("private")),
            ("fe80::1", Some("link-local")),
            ("::ffff:10.0.0.1", Some("private")),
            ("93.184.216.34", None),
        ];
        for (ip, want) in cases {
            let ip: IpAddr = ip.parse().expect("ip");
            assert_eq!(classify(ip), want, "{ip}");
            assert_eq!(deny.check(ip).is_ok(), want.is_none(), "{ip}");
        }
        let allow = AddressPolicy::new(AllowPrivate::All);
        assert!(allow.check("127.0.0.1".parse().expect("ip")).is_ok());
        assert!(allow.check("169.254.169.254".parse().expect("ip")).is_err(), "metadata stays blocked");
    }

    #[test]
    fn a_list_allows_those_private_addresses_and_no_other() {
        let only = AddressPolicy::new(AllowPrivate::parse_list("10.1.2.3, 127.0.0.17,fd00::/8").expect("list"));
        for (ip, allowed) in [
            ("10.1.2.3", true),
            ("10.1.2.4", false),
            ("127.0.0.17", true),
            ("127.0.0.1", false),
            ("::ffff:127.0.0.17", true),
            ("fd00::5", true),
            ("fc00::5", false),
            ("fd00:ec2::254", false),
            ("169.254.169.254", false),
            ("93.184.216.34", true),
        ] {
            assert_eq!(only.check(ip.parse().expect("ip")).is_ok(), allowed, "{ip}");
        }
        let meta = AddressPolicy::new(AllowPrivate::parse_list("169.254.169.254").expect("list"));
        assert!(meta.check("169.254.169.254".parse().expect("ip")).is_err(), "metadata stays blocked when listed");
        assert!(AllowPrivate::parse_list("10.1.2.3,intranet").is_err());
        assert!(AllowPrivate::parse_list(" , ").is_err());
        // The settings write it as a flag or as the list.
        for (policy, json) in [
            (AllowPrivate::None, "false"),
            (AllowPrivate::All, "true"),
            (AllowPrivate::parse_list("10.1.2.3,fd00::/8").expect("list"), r#"["10.1.2.3/32","fd00::/8"]"#),
        ] {
            assert_eq!(serde_json::to_string(&policy).expect("json"), json);
            assert_eq!(serde_json::from_str::<AllowPrivate>(json).expect("back"), policy);
        }
    }

    #[test]
    fn embedded_ipv4_forms_and_added_ranges_are_classified() {
        // Plain data only: nothing here is connected to. Each row: the address,
        // its class, and whether it stays blocked with --allow-private.
        let rows: &[(&str, Option<&str>, bool)] = &[
            // NAT64 well-known prefix: a range of its own, and the metadata
            // address inside stays closed.
            ("64:ff9b::7f00:1", Some("nat64"), false),
            ("64:ff9b::169.254.169.254", Some("metadata"), true),
            ("64:ff9b::10.0.0.1", Some("nat64"), false),
            ("64:ff9b::8.8.8.8", Some("nat64"), false),
            // NAT64 local-use prefix.
            ("64:ff9b:1::808:808", Some("nat64"), false),
            // IPv4-compatible ::a.b.c.d.
            ("::127.0.0.1", Some("ipv4-compatible"), false),
            ("::169.254.169.254", Some("metadata"), true),
            ("::8.8.8.8", Some("ipv4-compatible"), false),
            // 6to4: the IPv4 address in bits 16..48.
            ("2002:c0a8:0101::1", Some("6to4"), false),
            ("2002:7f00:0001::", Some("6to4"), false),
            ("2002:a9fe:a9fe::1", Some("metadata"), true),
            ("2002:0808:0808::1", Some("6to4"), false),
            // Site-local.
            ("fec0::1", Some("private"), false),
            ("feff::1", Some("private"), false),
            // IETF protocol assignments and benchmarking.
            ("192.0.0.8", Some("protocol-assignments"), false),
            ("192.0.1.1", None, false),
            ("198.18.0.1", Some("benchmarking"), false),
            ("198.19.255.254", Some("benchmarking"), false),
            ("198.20.0.1", None, false),
            // Metadata and credential endpoints.
            ("168.63.129.16", Some("metadata"), true),
            ("169.254.170.2", Some("metadata"), true),
            ("169.254.170.23", Some("metadata"), true),
            ("192.0.0.192", Some("metadata"), true),
            ("100.100.100.200", Some("metadata"), true),
            ("fd00:ec2::23", Some("metadata"), true),
            ("::ffff:168.63.129.16", Some("metadata"), true),
            // Neighbours that stay what they were.
            ("169.254.170.3", Some("link-local"), false),
            ("fd00:ec2::24", Some("private"), false),
            ("8.8.8.8", None, false),
            ("2001:4860:4860::8888", None, false),
        ];
        let deny = AddressPolicy::default();
        let allow = AddressPolicy::new(AllowPrivate::All);
        for &(text, want, blocked_when_allowed) in rows {
            let ip: IpAddr = text.parse().expect("ip");
            assert_eq!(classify(ip), want, "{text}");
            assert_eq!(deny.check(ip).is_err(), want.is_some(), "{text} by default");
            assert_eq!(allow.check(ip).is_err(), blocked_when_allowed, "{text} with --allow-private");
        }
    }

    /// Every range of the one list is refused, at its first and its last
    /// address, by default; with `--allow-private`, all but the metadata
    /// addresses are opened; an address outside them is not refused.
    #[test]
    fn every_listed_range_is_refused_at_both_ends() {
        let deny = AddressPolicy::default();
        let allow = AddressPolicy::new(AllowPrivate::All);
        let rows: &[(&str, bool)] = &[
            ("0.0.0.0/8", false),
            ("10.0.0.0/8", false),
            ("100.64.0.0/10", false),
            ("100.100.100.200/32", true),
            ("127.0.0.0/8", false),
            ("169.254.0.0/16", false),
            ("169.254.169.254/32", true),
            ("172.16.0.0/12", false),
            ("192.0.0.0/24", false),
            ("192.0.0.192/32", true),
            ("192.0.2.0/24", false),
            ("192.168.0.0/16", false),
            ("198.18.0.0/15", false),
            ("198.51.100.0/24", false),
            ("203.0.113.0/24", false),
            ("224.0.0.0/4", false),
            ("240.0.0.0/4", false),
            ("255.255.255.255/32", false),
            ("::1/128", false),
            ("::/128", false),
            ("64:ff9b::/96", false),
            ("100::/64", false),
            ("2001::/32", false),
            ("2001:db8::/32", false),
            ("2002::/16", false),
            ("fc00::/7", false),
            ("fd00:ec2::254/128", true),
            ("fe80::/10", false),
            ("ff00::/8", false),
        ];
        for &(net, metadata) in rows {
            let net: ipnet::IpNet = net.parse().expect("net");
            for ip in [net.network(), net.broadcast()] {
                assert!(deny.check(ip).is_err(), "{ip} ({net}) by default");
                assert_eq!(allow.check(ip).is_err(), metadata, "{ip} ({net}) with --allow-private");
                let mapped = match ip {
                    IpAddr::V4(v4) => IpAddr::V6(v4.to_ipv6_mapped()),
                    v6 @ IpAddr::V6(_) => v6,
                };
                assert_eq!(deny.check(mapped), deny.check(ip), "{mapped}: judged as {ip}");
            }
        }
        for public in ["1.1.1.1", "8.8.8.8", "192.0.1.1", "198.20.0.1", "2606:4700::1111", "2001:4860:4860::8888"] {
            assert!(deny.check(public.parse().expect("ip")).is_ok(), "{public}");
        }
        // An IPv6 address that hands an IPv4 one to a gateway: refused by
        // default, and its IPv4 address judged when its range is opened.
        let nat64 = AddressPolicy::new(AllowPrivate::parse_list("64:ff9b::/96,2002::/16").expect("list"));
        for (ip, opened) in [
            ("64:ff9b::8.8.8.8", true),
            ("64:ff9b::10.0.0.1", false),
            ("64:ff9b::169.254.169.254", false),
            ("2002:0808:0808::1", true),
            ("2002:c0a8:0101::1", false),
        ] {
            let ip: IpAddr = ip.parse().expect("ip");
            assert!(deny.check(ip).is_err(), "{ip} by default");
            assert_eq!(nat64.check(ip).is_ok(), opened, "{ip} with its range opened");
        }
        assert_eq!(classify("64:ff9b::169.254.169.254".parse().expect("ip")), Some("metadata"));
        // Teredo whose client (stored inverted) is the metadata address.
        let teredo: IpAddr = "2001:0:4136:e378:8000:63bf:5601:5601".parse().expect("ip");
        assert_eq!(allow.check(teredo), Err("metadata"), "{teredo}");
    }

    #[tokio::test]
    async fn resolver_applies_rules_then_policy_without_any_network() {
        // Only override rules are used here, so no DNS query leaves the machine.
        let rules = vec![
            ResolveRule::parse("*.test=127.0.0.1:8080").expect("rule"),
            ResolveRule::parse("meta.example=169.254.169.254:80").expect("rule"),
            ResolveRule::parse("lan.example=10.0.0.7:80").expect("rule"),
        ];
        let deny = PolicyResolver::new(rules.clone(), AddressPolicy::default());
        assert!(matches!(deny.lookup("s000.test").await, Err(ResolveError::Blocked { class: "loopback", .. })));
        assert!(matches!(deny.lookup("lan.example").await, Err(ResolveError::Blocked { class: "private", .. })));
        let allow = PolicyResolver::new(rules, AddressPolicy::new(AllowPrivate::All));
        assert_eq!(allow.lookup("S000.test").await.expect("ok"), vec!["127.0.0.1:8080".parse().expect("addr")]);
        assert!(matches!(allow.lookup("meta.example").await, Err(ResolveError::Blocked { class: "metadata", .. })));
    }

    #[tokio::test]
    async fn the_connectors_entry_point_refuses_every_special_range() {
        // `Resolve::resolve` is what the HTTP client's connector calls for every
        // new connection; only override rules are used, so nothing leaves the
        // machine even if the policy were broken (the test would then fail here,
        // before any connection is made).
        let cases = [
            ("lo.example", "127.0.0.1:80", "loopback"),
            ("ten.example", "10.1.2.3:80", "private"),
            ("lan.example", "192.168.0.9:80", "private"),
            ("ll.example", "169.254.7.7:80", "link-local"),
            ("cgn.example", "100.64.1.1:80", "cgnat"),
            ("md.example", "169.254.169.254:80", "metadata"),
            ("v6.example", "[fd00:ec2::254]:80", "metadata"),
            ("ula.example", "[fc00::5]:80", "private"),
        ];
        let rules = cases.iter().map(|(h, a, _)| ResolveRule::parse(&format!("{h}={a}")).expect("rule")).collect();
        let resolver = PolicyResolver::new(rules, AddressPolicy::default());
        for (host, _, class) in cases {
            let name: Name = host.parse().expect("name");
            let err = match Resolve::resolve(&resolver, name).await {
                Ok(addrs) => panic!("{host}: the connector was handed {:?}", addrs.collect::<Vec<_>>()),
                Err(e) => e,
            };
            let err = err.downcast_ref::<ResolveError>().expect("our error");
            assert!(matches!(err, ResolveError::Blocked { class: c, .. } if *c == class), "{host}: {err}");
        }
    }
}

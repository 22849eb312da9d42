//! Name resolution with curl-like overrides and the address policy.
//!
//! Every connection's address comes from [`PolicyResolver`]: an override
//! rule (`--resolve 'HOST=IP:PORT'` or `'*.SUFFIX=IP:PORT'`) or the system
//! resolver, then the policy drops addresses the crawl may not reach
//! (loopback, private, link-local, CGNAT, metadata...) unless allowed.
//! Because the check runs on the addresses actually handed to the
//! connector, a DNS answer that changes between checks (rebinding) cannot
//! slip past it. URLs whose host is an IP literal skip resolution in the
//! HTTP client, so the fetcher checks those with [`AddressPolicy::check`].

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

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

    /// `Ok` when the address may be reached, else the reason it may not.
    ///
    /// # Errors
    /// The name of the blocked range, for the `error_detail` column.
    pub fn check(&self, ip: IpAddr) -> Result<(), &'static str> {
        let class = classify(ip);
        match (class, &self.private) {
            (None, _) => Ok(()),
            // Cloud metadata endpoints are never reachable: no test or crawl needs them.
            (Some(c @ "metadata"), _) => Err(c),
            (Some(_), AllowPrivate::All) => Ok(()),
            // An IPv4-mapped address is the IPv4 address it carries.
            (Some(_), AllowPrivate::Only(nets)) if nets.iter().any(|n| n.contains(&ip.to_canonical())) => Ok(()),
            (Some(c), _) => Err(c),
        }
    }
}

/// The special-purpose range an address is in, or `None` for a public one.
///
/// IPv6 forms that carry an IPv4 address (mapped `::ffff:a.b.c.d`,
/// compatible `::a.b.c.d`, NAT64 `64:ff9b::a.b.c.d` and 6to4
/// `2002:AABB:CCDD::/48`) are classed by that IPv4 address: a gateway on the
/// way (a NAT64 or 6to4 relay, or a host stack that still accepts the
/// compatible form) would otherwise carry the connection to the private or
/// metadata address inside.
#[must_use]
pub fn classify(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

/// Cloud metadata and credential endpoints, blocked even with
/// `--allow-private`: AWS, GCP, OpenStack (169.254.169.254), Alibaba
/// (100.100.100.200), Azure's wire server (168.63.129.16) and the ECS/EKS
/// container credential endpoints (169.254.170.2, 169.254.170.23).
const METADATA_V4: [[u8; 4]; 5] =
    [[169, 254, 169, 254], [100, 100, 100, 200], [168, 63, 129, 16], [169, 254, 170, 2], [169, 254, 170, 23]];

/// The IPv6 forms of the AWS metadata and EKS pod identity endpoints.
const METADATA_V6: [Ipv6Addr; 2] =
    [Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254), Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0023)];

fn classify_v6(v6: Ipv6Addr) -> Option<&'static str> {
    let seg = v6.segments();
    let b = v6.octets();
    let low_v4 = Ipv4Addr::new(b[12], b[13], b[14], b[15]);
    if let Some(v4) = v6.to_ipv4_mapped() {
        return classify_v4(v4);
    }
    if v6.is_loopback() {
        return Some("loopback");
    }
    if v6.is_unspecified() {
        return Some("unspecified");
    }
    if METADATA_V6.contains(&v6) {
        return Some("metadata");
    }
    // IPv4-compatible ::a.b.c.d (deprecated, but some stacks still route it
    // as IPv4). `::` and `::1` were answered above.
    if seg[..6] == [0; 6] {
        return classify_v4(low_v4);
    }
    // NAT64, well-known prefix 64:ff9b::/96: the gateway connects to the
    // IPv4 address in the last 32 bits.
    if seg[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return classify_v4(low_v4);
    }
    // 64:ff9b:1::/48, the local-use NAT64 prefix: where the IPv4 address
    // sits depends on the operator's prefix length, so the whole range is
    // treated as private.
    if seg[..3] == [0x64, 0xff9b, 1] {
        return Some("private");
    }
    // 6to4 2002::/16: the relay tunnels to the IPv4 address in bits 16..48.
    if seg[0] == 0x2002 {
        return classify_v4(Ipv4Addr::new(b[2], b[3], b[4], b[5]));
    }
    let seg0 = seg[0];
    if seg0 & 0xfe00 == 0xfc00 {
        Some("private")
    } else if seg0 & 0xffc0 == 0xfe80 {
        Some("link-local")
    } else if seg0 & 0xffc0 == 0xfec0 {
        // Site-local (deprecated, still routed inside some networks).
        Some("private")
    } else if seg0 & 0xff00 == 0xff00 {
        Some("multicast")
    } else {
        None
    }
}

fn classify_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let o = ip.octets();
    if METADATA_V4.contains(&o) {
        Some("metadata")
    } else if ip.is_loopback() {
        Some("loopback")
    } else if ip.is_private() {
        Some("private")
    } else if ip.is_link_local() {
        Some("link-local")
    } else if o[0] == 100 && (o[1] & 0xc0) == 64 {
        Some("cgnat")
    } else if o[..3] == [192, 0, 0] || (o[0] == 198 && o[1] & 0xfe == 18) {
        // 192.0.0.0/24 (IETF protocol assignments) and 198.18.0.0/15
        // (benchmarking): not public hosts, often lab or internal networks.
        Some("private")
    } else if ip.is_unspecified() || o[0] == 0 {
        Some("unspecified")
    } else if ip.is_broadcast() || ip.is_multicast() || o[0] >= 240 {
        Some("reserved")
    } else {
        None
    }
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
            // NAT64 well-known prefix: classed by the IPv4 address in the last 32 bits.
            ("64:ff9b::7f00:1", Some("loopback"), false),
            ("64:ff9b::169.254.169.254", Some("metadata"), true),
            ("64:ff9b::10.0.0.1", Some("private"), false),
            ("64:ff9b::8.8.8.8", None, false),
            // NAT64 local-use prefix: private as a whole.
            ("64:ff9b:1::808:808", Some("private"), false),
            // IPv4-compatible ::a.b.c.d.
            ("::127.0.0.1", Some("loopback"), false),
            ("::169.254.169.254", Some("metadata"), true),
            ("::8.8.8.8", None, false),
            // 6to4: the IPv4 address in bits 16..48.
            ("2002:c0a8:0101::1", Some("private"), false),
            ("2002:7f00:0001::", Some("loopback"), false),
            ("2002:a9fe:a9fe::1", Some("metadata"), true),
            ("2002:0808:0808::1", None, false),
            // Site-local.
            ("fec0::1", Some("private"), false),
            ("feff::1", Some("private"), false),
            // IETF protocol assignments and benchmarking.
            ("192.0.0.8", Some("private"), false),
            ("192.0.1.1", None, false),
            ("198.18.0.1", Some("private"), false),
            ("198.19.255.254", Some("private"), false),
            ("198.20.0.1", None, false),
            // Metadata and credential endpoints.
            ("168.63.129.16", Some("metadata"), true),
            ("169.254.170.2", Some("metadata"), true),
            ("169.254.170.23", Some("metadata"), true),
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

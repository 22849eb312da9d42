//! The one list of address ranges the crawl may not reach, [`BLOCKED`]:
//! every check of an address (DNS answers, `--resolve` rules, IP-literal
//! URLs, the relay that carries Chromium's and the proxies' traffic) reads
//! it through [`AddressPolicy::check`](super::AddressPolicy::check), and
//! the Kubernetes NetworkPolicy's `except` lists are printed from it
//! ([`except`], `layercrawl docs network-policy`).
//!
//! An address is in the first range of the list that holds it, so a
//! metadata address (never reachable, not even with `--allow-private`)
//! comes before the wider range around it. An IPv4-mapped address
//! (`::ffff:a.b.c.d`) is its IPv4 address. The IPv6 forms that carry an
//! IPv4 address on to a gateway (IPv4-compatible, NAT64, 6to4, Teredo) are
//! refused as ranges of their own, and the IPv4 address inside is judged
//! too: `--allow-private 64:ff9b::/96` (an IPv6-only network with DNS64)
//! opens the public IPv4 addresses behind it, not the private or metadata
//! ones.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::{IpNet, Ipv4Net, Ipv6Net};

/// One blocked range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range {
    pub net: IpNet,
    /// Its name in messages and in the `error_detail` column.
    pub class: &'static str,
    /// Whether `--allow-private` can open it; metadata addresses: never.
    pub openable: bool,
    /// What it is, for the NetworkPolicy's comments.
    pub what: &'static str,
}

const METADATA: &str = "metadata";

const fn v4(o: [u8; 4], len: u8, class: &'static str, what: &'static str) -> Range {
    let net = IpNet::V4(Ipv4Net::new_assert(Ipv4Addr::new(o[0], o[1], o[2], o[3]), len));
    Range { net, class, openable: true, what }
}

const fn v6(s: [u16; 8], len: u8, class: &'static str, what: &'static str) -> Range {
    let ip = Ipv6Addr::new(s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]);
    Range { net: IpNet::V6(Ipv6Net::new_assert(ip, len)), class, openable: true, what }
}

/// A metadata address, which `--allow-private` never opens.
const fn never(r: Range) -> Range {
    Range { class: METADATA, openable: false, ..r }
}

/// Every range the crawl refuses, the most specific first.
pub const BLOCKED: &[Range] = &[
    // Cloud metadata and credential endpoints: never reachable.
    never(v4([169, 254, 169, 254], 32, METADATA, "AWS, GCP, Azure, OpenStack metadata")),
    never(v4([169, 254, 170, 2], 32, METADATA, "ECS task credentials")),
    never(v4([169, 254, 170, 23], 32, METADATA, "EKS pod identity")),
    never(v4([100, 100, 100, 200], 32, METADATA, "Alibaba Cloud metadata")),
    never(v4([168, 63, 129, 16], 32, METADATA, "Azure wire server")),
    never(v4([192, 0, 0, 192], 32, METADATA, "Oracle Cloud metadata")),
    never(v6([0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254], 128, METADATA, "AWS metadata over IPv6")),
    never(v6([0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x23], 128, METADATA, "EKS pod identity over IPv6")),
    // IPv4.
    v4([0, 0, 0, 0], 8, "unspecified", "this network"),
    v4([10, 0, 0, 0], 8, "private", "private (RFC 1918)"),
    v4([100, 64, 0, 0], 10, "cgnat", "shared address space (carrier-grade NAT)"),
    v4([127, 0, 0, 0], 8, "loopback", "loopback"),
    v4([169, 254, 0, 0], 16, "link-local", "link-local"),
    v4([172, 16, 0, 0], 12, "private", "private (RFC 1918)"),
    v4([192, 0, 0, 0], 24, "protocol-assignments", "IETF protocol assignments"),
    v4([192, 0, 2, 0], 24, "documentation", "documentation (TEST-NET-1)"),
    v4([192, 88, 99, 0], 24, "6to4", "6to4 relay anycast"),
    v4([192, 168, 0, 0], 16, "private", "private (RFC 1918)"),
    v4([198, 18, 0, 0], 15, "benchmarking", "benchmarking"),
    v4([198, 51, 100, 0], 24, "documentation", "documentation (TEST-NET-2)"),
    v4([203, 0, 113, 0], 24, "documentation", "documentation (TEST-NET-3)"),
    v4([224, 0, 0, 0], 4, "multicast", "multicast"),
    v4([255, 255, 255, 255], 32, "broadcast", "broadcast"),
    v4([240, 0, 0, 0], 4, "reserved", "reserved"),
    // IPv6.
    v6([0, 0, 0, 0, 0, 0, 0, 1], 128, "loopback", "loopback"),
    v6([0, 0, 0, 0, 0, 0, 0, 0], 128, "unspecified", "unspecified"),
    v6([0, 0, 0, 0, 0, 0, 0, 0], 96, "ipv4-compatible", "IPv4-compatible (deprecated)"),
    v6([0x64, 0xff9b, 0, 0, 0, 0, 0, 0], 96, "nat64", "NAT64, well-known prefix"),
    v6([0x64, 0xff9b, 1, 0, 0, 0, 0, 0], 48, "nat64", "NAT64, local use"),
    v6([0x100, 0, 0, 0, 0, 0, 0, 0], 64, "discard", "discard-only"),
    v6([0x2001, 0, 0, 0, 0, 0, 0, 0], 32, "teredo", "Teredo"),
    v6([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0], 32, "documentation", "documentation"),
    v6([0x2002, 0, 0, 0, 0, 0, 0, 0], 16, "6to4", "6to4"),
    v6([0x3fff, 0, 0, 0, 0, 0, 0, 0], 20, "documentation", "documentation"),
    v6([0xfc00, 0, 0, 0, 0, 0, 0, 0], 7, "private", "unique local"),
    v6([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10, "link-local", "link-local"),
    v6([0xfec0, 0, 0, 0, 0, 0, 0, 0], 10, "private", "site-local (deprecated)"),
    v6([0xff00, 0, 0, 0, 0, 0, 0, 0], 8, "multicast", "multicast"),
];

/// The range of the list that holds `ip` (an IPv4-mapped address as its
/// IPv4 address), without the IPv4 address an IPv6 one may carry.
#[must_use]
pub fn range_of(ip: IpAddr) -> Option<&'static Range> {
    let ip = ip.to_canonical();
    BLOCKED.iter().find(|r| r.net.contains(&ip))
}

/// The IPv4 addresses that an IPv6 address hands on to a gateway:
/// IPv4-compatible `::a.b.c.d`, NAT64 `64:ff9b::a.b.c.d`, 6to4
/// `2002:AABB:CCDD::/48`, and Teredo's server and (inverted) client.
#[must_use]
pub fn carried_v4(ip: IpAddr) -> Vec<Ipv4Addr> {
    let IpAddr::V6(v6) = ip.to_canonical() else { return Vec::new() };
    let seg = v6.segments();
    let b = v6.octets();
    let last = Ipv4Addr::new(b[12], b[13], b[14], b[15]);
    match seg {
        [0, 0, 0, 0, 0, 0, _, _] | [0x64, 0xff9b, 0, 0, 0, 0, _, _] => vec![last],
        [0x2002, ..] => vec![Ipv4Addr::new(b[2], b[3], b[4], b[5])],
        [0x2001, 0, ..] => vec![Ipv4Addr::new(b[4], b[5], b[6], b[7]), Ipv4Addr::from(!u32::from(last))],
        _ => Vec::new(),
    }
}

/// The ranges an address falls in: its own, then those of the IPv4
/// addresses it carries.
pub fn ranges_of(ip: IpAddr) -> impl Iterator<Item = (IpAddr, &'static Range)> {
    std::iter::once(ip.to_canonical())
        .chain(carried_v4(ip).into_iter().map(IpAddr::V4))
        .filter_map(|a| range_of(a).map(|r| (a, r)))
}

/// The NetworkPolicy's `except` lists, IPv4 and IPv6: the ranges of the
/// list, without those another range holds already (Kubernetes refuses
/// nothing for the overlap, but a shorter list is easier to read).
#[must_use]
pub fn except() -> (Vec<&'static Range>, Vec<&'static Range>) {
    let kept = |r: &&Range| !BLOCKED.iter().any(|o| o.net != r.net && o.net.contains(&r.net));
    let v4 = BLOCKED.iter().filter(|r| r.net.addr().is_ipv4()).filter(kept).collect();
    let v6 = BLOCKED.iter().filter(|r| r.net.addr().is_ipv6()).filter(kept).collect();
    (v4, v6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_is_well_formed() {
        for (i, r) in BLOCKED.iter().enumerate() {
            assert_eq!(r.net, r.net.trunc(), "{} has host bits set", r.net);
            assert_eq!(r.openable, r.class != METADATA, "{}", r.net);
            // A range inside a later one of another class must come first,
            // or the later one would name its addresses.
            for later in &BLOCKED[i + 1..] {
                assert_ne!(r.net, later.net, "twice in the list");
                assert!(!r.net.contains(&later.net) || r.net == later.net, "{} hides {}", r.net, later.net);
            }
        }
    }

    #[test]
    fn the_except_lists_cover_every_range_once() {
        let (v4, v6) = except();
        for r in BLOCKED {
            let covered = v4.iter().chain(&v6).filter(|e| e.net.contains(&r.net)).count();
            assert_eq!(covered, 1, "{} is in {covered} excepted ranges", r.net);
        }
        assert!(v4.iter().any(|r| r.net.to_string() == "168.63.129.16/32"), "a public metadata address stays");
        assert!(!v4.iter().any(|r| r.net.to_string() == "169.254.169.254/32"), "inside 169.254.0.0/16");
    }

    #[test]
    fn carried_ipv4_addresses() {
        let carried = |s: &str| carried_v4(s.parse().expect("ip")).iter().map(ToString::to_string).collect::<Vec<_>>();
        assert_eq!(carried("::10.0.0.1"), ["10.0.0.1"]);
        assert_eq!(carried("64:ff9b::169.254.169.254"), ["169.254.169.254"]);
        assert_eq!(carried("2002:c0a8:0101::1"), ["192.168.1.1"]);
        // Teredo: server 65.54.227.120, client 192.0.2.45 stored inverted.
        assert_eq!(carried("2001:0:4136:e378:8000:63bf:3fff:fdd2"), ["65.54.227.120", "192.0.2.45"]);
        assert!(carried("2606:4700::1111").is_empty());
        assert!(carried("::ffff:10.0.0.1").is_empty(), "a mapped address is its IPv4 address, not a carrier");
    }
}

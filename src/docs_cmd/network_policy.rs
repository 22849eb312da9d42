//! `layercrawl docs network-policy` (hidden): `jobs/k8s/networkpolicy.yaml`,
//! whose egress `except` lists are the crawler's own list of blocked
//! ranges ([`layercrawl::fetch::resolve::ranges`]), so that the cluster's
//! fence and the crawler's refuse the same addresses. `tests/e2e/docs.rs`
//! checks that the checked-in file is what this prints.

use layercrawl::fetch::resolve::ranges::{self, Range};

const HEAD: &str = "\
# Generated from the crawler's list of blocked address ranges
# (crates/fetch/src/resolve/ranges.rs): do not edit the except lists by hand. After
# changing the list, run
#   cargo run -- docs network-policy > jobs/k8s/networkpolicy.yaml
# (tests/e2e/docs.rs checks this file).
#
# The task pods fetch other people's pages: they may reach the internet and
# the data store, and nothing of the cluster's own network. Allowed: DNS to
# the cluster's resolver, and any address outside the ranges the crawler
# itself refuses (private, loopback, link-local, CGNAT, the cloud metadata
# addresses, documentation, benchmarking, multicast, reserved, and the IPv6
# ranges that reach an IPv4 address through a gateway: NAT64, 6to4,
# Teredo). Adjust the excepted ranges to your cluster's pod and service
# CIDRs if they lie elsewhere, and allow the data store's address if it is
# private (an S3-compatible store inside the cluster, say) with a rule of
# its own. The crawler refuses these addresses itself too (docs/src/security.md);
# this policy holds even if a page found a way around it. On an IPv6-only
# cluster with DNS64, every IPv4-only site is behind 64:ff9b::/96: the
# crawler opens it with --allow-private 64:ff9b::/96 (the IPv4 address
# inside is still judged), and this policy needs a rule for it too.
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: layercrawl-worker-egress
  labels:
    app.kubernetes.io/name: layercrawl
spec:
  podSelector:
    matchLabels:
      app.kubernetes.io/name: layercrawl
      app.kubernetes.io/component: task
  policyTypes: [\"Ingress\", \"Egress\"]
  # No ingress at all: nothing connects to a task pod.
  ingress: []
  egress:
    - to:
        - namespaceSelector: {}
          podSelector:
            matchLabels:
              k8s-app: kube-dns
      ports:
        - protocol: UDP
          port: 53
        - protocol: TCP
          port: 53
    - to:
";

/// The NetworkPolicy, its `except` lists from the crawler's blocked ranges.
pub fn yaml() -> String {
    let (v4, v6) = ranges::except();
    let mut out = String::from(HEAD);
    for (cidr, list) in [("0.0.0.0/0", v4), ("::/0", v6)] {
        out.push_str(&format!("        - ipBlock:\n            cidr: {cidr}\n            except:\n"));
        for Range { net, what, .. } in list {
            // The metadata addresses a wider range holds, named.
            let inside: Vec<String> = ranges::BLOCKED
                .iter()
                .filter(|r| !r.openable && r.net != *net && net.contains(&r.net))
                .map(|r| r.net.addr().to_string())
                .collect();
            let holds = if inside.is_empty() { String::new() } else { format!(", metadata {}", inside.join(" ")) };
            out.push_str(&format!("              - {net} # {what}{holds}\n"));
        }
    }
    out
}

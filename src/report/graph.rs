//! The graphs the page draws: nodes with a weight and edges with a count,
//! cut to the heaviest so the page stays small and its layout quick
//! (docs/src/report.md: the top hosts, the top entities).

use std::collections::HashMap;

use serde::Serialize;

use super::rows::{DocTally, LinkTally};

/// Hosts drawn in the link graph at most.
pub(super) const MAX_HOSTS: usize = 200;
/// Host-to-host edges drawn at most.
pub(super) const MAX_HOST_EDGES: usize = 1500;

/// A graph as the page draws it.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Graph {
    pub nodes: Vec<Node>,
    pub edges: Vec<Edge>,
    /// Nodes and edges before the cut.
    pub all_nodes: u64,
    pub all_edges: u64,
}

/// One node: its label, weight (the circle's area), colour group, and the
/// line shown when the pointer is over it.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Node {
    pub label: String,
    pub weight: u64,
    pub group: String,
    pub detail: String,
}

/// One edge between nodes `s` and `t` (indexes into `nodes`).
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Edge {
    pub s: u32,
    pub t: u32,
    pub w: u64,
    /// What the edge is, for edges of several kinds (`relation`, `co`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub kind: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub label: String,
}

/// The host graph: the [`MAX_HOSTS`] hosts with the most pages and links
/// from other hosts, and the heaviest links between them.
pub(super) fn host_graph(docs: &DocTally, links: &LinkTally) -> Graph {
    let n = links.hosts.len();
    let (mut out, mut inc, mut own) = (vec![0u64; n], vec![0u64; n], vec![0u64; n]);
    let mut between = 0u64;
    for (&(s, d), &w) in &links.edges {
        if s == d {
            own[s as usize] += w;
        } else {
            out[s as usize] += w;
            inc[d as usize] += w;
            between += 1;
        }
    }
    // Every host with a page or a link is a candidate.
    let mut hosts: HashMap<&str, (u64, Option<usize>)> = HashMap::new();
    for (h, t) in &docs.hosts {
        hosts.insert(h.as_str(), (t.pages, None));
    }
    for (i, h) in links.hosts.iter().enumerate() {
        hosts.entry(h.as_str()).or_insert((0, None)).1 = Some(i);
    }
    let all_nodes = hosts.len() as u64;
    let score = |pages: u64, id: Option<usize>| pages + id.map_or(0, |i| inc[i]);
    let mut ranked: Vec<(&str, u64, Option<usize>)> =
        hosts.into_iter().map(|(h, (pages, id))| (h, score(pages, id), id)).collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    ranked.truncate(MAX_HOSTS);
    let mut at: HashMap<usize, u32> = HashMap::new();
    let nodes = ranked
        .iter()
        .enumerate()
        .map(|(k, &(h, _, id))| {
            if let Some(i) = id {
                at.insert(i, u32::try_from(k).unwrap_or(u32::MAX));
            }
            let t = docs.hosts.get(h);
            let (pages, ok) = t.map_or((0, 0), |t| (t.pages, t.ok));
            let (o, i, s) = id.map_or((0, 0, 0), |i| (out[i], inc[i], own[i]));
            Node {
                label: h.to_string(),
                weight: pages.max(1),
                group: crate::urlnorm::registrable_domain(h),
                detail: format!("{pages} pages ({ok} ok); links: {i} in from other hosts, {o} out, {s} within"),
            }
        })
        .collect();
    let mut edges: Vec<Edge> = links
        .edges
        .iter()
        .filter(|(&(s, d), _)| s != d)
        .filter_map(|(&(s, d), &w)| {
            Some(Edge { s: *at.get(&(s as usize))?, t: *at.get(&(d as usize))?, w, ..Edge::default() })
        })
        .collect();
    edges.sort_by(|a, b| b.w.cmp(&a.w).then(a.s.cmp(&b.s)).then(a.t.cmp(&b.t)));
    edges.truncate(MAX_HOST_EDGES);
    Graph { nodes, edges, all_nodes, all_edges: between }
}

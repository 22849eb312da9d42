//! The Kubernetes executor: each phase of each layer is one Indexed Job
//! (docs/src/cluster.md). Its completions are the partitions
//! (index I runs `layercrawl task <phase> --partition-from-env
//! JOB_COMPLETION_INDEX`), its parallelism the workers; the cluster's own
//! batch scheduler places, retries and reports the pods:
//!
//! - `backoffLimitPerIndex`: a failed index is retried on its own, up to
//!   [`RETRIES`] times, without failing the others;
//! - a `podFailurePolicy`: a pod evicted or preempted (the
//!   `DisruptionTarget` condition) is not counted as a failure; exit code 2
//!   (bad input, which a retry cannot fix) fails its index at once.
//!
//! The driver creates the Job, watches it until it completes or fails, and
//! fails the run naming the failed indexes. A Job left by a driver that was
//! killed is found by its name and watched again (tasks already committed
//! end at once), or replaced if it had failed. `--dry-run` prints the Jobs.

//!
//! The Jobs' settings and their objects ([`job_object`], what `--dry-run`
//! prints) are plain JSON, in every build; the client that creates and
//! watches them (`client.rs`: [`Kubernetes`]) only with the cargo feature
//! `kubernetes`. Without it, `--executor kubernetes` is refused when the
//! run starts ([`BUILT`] is false).

#[cfg(feature = "kubernetes")]
mod client;
#[cfg(not(feature = "kubernetes"))]
#[path = "absent.rs"]
mod client;

use serde_json::{json, Value};

use super::Phase;
pub use client::{Kubernetes, BUILT};

/// Retries of one index (its pod failed) before the index fails.
pub const RETRIES: u32 = 2;
/// Finished Jobs are deleted by the cluster after a day.
const TTL_AFTER_FINISHED: u32 = 86_400;
/// A task Job still running after this long is stopped by Kubernetes (a
/// map task of a layer is bounded by its layer; 12 hours is far beyond).
const TASK_DEADLINE_SECS: u32 = 43_200;
/// The task pods' temporary folder (spill files, open row groups): bounded,
/// so a hostile page cannot fill the node's disk.
const TMP_SIZE: &str = "8Gi";
/// The container's name in each task pod.
const CONTAINER: &str = "task";

/// How the task pods are made.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct KubeConfig {
    /// Pods of one Job at once.
    pub workers: usize,
    /// The task pods' image (layercrawl's; `jobs/k8s/Dockerfile`).
    pub image: String,
    /// Where the Jobs go; the driver pod's own namespace when not given.
    pub namespace: Option<String>,
    /// A Secret whose keys become the task pods' environment (storage
    /// credentials: `AWS_*`, `GOOGLE_*`, `AZURE_*`).
    pub worker_secret: Option<String>,
    /// The task pods' ServiceAccount (one without API access).
    pub service_account: String,
    /// The task pods' Localhost seccomp profile, relative to the kubelet's
    /// seccomp folder; `RuntimeDefault` when not given. The render pods
    /// need one that allows user namespaces (jobs/k8s/seccomp/render.json).
    #[serde(default)]
    pub seccomp_profile: Option<String>,
    /// The driver's own pod, when it runs in one: its Jobs are owned by it
    /// and go with it (Kubernetes' garbage collector deletes them).
    #[serde(default)]
    pub owner: Option<OwnerPod>,
}

/// The driver's pod, from the downward API (`LAYERCRAWL_POD_NAME`,
/// `LAYERCRAWL_POD_UID`, `LAYERCRAWL_NAMESPACE`; `jobs/k8s/cronjob.yaml`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OwnerPod {
    pub name: String,
    pub uid: String,
    pub namespace: Option<String>,
}

impl OwnerPod {
    /// The driver's pod as its environment names it; none outside a pod.
    #[must_use]
    pub fn from_env() -> Option<Self> {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        Some(Self {
            name: var("LAYERCRAWL_POD_NAME")?,
            uid: var("LAYERCRAWL_POD_UID")?,
            namespace: var("LAYERCRAWL_NAMESPACE"),
        })
    }
}

/// The Job of one phase of one layer, as the driver creates it.
#[must_use]
pub fn job_object(s: &KubeConfig, data: &str, partitions: u32, phase: Phase, layer: u32) -> Value {
    let name = job_name(data, phase, layer);
    let mut args = vec!["task".to_string(), phase.as_str().to_string(), "--data".into(), data.to_string()];
    // The merge's layer is the crawl's last, catch-up layers included.
    args.extend(["--layer".into(), layer.to_string()]);
    let completions = if phase == Phase::Merge {
        1
    } else {
        args.extend(["--partition-from-env".into(), "JOB_COMPLETION_INDEX".into()]);
        partitions
    };
    let parallelism = u32::try_from(s.workers).unwrap_or(u32::MAX).clamp(1, completions);
    let seccomp = match &s.seccomp_profile {
        Some(path) => json!({"type": "Localhost", "localhostProfile": path}),
        None => json!({"type": "RuntimeDefault"}),
    };
    let mut container = json!({
        "name": CONTAINER,
        "image": s.image,
        "args": args,
        "env": [{"name": "RUST_LOG", "value": std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".into())}],
        "securityContext": {
            "allowPrivilegeEscalation": false,
            "readOnlyRootFilesystem": true,
            "runAsNonRoot": true,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": seccomp
        },
        "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
        // The pods handle other people's content: CPU, memory and disk are
        // all bounded, as the driver's own are.
        "resources": {
            "requests": {"cpu": "1", "memory": "1Gi", "ephemeral-storage": "1Gi"},
            "limits": {"cpu": "2", "memory": "4Gi", "ephemeral-storage": TMP_SIZE}
        }
    });
    if let Some(secret) = &s.worker_secret {
        container["envFrom"] = json!([{"secretRef": {"name": secret}}]);
    }
    let labels = json!({
        "app.kubernetes.io/name": "layercrawl",
        "app.kubernetes.io/component": "task",
        "layercrawl/phase": phase.as_str(),
        "layercrawl/layer": layer.to_string(),
    });
    let mut job = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "completionMode": "Indexed",
            "completions": completions,
            "parallelism": parallelism,
            "backoffLimitPerIndex": RETRIES,
            "ttlSecondsAfterFinished": TTL_AFTER_FINISHED,
            "activeDeadlineSeconds": TASK_DEADLINE_SECS,
            "podFailurePolicy": {"rules": [
                {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
                {"action": "FailIndex", "onExitCodes": {"containerName": CONTAINER, "operator": "In", "values": [2]}}
            ]},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "restartPolicy": "Never",
                    "serviceAccountName": s.service_account,
                    "automountServiceAccountToken": false,
                    "securityContext": {
                        "runAsNonRoot": true,
                        "runAsUser": 10001,
                        "runAsGroup": 10001,
                        "seccompProfile": seccomp
                    },
                    "containers": [container],
                    "volumes": [{"name": "tmp", "emptyDir": {"sizeLimit": TMP_SIZE}}]
                }
            }
        }
    });
    if let Some(ns) = &s.namespace {
        job["metadata"]["namespace"] = json!(ns);
    }
    // Owned by the driver's pod (an owner must be in the same namespace):
    // a driver that dies or is deleted takes its running Jobs with it.
    if let Some(o) = s.owner.as_ref().filter(|o| s.namespace.is_none() || s.namespace == o.namespace) {
        job["metadata"]["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "Pod", "name": o.name, "uid": o.uid}]);
    }
    job
}

/// A Job's name: the phase, the layer, and a hash of the data location, so
/// that two crawls in one namespace never share a Job and a restarted
/// driver finds its own. The merge's names the last layer: a crawl
/// deepened later merges again.
#[must_use]
pub fn job_name(data: &str, phase: Phase, layer: u32) -> String {
    let h = xxhash_rust::xxh3::xxh3_64(data.as_bytes()) & 0xffff_ffff;
    match phase {
        Phase::Merge => format!("layercrawl-{h:08x}-merge-to-l{layer}"),
        p => format!("layercrawl-{h:08x}-l{layer}-{}", p.as_str()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn settings() -> KubeConfig {
        KubeConfig {
            workers: 4,
            image: "registry.example/layercrawl:1".into(),
            namespace: Some("crawl".into()),
            worker_secret: Some("layercrawl-storage".into()),
            service_account: "layercrawl-worker".into(),
            seccomp_profile: None,
            owner: None,
        }
    }

    #[test]
    fn jobs_are_owned_by_the_driver_s_pod_in_its_namespace() {
        let owner = OwnerPod { name: "driver-abc".into(), uid: "1234-uid".into(), namespace: Some("crawl".into()) };
        let s = KubeConfig { owner: Some(owner.clone()), ..settings() };
        let v = job_object(&s, "s3://b/crawl", 4, Phase::Map, 0);
        let refs = &v["metadata"]["ownerReferences"];
        assert_eq!((refs[0]["kind"].as_str(), refs[0]["uid"].as_str()), (Some("Pod"), Some("1234-uid")), "{v}");
        let elsewhere = KubeConfig { namespace: Some("other".into()), ..s };
        let v = job_object(&elsewhere, "s3://b/crawl", 4, Phase::Map, 0);
        assert!(v["metadata"].get("ownerReferences").is_none(), "an owner in another namespace is not one");
    }
}

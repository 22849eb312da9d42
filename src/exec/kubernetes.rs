//! The Kubernetes executor: each phase of each layer is one Indexed Job
//! (README, "Running on a cluster"). Its completions are the partitions
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

use futures::future::BoxFuture;
use futures::FutureExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams, LogParams, PostParams, PropagationPolicy};
use serde_json::{json, Value};

use super::{ExecError, Executor, Phase, PhaseRun};

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
/// Lines of a failed pod's log quoted in the report.
const LOG_LINES: i64 = 5;
/// The container's name in each task pod.
const CONTAINER: &str = "task";

/// How the task pods are made.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct KubeSettings {
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

/// Runs each phase as an Indexed Job.
pub struct Kubernetes {
    settings: KubeSettings,
    data: String,
    partitions: u32,
    client: kube::Client,
    namespace: String,
}

impl Kubernetes {
    /// Connects to the cluster: in a pod, through its ServiceAccount; else
    /// through the user's kubeconfig.
    ///
    /// # Errors
    /// When no cluster configuration is found or it is unusable.
    pub async fn connect(settings: KubeSettings, data: &str, partitions: u32) -> Result<Self, ExecError> {
        let client = kube::Client::try_default().await.map_err(|e| {
            ExecError::Setup(format!(
                "cannot reach the Kubernetes API ({e}): run the driver in a pod with the layercrawl-driver ServiceAccount (jobs/k8s/), or with a kubeconfig"
            ))
        })?;
        let namespace = settings.namespace.clone().unwrap_or_else(|| client.default_namespace().to_string());
        Ok(Self { settings, data: data.to_string(), partitions, client, namespace })
    }

    fn spec(&self, run: &PhaseRun) -> Value {
        job_object(&self.settings, &self.data, self.partitions, run.phase, run.layer)
    }

    /// The last lines of the log of index `index`'s latest pod, for the
    /// failure report (empty when they cannot be read).
    async fn last_log_lines(&self, job: &str, index: u32) -> String {
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &self.namespace);
        let selector = format!("batch.kubernetes.io/job-name={job},batch.kubernetes.io/job-completion-index={index}");
        let Ok(list) = pods.list(&ListParams::default().labels(&selector)).await else { return String::new() };
        let latest = list
            .items
            .iter()
            .filter_map(|p| Some((p.metadata.creation_timestamp.clone()?, p.metadata.name.clone()?)))
            .max_by(|a, b| a.0.cmp(&b.0));
        let Some((_, pod)) = latest else { return String::new() };
        let params = LogParams { tail_lines: Some(LOG_LINES), ..LogParams::default() };
        match pods.logs(&pod, &params).await {
            Ok(text) => format!("; pod {pod}: {}", text.lines().collect::<Vec<_>>().join(" / ")),
            Err(_) => String::new(),
        }
    }
}

/// The Job of one phase of one layer, as the driver creates it.
#[must_use]
pub fn job_object(s: &KubeSettings, data: &str, partitions: u32, phase: Phase, layer: u32) -> Value {
    let name = job_name(data, phase, layer);
    let mut args = vec!["task".to_string(), phase.as_str().to_string(), "--data".into(), data.to_string()];
    let completions = if phase == Phase::Merge {
        1
    } else {
        args.extend([
            "--layer".into(),
            layer.to_string(),
            "--partition-from-env".into(),
            "JOB_COMPLETION_INDEX".into(),
        ]);
        partitions
    };
    let parallelism = u32::try_from(s.workers).unwrap_or(u32::MAX).clamp(1, completions);
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
            "seccompProfile": {"type": "RuntimeDefault"}
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
                        "seccompProfile": {"type": "RuntimeDefault"}
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

/// How a watched Job ended.
enum Ended {
    Complete,
    Failed { reason: String, indexes: Vec<u32> },
}

fn ended(job: &Job) -> Option<Ended> {
    let status = job.status.as_ref()?;
    for c in status.conditions.iter().flatten() {
        if c.status != "True" {
            continue;
        }
        match c.type_.as_str() {
            "Complete" => return Some(Ended::Complete),
            "Failed" => {
                let indexes = status.failed_indexes.as_deref().map(parse_indexes).unwrap_or_default();
                let reason =
                    format!("{}: {}", c.reason.clone().unwrap_or_default(), c.message.clone().unwrap_or_default());
                return Some(Ended::Failed { reason, indexes });
            }
            _ => {}
        }
    }
    None
}

/// Indexes as Kubernetes lists them: `1,3-5`.
fn parse_indexes(s: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<u32>(), b.parse::<u32>()) {
                    out.extend(a..=b);
                }
            }
            None => out.extend(part.parse::<u32>().ok()),
        }
    }
    out
}

impl Executor for Kubernetes {
    fn name(&self) -> &'static str {
        "kubernetes"
    }

    fn run<'a>(&'a self, run: &'a PhaseRun) -> BoxFuture<'a, Result<(), ExecError>> {
        async move {
            let api: Api<Job> = Api::namespaced(self.client.clone(), &self.namespace);
            let spec = self.spec(run);
            let name = job_name(&self.data, run.phase, run.layer);
            let job: Job =
                serde_json::from_value(spec).map_err(|e| ExecError::Setup(format!("building Job {name}: {e}")))?;
            let api_err = |what: &str, e: kube::Error| {
                ExecError::Setup(format!("{what} Job {name} in namespace {}: {e}", self.namespace))
            };
            match api.create(&PostParams::default(), &job).await {
                Ok(_) => tracing::info!(job = %name, "created"),
                Err(kube::Error::Api(s)) if s.code == 409 => {
                    // Left by an earlier driver: watch it, unless it failed.
                    let old = api.get(&name).await.map_err(|e| api_err("reading", e))?;
                    if matches!(ended(&old), Some(Ended::Failed { .. })) {
                        let dp = DeleteParams {
                            propagation_policy: Some(PropagationPolicy::Foreground),
                            ..DeleteParams::default()
                        };
                        api.delete(&name, &dp).await.map_err(|e| api_err("deleting", e))?;
                        kube::runtime::wait::await_condition(
                            api.clone(),
                            &name,
                            kube::runtime::wait::conditions::is_deleted(""),
                        )
                        .await
                        .map_err(|e| ExecError::Setup(format!("waiting for Job {name} to be deleted: {e}")))?;
                        api.create(&PostParams::default(), &job).await.map_err(|e| api_err("creating", e))?;
                    }
                }
                Err(e) => return Err(api_err("creating", e)),
            }
            let done =
                kube::runtime::wait::await_condition(api.clone(), &name, |j: Option<&Job>| j.and_then(ended).is_some())
                    .await
                    .map_err(|e| ExecError::Setup(format!("watching Job {name}: {e}")))?;
            match done.as_ref().and_then(ended) {
                Some(Ended::Complete) => Ok(()),
                Some(Ended::Failed { reason, indexes }) => {
                    let mut failed = Vec::new();
                    for i in indexes {
                        let log = self.last_log_lines(&name, i).await;
                        let see = format!("see `kubectl logs -n {} job/{name}`", self.namespace);
                        failed.push((i, format!("Job {name} failed ({reason}){log}; {see}")));
                    }
                    Err(ExecError::Failed { phase: run.phase.as_str(), layer: run.layer, failed })
                }
                None => Err(ExecError::Setup(format!("Job {name} vanished while it was watched"))),
            }
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> KubeSettings {
        KubeSettings {
            workers: 4,
            image: "registry.example/layercrawl:1".into(),
            namespace: Some("crawl".into()),
            worker_secret: Some("layercrawl-storage".into()),
            service_account: "layercrawl-worker".into(),
            owner: None,
        }
    }

    #[test]
    fn jobs_are_owned_by_the_driver_s_pod_in_its_namespace() {
        let owner = OwnerPod { name: "driver-abc".into(), uid: "1234-uid".into(), namespace: Some("crawl".into()) };
        let s = KubeSettings { owner: Some(owner.clone()), ..settings() };
        let v = job_object(&s, "s3://b/crawl", 4, Phase::Map, 0);
        let refs = &v["metadata"]["ownerReferences"];
        assert_eq!((refs[0]["kind"].as_str(), refs[0]["uid"].as_str()), (Some("Pod"), Some("1234-uid")), "{v}");
        let elsewhere = KubeSettings { namespace: Some("other".into()), ..s };
        let v = job_object(&elsewhere, "s3://b/crawl", 4, Phase::Map, 0);
        assert!(v["metadata"].get("ownerReferences").is_none(), "an owner in another namespace is not one");
    }

    #[test]
    fn a_map_job_has_one_index_per_partition_and_reads_its_index() {
        let v = job_object(&settings(), "s3://b/crawl", 16, Phase::Map, 2);
        let job: Job = serde_json::from_value(v.clone()).expect("a valid Job");
        let spec = job.spec.expect("spec");
        assert_eq!((spec.completions, spec.parallelism, spec.backoff_limit_per_index), (Some(16), Some(4), Some(2)));
        assert_eq!(spec.completion_mode.as_deref(), Some("Indexed"));
        let args = &v["spec"]["template"]["spec"]["containers"][0]["args"];
        assert_eq!(args[1], "map");
        assert!(args.as_array().expect("args").iter().any(|a| a == "JOB_COMPLETION_INDEX"), "{args}");
        assert_eq!(job_name("s3://b/crawl", Phase::Map, 2), v["metadata"]["name"]);
        assert!(job_name("s3://b/crawl", Phase::Map, 2).len() <= 63);
    }

    fn job_with_status(status: serde_json::Value) -> Job {
        let mut v = job_object(&settings(), "s3://b/crawl", 8, Phase::Map, 0);
        v["status"] = status;
        serde_json::from_value(v).expect("a Job with a status")
    }

    #[test]
    fn a_job_ends_on_its_complete_or_failed_condition_with_the_failed_indexes() {
        let running = job_with_status(json!({"active": 4, "conditions": []}));
        assert!(ended(&running).is_none());
        let done = job_with_status(json!({"succeeded": 8, "conditions": [
            {"type": "SuccessCriteriaMet", "status": "True"}, {"type": "Complete", "status": "True"}]}));
        assert!(matches!(ended(&done), Some(Ended::Complete)));
        let failed = job_with_status(json!({"failedIndexes": "1,5-6", "conditions": [
            {"type": "FailureTarget", "status": "True"},
            {"type": "Failed", "status": "True", "reason": "FailedIndexes", "message": "Job has failed indexes"}]}));
        match ended(&failed) {
            Some(Ended::Failed { reason, indexes }) => {
                assert_eq!(indexes, vec![1, 5, 6]);
                assert!(reason.contains("FailedIndexes"), "{reason}");
            }
            _ => panic!("a failed Job"),
        }
        let not_yet = job_with_status(json!({"conditions": [{"type": "Failed", "status": "False"}]}));
        assert!(ended(&not_yet).is_none(), "a condition that is not True does not end it");
    }

    #[test]
    fn failed_indexes_are_read_as_kubernetes_writes_them() {
        assert_eq!(parse_indexes("1,3-5,9"), vec![1, 3, 4, 5, 9]);
        assert!(parse_indexes("").is_empty());
    }
}

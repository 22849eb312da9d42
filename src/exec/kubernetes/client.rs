//! The Kubernetes API client (the cargo feature `kubernetes`): creates a
//! phase's Job, watches it to its end, and reports the failed indexes with
//! the last lines of their pods' logs.

use futures::future::BoxFuture;
use futures::FutureExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams, LogParams, PostParams, PropagationPolicy};
use serde_json::Value;

use super::super::{ExecError, Executor, PhaseRun};
use super::{job_name, job_object, KubeConfig};

/// This build has the Kubernetes executor.
pub const BUILT: bool = true;

/// Lines of a failed pod's log quoted in the report.
const LOG_LINES: i64 = 5;

/// Runs each phase as an Indexed Job.
pub struct Kubernetes {
    settings: KubeConfig,
    data: String,
    partitions: u32,
    client: kube::Client,
    namespace: String,
    /// The driver's lease generation, handed to every task pod
    /// (`--lease-generation`; docs/src/cluster.md).
    generation: Option<u64>,
}

impl Kubernetes {
    /// Connects to the cluster: in a pod, through its ServiceAccount; else
    /// through the user's kubeconfig.
    ///
    /// # Errors
    /// When no cluster configuration is found or it is unusable.
    pub async fn connect(settings: KubeConfig, data: &str, partitions: u32) -> Result<Self, ExecError> {
        let client = kube::Client::try_default().await.map_err(|e| {
            ExecError::Setup(format!(
                "cannot reach the Kubernetes API ({e}): run the driver in a pod with the layercrawl-driver ServiceAccount (jobs/k8s/), or with a kubeconfig"
            ))
        })?;
        let namespace = settings.namespace.clone().unwrap_or_else(|| client.default_namespace().to_string());
        Ok(Self { settings, data: data.to_string(), partitions, client, namespace, generation: None })
    }

    /// Its task pods act under lease generation `generation`: they watch
    /// the lease and commit nothing once another run holds it.
    #[must_use]
    pub fn with_generation(mut self, generation: u64) -> Self {
        self.generation = Some(generation);
        self
    }

    fn spec(&self, run: &PhaseRun) -> Value {
        let mut job = job_object(&self.settings, &self.data, self.partitions, run.phase, run.layer);
        if let (Some(g), Some(args)) =
            (self.generation, job.pointer_mut("/spec/template/spec/containers/0/args").and_then(Value::as_array_mut))
        {
            args.extend([Value::from("--lease-generation"), Value::from(g.to_string())]);
        }
        job
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
                    // Left by an earlier driver: watch it, unless it failed,
                    // or its pods act under another lease generation (they
                    // would be fenced off: docs/src/cluster.md).
                    let old = api.get(&name).await.map_err(|e| api_err("reading", e))?;
                    let args = |j: &Job| {
                        j.spec
                            .as_ref()
                            .and_then(|s| s.template.spec.as_ref())
                            .and_then(|s| s.containers.first()?.args.clone())
                    };
                    if matches!(ended(&old), Some(Ended::Failed { .. })) || args(&old) != args(&job) {
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
    use serde_json::json;

    use super::super::super::Phase;
    use super::super::tests::settings;
    use super::*;

    #[test]
    fn the_merge_job_is_told_the_run_s_last_layer() {
        // Catch-up layers past the depth (here 2) are merged too.
        let v = job_object(&settings(), "s3://b/crawl", 16, Phase::Merge, 3);
        let args = &v["spec"]["template"]["spec"]["containers"][0]["args"];
        assert_eq!(args, &json!(["task", "merge", "--data", "s3://b/crawl", "--layer", "3"]));
        assert_eq!(v["spec"]["completions"], 1);
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

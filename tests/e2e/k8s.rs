//! The Kubernetes path, checked offline (no cluster is reachable here):
//! the Jobs the driver would create (`--dry-run`) and the manifests under
//! jobs/k8s/ validate, in strict mode, against the schemas of a current
//! Kubernetes release (`scripts/k8s-validate.sh`, which installs the
//! validator from PyPI once).

use crate::common;

use std::path::Path;
use std::process::Command;

fn validate(files: &[&Path]) -> std::process::Output {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/k8s-validate.sh");
    Command::new("bash").arg(script).args(files).output().expect("run scripts/k8s-validate.sh")
}

/// The dry run's Jobs, one JSON object per YAML document.
fn dry_run(depth: &str) -> (String, Vec<serde_json::Value>) {
    dry_run_with(depth, &[])
}

/// The same, with `extra` options.
fn dry_run_with(depth: &str, extra: &[&str]) -> (String, Vec<serde_json::Value>) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let seeds = tmp.path().join("seeds.txt");
    std::fs::write(&seeds, "https://docs.example.org/\n").expect("seeds");
    // As the CronJob's driver pod: its Jobs are owned by it.
    let out = common::layercrawl_env(
        &[
            ("LAYERCRAWL_POD_NAME", "nightly-driver-x1"),
            ("LAYERCRAWL_POD_UID", "0c3b5f7e-1a2b-4c5d-8e9f-0123456789ab"),
            ("LAYERCRAWL_NAMESPACE", "crawl"),
        ],
        &[
            "run",
            "--seeds",
            seeds.to_str().expect("utf8"),
            "--depth",
            depth,
            "--partitions",
            "12",
            "--data",
            "s3://crawl-bucket/nightly",
            "--executor",
            "kubernetes",
            "--workers",
            "4",
            "--image",
            "registry.example.org/layercrawl:0.1.0",
            "--namespace",
            "crawl",
            "--worker-secret",
            "layercrawl-storage",
            "--dry-run",
        ]
        .into_iter()
        .chain(extra.iter().copied())
        .collect::<Vec<_>>(),
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).expect("utf8");
    let jobs = text
        .split("---\n")
        .filter(|d| !d.trim().is_empty())
        .map(|d| serde_json::from_str(d).expect("each document is a JSON object"))
        .collect();
    (text, jobs)
}

#[test]
fn the_driver_s_jobs_and_the_manifests_validate_against_kubernetes_schemas() {
    let (text, jobs) = dry_run("2");
    let names: Vec<&str> = jobs.iter().map(|j| j["metadata"]["name"].as_str().expect("name")).collect();
    assert_eq!(jobs.len(), 3, "map and optimise of layer 0, and the merge: {names:?}");
    for (job, phase) in jobs.iter().zip(["map", "optimise", "merge"]) {
        assert_eq!(job["kind"], "Job");
        let spec = &job["spec"];
        assert_eq!(spec["completionMode"], "Indexed");
        assert_eq!(spec["completions"], if phase == "merge" { 1 } else { 12 }, "{phase}: one index per partition");
        assert_eq!(spec["parallelism"], if phase == "merge" { 1 } else { 4 });
        assert!(spec["backoffLimitPerIndex"].as_u64().is_some_and(|n| n >= 1), "{spec}");
        let rules = spec["podFailurePolicy"]["rules"].as_array().expect("podFailurePolicy");
        assert!(rules.iter().any(|r| r["action"] == "FailIndex" && r["onExitCodes"]["values"][0] == 2), "{rules:?}");
        let pod = &spec["template"]["spec"];
        assert_eq!(pod["restartPolicy"], "Never");
        assert_eq!(pod["automountServiceAccountToken"], false, "task pods need no API access");
        // The pods that handle the hostile content are confined as the driver is.
        assert_eq!(pod["securityContext"]["seccompProfile"]["type"], "RuntimeDefault");
        let c = &pod["containers"][0];
        assert_eq!(c["securityContext"]["seccompProfile"]["type"], "RuntimeDefault");
        for limit in ["cpu", "memory", "ephemeral-storage"] {
            assert!(c["resources"]["limits"][limit].is_string(), "{limit} limit: {}", c["resources"]);
        }
        assert!(pod["volumes"][0]["emptyDir"]["sizeLimit"].is_string(), "{}", pod["volumes"]);
        assert!(spec["activeDeadlineSeconds"].as_u64().is_some_and(|s| s > 0), "{spec}");
        let owner = &job["metadata"]["ownerReferences"][0];
        assert_eq!((owner["kind"].as_str(), owner["name"].as_str()), (Some("Pod"), Some("nightly-driver-x1")), "{job}");
        let args: Vec<&str> =
            pod["containers"][0]["args"].as_array().expect("args").iter().map(|a| a.as_str().expect("str")).collect();
        assert_eq!(&args[..4], ["task", phase, "--data", "s3://crawl-bucket/nightly"]);
        assert_eq!(args.contains(&"JOB_COMPLETION_INDEX"), phase != "merge", "{args:?}");
        assert_eq!(pod["containers"][0]["envFrom"][0]["secretRef"]["name"], "layercrawl-storage");
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let file = tmp.path().join("jobs.yaml");
    std::fs::write(&file, &text).expect("write");
    let out = validate(&[&file]);
    let report = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the Jobs and jobs/k8s/*.yaml must validate:\n{report}");
    for name in names {
        assert!(report.contains(name), "{name} was validated:\n{report}");
    }
    for manifest in
        ["layercrawl-nightly", "layercrawl-driver", "layercrawl-worker", "layercrawl-job", "layercrawl-worker-egress"]
    {
        assert!(report.contains(manifest), "{manifest} (jobs/k8s) was validated:\n{report}");
    }
}

#[test]
fn the_validator_refuses_a_job_with_a_misspelt_field() {
    let (text, _) = dry_run("0");
    let tmp = tempfile::tempdir().expect("tempdir");
    let file = tmp.path().join("bad.yaml");
    std::fs::write(&file, text.replacen("\"backoffLimitPerIndex\"", "\"backoffLimitPerIdx\"", 1)).expect("write");
    let out = validate(&[&file]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stdout));
    let report = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(report.contains("backoffLimitPerIdx"), "names the field:\n{report}");
}

/// The render pods' seccomp profile (jobs/k8s/seccomp/render.json, on the
/// nodes): `--worker-seccomp-profile` gives it to the task pods as a
/// Localhost profile, pod and container alike, and the Jobs still validate.
#[test]
fn the_task_pods_get_the_seccomp_profile_given_for_rendering() {
    let (text, jobs) = dry_run_with("0", &["--worker-seccomp-profile", "layercrawl/render.json"]);
    assert!(!jobs.is_empty());
    for job in &jobs {
        let pod = &job["spec"]["template"]["spec"];
        let want = serde_json::json!({"type": "Localhost", "localhostProfile": "layercrawl/render.json"});
        assert_eq!(pod["securityContext"]["seccompProfile"], want, "{job}");
        assert_eq!(pod["containers"][0]["securityContext"]["seccompProfile"], want, "{job}");
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let file = tmp.path().join("render-jobs.yaml");
    std::fs::write(&file, &text).expect("write");
    let out = validate(&[&file]);
    assert!(out.status.success(), "{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
}

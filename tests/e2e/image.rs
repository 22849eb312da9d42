//! The container image (docs/src/cluster.md, "The image"), built and run.
//! `scripts/image.sh` installs Podman and runc and makes a Debian base with
//! mmdebstrap once (kept in target/image/, as no registry is reachable);
//! the test builds jobs/k8s/Dockerfile's `prebuilt` target around the
//! binary the tests run, and runs it as a non-root user, with a read-only
//! root file system, no capabilities and only /tmp writable, as the
//! manifests under jobs/k8s/ run it: `layercrawl demo` without a network,
//! and a crawl of the test web into moto's S3 server, whose rows must be
//! those of the same crawl run outside the image.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use common::objstores::{Kind, Server};
use common::{read_docs, Web};
use testweb::FarmConfig;

/// The image's tag: the package's version, which jobs/k8s/kustomization.yaml names.
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The built image, shared by the tests of this module.
struct Image {
    /// Podman's configuration (scripts/image.sh).
    conf: PathBuf,
    tag: String,
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Installs the tools and the base, then builds the image once.
fn image() -> &'static Image {
    static IMAGE: OnceLock<Image> = OnceLock::new();
    IMAGE.get_or_init(|| {
        let out = Command::new("bash").arg(root().join("scripts/image.sh")).output().expect("run scripts/image.sh");
        assert!(
            out.status.success(),
            "scripts/image.sh failed (it installs Podman, runc and mmdebstrap from Debian and builds the base):\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        let get = |key: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(key))
                .unwrap_or_else(|| panic!("scripts/image.sh printed no {key}: {text}"))
                .to_string()
        };
        let (conf, base) = (PathBuf::from(get("CONTAINERS_CONF=")), get("BASE="));
        // The build context: the binary alone.
        let context = tempfile::tempdir().expect("tempdir");
        std::fs::copy(env!("CARGO_BIN_EXE_layercrawl"), context.path().join("layercrawl")).expect("copy the binary");
        let image = Image { conf, tag: format!("localhost/layercrawl:{VERSION}") };
        // The last run's image goes first: rebuilt under the same tag, it
        // would stay behind untagged, a binary's size per run.
        let _ = image.podman(&["rmi", "--force", &image.tag]);
        let started = std::time::Instant::now();
        let built = image.podman(&[
            "build",
            "--file",
            root().join("jobs/k8s/Dockerfile").to_str().expect("utf8"),
            "--target",
            "prebuilt",
            "--build-arg",
            &format!("BASE={base}"),
            "--network",
            "none",
            "--tag",
            &image.tag,
            context.path().to_str().expect("utf8"),
        ]);
        assert!(built.status.success(), "podman build: {}", String::from_utf8_lossy(&built.stderr));
        eprintln!("image {} built in {:.1} s", image.tag, started.elapsed().as_secs_f64());
        image
    })
}

impl Image {
    fn podman(&self, args: &[&str]) -> Output {
        Command::new("podman").env("CONTAINERS_CONF", &self.conf).args(args).output().expect("run podman")
    }

    /// `podman run` of the image confined as in the manifests (cronjob.yaml's
    /// securityContext): `extra` (options) before the image, `args` after.
    fn run(&self, extra: &[&str], args: &[&str]) -> Output {
        let mut all = vec![
            "run",
            "--rm",
            "--read-only",
            "--tmpfs",
            "/tmp",
            "--cap-drop",
            "all",
            "--security-opt",
            "no-new-privileges",
        ];
        all.extend(extra);
        all.push(&self.tag);
        all.extend(args);
        self.podman(&all)
    }

    /// A host folder the container's user may write into, as `SRC:DEST`.
    fn volume(dir: &Path, dest: &str) -> String {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(dir).expect("mkdir");
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        format!("{}:{dest}", dir.display())
    }
}

fn summary(out: &Output, what: &str) -> serde_json::Value {
    assert!(out.status.success(), "{what} failed ({:?}):\n{}", out.status.code(), String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{what}: summary is not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

#[test]
fn the_image_runs_as_its_unprivileged_user_and_adds_little_to_the_binary() {
    let image = image();
    let inspect = image.podman(&["image", "inspect", "--format", "{{.Config.User}} {{.Size}}", &image.tag]);
    assert!(inspect.status.success(), "{}", String::from_utf8_lossy(&inspect.stderr));
    let text = String::from_utf8_lossy(&inspect.stdout);
    let (user, size) = text.trim().split_once(' ').expect("user and size");
    assert_eq!(user, "10001:10001", "numeric, for runAsNonRoot");
    // The release binary is about 45 MB: the rest must keep the image
    // within the book's 120 MB.
    let binary = std::fs::metadata(env!("CARGO_BIN_EXE_layercrawl")).expect("binary").len();
    let rest = size.parse::<u64>().expect("size") - binary;
    eprintln!("image {size} bytes, of which {rest} besides the binary");
    assert!(rest < 75_000_000, "the image adds {rest} bytes to the binary");

    // The manifests name the tag this build gives.
    let kustomization = std::fs::read_to_string(root().join("jobs/k8s/kustomization.yaml")).expect("kustomization");
    assert!(kustomization.contains(&format!("newTag: \"{VERSION}\"")), "jobs/k8s/kustomization.yaml: {kustomization}");

    // The demo with no network at all, as the image's own user: the
    // built-in test web runs inside the container, on its loopback.
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = image.run(
        &["--network", "none", "--volume", &Image::volume(&tmp.path().join("out"), "/out")],
        &["demo", "--data", "/out/data", "--sites", "2", "--depth", "2", "--json"],
    );
    let s = summary(&out, "layercrawl demo in the image");
    let docs = read_docs(&tmp.path().join("out/data"));
    assert_eq!(Some(docs.len() as u64), s["summary"]["merged"]["doc_rows"].as_u64(), "{s}");
    let ok = docs.iter().filter(|d| d.status == 200 && d.text.as_deref().is_some_and(|t| !t.is_empty())).count();
    assert!(ok > 50, "{ok} pages with text of {}", docs.len());
}

/// URL -> (status, title) of the crawl in `dir`.
fn rows(dir: &Path) -> BTreeMap<String, (i32, Option<String>)> {
    read_docs(dir).into_iter().map(|d| (d.url, (d.status, d.title))).collect()
}

#[test]
fn a_crawl_in_the_image_writes_to_s3_the_rows_of_the_same_crawl_outside_it() {
    let image = image();
    let web = Web::start(FarmConfig { sites: 3, pages: 25, faults: false, seed: 41, ..FarmConfig::default() });
    let flags = ["--delay", "0", "--partitions", "3"];
    let local = web.dir("local");
    web.crawl(&local, 2, &flags);
    let want = rows(&local);
    assert!(want.values().filter(|(s, _)| *s == 200).count() >= 40, "{want:?}");

    // In the image: any non-root user (as a cluster that assigns one), the
    // host's loopback (test web and S3 server), the seeds mounted read-only.
    let s3 = Server::start(Kind::S3);
    let data = s3.bucket("crawl", "nightly");
    let seeds = web.seeds.parent().expect("scratch").to_str().expect("utf8");
    let mut opts = vec![
        "--network".to_string(),
        "host".to_string(),
        "--user".to_string(),
        "65534:65534".to_string(),
        "--volume".to_string(),
        format!("{seeds}:/in:ro"),
    ];
    for (k, v) in s3.env() {
        opts.extend(["--env".to_string(), format!("{k}={v}")]);
    }
    let opts: Vec<&str> = opts.iter().map(String::as_str).collect();
    let mut args = vec![
        "run",
        "--seeds",
        "/in/seeds.txt",
        "--depth",
        "2",
        "--data",
        data.as_str(),
        "--resolve",
        web.rule.as_str(),
        "--allow-private",
        "--json",
        "--quiet",
    ];
    args.extend(flags);
    let s = summary(&image.run(&opts, &args), "the crawl in the image");
    assert_eq!(s["ok"].as_u64(), Some(want.values().filter(|(st, _)| *st == 200).count() as u64), "{s}");
    let copy = web.dir("s3-copy");
    s3.download("crawl", "nightly", &copy);
    assert_eq!(rows(&copy), want, "the URLs, statuses and titles of the crawl outside the image");
}

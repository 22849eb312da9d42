//! The container image (docs/src/cluster.md, "The image"), built and run.
//! `scripts/image.sh` installs Podman and runc and makes a Debian base with
//! mmdebstrap once (kept in target/image/, as no registry is reachable);
//! the test builds jobs/k8s/Dockerfile's `prebuilt` target around the
//! binary the tests run, and runs it as a non-root user, with a read-only
//! root file system, no capabilities and only /tmp writable, as the
//! manifests under jobs/k8s/ run it: `layercrawl demo` without a network,
//! and a crawl of the test web into moto's S3 server, whose rows must be
//! those of the same crawl run outside the image. The render image (the
//! same on the render base, Debian's Chromium inside) renders the test
//! web's script-built pages with Chromium's sandbox on under the render
//! pods' seccomp profile (jobs/k8s/seccomp/render.json), and refuses to
//! render without it.

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

/// A built image, shared by the tests of this module.
struct Image {
    /// Podman's configuration (scripts/image.sh).
    conf: PathBuf,
    tag: String,
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// What scripts/image.sh prints: Podman's configuration and the two bases.
struct Bases {
    conf: PathBuf,
    base: String,
    #[cfg_attr(not(feature = "render"), allow(dead_code))]
    render: String,
}

/// Installs the tools and makes the bases, once.
fn bases() -> &'static Bases {
    static BASES: OnceLock<Bases> = OnceLock::new();
    BASES.get_or_init(|| {
        let out = Command::new("bash").arg(root().join("scripts/image.sh")).output().expect("run scripts/image.sh");
        assert!(
            out.status.success(),
            "scripts/image.sh failed (it installs Podman, runc and mmdebstrap from Debian and builds the bases):\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        let get = |key: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(key))
                .unwrap_or_else(|| panic!("scripts/image.sh printed no {key}: {text}"))
                .to_string()
        };
        Bases { conf: PathBuf::from(get("CONTAINERS_CONF=")), base: get("BASE="), render: get("RENDER_BASE=") }
    })
}

/// The image: the `prebuilt` target around the binary the tests run, on
/// the runtime base.
fn image() -> &'static Image {
    static IMAGE: OnceLock<Image> = OnceLock::new();
    IMAGE.get_or_init(|| build(&format!("localhost/layercrawl:{VERSION}"), &bases().base, &[]))
}

/// Builds jobs/k8s/Dockerfile's `prebuilt` target as `tag` on `base`.
fn build(tag: &str, base: &str, args: &[&str]) -> Image {
    // The build context: the binary alone.
    let context = tempfile::tempdir().expect("tempdir");
    std::fs::copy(env!("CARGO_BIN_EXE_layercrawl"), context.path().join("layercrawl")).expect("copy the binary");
    let image = Image { conf: bases().conf.clone(), tag: tag.to_string() };
    // One build at a time: Podman's build looks through every image for a
    // cached layer, and fails ("layer not known") on one that the other
    // test's `rmi` is deleting.
    static BUILDS: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = BUILDS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    // The last run's image goes first: rebuilt under the same tag, it
    // would stay behind untagged, a binary's size per run.
    let _ = image.podman(&["rmi", "--force", &image.tag]);
    let started = std::time::Instant::now();
    let file = root().join("jobs/k8s/Dockerfile");
    let base = format!("BASE={base}");
    let mut all = vec!["build", "--file", file.to_str().expect("utf8"), "--target", "prebuilt", "--build-arg", &base];
    for a in args {
        all.extend(["--build-arg", a]);
    }
    all.extend(["--network", "none", "--tag", &image.tag, context.path().to_str().expect("utf8")]);
    let built = image.podman(&all);
    assert!(built.status.success(), "podman build: {}", String::from_utf8_lossy(&built.stderr));
    eprintln!("image {} built in {:.1} s", image.tag, started.elapsed().as_secs_f64());
    image
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
    // The release binary with every feature is 61.3 MB: the rest must keep
    // the image within the book's 120 MB (docs/src/cluster.md, "The image").
    let binary = std::fs::metadata(env!("CARGO_BIN_EXE_layercrawl")).expect("binary").len();
    let rest = size.parse::<u64>().expect("size") - binary;
    eprintln!("image {size} bytes, of which {rest} besides the binary");
    assert!(rest < 58_000_000, "the image adds {rest} bytes to the binary");

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

/// The render image (`--features render`, which `full` has).
#[cfg(feature = "render")]
mod render {
    use super::*;

    /// The render image: the same on the render base (Debian's Chromium),
    /// with the Dockerfile's `RENDER=1`.
    fn render_image() -> &'static Image {
        static IMAGE: OnceLock<Image> = OnceLock::new();
        IMAGE.get_or_init(|| build(&format!("localhost/layercrawl-render:{VERSION}"), &bases().render, &["RENDER=1"]))
    }

    /// The render image's run: as the render pods run it (a user of its own,
    /// read-only root, no capabilities, no new privileges), the host's loopback
    /// for the test web, `--render always`, the log at `info` (where Chromium's
    /// start says whether it is sandboxed); `seccomp`: a profile for
    /// `--security-opt seccomp=`, Podman's default when none.
    fn render_run(web: &Web, out: &Path, seccomp: Option<&Path>) -> Output {
        let seeds = web.seeds.parent().expect("scratch").to_str().expect("utf8");
        let mut opts = vec![
            "--network".to_string(),
            "host".into(),
            "--user".into(),
            "65534:65534".into(),
            "--env".into(),
            "RUST_LOG=info".into(),
            "--volume".into(),
            format!("{seeds}:/in:ro"),
            "--volume".into(),
            Image::volume(out, "/out"),
        ];
        if let Some(profile) = seccomp {
            opts.extend(["--security-opt".into(), format!("seccomp={}", profile.display())]);
        }
        let opts: Vec<&str> = opts.iter().map(String::as_str).collect();
        let mut args: Vec<String> = web.run_args(Path::new("/out/data"), 1, &["--delay", "0", "--render", "always"]);
        let at = args.iter().position(|a| a == "--seeds").expect("--seeds") + 1;
        args[at] = "/in/seeds.txt".into();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        render_image().run(&opts, &args)
    }

    /// A log without its colours' escapes.
    fn plain(log: &[u8]) -> String {
        let log = String::from_utf8_lossy(log);
        let mut parts = log.split('\u{1b}');
        let mut plain = parts.next().unwrap_or_default().to_string();
        plain.extend(parts.map(|part| part.split_once('m').map_or(part, |(_, rest)| rest)));
        plain
    }

    /// The test web's script-built pages (docs/src/rendering.md): two sites,
    /// seeded with their applications.
    fn app_web() -> Web {
        let cfg = FarmConfig { sites: 2, pages: 12, faults: false, apps: true, seed: 31, ..FarmConfig::default() };
        let farm = testweb::Farm::start_background(cfg).expect("test web");
        let seeds: Vec<String> = ["s000", "s001"].iter().map(|s| format!("http://{s}.test/app/")).collect();
        Web::with_seeds(farm, &seeds)
    }

    /// The render image renders with Chromium's sandbox on, under the seccomp
    /// profile the render pods get (jobs/k8s/seccomp/render.json): the script
    /// shells' text is the DOM their scripts built, every page is rendered, and
    /// the links the scripts made were followed.
    #[test]
    fn the_render_image_renders_sandboxed_under_the_render_pods_seccomp_profile() {
        let image = render_image();
        let inspect = image.podman(&["image", "inspect", "--format", "{{.Config.User}} {{.Size}}", &image.tag]);
        assert!(inspect.status.success(), "{}", String::from_utf8_lossy(&inspect.stderr));
        let text = String::from_utf8_lossy(&inspect.stdout);
        let (user, size) = text.trim().split_once(' ').expect("user and size");
        assert_eq!(user, "10001:10001");
        let binary = std::fs::metadata(env!("CARGO_BIN_EXE_layercrawl")).expect("binary").len();
        let rest = size.parse::<u64>().expect("size") - binary;
        eprintln!("render image {size} bytes, of which {rest} besides the binary");
        // Chromium is 356 MB of the 471 MB base (scripts/image.sh).
        assert!(rest < 500_000_000, "the render image adds {rest} bytes to the binary");

        let web = app_web();
        let out = tempfile::tempdir().expect("tempdir");
        let started = std::time::Instant::now();
        let run = render_run(&web, out.path(), Some(&root().join("jobs/k8s/seccomp/render.json")));
        let log = plain(&run.stderr);
        assert!(run.status.success(), "the rendering crawl in the image failed ({:?}):\n{log}", run.status.code());
        eprintln!("rendering crawl in the image: {:.1} s", started.elapsed().as_secs_f64());
        assert!(log.contains("Chromium started for rendering") && log.contains("sandbox=true"), "sandboxed: {log}");
        assert!(!log.contains("WITHOUT its sandbox"), "{log}");

        let docs = read_docs(&out.path().join("data"));
        let html: Vec<_> = docs.iter().filter(|d| d.status == 200 && !d.url.ends_with("/robots.txt")).collect();
        let items = html.iter().filter(|d| d.url.contains("/app/item/")).count();
        assert_eq!(items, 16, "the 8 items of each site, reached through the links the scripts made");
        for d in &html {
            assert!(d.rendered, "{}: every HTML page is rendered with always", d.url);
        }
        for shell in html.iter().filter(|d| d.url.ends_with("/app/")) {
            let text = shell.text.as_deref().unwrap_or("");
            assert!(
                text.contains("Catalogue of site"),
                "{}: the text of the DOM its script built: {text:?}",
                shell.url
            );
        }
    }

    /// Without the profile (Podman's default, which, as the Kubernetes runtimes'
    /// RuntimeDefault, refuses `chroot` to a container without CAP_SYS_CHROOT,
    /// so Chromium's sandbox cannot close itself in) the rendering crawl is
    /// refused at start, exit 2 and one line saying why, never run unsandboxed.
    #[test]
    fn without_the_profile_the_render_image_refuses_to_render_unsandboxed() {
        let web = app_web();
        let out = tempfile::tempdir().expect("tempdir");
        let run = render_run(&web, out.path(), None);
        let log = plain(&run.stderr);
        assert!(!log.contains("WITHOUT its sandbox") && !log.contains("sandbox=false"), "unsandboxed, unasked: {log}");
        assert_eq!(run.status.code(), Some(2), "refused at start: {log}");
        let said: Vec<&str> = log.lines().filter(|l| l.starts_with("error:")).collect();
        assert_eq!(said.len(), 1, "one line says why: {log}");
        assert!(said[0].contains("sandbox") && said[0].contains("--render-no-sandbox"), "and what to change: {log}");
        assert!(said[0].contains("chroot refused"), "the call the profile refuses: {log}");
        assert!(!out.path().join("data/doc").exists(), "nothing crawled: {log}");
    }
}

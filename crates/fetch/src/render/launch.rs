//! How Chromium is started (docs/src/security.md): with an environment
//! cleared to what it needs, and with its sandbox on.
//!
//! A process the crawler starts gets the crawler's whole environment,
//! which on a worker pod holds the data store's credentials. So the browser
//! is started through a small launcher script that `exec`s it under
//! `env -i` with only `PATH`, `HOME`, `TMPDIR` and `LANG`. Chromium
//! refuses its sandbox when run as root; then the launcher drops to the
//! unprivileged user 65534 (`nobody`) with `setpriv` first, and the
//! sandbox stays on. Where the sandbox cannot work (no `setpriv` for root,
//! no user namespaces) the launch fails and the run is refused at start;
//! only `--render-no-sandbox` runs the browser without it, warned about.
//!
//! The script is run by this process, as root when the crawler is root,
//! so nobody else may be able to replace it between its writing and its
//! run: it is written into a folder of its own that this process owns and
//! no one else may write (mode 0700; never the profile folder, which
//! belongs to user 65534 when the crawler is root), created new (a file
//! or a symbolic link already there is refused, never followed) and
//! executable by its owner only.

use std::io::Write as _;
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

/// The user Chromium runs as when the crawler is root.
const NOBODY: u32 = 65_534;
const SETPRIV: &str = "/usr/bin/setpriv";
/// The launcher's name in its folder.
const NAME: &str = "launch-chromium";

/// The launcher, run as the browser's executable (`pipe.rs`).
#[derive(Debug)]
pub(super) struct Launcher {
    pub path: PathBuf,
    /// Whether Chromium's sandbox is kept on.
    pub sandbox: bool,
}

/// Writes the launcher of `chromium` into `folder`, which must be this
/// process's own and writable by no one else (a `tempfile::tempdir`),
/// for the profile `profile` (the browser's user data folder, made this
/// process's own, handed to user 65534 when the sandbox needs it);
/// `sandbox`: keep the sandbox on (false only under `--render-no-sandbox`).
///
/// # Errors
/// When `folder` is another user's or others may write it, a file or link
/// is already at the launcher's path, the script cannot be written, the
/// profile cannot be handed over, or the sandbox is asked for as root
/// without `setpriv`.
pub(super) fn prepare(folder: &Path, profile: &Path, chromium: &Path, sandbox: bool) -> Result<Launcher, String> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    let meta = std::fs::symlink_metadata(folder).map_err(|e| format!("{}: {e}", folder.display()))?;
    if !meta.is_dir() || meta.uid() != uid || meta.mode() & 0o022 != 0 {
        return Err(format!(
            "refusing to write Chromium's launcher into {}: it must be a folder of user {uid} that no one else may write",
            folder.display()
        ));
    }
    let root = uid == 0;
    if sandbox && root && !Path::new(SETPRIV).is_file() {
        // Chromium refuses its sandbox as root: never a silent run without it.
        return Err(format!(
            "as root, Chromium's sandbox needs {SETPRIV} (util-linux) to drop to user {NOBODY}: install it, run the crawler as another user, or pass --render-no-sandbox"
        ));
    }
    let drop_root = sandbox && root;
    if drop_root {
        std::os::unix::fs::chown(profile, Some(NOBODY), Some(NOBODY))
            .map_err(|e| format!("cannot hand Chromium's profile {} to user {NOBODY}: {e}", profile.display()))?;
    }
    let as_user = if drop_root {
        format!("{SETPRIV} --reuid={NOBODY} --regid={NOBODY} --clear-groups -- ")
    } else {
        String::new()
    };
    let script = format!(
        "#!/bin/sh\n# Written by layercrawl: Chromium gets none of the crawler's environment.\nexec {as_user}/usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin HOME={p} TMPDIR={p} LANG=C.UTF-8 {c} \"$@\"\n",
        p = quote(profile),
        c = quote(chromium),
    );
    let path = folder.join(NAME);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o700)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)
        .map_err(|e| format!("cannot write Chromium's launcher {}: {e}", path.display()))?;
    f.write_all(script.as_bytes()).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(Launcher { path, sandbox })
}

/// Chromium's switches, `--remote-debugging-pipe` aside (`pipe.rs`): those
/// chromiumoxide's launch gave (its defaults, headless) and the crawl's
/// own, for the profile `profile`, the relay `proxy`, at most `tabs`
/// renderer processes; `sandbox` false adds the switches that turn it off.
pub(super) fn switches(profile: &Path, proxy: &str, sandbox: bool, tabs: usize) -> Vec<String> {
    let mut v: Vec<String> = [
        // chromiumoxide's defaults (its `BrowserConfig`), which the crawl
        // kept when chromiumoxide started the browser.
        "disable-background-networking",
        "enable-features=NetworkService,NetworkServiceInProcess",
        "disable-background-timer-throttling",
        "disable-backgrounding-occluded-windows",
        "disable-breakpad",
        "disable-client-side-phishing-detection",
        "disable-component-extensions-with-background-pages",
        "disable-default-apps",
        "disable-dev-shm-usage",
        "disable-hang-monitor",
        "disable-ipc-flooding-protection",
        "disable-popup-blocking",
        "disable-prompt-on-repost",
        "disable-renderer-backgrounding",
        "disable-sync",
        "force-color-profile=srgb",
        "metrics-recording-only",
        "no-first-run",
        "enable-automation",
        "password-store=basic",
        "use-mock-keychain",
        "enable-blink-features=IdleDetection",
        "lang=en_US",
        "disable-extensions",
        "headless",
        "hide-scrollbars",
        "mute-audio",
        // The crawl's own: no background traffic, no images, no GPU.
        "disable-gpu",
        "disable-component-update",
        "disable-quic",
        "blink-settings=imagesEnabled=false",
        // One renderer process per tab rather than per site: the pages
        // come from many sites and none reaches the network, so isolating
        // sites from each other buys nothing and costs a process start per
        // page.
        "disable-site-isolation-trials",
        "dns-prefetch-disable",
        "disable-features=TranslateUI,site-per-process,IsolateOrigins,Translate,MediaRouter,OptimizationHints",
        // Every connection through the relay, loopback's too; no name
        // resolved by Chromium (the relay resolves them); WebRTC's UDP
        // only through the proxy, which carries none.
        "proxy-bypass-list=<-loopback>",
        "host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
        "force-webrtc-ip-handling-policy=disable_non_proxied_udp",
        "webrtc-ip-handling-policy=disable_non_proxied_udp",
    ]
    .iter()
    .map(|s| format!("--{s}"))
    .collect();
    v.push(format!("--proxy-server={proxy}"));
    v.push(format!("--renderer-process-limit={}", tabs.max(1)));
    v.push(format!("--user-data-dir={}", profile.display()));
    if !sandbox {
        v.extend(["--no-sandbox".to_string(), "--disable-setuid-sandbox".to_string()]);
    }
    v
}

/// The one line a launch that failed with the sandbox on ends as.
pub(super) fn sandbox_refused(e: &str) -> String {
    // Chromium's own words when it has them; else the error's first line,
    // cut short (it may carry the browser's whole error output). A refused
    // `chroot` is what a container's seccomp profile does to the sandbox
    // when the container holds no CAP_SYS_CHROOT (docs/src/cluster.md,
    // "Rendering in the pods").
    let first = if e.contains("No usable sandbox") {
        "No usable sandbox"
    } else if e.contains("sys_chroot") {
        "chroot refused: a seccomp profile that forbids it"
    } else {
        let line = e.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("no reason given");
        line.char_indices().nth(200).map_or(line, |(i, _)| &line[..i])
    };
    format!(
        "Chromium cannot start with its sandbox here ({first}): give the process user namespaces and chroot (the render pods' seccomp profile jobs/k8s/seccomp/render.json, docs/src/cluster.md), or pass --render-no-sandbox to render without the sandbox (docs/src/security.md)"
    )
}

/// A path as one shell word.
fn quote(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_sandbox_says_why_in_one_line() {
        let chroot = "cannot start Chromium at /usr/bin/chromium: Browser process exited with status ExitStatus(unix_wait_status(6)) before websocket URL could be resolved, stderr: BrowserStderr(\"Check failed: sys_chroot(\\\"/proc/self/fdinfo/\\\") == 0\\n[1:1:FATAL:zygote_host_impl_linux.cc(254)] Failed to receive hello message from zygote\")";
        let said = sandbox_refused(chroot);
        assert!(said.contains("(chroot refused: a seccomp profile that forbids it)"), "{said}");
        assert!(said.contains("jobs/k8s/seccomp/render.json") && said.contains("--render-no-sandbox"), "{said}");
        assert!(!said.contains('\n'), "one line: {said}");
        assert!(sandbox_refused("x\nNo usable sandbox! more").contains("(No usable sandbox)"));
    }

    use std::os::unix::fs::PermissionsExt as _;

    #[test]
    fn the_launcher_clears_the_environment_and_quotes_its_paths() {
        let dir = tempfile::tempdir().expect("tempdir");
        let profile = dir.path().join("it's here");
        std::fs::create_dir(&profile).expect("profile");
        let bin = tempfile::tempdir().expect("tempdir");
        let l = prepare(bin.path(), &profile, Path::new("/opt/a b/chromium"), false).expect("launcher");
        assert!(!l.sandbox, "not asked for");
        assert_eq!(l.path, bin.path().join(NAME), "in its own folder, not the profile");
        assert_eq!(std::fs::metadata(&l.path).expect("script").mode() & 0o7777, 0o700, "its owner's alone");
        let text = std::fs::read_to_string(&l.path).expect("script");
        assert!(text.contains("/usr/bin/env -i PATH="), "{text}");
        assert!(text.contains("'/opt/a b/chromium' \"$@\""), "{text}");
        assert!(text.contains(r"it'\''s here"), "{text}");
        // Run as a shell would: the child sees only what the launcher gives.
        let bin = tempfile::tempdir().expect("tempdir");
        let echo = prepare(bin.path(), &profile, Path::new("/usr/bin/env"), false).expect("launcher");
        let out = std::process::Command::new(&echo.path)
            .env("LAYERCRAWL_CANARY", "s3cr3t")
            .output()
            .expect("run the launcher");
        let env = String::from_utf8_lossy(&out.stdout);
        assert!(!env.contains("s3cr3t") && env.contains("LANG=C.UTF-8"), "{env}");
    }

    /// A file or a symbolic link planted where the launcher goes is not
    /// followed nor overwritten: the launch is refused. So is a folder that
    /// others may write.
    #[test]
    fn a_planted_launcher_or_an_open_folder_is_refused() {
        let profile = tempfile::tempdir().expect("tempdir");
        let elsewhere = tempfile::tempdir().expect("tempdir");
        let target = elsewhere.path().join("victim");
        std::fs::write(&target, "untouched").expect("write");
        let chromium = Path::new("/usr/bin/chromium");

        let bin = tempfile::tempdir().expect("tempdir");
        std::os::unix::fs::symlink(&target, bin.path().join(NAME)).expect("symlink");
        let err = prepare(bin.path(), profile.path(), chromium, false).expect_err("a link is there");
        assert!(err.contains("cannot write Chromium's launcher"), "{err}");
        assert_eq!(std::fs::read_to_string(&target).expect("read"), "untouched", "the link was followed");

        let dangling = tempfile::tempdir().expect("tempdir");
        std::os::unix::fs::symlink(elsewhere.path().join("none"), dangling.path().join(NAME)).expect("symlink");
        assert!(prepare(dangling.path(), profile.path(), chromium, false).is_err(), "a dangling link is there");
        assert!(!elsewhere.path().join("none").exists(), "the dangling link was followed");

        let planted = tempfile::tempdir().expect("tempdir");
        std::fs::write(planted.path().join(NAME), "#!/bin/sh\nid\n").expect("write");
        assert!(prepare(planted.path(), profile.path(), chromium, false).is_err(), "a file is there");
        assert_eq!(std::fs::read_to_string(planted.path().join(NAME)).expect("read"), "#!/bin/sh\nid\n");

        let open = tempfile::tempdir().expect("tempdir");
        std::fs::set_permissions(open.path(), std::fs::Permissions::from_mode(0o777)).expect("chmod");
        let err = prepare(open.path(), profile.path(), chromium, false).expect_err("others may write it");
        assert!(err.contains("no one else may write"), "{err}");
        assert!(!open.path().join(NAME).exists());
        let link = elsewhere.path().join("link");
        let real = tempfile::tempdir().expect("tempdir");
        std::os::unix::fs::symlink(real.path(), &link).expect("symlink");
        assert!(prepare(&link, profile.path(), chromium, false).is_err(), "a link to a folder is not one");
    }
}

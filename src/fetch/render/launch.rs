//! How Chromium is started (docs/src/security.md): with an environment
//! cleared to what it needs, and with its sandbox on where the kernel
//! allows it.
//!
//! chromiumoxide starts the browser with the crawler's whole environment,
//! which on a worker pod holds the data store's credentials. So the browser
//! is started through a small launcher script, written into its profile
//! folder, that `exec`s it under `env -i` with only `PATH`, `HOME`,
//! `TMPDIR` and `LANG`. Chromium refuses its sandbox when run as root;
//! then the launcher drops to the unprivileged user 65534 (`nobody`) with
//! `setpriv` first, and the sandbox stays on. Where neither works the
//! browser runs without its sandbox, and the log says so.

use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

/// The user Chromium runs as when the crawler is root.
const NOBODY: u32 = 65_534;
const SETPRIV: &str = "/usr/bin/setpriv";

/// The launcher to hand chromiumoxide as the browser's executable.
#[derive(Debug)]
pub(super) struct Launcher {
    pub path: PathBuf,
    /// Whether Chromium's sandbox is kept on.
    pub sandbox: bool,
}

/// Writes the launcher of `chromium` into `profile` (the browser's user
/// data folder, made this process's own); `sandbox`: try to keep the
/// sandbox on (false after a launch with it failed).
///
/// # Errors
/// When the script cannot be written, or the profile handed over.
pub(super) fn prepare(profile: &Path, chromium: &Path, sandbox: bool) -> Result<Launcher, String> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let drop_root = sandbox && root && Path::new(SETPRIV).is_file();
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
    let path = profile.join("launch-chromium");
    let mut f = std::fs::File::create(&path).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    f.write_all(script.as_bytes()).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| format!("cannot make {} executable: {e}", path.display()))?;
    Ok(Launcher { path, sandbox: sandbox && (drop_root || !root) })
}

/// A path as one shell word.
fn quote(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_launcher_clears_the_environment_and_quotes_its_paths() {
        let dir = tempfile::tempdir().expect("tempdir");
        let profile = dir.path().join("it's here");
        std::fs::create_dir(&profile).expect("profile");
        let l = prepare(&profile, Path::new("/opt/a b/chromium"), false).expect("launcher");
        assert!(!l.sandbox, "not asked for");
        let text = std::fs::read_to_string(&l.path).expect("script");
        assert!(text.contains("/usr/bin/env -i PATH="), "{text}");
        assert!(text.contains("'/opt/a b/chromium' \"$@\""), "{text}");
        assert!(text.contains(r"it'\''s here"), "{text}");
        // Run as a shell would: the child sees only what the launcher gives.
        let echo = prepare(&profile, Path::new("/usr/bin/env"), false).expect("launcher");
        let out = std::process::Command::new(&echo.path)
            .env("LAYERCRAWL_CANARY", "s3cr3t")
            .output()
            .expect("run the launcher");
        let env = String::from_utf8_lossy(&out.stdout);
        assert!(!env.contains("s3cr3t") && env.contains("LANG=C.UTF-8"), "{env}");
    }
}

//! The editor's two guards on the user's own machine: the request token,
//! compared in constant time, and the save, which writes the rules file
//! and nothing else.

use std::io::Write as _;
use std::path::Path;

/// Whether `given` is the token `want`, in time that depends on the
/// token's length only (which is fixed), not on where the two differ: a
/// page timing many requests cannot learn the token a byte at a time.
pub(super) fn same_token(given: &[u8], want: &[u8]) -> bool {
    if given.len() != want.len() {
        return false;
    }
    let diff = given.iter().zip(want).fold(0u8, |acc, (a, b)| acc | (a ^ b));
    // Keeps the compiler from turning the fold into an early exit.
    std::hint::black_box(diff) == 0
}

/// Writes `text` to `file` whole or not at all: into a temporary file
/// created exclusively (a random name, `O_EXCL`) in the same folder, then
/// renamed over `file`. A fixed temporary name could be planted beforehand
/// as a symlink, and writing through it would overwrite its target; an
/// exclusive create refuses any name that exists, symlinks included. The
/// file keeps its permissions; a new one gets those of any new file (the
/// umask applied).
///
/// # Errors
/// When the folder is not writable or the disk is full; `file` is then
/// unchanged and no temporary file is left.
pub(super) fn write_rules(file: &Path, text: &str) -> std::io::Result<()> {
    let dir = match file.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let prefix = format!(".{}.", file.file_name().map(|n| n.to_string_lossy()).unwrap_or_default());
    let kept = std::fs::metadata(file).ok().map(|m| m.permissions());
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".saving");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        // As `File::create` would: 0666 less the umask (tempfile's own
        // default, 0600, would narrow a new rules file).
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let mut tmp = builder.tempfile_in(dir)?;
    tmp.write_all(text.as_bytes())?;
    if let Some(p) = kept {
        tmp.as_file().set_permissions(p)?;
    }
    // On disk before the rename, so a crash cannot leave an empty file.
    tmp.as_file().sync_all()?;
    tmp.persist(file).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_check_takes_the_right_token_only() {
        let want = b"0123456789abcdef0123456789abcdef";
        assert!(same_token(want, want));
        assert!(!same_token(b"0123456789abcdef0123456789abcdeX", want), "same length, last byte differs");
        assert!(!same_token(b"X123456789abcdef0123456789abcdef", want), "same length, first byte differs");
        assert!(!same_token(b"0123456789abcdef", want), "shorter");
        assert!(!same_token(b"0123456789abcdef0123456789abcdef0", want), "longer");
        assert!(!same_token(b"", want));
    }

    #[cfg(unix)]
    #[test]
    fn a_save_writes_the_file_only_not_a_planted_symlink_and_keeps_its_mode() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().expect("dir");
        let file = dir.path().join("rules.toml");
        std::fs::write(&file, "old\n").expect("write");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).expect("chmod");
        // Someone with access to the folder plants the names a fixed
        // temporary file would have had, pointing elsewhere.
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "untouched\n").expect("write");
        for planted in ["rules.toml.saving", "rules.toml.toml.saving"] {
            std::os::unix::fs::symlink(&victim, dir.path().join(planted)).expect("symlink");
        }
        write_rules(&file, "new\n").expect("save");
        assert_eq!(std::fs::read_to_string(&victim).expect("read"), "untouched\n", "the symlink was followed");
        assert_eq!(std::fs::read_to_string(&file).expect("read"), "new\n");
        let meta = std::fs::symlink_metadata(&file).expect("meta");
        assert!(meta.file_type().is_file());
        assert_eq!(meta.permissions().mode() & 0o777, 0o640, "the file's mode is kept");
        // Nothing left behind but the file, the victim and the planted links.
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .expect("list")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["rules.toml", "rules.toml.saving", "rules.toml.toml.saving", "victim"]);
        // A file that does not exist yet is created.
        let fresh = dir.path().join("fresh.toml");
        write_rules(&fresh, "x\n").expect("new file");
        assert_eq!(std::fs::read_to_string(&fresh).expect("read"), "x\n");
    }
}

//! The options of `layercrawl run`, declared once.
//!
//! Each concern is one struct that derives both clap's parser and serde's:
//! clap's attributes hold every default (`default_value_t`), `--help` and
//! the book's options reference are generated from them, and
//! [`Default`] is what an empty command line parses to. A job file takes
//! the same keys as the flags (`per-host = 4` for `--per-host 4`), read
//! into the same structs; [`RunOptions::with_job`] lays the flags given
//! over it. [`super::CrawlConfig::from_options`] then checks what needs
//! more than one value, files or the features built.
//!
//! Where a stage's settings are exactly a concern's options, the struct
//! lives with the stage and is flattened here: [`Politeness`] is the fetch
//! crate's, and its `FetchConfig` holds it as it is (`--per-host`,
//! `--delay` and their defaults are said there, once).

mod exec;
mod fetching;
mod pages;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use exec::{ExecutorKind, Executors};
pub use fetching::{single_pages, Addresses, Limits, Network, PageBudget, Politeness, Rendering};
pub use pages::{Focus, Noise, Output};

use super::ConfigError;

/// Options of `layercrawl run`. Every option may also come from the job
/// file (same name, e.g. `per-host = 2`); a flag given here wins.
#[derive(Clone, Debug, PartialEq, clap::Args, Serialize, Deserialize)]
#[serde(default, rename_all = "kebab-case")]
pub struct RunOptions {
    /// Seeds file: one URL a line; blank lines and `#` comments allowed.
    #[arg(long, value_name = "FILE")]
    pub seeds: Option<PathBuf>,
    /// Follow links at most N hops from the seeds (layer 0 is the seeds).
    #[arg(long, value_name = "N")]
    pub depth: Option<u32>,
    /// Which links to follow: same host as a seed, same registrable domain
    /// as a seed, or any.
    #[arg(long, value_name = "host|domain|any", value_enum, default_value_t = crate::scope::Scope::Domain)]
    pub scope: crate::scope::Scope,
    /// Links marked rel="nofollow", and every link of a page whose robots
    /// meta tag says nofollow: obey (not followed; labelled `nofollow`) or
    /// ignore (followed like any other: for a crawl of your own site or
    /// application, whose generated views are marked for search engines).
    #[arg(long, value_name = "obey|ignore", value_enum, default_value_t = crate::config::values::Nofollow::Obey)]
    pub nofollow: crate::config::values::Nofollow,
    /// Data location: a folder or a file:// / memory:// URL (a relative
    /// folder is relative to the working directory).
    #[arg(long, value_name = "DIR|URL", default_value = "data")]
    pub data: String,
    /// Job file (TOML) with any of these options; flags override it.
    #[arg(long, value_name = "FILE")]
    #[serde(skip)]
    pub job: Option<PathBuf>,
    /// Number of partitions (map tasks) per layer; fixed for a data dir.
    #[arg(long, value_name = "P", default_value_t = 16)]
    pub partitions: u32,
    /// Print the summary as JSON on stdout (for cron and scripts).
    #[arg(long)]
    #[serde(skip)]
    pub json: bool,
    /// No progress bars.
    #[arg(long)]
    #[serde(skip)]
    pub quiet: bool,
    #[command(flatten)]
    #[serde(flatten)]
    pub politeness: Politeness,
    #[command(flatten)]
    #[serde(flatten)]
    pub limits: Limits,
    #[command(flatten)]
    #[serde(flatten)]
    pub network: Network,
    #[command(flatten)]
    #[serde(flatten)]
    pub rendering: Rendering,
    #[command(flatten)]
    #[serde(flatten)]
    pub output: Output,
    #[command(flatten)]
    #[serde(flatten)]
    pub noise: Noise,
    #[command(flatten)]
    #[serde(flatten)]
    pub focus: Focus,
    #[command(flatten)]
    #[serde(flatten)]
    pub executors: Executors,
}

/// What an empty command line gives: every default, from clap's
/// attributes.
fn clap_defaults<T: clap::Args + clap::FromArgMatches>() -> T {
    let cmd = T::augment_args(clap::Command::new("defaults").no_binary_name(true));
    let matches = cmd.try_get_matches_from(std::iter::empty::<String>()).expect("no option is required");
    T::from_arg_matches(&matches).expect("the defaults parse")
}

macro_rules! defaults_from_clap {
    ($($t:ty),*) => {$(
        impl Default for $t {
            fn default() -> Self {
                clap_defaults()
            }
        }
    )*};
}

defaults_from_clap!(RunOptions, Limits, Addresses, Network, Rendering, Output, Noise, Focus, Executors);

/// Which options the command line gave: the rest come from the job file,
/// or else their defaults.
pub enum Given<'a> {
    /// Those clap saw on the command line or in their environment variable.
    Matches(&'a clap::ArgMatches),
    /// Those that differ from their default (for callers that build
    /// [`RunOptions`] in code).
    NotDefault,
}

/// The options as one flat map, by key (`per-host`).
fn flat(options: &RunOptions) -> Map<String, Value> {
    match serde_json::to_value(options) {
        Ok(Value::Object(map)) => map,
        _ => unreachable!("options serialize to a map"),
    }
}

impl RunOptions {
    /// The keys a job file may set: every option but `job`, `json`,
    /// `quiet` and `dry-run`, which only a command line gives.
    #[must_use]
    pub fn job_keys() -> Vec<String> {
        flat(&Self::default()).keys().cloned().collect()
    }

    /// These options over the job file's, if `job` names one: an option
    /// the command line gave (see [`Given`]) wins; lists (`--resolve`,
    /// `--dns`, `--proxy`) add to the job file's.
    ///
    /// # Errors
    /// When the job file cannot be read, is not TOML, or has an unknown key
    /// or a bad value (named with its line).
    pub fn with_job(&self, given: &Given<'_>) -> Result<Self, ConfigError> {
        let Some(path) = &self.job else { return Ok(self.clone()) };
        let job = load_job(path)?;
        let defaults = flat(&Self::default());
        let mut merged = flat(&job);
        for (key, value) in flat(self) {
            let from_flags = match given {
                Given::Matches(m) => matches!(
                    m.value_source(&key.replace('-', "_")),
                    Some(clap::parser::ValueSource::CommandLine | clap::parser::ValueSource::EnvVariable)
                ),
                Given::NotDefault => defaults.get(&key) != Some(&value),
            };
            if !from_flags {
                continue;
            }
            match (merged.get_mut(&key), value) {
                (Some(Value::Array(listed)), Value::Array(more)) => listed.extend(more),
                (_, value) => {
                    merged.insert(key, value);
                }
            }
        }
        let mut out: Self = serde_json::from_value(Value::Object(merged))
            .map_err(|e| ConfigError::Job { path: path.clone(), reason: format!("merging the flags: {e}") })?;
        (out.job, out.json, out.quiet, out.executors.dry_run) =
            (self.job.clone(), self.json, self.quiet, self.executors.dry_run);
        Ok(out)
    }
}

/// Reads a job file into options. Paths in it (`seeds`, `rules`, a plain
/// `data` folder...) are relative to the job file's folder, so a job runs
/// from any directory.
fn load_job(path: &Path) -> Result<RunOptions, ConfigError> {
    let job_error = |reason: String| ConfigError::Job { path: path.to_path_buf(), reason };
    let text = std::fs::read_to_string(path).map_err(|e| job_error(e.to_string()))?;
    let table: toml::Table = toml::from_str(&text).map_err(|e| job_error(e.to_string()))?;
    let keys = RunOptions::job_keys();
    let line_of = |key: &str| {
        text.lines().position(|l| {
            let l = l.trim_start().trim_start_matches(['"', '\'']);
            l.strip_prefix(key).is_some_and(|rest| rest.trim_start_matches(['"', '\'']).trim_start().starts_with('='))
        })
    };
    let at = |key: &str| line_of(key).map(|n| format!("line {}: ", n + 1)).unwrap_or_default();
    for key in table.keys() {
        if !keys.contains(key) {
            let kebab = key.replace('_', "-");
            let hint = if keys.contains(&kebab) { format!("did you mean `{kebab}`? ") } else { String::new() };
            return Err(job_error(format!("{}unknown key `{key}`; {hint}allowed: {}", at(key), keys.join(", "))));
        }
    }
    let mut job: RunOptions = match RunOptions::deserialize(table.clone()) {
        Ok(job) => job,
        // Read through the flattened concerns, an error loses its key:
        // find the key by reading each alone.
        Err(e) => {
            for (key, value) in &table {
                let alone: toml::Table = std::iter::once((key.clone(), value.clone())).collect();
                if let Err(e) = RunOptions::deserialize(alone) {
                    return Err(job_error(format!("{}key `{key}`: {e}", at(key)).trim_end().to_string()));
                }
            }
            return Err(job_error(e.to_string()));
        }
    };
    if let Some(dir) = path.parent() {
        let f = &mut job.focus;
        for file in [
            job.seeds.as_mut(),
            job.noise.noise_patterns.as_mut(),
            f.rules.as_mut(),
            f.plan.as_mut(),
            f.truth.as_mut(),
            f.entities.as_mut(),
            f.relations.as_mut(),
            job.network.proxies.as_mut(),
            job.rendering.chromium.as_mut(),
        ]
        .into_iter()
        .flatten()
        {
            if file.is_relative() {
                *file = dir.join(&*file);
            }
        }
        // A plain relative folder (not a URL) is relative to the job file too.
        for data in [Some(&mut job.data), f.previous.as_mut()].into_iter().flatten() {
            if !data.contains("://") && Path::new(data.as_str()).is_relative() {
                *data = dir.join(&*data).display().to_string();
            }
        }
    }
    Ok(job)
}

#[cfg(test)]
mod tests {
    use clap::{Args as _, FromArgMatches as _};

    use super::*;

    fn write_job(dir: &Path, text: &str) -> PathBuf {
        let path = dir.join("j.toml");
        std::fs::write(&path, text).expect("write");
        path
    }

    #[test]
    fn every_flag_but_the_command_lines_own_is_a_job_key() {
        let cmd = RunOptions::augment_args(clap::Command::new("run"));
        let flags: Vec<String> = cmd.get_arguments().filter_map(|a| a.get_long()).map(str::to_string).collect();
        let keys = RunOptions::job_keys();
        for flag in &flags {
            let cli_only = ["job", "json", "quiet", "dry-run"].contains(&flag.as_str());
            assert_eq!(keys.contains(flag), !cli_only, "--{flag}");
        }
        assert_eq!(keys.len(), flags.len() - 4, "{keys:?}");
    }

    #[test]
    fn unknown_keys_and_bad_values_name_the_key_and_line() {
        let dir = tempfile::tempdir().expect("dir");
        let job = write_job(dir.path(), "depth = 2\nper_host = 3\n");
        let e = RunOptions { job: Some(job), ..RunOptions::default() }.with_job(&Given::NotDefault);
        let e = e.expect_err("unknown key").to_string();
        assert!(e.contains("line 2: unknown key `per_host`; did you mean `per-host`?"), "{e}");
        let job = write_job(dir.path(), "depth = 2\n\ntimeout = 'soon'\n");
        let e = RunOptions { job: Some(job), ..RunOptions::default() }.with_job(&Given::NotDefault);
        let e = e.expect_err("bad value").to_string();
        assert!(e.contains("line 3: key `timeout`") && e.contains("\"soon\" is not a duration"), "{e}");
        let job = write_job(dir.path(), "depth = 'deep'\n");
        let e = RunOptions { job: Some(job), ..RunOptions::default() }.with_job(&Given::NotDefault);
        assert!(e.expect_err("bad type").to_string().contains("line 1: key `depth`"));
    }

    /// A flag given on the command line wins, even when it gives the
    /// default; one left out takes the job file's value; lists add up.
    #[test]
    fn flags_given_win_over_the_job_file() {
        let dir = tempfile::tempdir().expect("dir");
        let job = write_job(
            dir.path(),
            "seeds = 's.txt'\nper-host = 4\ndelay = 900\nresolve = ['a.test=127.0.0.1:1']\ntimeout = 5\n",
        );
        let argv = ["run", "--job", job.to_str().expect("utf-8"), "--per-host", "2", "--resolve", "b.test=127.0.0.1:2"];
        let matches = RunOptions::augment_args(clap::Command::new("run")).get_matches_from(argv);
        let flags = RunOptions::from_arg_matches(&matches).expect("flags");
        let o = flags.with_job(&Given::Matches(&matches)).expect("merged");
        assert_eq!(o.politeness.per_host, 2, "given on the command line, though it is the default");
        assert_eq!(o.politeness.delay.0, std::time::Duration::from_millis(900), "from the job file");
        assert_eq!(o.limits.timeout.0, std::time::Duration::from_secs(5), "a number of seconds");
        assert_eq!(o.network.addresses.resolve.len(), 2, "both lists");
        assert_eq!(o.seeds, Some(dir.path().join("s.txt")), "relative to the job file");
        assert_eq!(o.job, Some(job), "the command line's own options are kept");
    }
}

//! The job file (`jobs/*.toml`): every option of `run`, by the flag's name.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::ConfigError;

/// The options a job file may set. Unknown keys are refused, naming the
/// key and the keys allowed.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct JobFile {
    pub seeds: Option<PathBuf>,
    pub depth: Option<u32>,
    pub data: Option<String>,
    pub partitions: Option<u32>,
    pub concurrency: Option<usize>,
    pub per_host: Option<usize>,
    pub delay: Option<u64>,
    pub scope: Option<String>,
    pub max_pages: Option<u64>,
    pub order: Option<String>,
    pub max_pages_per_host: Option<u64>,
    pub layer_timeout: Option<String>,
    pub straggler_after: Option<String>,
    pub host_down_after: Option<String>,
    pub speed_limit: Option<u64>,
    pub speed_time: Option<String>,
    #[serde(default)]
    pub resolve: Vec<String>,
    pub user_agent: Option<String>,
    /// `true`, or the addresses and CIDR ranges allowed (a list or one
    /// comma-separated string).
    pub allow_private: Option<crate::fetch::resolve::AllowPrivate>,
    pub timeout: Option<String>,
    pub delay_factor: Option<f64>,
    #[serde(default)]
    pub dns: Vec<String>,
    pub max_delay: Option<String>,
    pub render: Option<String>,
    pub render_tabs: Option<usize>,
    pub render_timeout: Option<String>,
    pub render_max: Option<u64>,
    pub chromium: Option<PathBuf>,
    #[serde(default)]
    pub proxy: Vec<String>,
    pub proxies: Option<PathBuf>,
    pub proxy_delay: Option<u64>,
    pub proxy_concurrency: Option<u32>,
    pub proxy_retry: Option<String>,
    pub max_body: Option<u64>,
    /// The resource governor (README, "Resource limits"); a number is
    /// taken as bytes or a percentage.
    #[serde(default, deserialize_with = "string_or_number")]
    pub max_memory: Option<String>,
    #[serde(default, deserialize_with = "string_or_number")]
    pub cpu_target: Option<String>,
    pub retries: Option<u32>,
    pub denoise: Option<String>,
    pub noise_ratio: Option<f32>,
    pub text_format: Option<String>,
    pub store_text: Option<String>,
    pub cluster_sim: Option<f32>,
    pub noise_patterns: Option<PathBuf>,
    /// The rules file (README, "Rules").
    pub rules: Option<PathBuf>,
    /// The crawl plan (README, "Focused crawling").
    pub plan: Option<PathBuf>,
    pub truth: Option<PathBuf>,
    /// Entities and relations (README, "Entities and relations").
    pub entities: Option<PathBuf>,
    pub relations: Option<PathBuf>,
    #[serde(default, deserialize_with = "list_or_text")]
    pub prefer_entities: Option<Vec<String>>,
    pub entity_threshold: Option<f64>,
    /// Last night's crawl (README, "Nightly recrawls").
    pub previous: Option<String>,
    /// Read the seeds' sitemaps (README, "Sitemaps").
    pub sitemaps: Option<bool>,
    pub sitemap_urls: Option<usize>,
    /// WARC records of every exchange (README, "WARC").
    pub warc: Option<bool>,
    pub max_query_variants: Option<usize>,
    pub strip_params: Option<Vec<String>>,
    pub cache_entries: Option<usize>,
    pub store_body: Option<String>,
    /// The sink (README, "Kafka"), `kafka://BROKERS/PREFIX`.
    pub sink: Option<String>,
    pub compression: Option<String>,
    pub executor: Option<String>,
    pub workers: Option<usize>,
    pub image: Option<String>,
    pub namespace: Option<String>,
    pub worker_secret: Option<String>,
    pub service_account: Option<String>,
    pub wait: Option<bool>,
}

/// A list given as `["a", "b"]` or as `"a,b"`.
fn list_or_text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Either {
        Text(String),
        List(Vec<String>),
    }
    Ok(Some(match Either::deserialize(d)? {
        Either::Text(s) => s.split(',').map(|x| x.trim().to_string()).filter(|x| !x.is_empty()).collect(),
        Either::List(l) => l,
    }))
}

/// A value given as `"2G"` or as a bare number, kept as text to parse.
fn string_or_number<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Either {
        Text(String),
        Number(u64),
    }
    Ok(Some(match Either::deserialize(d)? {
        Either::Text(s) => s,
        Either::Number(n) => n.to_string(),
    }))
}

impl JobFile {
    /// Reads and parses a job file. A relative `seeds` path is taken
    /// relative to the job file's folder, so a job runs from any directory.
    ///
    /// # Errors
    /// When the file cannot be read, is not TOML, or has an unknown key or a
    /// value of the wrong type (the message names the key and line).
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError::Job { path: path.to_path_buf(), reason: e.to_string() })?;
        let mut job: Self =
            toml::from_str(&text).map_err(|e| ConfigError::Job { path: path.to_path_buf(), reason: e.to_string() })?;
        if let Some(dir) = path.parent() {
            for file in [
                job.seeds.as_mut(),
                job.noise_patterns.as_mut(),
                job.rules.as_mut(),
                job.plan.as_mut(),
                job.entities.as_mut(),
                job.relations.as_mut(),
                job.proxies.as_mut(),
                job.chromium.as_mut(),
            ]
            .into_iter()
            .flatten()
            {
                if file.is_relative() {
                    *file = dir.join(&*file);
                }
            }
            // A plain relative folder (not a URL) is relative to the job file too.
            for data in [job.data.as_mut(), job.previous.as_mut()].into_iter().flatten() {
                if !data.contains("://") && Path::new(data.as_str()).is_relative() {
                    *data = dir.join(&*data).display().to_string();
                }
            }
        }
        Ok(job)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_key_is_named() {
        let err = toml::from_str::<JobFile>("depth = 2\nper_hots = 3\n").expect_err("unknown key");
        let msg = err.to_string();
        assert!(msg.contains("per_hots"), "{msg}");
        assert!(msg.contains("per-host"), "lists the allowed keys: {msg}");
    }

    #[test]
    fn kebab_keys_parse() {
        let job: JobFile = toml::from_str("depth = 2\nper-host = 3\nresolve = ['*.test=127.0.0.1:1']\n").expect("job");
        assert_eq!((job.depth, job.per_host, job.resolve.len()), (Some(2), Some(3), 1));
    }
}

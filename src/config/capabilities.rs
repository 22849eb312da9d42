//! The settings of the capabilities that plug into a run (rendering,
//! proxies, entities), each built from the flags over the job file and
//! checked, naming the option at fault; [`super::CrawlConfig::from_sources`]
//! calls them.

use std::time::Duration;

use super::{bad, parse_duration, ConfigError, JobFile, RunArgs};

/// The rendering settings; with `--render` other than `never`, Chromium
/// must be found now, not at the first page.
pub(super) fn render_config(args: &RunArgs, job: &JobFile) -> Result<crate::fetch::render::RenderConfig, ConfigError> {
    use crate::fetch::render::{find_chromium, RenderConfig, RenderMode};
    let defaults = RenderConfig::default();
    let mode = match args.render.clone().or_else(|| job.render.clone()) {
        Some(s) => s.parse::<RenderMode>().map_err(|e| bad("render", e))?,
        None => RenderMode::Never,
    };
    if mode != RenderMode::Never && !crate::fetch::render::BUILT {
        let value = if mode == RenderMode::Auto { "auto" } else { "always" };
        return Err(crate::error::NotBuilt::new(format!("--render {value}"), "render").into());
    }
    let tabs = args.render_tabs.or(job.render_tabs).unwrap_or(defaults.tabs);
    if tabs == 0 {
        return Err(bad("render-tabs", "0; allowed 1 or more (default 4)"));
    }
    let timeout = match args.render_timeout.clone().or_else(|| job.render_timeout.clone()) {
        Some(s) => parse_duration(&s).map_err(|e| bad("render-timeout", e))?,
        None => defaults.timeout,
    };
    let chromium = args.chromium.clone().or_else(|| job.chromium.clone());
    let chromium = if mode == RenderMode::Never {
        chromium
    } else {
        Some(find_chromium(chromium.as_deref()).map_err(|e| bad("render", e))?)
    };
    Ok(RenderConfig {
        mode,
        chromium,
        tabs,
        timeout,
        max_pages: args.render_max.or(job.render_max),
        rule_patterns: Vec::new(),
    })
}

/// The proxy pool's settings: `--proxy` URLs, then the `--proxies` file's,
/// each checked (the file's errors name its line). Credentials in a URL are
/// taken off it into memory (the settings written to the data store name
/// proxies without them); those in the environment are checked now, not at
/// the first request.
pub(super) fn proxy_config(args: &RunArgs, job: &JobFile) -> Result<crate::fetch::proxy::ProxyConfig, ConfigError> {
    use crate::fetch::proxy::{self, credentials::Credentials, credentials::ProxyAuth};
    let mut raw = Vec::new();
    for u in job.proxy.iter().chain(&args.proxy) {
        raw.push(("proxy", u.trim().to_string()));
    }
    if let Some(file) = args.proxies.as_ref().or(job.proxies.as_ref()) {
        let listed = proxy::read_proxies_file(file).map_err(|e| bad("proxies", e))?;
        raw.extend(listed.into_iter().map(|u| ("proxies", u)));
    }
    let (mut urls, mut auth) = (Vec::new(), ProxyAuth::default());
    for (option, u) in raw {
        let (bare, creds) = proxy::split_proxy(&u).map_err(|e| bad(option, e))?;
        if let Some(c) = creds {
            if !auth.by_proxy.iter().any(|(p, _)| *p == bare) {
                auth.by_proxy.push((bare.clone(), c));
            }
        }
        urls.push(bare);
    }
    urls.dedup();
    if !urls.is_empty() {
        auth.shared = Credentials::from_env().map_err(|e| bad("proxy", e.to_string()))?;
    }
    let concurrency = args.proxy_concurrency.or(job.proxy_concurrency).unwrap_or(proxy::DEFAULT_CONCURRENCY);
    if concurrency == 0 {
        return Err(bad("proxy-concurrency", "0; allowed 1 or more (default 16)"));
    }
    let retry = match args.proxy_retry.clone().or_else(|| job.proxy_retry.clone()) {
        Some(s) => parse_duration(&s).map_err(|e| bad("proxy-retry", e))?,
        None => proxy::DEFAULT_RETRY,
    };
    Ok(proxy::ProxyConfig {
        urls,
        delay: Duration::from_millis(args.proxy_delay.or(job.proxy_delay).unwrap_or(0)),
        concurrency,
        retry,
        auth,
    })
}

/// The entity settings (`--entities`, `--relations`, `--prefer-entities`,
/// `--entity-threshold`), checked: the knowledge base's and the patterns'
/// every bad line is named.
pub(super) fn entity_settings(
    args: &RunArgs,
    job: &JobFile,
) -> Result<Option<crate::extract::entities::EntitiesSource>, ConfigError> {
    use crate::extract::entities::{EntitiesSource, DEFAULT_THRESHOLD};
    let relations = args.relations.clone().or_else(|| job.relations.clone());
    let prefer: Vec<String> = match (&args.prefer_entities, &job.prefer_entities) {
        (Some(list), _) => list.split(',').map(|x| x.trim().to_string()).filter(|x| !x.is_empty()).collect(),
        (None, Some(list)) => list.clone(),
        (None, None) => Vec::new(),
    };
    let threshold = args.entity_threshold.or(job.entity_threshold).unwrap_or(DEFAULT_THRESHOLD);
    if !(threshold.is_finite() && (0.0..=1.0).contains(&threshold)) {
        return Err(bad("entity-threshold", format!("{threshold}; allowed 0 to 1 (default {DEFAULT_THRESHOLD})")));
    }
    // A threshold alone changes nothing (as its default, it must be
    // allowed alone); patterns and preferences need entities to act on.
    let Some(kb) = args.entities.clone().or_else(|| job.entities.clone()) else {
        for (given, option) in [(relations.is_some(), "relations"), (!prefer.is_empty(), "prefer-entities")] {
            if given {
                return Err(bad(option, "works on the entities of a knowledge base: add --entities FILE"));
            }
        }
        return Ok(None);
    };
    EntitiesSource::read(&kb, relations.as_deref(), prefer, threshold).map(Some).map_err(|e| {
        use crate::extract::entities::EntitiesError;
        let option = match &e {
            EntitiesError::Patterns(_) => "relations",
            EntitiesError::Prefer(_) => "prefer-entities",
            EntitiesError::Read { path, .. }
                if relations.as_ref().is_some_and(|r| r.display().to_string() == *path) =>
            {
                "relations"
            }
            _ => "entities",
        };
        bad(option, e.to_string())
    })
}
